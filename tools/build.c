/* gpufeed build: turns a folder of PNG and JPEG images into a dataset.
 *
 * Worker threads claim source indices in order, read and decode each file
 * by what its first bytes say it is (also for the png and jpeg codecs,
 * which store files of their kind as they are: the decode validates them
 * and gives the shape the index records; a file of the other kind is
 * refused rather than re-encoded, see store_as_is) and encode it. Results go into a reorder window of a few entries
 * a thread, so memory stays bounded; the main thread alone writes, strictly
 * in source order, which makes the output byte-identical for any thread
 * count. Everything is written into a temporary folder next to OUT that is
 * moved into place by gf_dir_commit only when complete. */
#include "cli.h"

#include "build_shards.h" /* SRC: tar shards */
#include "build_wds.h"    /* --format wds */
#include "common/common.h"
#include "decode/decode.h"
#include "decode/loco_band.h" /* GF_LOCO_BAND_ROWS */
#include "format/format.h"
#include "format/wds_set.h"
#include "format/wds_spec.h"
#include "io/storage.h" /* a remote source folder (s3://) */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD "build"
#define WINDOW_PER_THREAD 4
#define SKIPPED_LISTED 10

static atomic_int
    g_signal; /* lock-free: set in a signal handler, read by threads */

static void on_signal(int sig) { g_signal = sig; }

/* One entry of the reorder window. */
typedef struct slot {
  bool ready;
  bool has_label; /* a tar shard's sample: its label, found once read */
  int64_t label;
  int rc;     /* 0, or why the source could not be used */
  void *data; /* stored bytes (malloc'd) */
  size_t len;
  gf_shape shape;
  uint64_t src_bytes;
  char *err; /* message when rc != 0 (malloc'd) */
} slot;

typedef struct build_job {
  const gfc_build_opts *o;
  const gf_folder *folder;
  const gf_wds_set *set; /* tar shards: folder lists their samples */
  gf_storage *st; /* the source folder's storage */
  gf_decode_opts dopts;
  slot *win;
  uint64_t wsize;
  pthread_mutex_t lock;
  pthread_cond_t can_claim; /* workers: the window has room */
  pthread_cond_t ready;     /* main: the next slot may be ready */
  uint64_t next_claim;      /* under lock */
  uint64_t next_write;      /* under lock */
  bool stop;                /* under lock */
} build_job;

/* The png and jpeg codecs store source files as they are, so a source of
 * the other kind is refused, naming it, rather than re-encoded: a PNG made
 * from a JPEG's decoded pixels is a lossless copy of lossy pixels, several
 * times the JPEG's size and slower to decode, and a JPEG made from a PNG
 * would lose detail; raw, zstd, gradzstd and loco store both kinds' pixels.
 * Returns 0 or GF_EBADSOURCE. */
static int store_as_is(int codec, int src_codec) {
  if ((codec != GF_CODEC_PNG && codec != GF_CODEC_JPEG) || codec == src_codec)
    return 0;
  bool png = codec == GF_CODEC_PNG;
  return gf_fail(GF_EBADSOURCE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "a %s file: --codec %s stores %s files as they are and "
                 "does not re-encode; use --codec %s for %s files, or raw, "
                 "zstd, gradzstd or loco to store the decoded pixels of PNG "
                 "and JPEG files alike",
                 png ? "JPEG" : "PNG", gf_codec_name(codec),
                 png ? "PNG" : "JPEG", png ? "jpeg" : "png",
                 png ? "JPEG" : "PNG");
}

/* loco codes 8-bit samples: a 16-bit image that --keep-16bit kept is
 * refused here, saying what to do, rather than by the encoder. Returns 0
 * or GF_EUNSUPPORTED. */
static int loco_depth(int codec, const gf_shape *s) {
  if (codec != GF_CODEC_LOCO || s->dtype == GF_DTYPE_U8)
    return 0;
  return gf_fail(GF_EUNSUPPORTED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "a 16-bit image, kept 16-bit by --keep-16bit: loco codes "
                 "8-bit samples; use --codec gradzstd for 16-bit images, or "
                 "build without --keep-16bit to reduce it to 8 bits");
}

/* A file of a remote folder, whole: opened with what the listing told
 * (no request but its GET). Returns 0 or the error, the file named. */
