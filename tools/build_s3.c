/* `gpufeed build SRC s3://bucket/prefix`: the dataset is written as any
 * other, into a local staging folder (build.c), but each shard is uploaded
 * as soon as the writer closes it (final at once: the dataset id is chosen
 * at the start, format.h's gf_writer_opts.dataset_id) and its local copy
 * removed, so that the staging folder holds a few shards at a time, not
 * the dataset: at most QUEUED waiting and FILES_AT_ONCE uploading, the
 * writer waits for room. Parts of large shards go in parallel (bounded
 * memory: io/s3_upload.h). The index goes last, once every shard is in, so
 * that a reader never opens a dataset whose shards are not all there. A
 * dataset already at the prefix is refused unless --force, which removes
 * its index before the first upload (its readers then fail by name, never
 * mix versions) and its shards beyond the new count last. A failed or
 * interrupted build aborts its multipart uploads, writes no index and
 * deletes the shards it uploaded. */
#include "cli.h"

#include "common/common.h"
#include "format/format.h"
#include "io/s3_client.h"
#include "io/s3_upload.h"
#include "io/storage.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD "build"
#define PART_SIZE (16ull << 20)
#define PARALLEL 8u
#define FILES_AT_ONCE 4u
#define QUEUED 4u

bool gfc_is_s3(const char *location) {
  return location && strncasecmp(location, "s3://", 5) == 0;
}

struct gfc_s3_out {
  const gfc_build_opts *o;
  gf_s3_client *c;
  gf_s3_uploader *u;
  bool had_index;     /* a dataset was there (--force replaces it) */
  bool index_removed; /* its index deleted: it is no dataset any more */
  bool published;     /* the index is in: nothing to roll back */
  /* The shards handed by the writer and their uploads. */
  const char *dir; /* the staging folder */
  const atomic_int *interrupted;
  pthread_t t[FILES_AT_ONCE];
  unsigned started;
  bool threads_ok; /* mu and cv made */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t handed, taken, finished; /* shards: handed, being/been uploaded,
                                       uploaded or failed */
  uint32_t cap;                     /* of the arrays */
  uint64_t *sizes;
  uint8_t *sent; /* per shard: 1 once its upload began (it may be in the
                    bucket even when the upload was cut: the store may
                    have taken it before the reply was lost) */
  bool closing;      /* no more shards will come */
  uint64_t bytes_handed, bytes_done;
  int failed; /* the first error's code (0: none) */
  gf_error_info err;
};

/* Whether name is a shard of a dataset, and its number. */
static bool shard_number(const char *name, uint32_t *n) {
  unsigned v;
  char tail;
  if (sscanf(name, "shard-%6u.gf%c", &v, &tail) != 2 || tail != 's' ||
      strlen(name) != 16)
    return false;
  *n = v;
  return true;
}

int gfc_s3_out_open(const gfc_build_opts *o, gfc_s3_out **out) {
  *out = NULL;
  gfc_s3_out *p = calloc(1, sizeof *p);
  if (!p) {
    gfc_error(CMD, "out of memory");
    return -ENOMEM;
  }
  p->o = o;
  char why[600];
  int rc = gf_s3_client_open(o->out, &o->remote, &p->c);
  if (rc == 0)
    rc = gf_s3_uploader_create(p->c, &o->remote, PART_SIZE, PARALLEL, &p->u,
                               why, sizeof why);
  else
    why[0] = '\0';
  if (rc < 0) {
    if (why[0])
      gfc_error(CMD, "%s: %s", o->out, why);
    else
      gfc_error_last(CMD, rc);
    gfc_s3_out_close(p);
    return rc;
  }
  /* A dataset there already: its index. */
  gf_storage *st = NULL;
  gf_stat s;
  if ((rc = gf_storage_open(o->out, &o->remote, &st)) == 0)
    rc = gf_storage_stat(st, GF_INDEX_NAME, false, &s);
  gf_storage_close(st);
  if (rc == 0) {
    p->had_index = true;
    if (!o->force) {
      gfc_error(CMD,
                "%s already holds a dataset (%s/%s); use --force to replace "
                "it",
                o->out, p->c->display_root, GF_INDEX_NAME);
      gfc_s3_out_close(p);
      return -EEXIST;
    }
  } else if (rc != -ENOENT) {
    gfc_error_last(CMD, rc);
    gfc_s3_out_close(p);
    return rc;
  }
  gf_error_clear();
  *out = p;
  return 0;
}

/* ---- the shards' uploads ------------------------------------------------ */

