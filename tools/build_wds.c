/* gpufeed build --format wds: an image folder written as WebDataset tar
 * shards (docs/CLI.md, "build --format wds").
 *
 * The folder is listed as a gpufeed build lists it, and each file checked
 * as a build checks it (its first bytes against its name, then one full
 * decode), so that with --skip-bad both formats leave out the same files
 * and sample i of either is the same image. Worker threads read and check
 * files ahead, into a reorder window a few entries a thread deep; the main
 * thread alone writes, strictly in source order, through the library's
 * shard writer (format/wds_writer.h), which names each file's key and
 * places samples into shards: the output is byte-identical for any thread
 * count. A failed or interrupted build removes the shards it wrote (and
 * OUT when it made it). */
#include "build_wds.h"

#include "common/common.h"
#include "decode/decode.h"
#include "format/format.h"     /* the source folder's listing */
#include "format/wds_writer.h" /* the shards */
#include "io/storage.h"        /* a remote source folder (s3://) */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD "build"
#define WINDOW_PER_THREAD 4
#define LISTED 10 /* skipped files and renamed keys named in the summary */

static atomic_int
    g_signal; /* lock-free: set in a signal handler, read by threads */

static void on_signal(int sig) { g_signal = sig; }

/* One entry of the reorder window: a file read and checked. */
typedef struct slot {
  bool ready;
  int rc;     /* 0, or why the file cannot be used */
  void *data; /* the file's bytes (malloc'd) */
  size_t len;
  int codec; /* what it holds: GF_CODEC_PNG or GF_CODEC_JPEG */
  char *err; /* message when rc != 0 (malloc'd) */
} slot;

typedef struct job {
  const gfc_build_opts *o;
  const gf_folder *folder;
  gf_storage *st;
  slot *win;
  uint64_t wsize;
  pthread_mutex_t lock;
  pthread_cond_t can_claim; /* workers: the window has room */
  pthread_cond_t ready;     /* main: the next slot may be ready */
  uint64_t next_claim;      /* under lock */
  uint64_t next_write;      /* under lock */
  bool stop;                /* under lock */
} job;

/* A file of a remote folder, whole, opened with what the listing told.
 * Returns 0 or the error, the file named. */
static int read_remote(job *j, const gf_folder_entry *e, void **data,
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

/* Reads source i and checks it as build does: content against name, then
 * a full decode (the pixels are dropped: the file is stored as it is). */
static void check_file(job *j, uint64_t i, slot *s) {
  const gf_folder_entry *e = &j->folder->entries[i];
  char *path = gfc_path_join(j->o->src, e->path);
  void *px = NULL;
  gf_shape shape;
  gf_decode_opts dopts = GF_DECODE_OPTS_INIT;
  int rc = path ? 0 : -ENOMEM;
  gf_error_clear();
  if (rc == 0 && (gf_storage_caps(j->st) & GF_STORAGE_FD))
    rc = gfc_read_file(path, GF_LIMIT_DEFAULT_BYTES, &s->data, &s->len);
  else if (rc == 0)
    rc = read_remote(j, e, &s->data, &s->len);
  if (rc == 0 &&
      (rc = gf_folder_file_codec(e->codec, NULL, s->data, s->len)) >= 0) {
    s->codec = rc;
    rc = gf_decode_shape(s->codec, s->data, s->len, NULL, &dopts, &shape);
  }
  uint64_t bytes = rc == 0 ? gf_shape_bytes(&shape) : 0;
  if (rc == 0 && !(px = malloc(bytes ? bytes : 1)))
    rc = gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "cannot allocate %llu bytes to decode it",
                 (unsigned long long)bytes);
  if (rc == 0)
    rc = gf_decode(s->codec, s->data, s->len, NULL, &dopts, px, bytes, &shape);
  if (rc != 0) {
    rc = gf_fail_context(rc, path ? path : e->path, GF_NO_INDEX, NULL);
    s->err = strdup(gf_last_error()->message);
    free(s->data);
    s->data = NULL;
  }
  s->rc = rc;
  free(px);
  free(path);
}

static void *worker(void *arg) {
  job *j = arg;
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
    check_file(j, i, &s);
    s.ready = true;
    pthread_mutex_lock(&j->lock);
    /* The window guarantees the writer took this entry already. */
    j->win[i % j->wsize] = s;
    if (i == j->next_write)
      pthread_cond_signal(&j->ready);
  }
  pthread_mutex_unlock(&j->lock);
  return NULL;
}