static int read_remote(build_job *j, const gf_folder_entry *e, void **data,
                       size_t *len) {
  gf_object *obj = NULL;
  gf_stat known = {.type = GF_ENTRY_FILE, .size = e->size};
  if (e->version)
    snprintf(known.version, sizeof known.version, "%s", e->version);
  int rc = e->size != UINT64_MAX
               ? gf_object_open_known(j->st, e->path, &known, 0, &obj)
               : gf_object_open(j->st, e->path, 0, &obj);
  if (rc < 0)
    return rc;
  if (obj->size > GF_LIMIT_DEFAULT_BYTES) {
    rc = gf_fail(GF_ELIMIT, obj->display, GF_NO_INDEX, GF_NO_INDEX,
                 "a file of %llu bytes: more than the %llu a source may have",
                 (unsigned long long)obj->size,
                 (unsigned long long)GF_LIMIT_DEFAULT_BYTES);
  } else if (!(*data = malloc(obj->size ? (size_t)obj->size : 1))) {
    rc = gf_fail(-ENOMEM, obj->display, GF_NO_INDEX, GF_NO_INDEX,
                 "out of memory for a file of %llu bytes",
                 (unsigned long long)obj->size);
  } else if ((rc = gf_object_read(obj, *data, 0, obj->size)) < 0) {
    free(*data);
    *data = NULL;
  } else {
    *len = (size_t)obj->size;
  }
  gf_object_close(obj);
  return rc;
}

/* Reads, decodes and encodes source i into *s (not yet published). */
static int process(build_job *j, uint64_t i, slot *s) {
  const gfc_build_opts *o = j->o;
  const gf_folder_entry *e = &j->folder->entries[i];
  char *path;
  if (j->set) { /* the sample's shard and key, for messages */
    char name[2048];
    gf_wds_set_name(j->set, i, name, sizeof name);
    path = strdup(name);
  } else {
    path = gfc_path_join(o->src, e->path);
  }
  void *src = NULL, *px = NULL;
  size_t len = 0;
  int codec = GF_FOLDER_CODEC_UNKNOWN;
  int rc = path ? 0 : -ENOMEM;
  gf_error_clear();
  if (rc == 0 && j->set) {
    rc = gfc_shards_read(j->set, i, &src, &len, &s->label);
    s->has_label = rc == 0;
  } else if (rc == 0 && (gf_storage_caps(j->st) & GF_STORAGE_FD)) {
    rc = gfc_read_file(path, GF_LIMIT_DEFAULT_BYTES, &src, &len);
  } else if (rc == 0) {
    rc = read_remote(j, e, &src, &len);
  }
  if (rc == 0 && (rc = gf_folder_file_codec(e->codec, NULL, src, len)) >= 0) {
    codec = rc;
    rc = store_as_is(o->codec, codec);
  }
  if (rc == 0)
    rc = gf_decode_shape(codec, src, len, NULL, &j->dopts, &s->shape);
  if (rc == 0)
    rc = loco_depth(o->codec, &s->shape);
  uint64_t bytes = rc == 0 ? gf_shape_bytes(&s->shape) : 0;
  if (rc == 0 && !(px = malloc(bytes ? bytes : 1)))
    rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "cannot allocate %llu bytes to decode it",
                 (unsigned long long)bytes);
  if (rc == 0)
    rc = gf_decode(codec, src, len, NULL, &j->dopts, px, bytes, &s->shape);
  if (rc == 0 && codec == o->codec) {
    s->data = src;
    s->len = len;
    src = NULL;
  } else if (rc == 0) {
    rc = gf_encode(o->codec, px, &s->shape, o->level, &s->data, &s->len);
  }
  s->src_bytes = len;
  if (rc != 0) {
    rc = gf_fail_context(rc, path ? path : e->path,
                         GF_NO_INDEX, NULL);
    s->err = strdup(gf_last_error()->message);
    free(s->data);
    s->data = NULL;
  }
  s->rc = rc;
  free(px);
  free(src);
  free(path);
  return rc;
}

static void *build_worker(void *arg) {
  build_job *j = arg;
  uint64_t count = j->folder->count;
  pthread_mutex_lock(&j->lock);
  for (;;) {
    while (!j->stop && j->next_claim < count &&
           j->next_claim >= j->next_write + j->wsize)
      pthread_cond_wait(&j->can_claim, &j->lock);
    if (j->stop || j->next_claim >= count)
      break;
    uint64_t i = j->next_claim++;
    pthread_mutex_unlock(&j->lock);
    slot s = {0};
    process(j, i, &s);
    s.ready = true;
    pthread_mutex_lock(&j->lock);
    /* The window guarantees this entry was taken by the writer already. */
    j->win[i % j->wsize] = s;
    if (i == j->next_write)
      pthread_cond_signal(&j->ready);
  }
  pthread_mutex_unlock(&j->lock);
  return NULL;
}