static void *uploader_main(void *arg) {
  gfc_s3_out *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->failed && p->taken == p->handed && !p->closing)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->failed || p->taken == p->handed)
      break;
    uint32_t i = p->taken++;
    uint64_t size = p->sizes[i];
    p->sent[i] = 1;
    pthread_cond_broadcast(&p->cv); /* room for the writer */
    pthread_mutex_unlock(&p->mu);
    char name[32], path[PATH_MAX];
    snprintf(name, sizeof name, GF_SHARD_FMT, i);
    snprintf(path, sizeof path, "%s/%s", p->dir, name);
    int rc = gf_s3_upload_file(p->u, path, size, name, NULL, NULL);
    if (rc == 0)
      unlink(path); /* in the bucket: the staging copy is not needed */
    pthread_mutex_lock(&p->mu);
    p->finished++;
    if (rc == 0) {
      p->bytes_done += size;
    } else if (!p->failed) {
      p->err = *gf_last_error();
      p->failed = rc;
    }
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int gfc_s3_stream_start(gfc_s3_out *p, const char *dir,
                        const atomic_int *interrupted) {
  p->dir = dir;
  p->interrupted = interrupted;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, &ca);
  pthread_condattr_destroy(&ca);
  p->threads_ok = true;
  /* The dataset replaced stops being one first: its readers fail, named,
   * rather than read the new shards under the old index. */
  int rc;
  if (p->had_index) {
    if ((rc = gf_s3_delete(p->u, GF_INDEX_NAME)) < 0) {
      gfc_error_last(CMD, rc);
      return rc;
    }
    p->index_removed = true;
  }
  for (; p->started < FILES_AT_ONCE; p->started++)
    if (pthread_create(&p->t[p->started], NULL, uploader_main, p) != 0)
      break;
  if (!p->started) {
    gfc_error(CMD, "cannot start a thread to upload with");
    return -EAGAIN;
  }
  return 0;
}

/* The first upload's failure as this thread's error. Under mu. */
static int failure(gfc_s3_out *p) {
  gf_error_restore(&p->err);
  return p->failed;
}

int gfc_s3_on_shard(void *ctx, uint32_t shard, const char *path,
                    uint64_t size) {
  gfc_s3_out *p = ctx;
  (void)path; /* the staging folder's GF_SHARD_FMT name: the threads know */
  int rc = 0;
  pthread_mutex_lock(&p->mu);
  if (shard != p->handed) {
    rc = -EINVAL; /* the writer hands shards in order */
  } else if (p->handed == p->cap) {
    uint32_t cap = p->cap ? p->cap * 2 : 64;
    uint64_t *s = realloc(p->sizes, cap * sizeof *s);
    if (s)
      p->sizes = s;
    uint8_t *u = s ? realloc(p->sent, cap) : NULL;
    if (u) {
      p->sent = u;
      memset(u + p->cap, 0, cap - p->cap);
      p->cap = cap;
    } else {
      rc = -ENOMEM;
    }
  }
  if (rc == 0) {
    p->sizes[p->handed++] = size;
    p->bytes_handed += size;
    pthread_cond_broadcast(&p->cv);
    /* Room on the staging disk: at most QUEUED shards wait. */
    while (!p->failed && !*p->interrupted && p->handed - p->taken > QUEUED) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      ts.tv_nsec += 100000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&p->cv, &p->mu, &ts);
    }
    if (p->failed)
      rc = failure(p);
    else if (*p->interrupted)
      rc = -ECANCELED;
  } else {
    gf_fail(rc, p->o->out, GF_NO_INDEX, GF_NO_INDEX,
            rc == -ENOMEM ? "out of memory for the shard table"
                          : "shard %u handed out of order",
            shard);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* Stops the threads (the shards queued are uploaded first unless an upload
 * failed or cancel). */
static void join_all(gfc_s3_out *p, bool cancel) {
  if (!p->threads_ok)
    return;
  if (cancel)
    gf_s3_uploader_cancel(p->u);
  pthread_mutex_lock(&p->mu);
  p->closing = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < p->started; i++)
    pthread_join(p->t[i], NULL);
  p->started = 0;
}

/* Deletes what this build uploaded (every shard whose upload began), after
 * a failure, on an uploader of its own: the build's is cancelled. */
static void roll_back(gfc_s3_out *p) {
  uint32_t n = 0, left = 0;
  gf_s3_uploader *u = NULL;
  char why[600];
  for (uint32_t i = 0; i < p->handed; i++) {
    if (!p->sent[i])
      continue;
    if (!u && gf_s3_uploader_create(p->c, &p->o->remote, PART_SIZE, PARALLEL,
                                    &u, why, sizeof why) < 0) {
      gfc_error(CMD, "%s: cannot remove the shards uploaded: %s", p->o->out,
                why);
      return;
    }
    char name[32];
    snprintf(name, sizeof name, GF_SHARD_FMT, i);
    if (gf_s3_delete(u, name) == 0)
      n++;
    else
      left++;
  }
  gf_s3_uploader_destroy(u);
  if (n)
    gfc_error(CMD, "%s: removed the %u shard%s this build had uploaded",
              p->o->out, n, n == 1 ? "" : "s");
  if (left)
    gfc_error(CMD, "%s: %u shard%s of this build could not be removed",
              p->o->out, left, left == 1 ? "" : "s");
}