static void stop_workers(job *j) {
  pthread_mutex_lock(&j->lock);
  j->stop = true;
  pthread_cond_broadcast(&j->can_claim);
  pthread_mutex_unlock(&j->lock);
}

/* Waits for source i and takes it out of the window. false: a signal came
 * first. */
static bool take(job *j, uint64_t i, slot *out, gfc_progress *prog) {
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

/* This host's name as temporary names carry it: letters, digits, '_' and
 * '-' only, at most 32 bytes (as build's temporary folders). */
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

/* Whether name is a shard's: "shard-" six digits or more ".tar". */
static bool is_shard_name(const char *name) {
  if (strncmp(name, "shard-", 6) != 0)
    return false;
  size_t d = 0;
  while (isdigit((unsigned char)name[6 + d]))
    d++;
  return d >= 6 && strcmp(name + 6 + d, ".tar") == 0;
}

/* What OUT holds: its shards, and the temporary files of earlier builds
 * (".shard-N.tar.gftmp-PID-HOST"): one of a process of this host that no
 * longer exists is removed, said so; others are named and left. Returns
 * the number of shards, or -1 (reported). With remove, the shards are
 * removed instead of counted (--force). */
static long out_shards(const char *out, bool remove, char *first,
                       size_t first_cap) {
  DIR *d = opendir(out);
  if (!d) {
    gfc_error(CMD, "%s: %s", out, strerror(errno));
    return -1;
  }
  char host[64];
  host_tag(host, sizeof host);
  long n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *path = gfc_path_join(out, e->d_name);
    if (!path) {
      gfc_error(CMD, "out of memory");
      n = -1;
      break;
    }
    const char *t = strstr(e->d_name, ".tar.gftmp-");
    if (is_shard_name(e->d_name)) {
      if (!remove && (n == 0 || strcmp(e->d_name, first) < 0))
        snprintf(first, first_cap, "%s", e->d_name);
      if (remove && unlink(path) != 0) {
        gfc_error(CMD, "cannot remove %s: %s", path, strerror(errno));
        free(path);
        n = -1;
        break;
      }
      n++;
    } else if (!remove && strncmp(e->d_name, ".shard-", 7) == 0 && t) {
      char *end;
      errno = 0;
      long pid = strtol(t + 11, &end, 10);
      bool here = !errno && pid > 0 && *end == '-' && !strcmp(end + 1, host);
      if (here && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 &&
          errno == ESRCH) {
        if (unlink(path) == 0)
          gfc_error(CMD,
                    "removed %s, the temporary shard left by a build that "
                    "no longer runs (process %ld)",
                    path, pid);
      } else {
        gfc_error(CMD,
                  "note: %s is the temporary shard of another build (one "
                  "that may still run, or of another host); left as it is",
                  path);
      }
    }
    free(path);
  }
  closedir(d);
  return n;
}

/* Refuses early what cannot be written: OUT not a folder, a gpufeed
 * dataset, shards there without --force. *made: OUT did not exist (it is
 * created later). */
static bool out_ok(const gfc_build_opts *o, bool *made) {
  *made = false;
  int st = gfc_path_state(o->out);
  if (st < 0) {
    gfc_error(CMD, "%s: %s", o->out, strerror(-st));
    return false;
  }
  if (st == 3) {
    gfc_error(CMD, "%s exists and is not a folder", o->out);
    return false;
  }
  if (st == 0) {
    *made = true;
    return true;
  }
  char *idx = gfc_path_join(o->out, GF_INDEX_NAME);
  struct stat sb;
  bool is_ds = idx && stat(idx, &sb) == 0;
  free(idx);
  if (is_ds) {
    gfc_error(CMD,
              "%s is a gpufeed dataset; write the WebDataset shards into "
              "another folder",
              o->out);
    return false;
  }
  char first[256] = "";
  long n = out_shards(o->out, false, first, sizeof first);
  if (n < 0)
    return false;
  if (n > 0 && !o->force) {
    gfc_error(CMD,
              "%s already holds %ld WebDataset shard%s (%s%s); use --force "
              "to replace them",
              o->out, n, n == 1 ? "" : "s", first, n > 1 ? ", ..." : "");
    return false;
  }
  return true;
}

/* What a build did, for its summary. */
typedef struct totals {
  uint64_t skipped;
  char *skipped_msg[LISTED];
  uint64_t renamed, dots, meta, empty, dups;
  char *renamed_msg[LISTED]; /* "PATH -> KEY.FIELD (why)" */
  uint64_t src_bytes;
  gf_wds_writer_stats w;
} totals;