static void stop_workers(build_job *j) {
  pthread_mutex_lock(&j->lock);
  j->stop = true;
  pthread_cond_broadcast(&j->can_claim);
  pthread_mutex_unlock(&j->lock);
}

/* Waits for source i's result and takes it out of the window. Returns false
 * when a signal arrived first. */
static bool take(build_job *j, uint64_t i, slot *out, gfc_progress *prog) {
  slot *s = &j->win[i % j->wsize];
  pthread_mutex_lock(&j->lock);
  while (!s->ready && !g_signal) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 100000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&j->ready, &j->lock, &ts);
    if (!s->ready) {
      pthread_mutex_unlock(&j->lock);
      gfc_progress_update(prog, i);
      pthread_mutex_lock(&j->lock);
    }
  }
  bool ok = s->ready;
  if (ok) {
    *out = *s;
    *s = (slot){0};
    j->next_write = i + 1;
    pthread_cond_broadcast(&j->can_claim);
  }
  pthread_mutex_unlock(&j->lock);
  return ok;
}

/* This host's name as a temporary folder's name carries it: letters,
 * digits, '_' and '-' only ('.' and the rest become '_'), at most 32
 * bytes. */
static void host_tag(char *buf, size_t cap) {
  char h[256];
  if (gethostname(h, sizeof h) != 0)
    h[0] = '\0';
  h[sizeof h - 1] = '\0';
  size_t n = 0;
  for (const char *p = h; *p && n + 1 < cap && n < 32; p++)
    buf[n++] = isalnum((unsigned char)*p) || *p == '-' ? *p : '_';
  if (n == 0)
    buf[n++] = '_';
  buf[n] = '\0';
}

/* OUT's parent folder and base name (trailing slashes dropped), malloc'd.
 * Returns false when out of memory. */
static bool split_out(const char *out, char **parent, char **base) {
  char *a = strdup(out), *b = strdup(out);
  *parent = *base = NULL;
  if (a && b) {
    size_t l = strlen(a);
    while (l > 1 && a[l - 1] == '/') {
      a[--l] = '\0';
      b[l] = '\0';
    }
    *parent = strdup(dirname(a));
    *base = strdup(basename(b));
  }
  free(a);
  free(b);
  if (*parent && *base)
    return true;
  free(*parent);
  free(*base);
  *parent = *base = NULL;
  return false;
}

/* Temporary folders that earlier builds of OUT left (killed before they
 * could remove them: SIGKILL, a crash, a second SIGINT), named
 * ".BASE.gftmp-PID-HOST-XXXXXX": one of a process of this host that no
 * longer exists is removed (only dataset files are removed: gf_dir_remove),
 * and said so; any other is named and left: its build may still run (the
 * process exists, or runs on another host sharing the folder), or its name
 * carries no process id (made by an older gpufeed). */
