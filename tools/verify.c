/* gpufeed verify: checks the index checksum, then reads (checksum) and
 * decodes every sample in parallel, comparing the decoded shape with the
 * index. Bad samples are listed by index, shard, offset and source. Over
 * WebDataset tar shards: every sample read as a loader reads it (its
 * extent, checked against the shard's index: the headers, the label) and
 * its image decoded. */
#include "cli.h"

#include "common/common.h"
#include "format/format.h"
#include "format/wds_set.h"
#include "format/wds_spec.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "verify"
/* The bad samples listed (those of the lowest indices); all are counted. */
#define BAD_LISTED 50

typedef struct bad_sample {
  uint64_t index;
  char *msg;
} bad_sample;

typedef struct verify_job {
  const gf_dataset *ds;
  const gf_wds_set *set; /* tar shards instead of ds */
  uint64_t count;
  atomic_uint_fast64_t next;
  atomic_uint_fast64_t done;
  atomic_uint_fast64_t nbad;
  pthread_mutex_t lock;
  bad_sample list[BAD_LISTED]; /* under lock */
  size_t listed;
} verify_job;

static const char *base_name(const char *p) {
  const char *s = p ? strrchr(p, '/') : NULL;
  return s ? s + 1 : p ? p : "";
}

/* The reason part of the thread's last error message: without the "FILE: ",
 * "sample N: " and "offset O: " lead that our own line already gives. */
static const char *reason(int rc) {
  const gf_error_info *e = gf_last_error();
  if (e->code != rc || !e->message[0])
    return gf_strerror(rc);
  const char *m = e->message;
  size_t pl = strlen(e->path);
  if (pl && strncmp(m, e->path, pl) == 0 && m[pl] == ':' && m[pl + 1] == ' ')
    m += pl + 2;
  static const char *const leads[] = {"sample ", "offset "};
  for (int k = 0; k < 2; k++) {
    size_t ll = strlen(leads[k]);
    if (strncmp(m, leads[k], ll) != 0)
      continue;
    const char *p = m + ll;
    while (*p >= '0' && *p <= '9')
      p++;
    if (p > m + ll && p[0] == ':' && p[1] == ' ')
      m = p + 2;
  }
  return m;
}

/* Keeps msg among the listed bad samples: those of the lowest indices. */
static void add_listed(verify_job *j, uint64_t idx, const char *buf) {
  pthread_mutex_lock(&j->lock);
  size_t slot = j->listed;
  if (slot == BAD_LISTED) {
    /* Keep the lowest indices: replace the highest kept one if above. */
    size_t hi = 0;
    for (size_t k = 1; k < BAD_LISTED; k++)
      if (j->list[k].index > j->list[hi].index)
        hi = k;
    slot = j->list[hi].index > idx ? hi : BAD_LISTED;
  }
  if (slot < BAD_LISTED) {
    char *m = strdup(buf);
    if (m) {
      if (slot < j->listed)
        free(j->list[slot].msg);
      else
        j->listed++;
      j->list[slot] = (bad_sample){idx, m};
    }
  }
  pthread_mutex_unlock(&j->lock);
}

static void add_bad(verify_job *j, uint64_t idx, const gf_sample_info *s,
                    bool have_info, const char *why) {
  atomic_fetch_add(&j->nbad, 1);
  char buf[2048];
  if (have_info)
    snprintf(buf, sizeof buf,
             "sample %" PRIu64 ": %s offset %" PRIu64 " (source %.*s): %s", idx,
             base_name(gf_dataset_shard_path(j->ds, s->shard)), s->offset,
             (int)(s->source_len > 512 ? 512 : s->source_len),
             s->source ? s->source : "", why);
  else if (gf_last_error()->offset != GF_NO_INDEX)
    snprintf(buf, sizeof buf, "sample %" PRIu64 ": %s offset %" PRIu64 ": %s",
             idx, base_name(gf_last_error()->path), gf_last_error()->offset,
             why);
  else
    snprintf(buf, sizeof buf, "sample %" PRIu64 ": %s", idx, why);
  add_listed(j, idx, buf);
}

/* Grows *buf to at least need bytes (need is already checked against the
 * limits). */
static int reserve(void **buf, size_t *cap, uint64_t need) {
  if (need <= *cap)
    return 0;
  void *p = realloc(*buf, need);
  if (!p)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate %" PRIu64 " bytes", need);
  *buf = p;
  *cap = need;
  return 0;
}