/* Writes source i (its file checked, in s) as sample KEY: the image as it
 * is, and its label as KEY.cls. Returns 0 or the writer's error. */
static int write_sample(gf_wds_writer *w, const gf_folder_entry *e,
                        const slot *s, totals *t) {
  char base[GF_WDS_NAME_MAX], key[GF_WDS_NAME_MAX], field[8], cls[24];
  uint32_t changes = 0;
  int rc = gf_wds_file_key(e->path, s->codec, base, sizeof base, field,
                           sizeof field, &changes);
  if (rc < 0)
    return rc;
  /* The longest field ("jpeg") after it: the key leaves room for it. */
  int dup = gf_wds_writer_unique_key(w, base, key, sizeof key - 5);
  if (dup < 0)
    return dup;
  if (changes || dup) {
    t->renamed++;
    t->dots += (changes & GF_WDS_KEY_DOTS) != 0;
    t->meta += (changes & GF_WDS_KEY_META) != 0;
    t->empty += (changes & GF_WDS_KEY_EMPTY) != 0;
    t->dups += dup != 0;
    if (t->renamed <= LISTED) {
      const char *why = dup                         ? "the key was taken"
                        : changes & GF_WDS_KEY_DOTS ? "a '.' in the name"
                        : changes & GF_WDS_KEY_META ? "a __NAME__ folder"
                                                    : "an empty name";
      size_t n = strlen(e->path) + strlen(key) + strlen(field) + 64;
      char *m = malloc(n);
      if (m)
        snprintf(m, n, "%s -> %s.%s (%s)", e->path, key, field, why);
      t->renamed_msg[t->renamed - 1] = m;
    }
  }
  snprintf(cls, sizeof cls, "%lld", (long long)e->label);
  gf_wds_member m[2] = {
      {.field = field, .data = s->data, .size = s->len},
      {.field = "cls", .data = cls, .size = strlen(cls)},
  };
  return gf_wds_writer_add(w, key, m, 2);
}

/* The main thread's part: each source's result in source order, written
 * (or skipped, with --skip-bad). Returns false on a failure, reported; an
 * interruption returns true with g_signal set. */
static bool write_in_order(job *j, gf_wds_writer *w, totals *t) {
  gfc_progress prog;
  gfc_progress_start(&prog, CMD, "img", j->folder->count, j->o->quiet);
  bool failed = false;
  for (uint64_t i = 0; i < j->folder->count && !failed && !g_signal; i++) {
    slot s;
    if (!take(j, i, &s, &prog))
      break; /* interrupted */
    const char *m = s.err ? s.err : gf_strerror(s.rc);
    if (s.rc != 0 && j->o->skip_bad) {
      /* Listed in the summary; with --quiet there is none: warn now. */
      if (j->o->quiet)
        gfc_error(CMD, "skipped %s", m);
      if (t->skipped < LISTED)
        t->skipped_msg[t->skipped] = strdup(m);
      t->skipped++;
    } else if (s.rc != 0) {
      gfc_progress_end(&prog);
      gfc_error(CMD, "%s", m);
      failed = true;
    } else {
      int rc = write_sample(w, &j->folder->entries[i], &s, t);
      if (rc < 0) {
        gfc_progress_end(&prog);
        gfc_error_last(CMD, rc);
        failed = true;
      }
      t->src_bytes += s.len;
    }
    free(s.data);
    free(s.err);
    gfc_progress_update(&prog, i + 1);
  }
  gfc_progress_end(&prog);
  return !failed;
}

