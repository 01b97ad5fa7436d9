/* The dataset's shards (see dataset_impl.h): each opened and checked
 * against the shard table and the index, at open (a local dataset) or on
 * first use (no descriptors: HTTP, S3), and for a batch several at once,
 * so that a batch of random samples of many shards waits for a few round
 * trips rather than one a shard. */
#include "format/dataset_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Threads that open the shards a batch needs at once (each an open and a
 * header read: two round trips over a network; the threads wait, they do
 * not compute). As many as a remote storage's default connections: a
 * batch of random samples of 100 shards opens them in two waves (16
 * threads took seven, 0.35 s at 25 ms a round trip). */
#define GF_SHARD_OPEN_THREADS 64u

static const char *open_hint(int err) {
  return err == -EMFILE || err == -ENFILE
             ? " (each shard holds a file open: raise the limit on open "
               "files, e.g. ulimit -n, or build with larger shards)"
             : "";
}

static int check_shard(const gf_dataset *ds, uint32_t i, uint64_t want_size,
                       gf_object *o) {
  const char *path = o->display;
  uint64_t size = o->size;
  if (size < want_size)
    return gf_fail(GF_ETRUNCATED, path, GF_NO_INDEX, size,
                   "shard %u is %llu bytes long; the index says %llu", i,
                   (unsigned long long)size, (unsigned long long)want_size);
  if (size > want_size)
    return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, want_size,
                   "shard %u is %llu bytes long; the index says %llu", i,
                   (unsigned long long)size, (unsigned long long)want_size);
  uint8_t h[GF_SHARD_HEADER_SIZE];
  int64_t n = gf_object_read_upto(o, h, 0, sizeof h);
  if (n < 0) {
    char why[512];
    gf_dataset__storage_why(why, sizeof why);
    return gf_fail((int)n, path, GF_NO_INDEX, 0, "reading the shard header: %s",
                   why);
  }
  if (n < (int64_t)sizeof h)
    return gf_fail(GF_ETRUNCATED, path, GF_NO_INDEX, (uint64_t)n,
                   "shard %u ended while reading its header", i);
  if (memcmp(h + GF_SH_MAGIC, GF_SHARD_MAGIC, 8) != 0)
    return gf_fail(GF_EFORMAT, path, GF_NO_INDEX, 0,
                   "not a gpufeed shard: expected the magic \"%s\"",
                   GF_SHARD_MAGIC);
  uint32_t version = gf_le32(h + GF_SH_VERSION);
  if (version != GF_SHARD_VERSION)
    return gf_fail(GF_EVERSION, path, GF_NO_INDEX, GF_SH_VERSION,
                   "shard format version %u; this build of gpufeed reads "
                   "version %u",
                   version, GF_SHARD_VERSION);
  uint32_t crc = gf_crc32c(0, h, GF_SH_HEADER_CRC);
  uint32_t want = gf_le32(h + GF_SH_HEADER_CRC);
  if (crc != want)
    return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, 0,
                   "shard header checksum 0x%08x, expected 0x%08x", crc, want);
  uint32_t num = gf_le32(h + GF_SH_SHARD);
  uint32_t align = gf_le32(h + GF_SH_ALIGNMENT);
  uint32_t start = gf_le32(h + GF_SH_DATA_START);
  uint64_t id = gf_le64(h + GF_SH_DATASET_ID);
  if (num != i || align != ds->alignment || start != ds->data_start)
    return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, 0,
                   "shard header says shard %u, alignment %u, data at %u; "
                   "expected shard %u, alignment %u, data at %llu",
                   num, align, start, i, ds->alignment,
                   (unsigned long long)ds->data_start);
  if (id != ds->dataset_id)
    return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, GF_SH_DATASET_ID,
                   "shard belongs to dataset 0x%016llx, not to this index's "
                   "0x%016llx (a shard from another dataset?)",
                   (unsigned long long)id, (unsigned long long)ds->dataset_id);
  for (unsigned k = GF_SH_RESERVED; k < GF_SH_HEADER_CRC; k++)
    if (h[k])
      return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, k,
                     "shard header: reserved bytes are not zero");
  return 0;
}

int gf_dataset__open_shard(const gf_dataset *ds, uint32_t i, uint64_t want_size,
                           gf_object **out) {
  *out = NULL;
  char name[32];
  snprintf(name, sizeof name, GF_SHARD_FMT, i);
  gf_object *o;
  int rc = gf_object_open(ds->st, name, 0, &o);
  if (rc < 0) {
    char why[512], path[1024];
    gf_dataset__storage_why(why, sizeof why);
    gf_storage_name_display(ds->st, name, path, sizeof path);
    if (rc == -EINVAL || rc == -EISDIR)
      return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, GF_NO_INDEX,
                     "shard %u is not a regular file", i);
    return gf_fail(rc, path, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot open shard %u of %u: %s%s", i, ds->nshards, why,
                   open_hint(rc));
  }
  rc = check_shard(ds, i, want_size, o);
  if (rc < 0) {
    gf_object_close(o);
    return rc;
  }
  *out = o;
  return 0;
}