static void sweep_stale(const char *out) {
  char *parent, *base;
  if (!split_out(out, &parent, &base))
    return;
  size_t pl = strlen(base) + 9; /* "." BASE ".gftmp-" and NUL */
  char *prefix = malloc(pl);
  DIR *d = prefix ? opendir(parent) : NULL;
  if (prefix)
    snprintf(prefix, pl, ".%s.gftmp-", base);
  char host[64];
  host_tag(host, sizeof host);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, pl - 1) != 0)
      continue;
    char *path = gfc_path_join(parent, e->d_name);
    struct stat st;
    if (!path || lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
      free(path);
      continue;
    }
    /* PID-HOST-XXXXXX after the prefix. */
    const char *rest = e->d_name + pl - 1;
    char *end;
    errno = 0;
    long pid = strtol(rest, &end, 10);
    const char *last = strrchr(rest, '-');
    bool named = rest[0] >= '1' && rest[0] <= '9' && !errno && pid > 0 &&
                 pid <= INT32_MAX && *end == '-' && last && last > end &&
                 strlen(last + 1) == 6;
    size_t hl = named ? (size_t)(last - end - 1) : 0;
    if (!named) {
      gfc_error(CMD,
                "note: %s looks like the temporary folder of an earlier "
                "build of %s, but its name carries no process id to check; "
                "remove it if no build of %s is running",
                path, out, out);
    } else if (hl != strlen(host) || strncmp(end + 1, host, hl) != 0) {
      gfc_error(CMD,
                "note: %s is the temporary folder of a build of %s on host "
                "%.*s (process %ld), which cannot be checked from here; "
                "remove it if that build no longer runs",
                path, out, (int)hl, end + 1, pid);
    } else if (pid == (long)getpid()) {
      /* Not ours (made below, after this): an earlier process of the
       * same number. It cannot be told whether that one has ended. */
      gfc_error(CMD,
                "note: %s carries this build's process id (%ld), left by an "
                "earlier process of that number; left as it is",
                path, pid);
    } else if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
      gfc_error(CMD,
                "note: %s is the temporary folder of a build of %s that may "
                "still run (process %ld exists); left as it is",
                path, out, pid);
    } else {
      int rc = gf_dir_remove(path);
      if (rc == 0)
        gfc_error(CMD,
                  "removed %s, the temporary folder left by a build of %s "
                  "that no longer runs (process %ld)",
                  path, out, pid);
      else
        gfc_error(CMD,
                  "note: %s was left by a build of %s that no longer runs "
                  "(process %ld), but cannot be removed: %s",
                  path, out, pid, gf_last_error()->message);
    }
    free(path);
  }
  if (d)
    closedir(d);
  free(prefix);
  free(parent);
  free(base);
}

/* ".NAME.gftmp-PID-HOST-XXXXXX" in OUT's parent folder, so the final rename
 * stays on one filesystem; the process id and host let a later build tell
 * whether the build that made it still runs (sweep_stale). */