static void print_text(const gfc_build_opts *o, const gf_folder *f,
                       const totals *t, double el, unsigned nt) {
  char b1[32], b2[32], b3[32];
  printf("build: wrote %llu samples in %u WebDataset shard%s to %s\n",
         (unsigned long long)t->w.samples, t->w.shards,
         t->w.shards == 1 ? "" : "s", o->out);
  uint64_t skipped = t->skipped + f->skipped_count, listed = 0;
  printf("  skipped       %llu\n", (unsigned long long)skipped);
  for (uint64_t k = 0; k < f->skipped_count && listed < LISTED; k++)
    printf("    %s\n", f->skipped[k]), listed++;
  for (uint64_t k = 0; k < t->skipped && k < LISTED && listed < LISTED; k++)
    printf("    %s\n", t->skipped_msg[k] ? t->skipped_msg[k] : "?"), listed++;
  if (skipped > listed)
    printf("    ... and %llu more\n", (unsigned long long)(skipped - listed));
  if (f->class_count) {
    printf("  classes       %u (", f->class_count);
    for (uint32_t c = 0; c < f->class_count && c < 5; c++)
      printf("%s%s", c ? ", " : "", f->classes[c]);
    printf("%s): KEY.cls holds the class index\n",
           f->class_count > 5 ? ", ..." : "");
  } else {
    printf("  classes       none (labels from %s in KEY.cls)\n", o->labels);
  }
  for (uint32_t k = 0; k < f->not_class_count; k++)
    printf("  not a class   %s/%s: a gpufeed dataset folder, left out\n",
           f->root, f->not_classes[k]);
  if (t->w.shards)
    printf("  shards        " GF_WDS_SHARD_FMT " to " GF_WDS_SHARD_FMT
           ", %s (at most %s each)\n",
           0u, t->w.shards - 1, gfc_fmt_bytes(t->w.bytes, b1, sizeof b1),
           gfc_fmt_bytes(o->shard_size, b2, sizeof b2));
  printf("  image bytes   %s (the files as they are)\n",
         gfc_fmt_bytes(t->src_bytes, b3, sizeof b3));
  printf("  renamed keys  %llu", (unsigned long long)t->renamed);
  if (t->renamed)
    printf(" (a '.' in the name %llu, taken %llu, __NAME__ folder %llu, "
           "empty name %llu)",
           (unsigned long long)t->dots, (unsigned long long)t->dups,
           (unsigned long long)t->meta, (unsigned long long)t->empty);
  printf("\n");
  for (uint64_t k = 0; k < t->renamed && k < LISTED; k++)
    printf("    %s\n", t->renamed_msg[k] ? t->renamed_msg[k] : "?");
  if (t->renamed > LISTED)
    printf("    ... and %llu more\n",
           (unsigned long long)(t->renamed - LISTED));
  printf("  time          %.2f s, %.0f images/s, %u threads\n", el,
         el > 0 ? (double)(t->w.samples + t->skipped) / el : 0.0, nt);
}

static void json_list(const char *name, char *const *items, uint64_t n,
                      bool comma) {
  printf("\"%s\": [", name);
  for (uint64_t k = 0; k < n && k < LISTED; k++) {
    printf("%s\"", k ? ", " : "");
    if (items[k])
      gfc_json_str(stdout, items[k], strlen(items[k]));
    printf("\"");
  }
  printf("]%s", comma ? ", " : "");
}

static void print_json(const gfc_build_opts *o, const gf_folder *f,
                       const totals *t, double el) {
  printf("{\"format\": \"wds\", \"out\": \"");
  gfc_json_str(stdout, o->out, strlen(o->out));
  printf("\", \"samples\": %llu, \"shards\": %u, \"bytes\": %llu, "
         "\"shard_bytes\": %llu, \"image_bytes\": %llu, ",
         (unsigned long long)t->w.samples, t->w.shards,
         (unsigned long long)t->w.bytes, (unsigned long long)o->shard_size,
         (unsigned long long)t->src_bytes);
  printf("\"classes\": %u, \"skipped\": %llu, ", f->class_count,
         (unsigned long long)(t->skipped + f->skipped_count));
  /* The listing's skips first, then the reads', as the text lists them. */
  char *sk[LISTED];
  uint64_t ns = 0;
  for (uint64_t k = 0; k < f->skipped_count && ns < LISTED; k++)
    sk[ns++] = f->skipped[k];
  for (uint64_t k = 0; k < t->skipped && k < LISTED && ns < LISTED; k++)
    sk[ns++] = t->skipped_msg[k];
  json_list("skipped_files", sk, ns, true);
  printf("\"renamed_keys\": {\"count\": %llu, \"dots\": %llu, \"taken\": "
         "%llu, \"metadata_folders\": %llu, \"empty_names\": %llu, ",
         (unsigned long long)t->renamed, (unsigned long long)t->dots,
         (unsigned long long)t->dups, (unsigned long long)t->meta,
         (unsigned long long)t->empty);
  json_list("first", t->renamed_msg, t->renamed, false);
  printf("}, \"seconds\": %.3f}\n", el);
}