int gf_dataset__shard_get(const gf_dataset *ds, uint32_t i, gf_object **out) {
  gf_shard *s = &gf_dataset__mut(ds)->shards[i];
  gf_object *o = atomic_load_explicit(&s->obj, memory_order_acquire);
  if (o || !ds->lazy_shards) {
    *out = o;
    return o ? 0
             : gf_fail(GF_EINTERNAL, s->path, GF_NO_INDEX, GF_NO_INDEX,
                       "shard %u is not open", i);
  }
  pthread_mutex_t *mu = &gf_dataset__mut(ds)->mu;
  pthread_mutex_lock(mu);
  while (!(o = atomic_load_explicit(&s->obj, memory_order_acquire)) &&
         s->opening)
    pthread_cond_wait(&gf_dataset__mut(ds)->cv, mu);
  if (o) {
    pthread_mutex_unlock(mu);
    *out = o;
    return 0;
  }
  s->opening = true;
  pthread_mutex_unlock(mu);
  int rc = gf_dataset__open_shard(ds, i, s->size, &o);
  pthread_mutex_lock(mu);
  s->opening = false;
  if (rc == 0)
    atomic_store_explicit(&s->obj, o, memory_order_release);
  pthread_cond_broadcast(&gf_dataset__mut(ds)->cv);
  pthread_mutex_unlock(mu);
  *out = o;
  return rc;
}

/* Opens the listed shards (lazy shards not yet open), several at once. */
typedef struct opener {
  const gf_dataset *ds;
  const uint32_t *list;
  size_t n;
  _Atomic size_t next;
} opener;

static void *opener_main(void *arg) {
  opener *op = arg;
  size_t k;
  while ((k = atomic_fetch_add(&op->next, 1)) < op->n) {
    gf_object *o;
    /* A failure is the sample's to report, when it is used. */
    (void)gf_dataset__shard_get(op->ds, op->list[k], &o);
  }
  return NULL;
}

static void open_shards(const gf_dataset *ds, const uint32_t *list, size_t n) {
  opener op = {.ds = ds, .list = list, .n = n};
  atomic_init(&op.next, 0);
  pthread_t t[GF_SHARD_OPEN_THREADS];
  size_t started = 0;
  gf_error_info saved = *gf_last_error();
  while (started + 1 < GF_SHARD_OPEN_THREADS && started + 1 < n &&
         pthread_create(&t[started], NULL, opener_main, &op) == 0)
    started++;
  opener_main(&op); /* the calling thread opens its share */
  for (size_t i = 0; i < started; i++)
    pthread_join(t[i], NULL);
  gf_error_restore(&saved);
}

gf_object *gf_dataset_shard_object(const gf_dataset *ds, uint32_t i) {
  return ds && i < ds->nshards
             ? atomic_load_explicit(&ds->shards[i].obj, memory_order_acquire)
             : NULL;
}
int gf_dataset_shard_open(const gf_dataset *ds, uint32_t i, gf_object **out) {
  if (!ds || i >= ds->nshards)
    return gf_fail(-ERANGE, ds ? ds->index_path : NULL, GF_NO_INDEX,
                   GF_NO_INDEX, "no shard %u", i);
  return gf_dataset__shard_get(ds, i, out);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

int gf_dataset_prepare(const gf_dataset *ds, const uint64_t *idx, size_t n,
                       uint8_t *unready) {
  if (unready)
    memset(unready, 0, n);
  if (!ds || !ds->pages || !n)
    return 0;
  gf_range *r = malloc(n * sizeof *r);
  if (!r)
    return gf_fail(-ENOMEM, ds->index_path, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory");
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (idx[i] < ds->count)
      r[m++] =
          (gf_range){ds->records_off + idx[i] * GF_RECORD_SIZE, GF_RECORD_SIZE};
  int rc = gf_pages_load(ds->pages, r, m, GF_NO_INDEX);
  /* The shards these records name, not open yet, opened together. A
   * record is not checked here (its use checks it): a damaged one costs
   * at most a needless open. */
  uint32_t *list = ds->lazy_shards ? malloc(m * sizeof *list) : NULL;
  size_t nl = 0;
  for (size_t i = 0; list && i < m; i++) {
    if (!gf_pages_ready(ds->pages, r[i].off, r[i].len))
      continue;
    uint32_t sh = gf_le32(ds->map + r[i].off + GF_REC_SHARD);
    if (sh < ds->nshards &&
        !atomic_load_explicit(&ds->shards[sh].obj, memory_order_acquire))
      list[nl++] = sh;
  }
  if (nl > 1) {
    qsort(list, nl, sizeof *list, cmp_u32);
    size_t u = 1;
    for (size_t i = 1; i < nl; i++)
      if (list[i] != list[u - 1])
        list[u++] = list[i];
    nl = u;
  }
  if (nl)
    open_shards(ds, list, nl);
  for (size_t i = 0; unready && i < n; i++) {
    uint64_t off = ds->records_off + idx[i] * GF_RECORD_SIZE;
    bool ok =
        idx[i] < ds->count && gf_pages_ready(ds->pages, off, GF_RECORD_SIZE);
    uint32_t sh = ok ? gf_le32(ds->map + off + GF_REC_SHARD) : 0;
    unready[i] =
        !ok || sh >= ds->nshards ||
        !atomic_load_explicit(&ds->shards[sh].obj, memory_order_acquire);
  }
  free(list);
  free(r);
  return rc;
}