static void check_one(verify_job *j, uint64_t i, void **rbuf, size_t *rcap,
                      void **dbuf, size_t *dcap) {
  gf_sample_info s;
  gf_error_clear();
  int rc = gf_dataset_sample_info(j->ds, i, &s);
  if (rc != 0) {
    add_bad(j, i, NULL, false, reason(rc));
    return;
  }
  gf_limits lim = gf_limits_resolve(NULL);
  if (s.length > lim.max_bytes) {
    char why[128];
    snprintf(why, sizeof why,
             "stored length %" PRIu64 " exceeds the limit of %" PRIu64 " bytes",
             s.length, lim.max_bytes);
    add_bad(j, i, &s, true, why);
    return;
  }
  rc = reserve(rbuf, rcap, s.length ? s.length : 1);
  int64_t got = rc ? rc : gf_dataset_read(j->ds, i, *rbuf, *rcap);
  if (got < 0) {
    add_bad(j, i, &s, true, reason((int)got));
    return;
  }
  gf_decode_opts opts = GF_DECODE_OPTS_INIT;
  opts.keep_16bit = s.shape.dtype == GF_DTYPE_U16;
  gf_shape want, out;
  rc =
      gf_decode_shape((int)s.codec, *rbuf, (size_t)got, &s.shape, &opts, &want);
  if (rc == 0)
    rc = reserve(dbuf, dcap, gf_shape_bytes(&want));
  if (rc == 0)
    rc = gf_decode((int)s.codec, *rbuf, (size_t)got, &s.shape, &opts, *dbuf,
                   *dcap, &out);
  if (rc != 0) {
    char why[1200];
    snprintf(why, sizeof why, "decoding %s: %s",
             gf_codec_name((int)s.codec) ? gf_codec_name((int)s.codec) : "?",
             reason(rc));
    add_bad(j, i, &s, true, why);
    return;
  }
  if (memcmp(&out, &s.shape, sizeof out) != 0) {
    char why[256];
    snprintf(why, sizeof why,
             "decoded shape %ux%ux%u %s differs from the index's %ux%ux%u %s",
             out.height, out.width, out.channels,
             out.dtype == GF_DTYPE_U16 ? "u16" : "u8", s.shape.height,
             s.shape.width, s.shape.channels,
             s.shape.dtype == GF_DTYPE_U16 ? "u16" : "u8");
    add_bad(j, i, &s, true, why);
  }
}

/* Sample i of tar shards: read, checked and taken apart, its image
 * decoded. */
static void check_shard_sample(verify_job *j, uint64_t i, void **rbuf,
                               size_t *rcap, void **dbuf, size_t *dcap) {
  gf_error_clear();
  gf_wds_extent x;
  uint64_t io = 0, il = 0;
  int64_t label;
  gf_wds_span spans[GF_FIELDS_MAX];
  int rc = gf_wds_set_extent(j->set, i, &x);
  gf_limits lim = gf_limits_resolve(NULL);
  if (rc == 0 && x.length > lim.max_bytes)
    rc = gf_fail(GF_ELIMIT, NULL, i, GF_NO_INDEX,
                 "its extent of %" PRIu64 " bytes exceeds the limit of %" PRIu64
                 " bytes",
                 x.length, lim.max_bytes);
  if (rc == 0)
    rc = reserve(rbuf, rcap, x.length ? x.length : 1);
  if (rc == 0)
    rc = gf_object_read(x.obj, *rbuf, x.offset, x.length);
  if (rc == 0)
    rc = gf_wds_set_unpack(j->set, i, *rbuf, x.length, &io, &il, &label,
                           spans); /* --fields: checked, bounded */
  const uint8_t *img = (const uint8_t *)*rbuf + io;
  int codec = rc == 0 ? gf_folder_file_codec(x.codec, NULL, img, il) : rc;
  gf_shape want, out;
  gf_decode_opts opts = GF_DECODE_OPTS_INIT;
  rc = codec < 0 ? codec : 0;
  if (rc == 0)
    rc = gf_decode_shape(codec, img, il, NULL, &opts, &want);
  if (rc == 0)
    rc = reserve(dbuf, dcap, gf_shape_bytes(&want));
  if (rc == 0)
    rc = gf_decode(codec, img, il, NULL, &opts, *dbuf, *dcap, &out);
  if (rc != 0) {
    char name[1200], why[2400];
    gf_wds_set_name(j->set, i, name, sizeof name);
    snprintf(why, sizeof why, "%s: %s", name, reason(rc));
    atomic_fetch_add(&j->nbad, 1);
    add_listed(j, i, why);
  }
}