int gfc_build_wds(const gfc_build_opts *o, bool json) {
  int status = GFC_EXIT_FAIL;
  gf_folder *folder = NULL;
  gf_wds_writer *w = NULL;
  bool made = false, written = false;
  pthread_t *tids = NULL;
  unsigned started = 0, nt = 0;
  job j = {.o = o};
  totals t;
  memset(&t, 0, sizeof t);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&j.lock, NULL);
  pthread_cond_init(&j.can_claim, NULL);
  pthread_cond_init(&j.ready, &ca);
  pthread_condattr_destroy(&ca);
  int rc;

  if (gfc_is_s3(o->out)) {
    gfc_error(CMD,
              "%s: --format wds writes into a local folder only (not "
              "supported yet: write locally, then upload)",
              o->out);
    return GFC_EXIT_USAGE;
  }
  /* As build: a file-size limit fails a write (EFBIG) instead of killing
   * the process; the first SIGINT or SIGTERM stops the build cleanly. */
  signal(SIGXFSZ, SIG_IGN);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_RESETHAND; /* a second ^C kills at once */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  if (!out_ok(o, &made))
    goto out;
  gf_folder_opts fo = {.follow_symlinks = o->follow_symlinks,
                       .skip_bad = o->skip_bad};
  if ((rc = gf_storage_open(o->src, &o->remote, &j.st)) != 0 ||
      (rc = gf_folder_scan_in(j.st, o->labels, &fo, &folder)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  j.folder = folder;
  for (uint64_t k = 0; o->quiet && k < folder->skipped_count; k++)
    gfc_error(CMD, "skipped %s", folder->skipped[k]);

  /* The source is usable: OUT made, or its old shards removed. */
  if (made && mkdir(o->out, 0777) != 0) {
    gfc_error(CMD, "cannot create %s: %s", o->out, strerror(errno));
    made = false;
    goto out;
  }
  char unused[8];
  long old = made ? 0 : out_shards(o->out, o->force, unused, sizeof unused);
  if (old < 0)
    goto out;
  if (old > 0 && !o->quiet && !json)
    gfc_error(CMD, "--force: removed the %ld shard%s that %s held", old,
              old == 1 ? "" : "s", o->out);
  char host[64], tag[96];
  host_tag(host, sizeof host);
  snprintf(tag, sizeof tag, "%ld-%s", (long)getpid(), host);
  gf_wds_writer_opts wo = {.shard_bytes = o->shard_size, .tmp_tag = tag};
  if ((rc = gf_wds_writer_open(o->out, &wo, &w)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  written = true;

  nt = o->threads ? o->threads : gfc_cores();
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
    int e = pthread_create(&tids[started], NULL, worker, &j);
    if (e) {
      gfc_error(CMD, "cannot start a thread: %s", strerror(e));
      goto out;
    }
  }
  bool ok = write_in_order(&j, w, &t);
  stop_workers(&j);
  for (unsigned i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  started = 0;
  if (!ok || g_signal)
    goto out;
  gf_wds_writer_stats_get(w, &t.w);
  if (t.w.samples == 0) {
    gfc_error(CMD, "all %llu sources were skipped; nothing to write",
              (unsigned long long)folder->count);
    goto out;
  }
  if ((rc = gf_wds_writer_close(w)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  if (g_signal)
    goto out;
  gf_wds_writer_stats_get(w, &t.w);
  double el = gfc_now() - t0;
  if (json)
    print_json(o, folder, &t, el);
  else if (!o->quiet)
    print_text(o, folder, &t, el, nt);
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
  if (status != GFC_EXIT_OK && written) {
    /* No part of a failed build is left: its shards removed, OUT too
     * when this build made it. */
    int removed = gf_wds_writer_remove_shards(w);
    if (removed < 0)
      gfc_error_last(CMD, removed);
    else if (removed > 0)
      gfc_error(CMD, "removed the %d shard%s written to %s", removed,
                removed == 1 ? "" : "s", o->out);
  }
  gf_wds_writer_free(w);
  if (status != GFC_EXIT_OK && made && rmdir(o->out) != 0 && errno != ENOENT)
    gfc_error(CMD, "note: cannot remove %s, made by this build: %s", o->out,
              strerror(errno));
  for (int k = 0; k < LISTED; k++) {
    free(t.skipped_msg[k]);
    free(t.renamed_msg[k]);
  }
  gf_folder_free(folder);
  gf_storage_close(j.st);
  pthread_cond_destroy(&j.can_claim);
  pthread_cond_destroy(&j.ready);
  pthread_mutex_destroy(&j.lock);
  if (status != GFC_EXIT_OK && g_signal) {
    gfc_error(CMD, "interrupted by %s; no shard of this build is left in %s",
              g_signal == SIGINT ? "SIGINT" : "SIGTERM", o->out);
    status = g_signal == SIGINT ? GFC_EXIT_INTERRUPTED : GFC_EXIT_FAIL;
  }
  return status;
}