static char *make_tmp_dir(const char *out) {
  char *parent, *base;
  char *tmp = NULL;
  if (split_out(out, &parent, &base)) {
    char host[64];
    host_tag(host, sizeof host);
    size_t n = strlen(parent) + strlen(base) + strlen(host) + 64;
    if ((tmp = malloc(n)) != NULL) {
      snprintf(tmp, n, "%s/.%s.gftmp-%ld-%s-XXXXXX", parent, base,
               (long)getpid(), host);
      if (!mkdtemp(tmp)) {
        int e = errno;
        gf_fail(-e, out, GF_NO_INDEX, GF_NO_INDEX,
                "cannot create a temporary folder in %s: %s", parent,
                strerror(e));
        free(tmp);
        tmp = NULL;
      }
    }
    free(parent);
    free(base);
  } else {
    gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  return tmp;
}

/* A dataset id for shards made final as they close (a build into a
 * bucket): random, never 0. */
static int dataset_id(uint64_t *id) {
  do {
    if (getrandom(id, sizeof *id, 0) != (ssize_t)sizeof *id) {
      int e = errno;
      gfc_error(CMD, "getrandom: %s", strerror(e));
      return -e;
    }
  } while (!*id);
  return 0;
}

/* A dataset for a bucket is staged in a private folder of TMPDIR (else
 * /tmp) first: "gpufeed-build-PID-XXXXXX". */
static char *make_staging_dir(void) {
  const char *t = getenv("TMPDIR");
  if (!t || !t[0])
    t = "/tmp";
  size_t n = strlen(t) + 64;
  char *tmp = malloc(n);
  if (!tmp) {
    gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    return NULL;
  }
  snprintf(tmp, n, "%s/gpufeed-build-%ld-XXXXXX", t, (long)getpid());
  if (!mkdtemp(tmp)) {
    int e = errno;
    gf_fail(-e, t, GF_NO_INDEX, GF_NO_INDEX,
            "cannot create a staging folder for the upload in %s (TMPDIR): %s",
            t, strerror(e));
    free(tmp);
    return NULL;
  }
  return tmp;
}

/* Appends n bytes of s to dst (capacity cap, length *len), cutting at cap. */
static void put(char *dst, size_t cap, size_t *len, const char *s, size_t n) {
  if (n > cap - 1 - *len)
    n = cap - 1 - *len;
  memcpy(dst + *len, s, n);
  *len += n;
  dst[*len] = '\0';
}

/* Copies msg into dst with the temporary folder `tmp` replaced by what the
 * user knows: a file inside it, or the folder as the message's subject,
 * by OUT; any other mention (the folder being moved into place) by "the
 * new dataset". Returns whether tmp occurred. */
static bool name_out(char *dst, size_t cap, const char *msg, const char *tmp,
                     const char *out) {
  size_t tl = strlen(tmp), len = 0;
  bool found = false;
  dst[0] = '\0';
  if (!tl) {
    put(dst, cap, &len, msg, strlen(msg));
    return false;
  }
  for (const char *p = msg; *p;) {
    const char *hit = strstr(p, tmp);
    if (!hit) {
      put(dst, cap, &len, p, strlen(p));
      break;
    }
    put(dst, cap, &len, p, (size_t)(hit - p));
    const char *as = hit[tl] == '/' || hit == msg ? out : "the new dataset";
    put(dst, cap, &len, as, strlen(as));
    p = hit + tl;
    found = true;
  }
  return found;
}

/* Reports a failure of the writer or of the commit. Both name the paths
 * they were given, inside the temporary folder, which the user never named
 * and which is removed on the way out: the message names OUT instead. */
static void report_out(const gfc_build_opts *o, const char *tmp, int rc) {
  const gf_error_info *last = gf_last_error();
  if (!tmp || last->code != rc || !last->message[0]) {
    gfc_error_last(CMD, rc);
    return;
  }
  /* OUT as given, less trailing slashes, so "OUT/" + file reads right. */
  char out[sizeof last->path];
  size_t ol = strlen(o->out);
  while (ol > 1 && o->out[ol - 1] == '/')
    ol--;
  snprintf(out, sizeof out, "%.*s", (int)ol, o->out);
  gf_error_info e = *last;
  if (name_out(e.message, sizeof e.message, last->message, tmp, out)) {
    size_t len = strlen(e.message);
    put(e.message, sizeof e.message, &len, " (while building ", 17);
    put(e.message, sizeof e.message, &len, out, strlen(out));
    put(e.message, sizeof e.message, &len, ")", 1);
  }
  name_out(e.path, sizeof e.path, last->path, tmp, out);
  gf_error_restore(&e);
  gfc_error_last(CMD, rc);
}

/* Refuses early (before any work) what gf_dir_commit would refuse at the
 * end. */
static bool out_ok(const gfc_build_opts *o) {
  int st = gfc_path_state(o->out);
  if (st < 0) {
    gfc_error(CMD, "%s: %s", o->out, strerror(-st));
    return false;
  }
  if (st == 3) {
    gfc_error(CMD, "%s exists and is not a folder; refusing to replace it",
              o->out);
    return false;
  }
  if (st != 0 && !o->force) {
    gfc_error(CMD, "%s already exists; use --force to replace it", o->out);
    return false;
  }
  if (st == 2) {
    char *idx = gfc_path_join(o->out, GF_INDEX_NAME);
    struct stat sb;
    bool is_ds = idx && stat(idx, &sb) == 0;
    free(idx);
    if (!is_ds) {
      gfc_error(CMD,
                "%s is a non-empty folder but not a gpufeed dataset; "
                "refusing to replace it",
                o->out);
      return false;
    }
  }
  return true;
}

/* What a build did, for its summary. */
typedef struct totals {
  uint64_t written, skipped;
  uint64_t src_bytes, stored, shard_bytes, decoded;
  char *skipped_msg[SKIPPED_LISTED]; /* the first ones */
  uint64_t *per_class; /* samples written a class (ImageFolder) */
} totals;

static void print_summary(const gfc_build_opts *o, const gf_folder *f,
                          const totals *t, double el, unsigned nt) {
  char b1[32], b2[32], b3[32], b4[32];
  uint64_t written = t->written, skipped = t->skipped;
  uint64_t src_bytes = t->src_bytes, stored = t->stored;
  printf("build: wrote %llu samples to %s\n", (unsigned long long)written,
         o->out);
  /* Skipped while listing (links, labels lines), then while reading. */
  printf("  skipped       %llu\n",
         (unsigned long long)(skipped + f->skipped_count));
  uint64_t listed = 0;
  for (uint64_t k = 0; k < f->skipped_count && listed < SKIPPED_LISTED; k++)
    printf("    %s\n", f->skipped[k]), listed++;
  for (uint64_t k = 0; k < skipped && k < SKIPPED_LISTED &&
                       listed < SKIPPED_LISTED; k++)
    printf("    %s\n", t->skipped_msg[k]), listed++;
  if (skipped + f->skipped_count > listed)
    printf("    ... and %llu more\n",
           (unsigned long long)(skipped + f->skipped_count - listed));
  if (f->class_count) {
    printf("  classes       %u (", f->class_count);
    for (uint32_t c = 0; c < f->class_count && c < 5; c++)
      printf("%s%s", c ? ", " : "", f->classes[c]);
    printf("%s)\n", f->class_count > 5 ? ", ..." : "");
  } else if (o->labels) {
    printf("  classes       none (labels from %s)\n", o->labels);
  } else {
    printf("  classes       none (labels from the shards' label field)\n");
  }
  /* Empty classes keep their label; torchvision's ImageFolder would
   * refuse the folder. */
  uint32_t empty = 0;
  for (uint32_t c = 0; c < f->class_count; c++) {
    if (t->per_class && t->per_class[c] == 0) {
      if (empty++ == 0)
        printf("  empty classes (kept as labels with no samples; "
               "torchvision's ImageFolder refuses an empty class)\n");
      if (empty <= SKIPPED_LISTED)
        printf("    %s (label %u)\n", f->classes[c], c);
    }
  }
  if (empty > SKIPPED_LISTED)
    printf("    ... and %u more\n", empty - SKIPPED_LISTED);
  for (uint32_t k = 0; k < f->not_class_count; k++)
    printf("  not a class   %s/%s: a gpufeed dataset folder, left out\n",
           f->root, f->not_classes[k]);
  if (o->codec == GF_CODEC_LOCO)
    printf("  codec         loco (bands of %d rows)\n",
           o->level ? o->level : (int)GF_LOCO_BAND_ROWS);
  else if (o->level)
    printf("  codec         %s (level %d)\n", gf_codec_name(o->codec),
           o->level);
  else
    printf("  codec         %s\n", gf_codec_name(o->codec));
  printf("  source bytes  %s\n", gfc_fmt_bytes(src_bytes, b1, sizeof b1));
  printf("  stored bytes  %s (%.1f%% of source; shards %s with alignment "
         "%u)\n",
         gfc_fmt_bytes(stored, b2, sizeof b2),
         src_bytes ? 100.0 * (double)stored / (double)src_bytes : 0.0,
         gfc_fmt_bytes(t->shard_bytes, b3, sizeof b3), o->alignment);
  printf("  decoded bytes %s (%.2fx the stored bytes)\n",
         gfc_fmt_bytes(t->decoded, b4, sizeof b4),
         stored ? (double)t->decoded / (double)stored : 0.0);
  printf("  time          %.2f s, %.0f images/s, %u threads\n", el,
         el > 0 ? (double)(written + skipped) / el : 0.0, nt);
}

/* The main thread's part: takes each source's result in source order and
 * writes it (or skips it, with --skip-bad). Returns false on a failure,
 * reported; an interruption returns true with g_signal set. */
static bool write_in_order(build_job *j, gf_writer *w, const char *tmp,
                           totals *tot) {
  gfc_progress prog;
  gfc_progress_start(&prog, CMD, "img", j->folder->count, j->o->quiet);
  bool failed = false;
  for (uint64_t i = 0; i < j->folder->count && !failed && !g_signal; i++) {
    slot s;
    if (!take(j, i, &s, &prog))
      break; /* interrupted */
    if (s.rc != 0) {
      if (j->o->skip_bad) {
        const char *m = s.err ? s.err : gf_strerror(s.rc);
        /* Listed in the summary; with --quiet there is none: warn now. */
        if (j->o->quiet)
          gfc_error(CMD, "skipped %s", m);
        if (tot->skipped < SKIPPED_LISTED &&
            !(tot->skipped_msg[tot->skipped] = strdup(m))) {
          gfc_error(CMD, "out of memory");
          failed = true;
        }
        tot->skipped++;
      } else {
        gfc_progress_end(&prog);
        gfc_error(CMD, "%s", s.err ? s.err : gf_strerror(s.rc));
        failed = true;
      }
    } else {
      int64_t lab = s.has_label ? s.label : j->folder->entries[i].label;
      int rc = gf_writer_add(w, s.data, s.len, j->o->codec, &s.shape, lab,
                             j->folder->entries[i].path);
      if (rc != 0) {
        gfc_progress_end(&prog);
        report_out(j->o, tmp, rc);
        failed = true;
      }
      if (rc == 0 && tot->per_class && lab >= 0 &&
          (uint64_t)lab < j->folder->class_count)
        tot->per_class[lab]++;
      tot->src_bytes += s.src_bytes;
      tot->stored += s.len;
      tot->decoded += gf_shape_bytes(&s.shape);
    }
    free(s.data);
    free(s.err);
    gfc_progress_update(&prog, i + 1);
  }
  gfc_progress_end(&prog);
  return !failed;
}

int gfc_build(const gfc_build_opts *o) {
  if (o->format == GFC_BUILD_FORMAT_WDS)
    return gfc_build_wds(o, o->json);
  int status = GFC_EXIT_FAIL;
  gf_folder *folder = NULL;
  gf_wds_set *set = NULL;
  gf_writer *w = NULL;
  char *tmp = NULL;
  gfc_s3_out *s3 = NULL;
  const bool to_s3 = gfc_is_s3(o->out);
  pthread_t *tids = NULL;
  unsigned started = 0;
  build_job j = {.o = o};
  totals tot;
  memset(&tot, 0, sizeof tot);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&j.lock, NULL);
  pthread_cond_init(&j.can_claim, NULL);
  pthread_cond_init(&j.ready, &ca);
  pthread_condattr_destroy(&ca);
  int rc;

  /* A file-size limit then fails a write with EFBIG, which we clean up
   * after, instead of killing the process mid-build. */
  signal(SIGXFSZ, SIG_IGN);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_RESETHAND; /* a second ^C kills at once */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  /* The umask, read while this is the only thread (umask() sets it). */
  mode_t dir_umask = umask(022);
  umask(dir_umask);
  if (to_s3 ? gfc_s3_out_open(o, &s3) != 0 : !out_ok(o))
    goto out;
  if (!to_s3)
    sweep_stale(o->out);
  gf_folder_opts fo = {.follow_symlinks = o->follow_symlinks,
                       .skip_bad = o->skip_bad};
  if (gf_wds_spec_claims(o->src)) {
    if ((rc = gfc_shards_folder(o, &j.st, &set, &folder)) != 0) {
      gfc_error_last(CMD, rc);
      goto out;
    }
    j.set = set;
  } else if ((rc = gf_storage_open(o->src, &o->remote, &j.st)) != 0 ||
             (rc = gf_folder_scan_in(j.st, o->labels, &fo, &folder)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  j.folder = folder;
  /* Listed in the summary; with --quiet there is none: warn now. */
  for (uint64_t k = 0; o->quiet && k < folder->skipped_count; k++)
    gfc_error(CMD, "skipped %s", folder->skipped[k]);
  if (folder->class_count &&
      !(tot.per_class = calloc(folder->class_count, sizeof *tot.per_class))) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  j.dopts = (gf_decode_opts)GF_DECODE_OPTS_INIT;
  j.dopts.channels =
      o->codec == GF_CODEC_PNG || o->codec == GF_CODEC_JPEG ? 0 : o->channels;
  j.dopts.keep_16bit = o->keep_16bit;

  if (!(tmp = to_s3 ? make_staging_dir() : make_tmp_dir(o->out))) {
    gfc_error_last(CMD, gf_last_error()->code);
    goto out;
  }
  gf_writer_opts wo = {.shard_size = o->shard_size,
                       .alignment = o->alignment,
                       .index_version = 0};
  if (to_s3) {
    /* Each shard final when closed, then uploaded (build_s3.c). */
    if ((rc = dataset_id(&wo.dataset_id)) != 0 ||
        (rc = gfc_s3_stream_start(s3, tmp, &g_signal)) != 0)
      goto out;
    wo.on_shard = gfc_s3_on_shard;
    wo.on_shard_ctx = s3;
  }
  if ((rc = gf_writer_create(tmp, &wo, &w)) != 0) {
    report_out(o, tmp, rc);
    goto out;
  }
  for (uint32_t c = 0; c < folder->class_count; c++) {
    if ((rc = gf_writer_add_class(w, folder->classes[c])) != 0) {
      report_out(o, tmp, rc);
      goto out;
    }
  }

  unsigned nt = o->threads ? o->threads : gfc_cores();
  if (nt > folder->count)
    nt = (unsigned)folder->count;
  j.wsize = (uint64_t)nt * WINDOW_PER_THREAD;
  j.win = calloc(j.wsize, sizeof *j.win);
  tids = calloc(nt, sizeof *tids);
  if (!j.win || !tids) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  double t0 = gfc_now();
  for (; started < nt; started++) {
    int e = pthread_create(&tids[started], NULL, build_worker, &j);
    if (e) {
      gfc_error(CMD, "cannot start a thread: %s", strerror(e));
      goto out;
    }
  }

  bool ok = write_in_order(&j, w, tmp, &tot);
  stop_workers(&j);
  for (unsigned i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  started = 0;
  if (!ok)
    goto out;
  tot.written = gf_writer_count(w);
  if (!g_signal && tot.written == 0) {
    gfc_error(CMD, "all %llu sources were skipped; nothing to write",
              (unsigned long long)folder->count);
    goto out;
  }
  tot.shard_bytes = gf_writer_bytes(w);
  if (!g_signal && (rc = gf_writer_finish(w)) != 0) {
    report_out(o, tmp, rc);
    goto out;
  }
  if (g_signal)
    goto out;
  if (to_s3) {
    if (gfc_s3_publish(s3) != 0)
      goto out;
    gf_writer_destroy(w);
    w = NULL;
    goto done;
  }
  gf_writer_destroy(w);
  w = NULL;
  /* mkdtemp made the folder 0700 (private while incomplete): the dataset
   * gets the mode a mkdir would give it, following the umask like its
   * files. */
  if (chmod(tmp, 0777 & ~dir_umask) != 0) {
    int e = errno;
    gfc_error(CMD, "%s: cannot set the new dataset folder's mode: %s", o->out,
              strerror(e));
    goto out;
  }
  /* The index's inode tells, after a failure, whether the rename that
   * publishes the new dataset happened (renames keep inodes). */
  size_t icap = strlen(tmp) + strlen(o->out) + sizeof GF_INDEX_NAME + 2;
  char *idx = malloc(icap);
  struct stat before, after;
  bool known = false;
  if (idx) {
    snprintf(idx, icap, "%s/%s", tmp, GF_INDEX_NAME);
    known = stat(idx, &before) == 0;
  }
  if ((rc = gf_dir_commit(tmp, o->out, o->force)) != 0) {
    if (known)
      snprintf(idx, icap, "%s/%s", o->out, GF_INDEX_NAME);
    if (known && stat(idx, &after) == 0 && after.st_dev == before.st_dev &&
        after.st_ino == before.st_ino) {
      /* The new dataset is in place; only its durability failed. tmp now
       * holds nothing of ours, or the old dataset, kept for the user: the
       * message says where, and nothing may be removed. */
      gfc_error_last(CMD, rc);
      free(tmp);
      tmp = NULL;
    } else if (rc == -EEXIST) {
      gfc_error(CMD, "%s already exists; use --force to replace it", o->out);
    } else {
      report_out(o, tmp, rc);
    }
    free(idx);
    goto out;
  }
  free(idx);
  free(tmp);
  tmp = NULL;
done:;
  double el = gfc_now() - t0;
  if (!o->quiet)
    print_summary(o, folder, &tot, el, nt);
  status = GFC_EXIT_OK;

out:
  if (started) {
    stop_workers(&j);
    for (unsigned i = 0; i < started; i++)
      pthread_join(tids[i], NULL);
  }
  for (uint64_t i = 0; j.win && i < j.wsize; i++) {
    free(j.win[i].data);
    free(j.win[i].err);
  }
  free(j.win);
  free(tids);
  for (int k = 0; k < SKIPPED_LISTED; k++)
    free(tot.skipped_msg[k]);
  free(tot.per_class);
  gf_writer_destroy(w);
  gfc_s3_out_close(s3); /* its uploads read the staging folder */
  if (tmp) {
    gf_dir_remove(tmp);
    free(tmp);
  }
  gf_folder_free(folder);
  gf_wds_set_close(set);
  gf_storage_close(j.st);
  pthread_cond_destroy(&j.can_claim);
  pthread_cond_destroy(&j.ready);
  pthread_mutex_destroy(&j.lock);
  if (status != GFC_EXIT_OK && g_signal) {
    if (to_s3) /* gfc_s3_out_close said what it removed */
      gfc_error(CMD, "interrupted by %s; no index was written to %s",
                g_signal == SIGINT ? "SIGINT" : "SIGTERM", o->out);
    else
      gfc_error(CMD, "interrupted by %s; %s left as it was",
                g_signal == SIGINT ? "SIGINT" : "SIGTERM", o->out);
    status = g_signal == SIGINT ? GFC_EXIT_INTERRUPTED : GFC_EXIT_FAIL;
  }
  return status;
}