static void *verify_worker(void *arg) {
  verify_job *j = arg;
  void *rbuf = NULL, *dbuf = NULL;
  size_t rcap = 0, dcap = 0;
  for (;;) {
    uint64_t i = atomic_fetch_add(&j->next, 1);
    if (i >= j->count)
      break;
    if (j->set)
      check_shard_sample(j, i, &rbuf, &rcap, &dbuf, &dcap);
    else
      check_one(j, i, &rbuf, &rcap, &dbuf, &dcap);
    atomic_fetch_add(&j->done, 1);
  }
  free(rbuf);
  free(dbuf);
  return NULL;
}

static int by_index(const void *pa, const void *pb) {
  const bad_sample *a = pa, *b = pb;
  return a->index < b->index ? -1 : a->index > b->index;
}

int gfc_verify(const gfc_verify_opts *o) {
  int status = GFC_EXIT_FAIL;
  gf_dataset *ds = NULL;
  verify_job j = {0};
  pthread_mutex_init(&j.lock, NULL);
  pthread_t *tids = NULL;
  unsigned started = 0;
  bool index_bad = false;

  char *root = NULL, **names = NULL;
  uint32_t nshards = 0;
  gf_storage *st = NULL;
  gf_wds_set *set = NULL;
  int rc;
  if (gf_wds_spec_claims(o->dataset)) {
    gf_wds_set_opts wo = {.image_fields = o->shards.image_fields,
                          .label = o->shards.label,
                          .index = o->shards.index,
                          .threads = o->shards.threads,
                          .index_bytes = o->shards.index_bytes,
                          .fields = o->shards.fields,
                          .field_bytes = o->shards.field_bytes};
    rc = gf_wds_spec_parse(o->dataset, 0, &root, &names, &nshards);
    if (rc == 0)
      rc = gf_storage_open(root, &o->remote, &st);
    if (rc == 0)
      rc = gf_wds_set_open(st, names, nshards, &wo, &set);
    if (rc != 0) {
      gfc_error_last(CMD, rc);
      goto out;
    }
    j.set = set;
    j.count = gf_wds_set_count(set);
  } else if ((rc = gf_dataset_open_with(o->dataset, &o->remote, &ds)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  } else {
    j.ds = ds;
    j.count = gf_dataset_count(ds);
  }
  if (ds && (rc = gf_dataset_check_index(ds)) != 0) {
    /* Go on: every record is still checked on its own when read. */
    gfc_error_last(CMD, rc);
    index_bad = true;
  }
  unsigned nt = o->threads ? o->threads : gfc_cores();
  if (nt > j.count)
    nt = j.count ? (unsigned)j.count : 1;
  if (!(tids = calloc(nt, sizeof *tids))) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  gfc_progress prog;
  gfc_progress_start(&prog, CMD, "samples", j.count, o->quiet);
  for (; started < nt; started++) {
    int e = pthread_create(&tids[started], NULL, verify_worker, &j);
    if (e) {
      gfc_error(CMD, "cannot start a thread: %s", strerror(e));
      break;
    }
  }
  if (started == 0)
    goto out;
  while (prog.enabled && atomic_load(&j.done) < j.count) {
    gfc_progress_update(&prog, atomic_load(&j.done));
    nanosleep(&(struct timespec){0, 100000000}, NULL);
  }
  for (unsigned i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  gfc_progress_end(&prog);
  if (started < nt)
    goto out;

  char shown[1024];
  gfc_shown(o->dataset, &o->remote, shown, sizeof shown);
  uint64_t nbad = atomic_load(&j.nbad);
  qsort(j.list, j.listed, sizeof j.list[0], by_index);
  for (size_t k = 0; k < j.listed; k++)
    printf("%s\n", j.list[k].msg);
  if (nbad > j.listed)
    printf("... and %" PRIu64 " more bad samples\n", nbad - j.listed);
  if (nbad) {
    printf("%" PRIu64 " of %" PRIu64 " samples bad\n", nbad, j.count);
    gfc_error(CMD, "%s: %" PRIu64 " of %" PRIu64 " samples bad%s", shown, nbad,
              j.count, index_bad ? ", and the index checksum is wrong" : "");
  } else if (index_bad) {
    gfc_error(CMD,
              "%s: the index checksum is wrong (all %" PRIu64
              " samples read and decoded)",
              shown, j.count);
  } else {
    if (!o->quiet)
      printf("all %" PRIu64 " samples OK\n", j.count);
    status = GFC_EXIT_OK;
  }
out:
  for (size_t k = 0; k < j.listed; k++)
    free(j.list[k].msg);
  free(tids);
  gf_dataset_close(ds);
  gf_wds_set_close(set);
  gf_storage_close(st);
  gf_wds_spec_free(root, names, nshards);
  pthread_mutex_destroy(&j.lock);
  return status;
}