/* The stale shards of the dataset replaced: numbered from nshards on. */
typedef struct stale {
  uint32_t from;
  char **names;
  uint32_t n, cap;
} stale;

static int on_entry(void *ctx, const gf_dirent *e) {
  stale *s = ctx;
  uint32_t k;
  if (e->type != GF_ENTRY_FILE || !shard_number(e->name, &k) || k < s->from)
    return 0;
  if (s->n == s->cap) {
    uint32_t c = s->cap ? s->cap * 2 : 16;
    char **v = realloc(s->names, c * sizeof *v);
    if (!v)
      return -ENOMEM;
    s->names = v;
    s->cap = c;
  }
  if (!(s->names[s->n] = strdup(e->name)))
    return -ENOMEM;
  s->n++;
  return 0;
}

static int remove_stale(gfc_s3_out *p, uint32_t nshards) {
  stale s = {.from = nshards};
  gf_storage *st = NULL;
  int rc = gf_storage_open(p->o->out, &p->o->remote, &st);
  if (rc == 0)
    rc = gf_storage_list(st, "", on_entry, &s);
  gf_storage_close(st);
  for (uint32_t i = 0; rc == 0 && i < s.n; i++)
    rc = gf_s3_delete(p->u, s.names[i]);
  for (uint32_t i = 0; i < s.n; i++)
    free(s.names[i]);
  free(s.names);
  return rc;
}

int gfc_s3_publish(gfc_s3_out *p) {
  const gfc_build_opts *o = p->o;
  /* The last shards still uploading. */
  gfc_progress prog;
  pthread_mutex_lock(&p->mu);
  p->closing = true;
  pthread_cond_broadcast(&p->cv);
  uint64_t total = p->bytes_handed, left = total - p->bytes_done;
  pthread_mutex_unlock(&p->mu);
  gfc_progress_start(&prog, CMD " upload", "MB", left >> 20, o->quiet);
  for (;;) {
    pthread_mutex_lock(&p->mu);
    bool done = p->finished == p->handed || p->failed;
    uint64_t now = p->bytes_done;
    pthread_mutex_unlock(&p->mu);
    gfc_progress_update(&prog, (now - (total - left)) >> 20);
    if (*p->interrupted)
      gf_s3_uploader_cancel(p->u);
    if (done || *p->interrupted)
      break;
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  join_all(p, false);
  gfc_progress_end(&prog);
  int rc;
  if (p->failed) {
    if (p->failed != -ECANCELED) {
      gf_error_restore(&p->err);
      gfc_error_last(CMD, p->failed);
    }
    return p->failed;
  }
  if (*p->interrupted)
    return -ECANCELED;
  /* Every shard is in: the index makes them a dataset. */
  char path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", p->dir, GF_INDEX_NAME);
  if (stat(path, &st) != 0) {
    rc = -errno;
    gfc_error(CMD, "%s: the staged index: %s", o->out, strerror(errno));
    return rc;
  }
  if ((rc = gf_s3_upload_file(p->u, path, (uint64_t)st.st_size, GF_INDEX_NAME,
                              NULL, NULL)) < 0) {
    gfc_error_last(CMD, rc);
    return rc;
  }
  p->published = true;
  if (p->had_index && (rc = remove_stale(p, p->handed)) < 0)
    gfc_error(CMD,
              "%s: the new dataset is in place, but removing the old one's "
              "extra shards failed: %s",
              o->out, gf_last_error()->message);
  if (!o->quiet) {
    gf_s3_upload_counters k;
    gf_s3_uploader_counters(p->u, &k);
    char b1[32];
    printf("  uploaded      %s in %u shard%s and the index to %s (%llu "
           "requests, %llu retried)\n",
           gfc_fmt_bytes(total + (uint64_t)st.st_size, b1, sizeof b1),
           p->handed, p->handed == 1 ? "" : "s", p->c->display_root,
           (unsigned long long)k.requests, (unsigned long long)k.retries);
  }
  return 0;
}

void gfc_s3_out_close(gfc_s3_out *p) {
  if (!p)
    return;
  if (!p->published) {
    join_all(p, true);
    roll_back(p);
    if (p->index_removed)
      gfc_error(CMD,
                "%s: the dataset that was there is gone (--force "
                "removed its index before the upload)",
                p->o->out);
  } else {
    join_all(p, false);
  }
  if (p->threads_ok) {
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
  }
  gf_s3_uploader_destroy(p->u);
  gf_s3_client_free(p->c);
  free(p->sizes);
  free(p->sent);
  free(p);
}
