/* The dataset reader (docs/FORMAT.md, "What the reader checks, and when"):
 * the index is mapped read-only, or, from a storage without descriptors
 * (HTTP, S3), read in pages on demand (pages.h): its header, summary and
 * shard and class tables at open, each records page when a record on it
 * is first used, the source names when asked for; either way it is
 * checked in O(1) of the sample count at open, each record is checked
 * when used, and stored bytes are checked against their CRC32C on every
 * read. Files are opened and read through the storage the dataset lies
 * in (io/storage.h). A local dataset opens and checks every shard at
 * open; one without descriptors opens each shard when a sample of it is
 * first used (the same checks), so that an open costs a few round trips
 * whatever the number of shards.
 *
 * This file holds the index and the accessors; dataset_shards.c the
 * shards (dataset_impl.h, what the two share).
 *
 * Threads: every accessor may run on any thread at once. What changes
 * after open (pages read, shards opened) is filled in once under a lock
 * and published with release stores; what is in memory never changes
 * after. */
#include "format/dataset_impl.h"
#include "format/pages.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The first read of an index without descriptors: the header and, in a
 * version 2 index, the summary, shard and class tables that follow it
 * (up to about 7,000 shards), with one round trip; a small index whole. */
#define GF_INDEX_FIRST_READ (64u << 10)
#ifdef GPUFEED_TESTING
uint32_t gf_dataset__test_first_read;
#endif

/* A table [off, off + size) inside [lo, hi) without overflow. */
static bool table_in(uint64_t off, uint64_t size, uint64_t lo, uint64_t hi) {
  return off >= lo && off <= hi && size <= hi - off;
}

static bool tables_overlap(uint64_t a, uint64_t as, uint64_t b, uint64_t bs) {
  if (!as || !bs)
    return false;
  return a < b + bs && b < a + as;
}

static int check_header(const uint8_t *h, size_t got, const char *path) {
  if (got < 8 || memcmp(h + GF_IH_MAGIC, GF_INDEX_MAGIC, 8) != 0) {
    /* A prefix of the magic is a cut-off index, anything else is not ours. */
    if (got < 8 && memcmp(h, GF_INDEX_MAGIC, got) == 0)
      return gf_fail(GF_ETRUNCATED, path, GF_NO_INDEX, GF_NO_INDEX,
                     "the index is only %zu bytes long (its header alone is "
                     "%u bytes)",
                     got, GF_INDEX_HEADER_SIZE);
    return gf_fail(GF_EFORMAT, path, GF_NO_INDEX, 0,
                   "not a gpufeed dataset index: expected the magic \"%s\"",
                   GF_INDEX_MAGIC);
  }
  if (got < GF_IH_VERSION + 4)
    return gf_fail(GF_ETRUNCATED, path, GF_NO_INDEX, GF_NO_INDEX,
                   "the index is only %zu bytes long (its header alone is "
                   "%u bytes)",
                   got, GF_INDEX_HEADER_SIZE);
  uint32_t version = gf_le32(h + GF_IH_VERSION);
  if (version < GF_INDEX_VERSION_MIN || version > GF_INDEX_VERSION)
    return gf_fail(GF_EVERSION, path, GF_NO_INDEX, GF_IH_VERSION,
                   "dataset format version %u; this build of gpufeed reads "
                   "versions %u to %u",
                   version, GF_INDEX_VERSION_MIN, GF_INDEX_VERSION);
  if (got < GF_INDEX_HEADER_SIZE)
    return gf_fail(GF_ETRUNCATED, path, GF_NO_INDEX, GF_NO_INDEX,
                   "the index is only %zu bytes long (its header alone is "
                   "%u bytes)",
                   got, GF_INDEX_HEADER_SIZE);
  uint32_t want = gf_le32(h + GF_IH_HEADER_CRC);
  uint32_t crc = gf_crc32c(0, h, GF_IH_HEADER_CRC);
  if (crc != want)
    return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, 0,
                   "index header checksum 0x%08x, expected 0x%08x", crc, want);
  return 0;
}

/* Field checks of a header whose CRC matched: what a writer of this version
 * never produces. */
static int check_fields(gf_dataset *ds, const uint8_t *h, const char *path,
                        uint64_t *file_size) {
#define BAD(field, ...)                                                        \
  gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, field, "index header: " __VA_ARGS__)
  uint32_t hsize = gf_le32(h + GF_IH_HEADER_SIZE);
  uint32_t rsize = gf_le32(h + GF_IH_RECORD_SIZE);
  uint32_t align = gf_le32(h + GF_IH_ALIGNMENT);
  if (hsize != GF_INDEX_HEADER_SIZE)
    return BAD(GF_IH_HEADER_SIZE, "header size %u, expected %u", hsize,
               GF_INDEX_HEADER_SIZE);
  if (rsize != GF_RECORD_SIZE)
    return BAD(GF_IH_RECORD_SIZE, "record size %u, expected %u", rsize,
               GF_RECORD_SIZE);
  if (!align || align > GF_MAX_ALIGNMENT || (align & (align - 1)))
    return BAD(GF_IH_ALIGNMENT,
               "alignment %u, expected a power of two from 1 to %u", align,
               GF_MAX_ALIGNMENT);
  ds->version = gf_le32(h + GF_IH_VERSION);
  uint32_t sm_size = 0;
  if (ds->version == 1) {
    if (gf_le32(h + GF_IH_FLAGS) || gf_le32(h + GF_IH_RESERVED))
      return BAD(GF_IH_FLAGS, "flags 0x%08x and reserved 0x%08x, expected 0",
                 gf_le32(h + GF_IH_FLAGS), gf_le32(h + GF_IH_RESERVED));
  } else {
    sm_size = gf_le32(h + GF_IH_SUMMARY_SIZE);
    if (gf_le32(h + GF_IH_FLAGS))
      return BAD(GF_IH_FLAGS, "flags 0x%08x, expected 0",
                 gf_le32(h + GF_IH_FLAGS));
    if (sm_size < GF_SUMMARY_HEAD_SIZE || sm_size > GF_SUMMARY_MAX_SIZE ||
        (sm_size - GF_SUMMARY_HEAD_SIZE) % GF_SUMMARY_ENTRY_SIZE)
      return BAD(GF_IH_SUMMARY_SIZE,
                 "summary table of %u bytes (expected %u + %u an entry, at "
                 "most %u entries)",
                 sm_size, GF_SUMMARY_HEAD_SIZE, GF_SUMMARY_ENTRY_SIZE,
                 GF_SUMMARY_MAX_ENTRIES);
  }
  ds->count = gf_le64(h + GF_IH_COUNT);
  ds->nshards = gf_le32(h + GF_IH_SHARDS);
  ds->nclasses = gf_le32(h + GF_IH_CLASSES);
  ds->alignment = align;
  ds->data_start = gf_shard_data_start(align);
  ds->dataset_id = gf_le64(h + GF_IH_DATASET_ID);
  ds->records_crc = gf_le32(h + GF_IH_RECORDS_CRC);
  ds->names_crc = gf_le32(h + GF_IH_NAMES_CRC);
  uint64_t fsize = gf_le64(h + GF_IH_FILE_SIZE);
  uint64_t rec_off = gf_le64(h + GF_IH_RECORDS_OFF);
  uint64_t sh_off = gf_le64(h + GF_IH_SHARDS_OFF);
  uint64_t cl_off = gf_le64(h + GF_IH_CLASSES_OFF);
  uint64_t cl_size = gf_le64(h + GF_IH_CLASSES_SIZE);
  uint64_t nm_off = gf_le64(h + GF_IH_NAMES_OFF);
  uint64_t nm_size = gf_le64(h + GF_IH_NAMES_SIZE);
  uint64_t rec_size, sh_size = (uint64_t)ds->nshards * 8;
  if (!gf_mul_u64(ds->count, GF_RECORD_SIZE, &rec_size))
    return BAD(GF_IH_COUNT, "sample count %llu is impossibly large",
               (unsigned long long)ds->count);
  if (!table_in(rec_off, rec_size, GF_INDEX_HEADER_SIZE, fsize) || rec_off % 8)
    return BAD(GF_IH_RECORDS_OFF,
               "records table (%llu records at offset %llu) does not lie "
               "8-aligned inside the %llu-byte file",
               (unsigned long long)ds->count, (unsigned long long)rec_off,
               (unsigned long long)fsize);
  if (!table_in(sh_off, sh_size, GF_INDEX_HEADER_SIZE, fsize) || sh_off % 8)
    return BAD(GF_IH_SHARDS_OFF,
               "shard table (%u shards at offset %llu) does not lie 8-aligned "
               "inside the %llu-byte file",
               ds->nshards, (unsigned long long)sh_off,
               (unsigned long long)fsize);
  if (!table_in(cl_off, cl_size, GF_INDEX_HEADER_SIZE, fsize))
    return BAD(GF_IH_CLASSES_OFF,
               "class table (%llu bytes at offset %llu) does not lie inside "
               "the %llu-byte file",
               (unsigned long long)cl_size, (unsigned long long)cl_off,
               (unsigned long long)fsize);
  if (!table_in(nm_off, nm_size, GF_INDEX_HEADER_SIZE, fsize))
    return BAD(GF_IH_NAMES_OFF,
               "source-name blob (%llu bytes at offset %llu) does not lie "
               "inside the %llu-byte file",
               (unsigned long long)nm_size, (unsigned long long)nm_off,
               (unsigned long long)fsize);
  if (!table_in(GF_INDEX_HEADER_SIZE, sm_size, GF_INDEX_HEADER_SIZE, fsize))
    return BAD(GF_IH_SUMMARY_SIZE,
               "summary table (%u bytes at offset %u) does not lie inside "
               "the %llu-byte file",
               sm_size, GF_INDEX_HEADER_SIZE, (unsigned long long)fsize);
  const uint64_t t[5][2] = {{rec_off, rec_size},
                            {sh_off, sh_size},
                            {cl_off, cl_size},
                            {nm_off, nm_size},
                            {GF_INDEX_HEADER_SIZE, sm_size}};
  for (int i = 0; i < 5; i++)
    for (int j = i + 1; j < 5; j++)
      if (tables_overlap(t[i][0], t[i][1], t[j][0], t[j][1]))
        return BAD(GF_IH_RECORDS_OFF, "index tables overlap");
  if (ds->count && !ds->nshards)
    return BAD(GF_IH_SHARDS, "%llu samples but no shard",
               (unsigned long long)ds->count);
  if ((cl_size == 0) != (ds->nclasses == 0))
    return BAD(GF_IH_CLASSES, "%u classes in a %llu-byte class table",
               ds->nclasses, (unsigned long long)cl_size);
  if (fsize > SIZE_MAX)
    return BAD(GF_IH_FILE_SIZE, "index of %llu bytes cannot be mapped",
               (unsigned long long)fsize);
  ds->records_off = rec_off;
  ds->summary_size = sm_size;
  ds->names_off = nm_off;
  ds->names_size = nm_size;
  *file_size = fsize;
  return 0;
#undef BAD
}

/* Class table: exactly nclasses names of 1..GF_MAX_NAME_LEN bytes, each
 * followed by a NUL. Pointers go into the map. */
static int parse_classes(gf_dataset *ds, const uint8_t *tab, uint64_t size,
                         uint64_t tab_off) {
  if (!ds->nclasses)
    return 0;
  /* Each name takes at least 2 bytes, so the count is bounded by the table
   * checked to lie in the file. */
  if (ds->nclasses > size / 2)
    return gf_fail(GF_ECORRUPT, ds->index_path, GF_NO_INDEX, tab_off,
                   "class table of %llu bytes cannot hold %u names",
                   (unsigned long long)size, ds->nclasses);
  ds->class_names = calloc(ds->nclasses, sizeof *ds->class_names);
  if (!ds->class_names)
    return gf_fail(-ENOMEM, ds->index_path, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for %u class names", ds->nclasses);
  uint64_t pos = 0;
  for (uint32_t i = 0; i < ds->nclasses; i++) {
    const uint8_t *s = tab + pos;
    const uint8_t *nul = memchr(s, 0, (size_t)(size - pos));
    uint64_t len = nul ? (uint64_t)(nul - s) : size - pos;
    if (!nul || len == 0 || len > GF_MAX_NAME_LEN)
      return gf_fail(GF_ECORRUPT, ds->index_path, GF_NO_INDEX, tab_off + pos,
                     "class table: name %u is not 1 to %u bytes followed by "
                     "a NUL",
                     i, GF_MAX_NAME_LEN);
    ds->class_names[i] = (const char *)s;
    pos += len + 1;
  }
  if (pos != size)
    return gf_fail(GF_ECORRUPT, ds->index_path, GF_NO_INDEX, tab_off + pos,
                   "class table: %llu bytes left after %u names",
                   (unsigned long long)(size - pos), ds->nclasses);
  return 0;
}

/* Bytes [off, off + len) of the index in memory: at once when mapped or
 * already read, else read now (pages.h). */
static int need(const gf_dataset *ds, uint64_t off, uint64_t len,
                uint64_t sample) {
  if (!ds->pages || gf_pages_ready(ds->pages, off, len))
    return 0;
  gf_range r = {off, len};
  return gf_pages_load(ds->pages, &r, 1, sample);
}

/* Maps the first fsize bytes of the index (a local file), or makes the
 * image its pages are read into (no descriptors), holding the `got` bytes
 * read from its start. */
static int load_index(gf_dataset *ds, gf_object *o, uint64_t fsize,
                      const uint8_t *first, size_t got) {
  const char *path = ds->index_path;
  if (fsize > SIZE_MAX)
    return gf_fail(-EFBIG, path, GF_NO_INDEX, GF_NO_INDEX,
                   "an index of %llu bytes does not fit the address space",
                   (unsigned long long)fsize);
  if (o->fd >= 0) {
    void *map = mmap(NULL, (size_t)fsize, PROT_READ, MAP_SHARED, o->fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX,
                     "mmap of %llu bytes: %s", (unsigned long long)fsize,
                     strerror(e));
    }
    ds->map = map;
    ds->mapped = true;
  } else {
    int rc = gf_pages_create(o, fsize, path, &ds->pages);
    if (rc < 0)
      return rc;
    gf_pages_fill(ds->pages, first, got);
    ds->map = gf_pages_image(ds->pages);
    ds->index_obj = o;
  }
  ds->map_len = (size_t)fsize;
  return 0;
}

int gf_dataset_open(const char *dir, gf_dataset **out) {
  return gf_dataset_open_with(dir, NULL, out);
}

int gf_dataset_open_with(const char *dir, const gf_remote_config *remote,
                         gf_dataset **out) {
  if (!dir || !out)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_dataset_open: dir and out are required");
  *out = NULL;
  gf_storage *st;
  int rc = gf_storage_open(dir, remote, &st);
  if (rc < 0)
    return rc;
  rc = gf_dataset_open_in(st, true, out);
  return rc;
}

int gf_dataset_open_in(gf_storage *st, bool own, gf_dataset **out) {
  *out = NULL;
  gf_dataset *ds = calloc(1, sizeof *ds);
  if (!ds) {
    if (own)
      gf_storage_close(st);
    return gf_fail(-ENOMEM, gf_storage_display(st), GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory");
  }
  ds->st = st;
  ds->own_st = own;
  pthread_mutex_init(&ds->mu, NULL);
  pthread_cond_init(&ds->cv, NULL);
  ds->sync_init = true;
  char ipath[4200];
  gf_storage_name_display(st, GF_INDEX_NAME, ipath, sizeof ipath);
  if (!(ds->index_path = strdup(ipath))) {
    gf_dataset_close(ds);
    return gf_fail(-ENOMEM, ipath, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  const char *path = ds->index_path;
  int rc = 0;
  gf_object *io;
  uint8_t *first = NULL;
  rc = gf_object_open(st, GF_INDEX_NAME, 0, &io);
  if (rc < 0) {
    char why[512];
    gf_dataset__storage_why(why, sizeof why);
    rc = rc == -EINVAL || rc == -EISDIR
             ? gf_fail(GF_EFORMAT, path, GF_NO_INDEX, GF_NO_INDEX,
                       "the dataset index is not a regular file")
             : gf_fail(rc, path, GF_NO_INDEX, GF_NO_INDEX,
                       "cannot open the dataset index: %s%s", why,
                       rc == -ENOENT ? " (not a gpufeed dataset folder?)" : "");
    goto fail;
  }
  /* The header; without descriptors, the first bytes with it: in a
   * version 2 index the summary, shard and class tables lie there. */
  bool paged = io->fd < 0;
  size_t want = paged ? GF_INDEX_FIRST_READ : GF_INDEX_HEADER_SIZE;
#ifdef GPUFEED_TESTING
  if (paged && gf_dataset__test_first_read)
    want = gf_dataset__test_first_read > GF_INDEX_HEADER_SIZE
               ? gf_dataset__test_first_read
               : GF_INDEX_HEADER_SIZE;
#endif
  first = malloc(want);
  if (!first) {
    rc = gf_fail(-ENOMEM, path, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
    goto fail_obj;
  }
  int64_t got = gf_object_read_upto(io, first, 0, want);
  if (got < 0) {
    char why[512];
    gf_dataset__storage_why(why, sizeof why);
    rc = gf_fail((int)got, path, GF_NO_INDEX, 0, "reading the header: %s", why);
    goto fail_obj;
  }
  const uint8_t *h = first;
  uint64_t fsize = 0, osize = io->size;
  if ((rc = check_header(h, (size_t)got, path)) < 0 ||
      (rc = check_fields(ds, h, path, &fsize)) < 0)
    goto fail_obj;
  if (osize < fsize) {
    rc = gf_fail(GF_ETRUNCATED, path, GF_NO_INDEX, osize,
                 "the index is %llu bytes long; its header says %llu",
                 (unsigned long long)osize, (unsigned long long)fsize);
    goto fail_obj;
  }
  if (osize > fsize) {
    rc = gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, fsize,
                 "the index is %llu bytes long; its header says %llu",
                 (unsigned long long)osize, (unsigned long long)fsize);
    goto fail_obj;
  }
  if ((rc = load_index(ds, io, fsize, first, (size_t)got)) < 0)
    goto fail_obj;
  if (!ds->index_obj)
    gf_object_close(io); /* mapped: the map stays valid */
  io = NULL;

  uint64_t sh_off = gf_le64(h + GF_IH_SHARDS_OFF);
  uint64_t cl_off = gf_le64(h + GF_IH_CLASSES_OFF);
  uint64_t cl_size = gf_le64(h + GF_IH_CLASSES_SIZE);
  uint64_t sh_size = (uint64_t)ds->nshards * 8;
  uint32_t want_crc = gf_le32(h + GF_IH_TABLES_CRC);
  /* What open checks, read together where they are not in memory yet (a
   * version 1 index keeps its tables after the records). */
  if (ds->pages) {
    gf_range r[3] = {{GF_INDEX_HEADER_SIZE, ds->summary_size},
                     {sh_off, sh_size},
                     {cl_off, cl_size}};
    if ((rc = gf_pages_load(ds->pages, r, 3, GF_NO_INDEX)) < 0)
      goto fail;
  }
  if (ds->summary_size &&
      (rc = gf_summary_check(ds->map + GF_INDEX_HEADER_SIZE, ds->summary_size,
                             ds->count, path)) < 0)
    goto fail;
  uint32_t crc = gf_crc32c(0, ds->map + sh_off, (size_t)sh_size);
  crc = gf_crc32c(crc, ds->map + cl_off, (size_t)cl_size);
  if (crc != want_crc) {
    rc = gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, sh_off,
                 "shard and class tables: checksum 0x%08x, expected 0x%08x",
                 crc, want_crc);
    goto fail;
  }
  if ((rc = parse_classes(ds, ds->map + cl_off, cl_size, cl_off)) < 0)
    goto fail;
  if (ds->nshards) {
    ds->shards = calloc(ds->nshards, sizeof *ds->shards);
    if (!ds->shards) {
      rc = gf_fail(-ENOMEM, path, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for %u shards", ds->nshards);
      goto fail;
    }
  }
  /* Without descriptors every open is a round trip (or two): each shard
   * is opened and checked when a sample of it is first used. */
  ds->lazy_shards = paged;
  for (uint32_t i = 0; i < ds->nshards; i++) {
    gf_shard *s = &ds->shards[i];
    uint64_t size = gf_le64(ds->map + sh_off + (uint64_t)i * 8);
    if (size < ds->data_start || size % ds->alignment ||
        size > (uint64_t)INT64_MAX) {
      rc = gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, sh_off + (uint64_t)i * 8,
                   "shard table: shard %u of %llu bytes (expected at least "
                   "%llu, a multiple of the alignment %u)",
                   i, (unsigned long long)size,
                   (unsigned long long)ds->data_start, ds->alignment);
      goto fail;
    }
    s->size = size;
    if (ds->lazy_shards) {
      char name[32], sp[1024];
      snprintf(name, sizeof name, GF_SHARD_FMT, i);
      gf_storage_name_display(ds->st, name, sp, sizeof sp);
      if (!(s->path = s->own_path = strdup(sp))) {
        rc = gf_fail(-ENOMEM, path, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory for %u shards", ds->nshards);
        goto fail;
      }
      continue;
    }
    gf_object *o;
    if ((rc = gf_dataset__open_shard(ds, i, size, &o)) < 0)
      goto fail;
    atomic_store_explicit(&s->obj, o, memory_order_relaxed);
    s->path = o->display;
  }
  free(first);
  *out = ds;
  return 0;

fail_obj:
  gf_object_close(io);
fail:
  free(first);
  gf_dataset_close(ds);
  return rc;
}

void gf_dataset_close(gf_dataset *ds) {
  if (!ds)
    return;
  if (ds->shards) {
    for (uint32_t i = 0; i < ds->nshards; i++) {
      gf_object_close(atomic_load(&ds->shards[i].obj));
      free(ds->shards[i].own_path);
    }
    free(ds->shards);
  }
  if (ds->map && ds->mapped)
    munmap((void *)ds->map, ds->map_len);
  gf_pages_destroy(ds->pages); /* its image is the map */
  gf_object_close(ds->index_obj);
  free(ds->class_names);
  free(ds->index_path);
  if (ds->sync_init) {
    pthread_mutex_destroy(&ds->mu);
    pthread_cond_destroy(&ds->cv);
  }
  if (ds->own_st)
    gf_storage_close(ds->st);
  free(ds);
}

uint64_t gf_dataset_count(const gf_dataset *ds) { return ds ? ds->count : 0; }
uint32_t gf_dataset_num_classes(const gf_dataset *ds) {
  return ds ? ds->nclasses : 0;
}
const char *gf_dataset_class_name(const gf_dataset *ds, uint32_t i) {
  return ds && i < ds->nclasses ? ds->class_names[i] : NULL;
}
uint32_t gf_dataset_num_shards(const gf_dataset *ds) {
  return ds ? ds->nshards : 0;
}
const char *gf_dataset_shard_path(const gf_dataset *ds, uint32_t i) {
  return ds && i < ds->nshards ? ds->shards[i].path : NULL;
}
uint32_t gf_dataset_alignment(const gf_dataset *ds) {
  return ds ? ds->alignment : 0;
}
gf_storage *gf_dataset_storage(const gf_dataset *ds) { return ds->st; }
uint64_t gf_dataset_shard_size(const gf_dataset *ds, uint32_t i) {
  return ds && i < ds->nshards ? ds->shards[i].size : 0;
}

int gf_dataset_record(const gf_dataset *ds, uint64_t idx,
                      gf_sample_info *info) {
  if (!ds || !info)
    return gf_fail(-EINVAL, NULL, idx, GF_NO_INDEX,
                   "gf_dataset_sample_info: dataset and info are required");
  if (idx >= ds->count)
    return gf_fail(-ERANGE, ds->index_path, idx, GF_NO_INDEX,
                   "sample index beyond the %llu samples of the dataset",
                   (unsigned long long)ds->count);
  uint64_t roff = ds->records_off + idx * GF_RECORD_SIZE;
  int rc = need(ds, roff, GF_RECORD_SIZE, idx);
  if (rc < 0)
    return rc;
  const uint8_t *r = ds->map + roff;
  const char *path = ds->index_path;
#define BAD(...)                                                               \
  gf_fail(GF_ECORRUPT, path, idx, roff, "index record: " __VA_ARGS__)
  uint64_t off = gf_le64(r + GF_REC_OFFSET);
  uint64_t len = gf_le64(r + GF_REC_LENGTH);
  int64_t label = (int64_t)gf_le64(r + GF_REC_LABEL);
  uint64_t name_off = gf_le64(r + GF_REC_NAME_OFF);
  uint32_t shard = gf_le32(r + GF_REC_SHARD);
  uint32_t name_len = gf_le32(r + GF_REC_NAME_LEN);
  uint32_t codec = gf_le16(r + GF_REC_CODEC);
  gf_shape shape = {gf_le32(r + GF_REC_HEIGHT), gf_le32(r + GF_REC_WIDTH),
                    r[GF_REC_CHANNELS], r[GF_REC_DTYPE]};
  /* The record's own CRC first: any damage to it, even a label still in
   * range, is reported instead of returned as good. */
  uint32_t rcrc = gf_record_crc(idx, r);
  if (rcrc != gf_le32(r + GF_REC_RECORD_CRC))
    return BAD("checksum 0x%08x, expected 0x%08x", rcrc,
               gf_le32(r + GF_REC_RECORD_CRC));
  if (gf_le32(r + GF_REC_FLAGS))
    return BAD("flags 0x%08x, expected 0", gf_le32(r + GF_REC_FLAGS));
  if (shard >= ds->nshards)
    return BAD("shard %u, but the dataset has %u shards", shard, ds->nshards);
  uint64_t ssize = ds->shards[shard].size;
  if (len == 0 || len > GF_MAX_STORED_BYTES)
    return BAD("stored length %llu, expected 1 to %llu bytes",
               (unsigned long long)len,
               (unsigned long long)GF_MAX_STORED_BYTES);
  if (off < ds->data_start || len > ssize || off > ssize - len)
    return BAD("extent of %llu bytes at offset %llu lies outside the data "
               "of shard %u (bytes %llu to %llu)",
               (unsigned long long)len, (unsigned long long)off, shard,
               (unsigned long long)ds->data_start, (unsigned long long)ssize);
  if (off % ds->alignment)
    return BAD("offset %llu is not a multiple of the alignment %u",
               (unsigned long long)off, ds->alignment);
  if (codec >= GF_CODEC_COUNT_)
    return BAD("unknown codec %u", codec);
  if (gf_limits_check(NULL, &shape, NULL, GF_NO_INDEX) < 0) {
    /* Keep limits.c's wording but report it as damage: a writer never
     * stores a shape outside the default limits. */
    char why[sizeof gf_last_error()->message];
    snprintf(why, sizeof why, "%s", gf_last_error()->message);
    return BAD("shape not valid: %s", why);
  }
  if (codec == GF_CODEC_RAW && len != gf_shape_bytes(&shape))
    return BAD("raw sample of %llu bytes for a %ux%ux%u image of %llu bytes",
               (unsigned long long)len, shape.height, shape.width,
               shape.channels, (unsigned long long)gf_shape_bytes(&shape));
  if (codec == GF_CODEC_LOCO && shape.dtype != GF_DTYPE_U8)
    return BAD("loco sample of a u16 %ux%ux%u image (loco codes 8-bit "
               "samples only)",
               shape.height, shape.width, shape.channels);
  if (name_len > GF_MAX_NAME_LEN || name_off > ds->names_size ||
      name_len > ds->names_size - name_off)
    return BAD("source name (%u bytes at %llu) outside the %llu-byte blob",
               name_len, (unsigned long long)name_off,
               (unsigned long long)ds->names_size);
  if (ds->nclasses && (label < 0 || label >= (int64_t)ds->nclasses))
    return BAD("label %lld, but the dataset has %u classes", (long long)label,
               ds->nclasses);
#undef BAD
  memset(info, 0, sizeof *info);
  info->index = idx;
  info->shard = shard;
  info->codec = codec;
  info->offset = off;
  info->length = len;
  info->shape = shape;
  info->label = label;
  info->checksum = gf_le32(r + GF_REC_DATA_CRC);
  info->source = NULL; /* gf_dataset_sample_info's */
  info->source_len = name_len;
  return 0;
}

int gf_dataset_sample_info(const gf_dataset *ds, uint64_t idx,
                           gf_sample_info *info) {
  int rc = gf_dataset_record(ds, idx, info);
  if (rc < 0)
    return rc;
  /* The record's checks put the name inside the blob. */
  uint64_t roff = ds->records_off + idx * GF_RECORD_SIZE;
  uint64_t name_off = gf_le64(ds->map + roff + GF_REC_NAME_OFF);
  if ((rc = need(ds, ds->names_off + name_off, info->source_len, idx)) < 0)
    return rc;
  info->source = (const char *)ds->map + ds->names_off + name_off;
  return 0;
}

int64_t gf_dataset_read(const gf_dataset *ds, uint64_t idx, void *buf,
                        size_t cap) {
  gf_sample_info info;
  int rc = gf_dataset_record(ds, idx, &info);
  if (rc < 0)
    return rc;
  const gf_shard *s = &ds->shards[info.shard];
  gf_object *obj;
  if ((rc = gf_dataset__shard_get(ds, info.shard, &obj)) < 0)
    return gf_fail_context(rc, NULL, idx, NULL);
  if (!buf || cap < info.length)
    return gf_fail(-ENOBUFS, s->path, idx, info.offset,
                   "a buffer of %zu bytes cannot hold the %llu stored bytes",
                   cap, (unsigned long long)info.length);
  int64_t n = gf_object_read_upto(obj, buf, info.offset, info.length);
  if (n < 0) {
    char why[512];
    gf_dataset__storage_why(why, sizeof why);
    return gf_fail((int)n, s->path, idx, info.offset, "reading %llu bytes: %s",
                   (unsigned long long)info.length, why);
  }
  if ((uint64_t)n < info.length)
    return gf_fail(GF_ETRUNCATED, s->path, idx, info.offset + (uint64_t)n,
                   "the shard ended after %lld of the sample's %llu bytes "
                   "(it was %llu bytes at open)",
                   (long long)n, (unsigned long long)info.length,
                   (unsigned long long)s->size);
  uint32_t crc = gf_crc32c(0, buf, (size_t)info.length);
  if (crc != info.checksum)
    return gf_fail(GF_ECORRUPT, s->path, idx, info.offset,
                   "checksum 0x%08x, expected 0x%08x: the %llu stored bytes "
                   "are damaged",
                   crc, info.checksum, (unsigned long long)info.length);
  return n;
}

int gf_dataset_load_index(const gf_dataset *ds) {
  if (!ds || !ds->pages)
    return 0;
  gf_range all = {0, ds->map_len};
  return gf_pages_load(ds->pages, &all, 1, GF_NO_INDEX);
}

int gf_dataset_check_index(const gf_dataset *ds) {
  if (!ds)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_dataset_check_index: no dataset");
  /* A remote index whole, many reads at once, rather than a page a
   * record. */
  int rc = gf_dataset_load_index(ds);
  if (rc < 0)
    return rc;
  /* Each record first (its own CRC and fields: the message names the
   * sample), then the table CRC, which also catches a record rewritten
   * with a matching record CRC, then the summary the records give. */
  gf_sample_info info;
  gf_summary_acc sum;
  gf_summary_init(&sum);
  uint32_t crc = 0;
  for (uint64_t i = 0; i < ds->count; i++) {
    if ((rc = gf_dataset_sample_info(ds, i, &info)) < 0)
      return rc;
    crc = gf_crc32c(crc, ds->map + ds->records_off + i * GF_RECORD_SIZE,
                    GF_REC_RECORD_CRC);
    gf_summary_add(&sum, (int)info.codec, &info.shape, info.length);
  }
  if (crc != ds->records_crc)
    return gf_fail(GF_ECORRUPT, ds->index_path, GF_NO_INDEX, ds->records_off,
                   "records table (%llu records): checksum 0x%08x, expected "
                   "0x%08x",
                   (unsigned long long)ds->count, crc, ds->records_crc);
  crc = gf_crc32c(0, ds->map + ds->names_off, (size_t)ds->names_size);
  if (crc != ds->names_crc)
    return gf_fail(GF_ECORRUPT, ds->index_path, GF_NO_INDEX, ds->names_off,
                   "source-name blob: checksum 0x%08x, expected 0x%08x", crc,
                   ds->names_crc);
  if (ds->summary_size &&
      (rc = gf_summary_compare(ds->map + GF_INDEX_HEADER_SIZE, &sum,
                               ds->index_path)) < 0)
    return rc;
  return 0;
}

int gf_dataset_max_sizes(const gf_dataset *ds, const gf_decode_opts *opts,
                         bool use_summary, gf_record_sizes *out) {
  if (use_summary && ds->summary_size &&
      gf_summary_sizes(ds->map + GF_INDEX_HEADER_SIZE, opts, out))
    return 1;
  /* A pass over the records (of a remote index read whole first), plain
   * field reads without the per-record checks: what is read here only
   * sizes buffers (bounded by the limits); every record is still checked
   * when its sample is read. */
  gf_range recs = {ds->records_off, ds->count * GF_RECORD_SIZE};
  if (ds->pages) {
    int rc = gf_pages_load(ds->pages, &recs, 1, GF_NO_INDEX);
    if (rc < 0)
      return rc;
  }
  gf_sizes_scan sc;
  gf_sizes_scan_init(&sc, opts);
  const uint8_t *rec = ds->map + ds->records_off;
  for (uint64_t i = 0; i < ds->count; i++, rec += GF_RECORD_SIZE) {
    gf_shape s = {gf_le32(rec + GF_REC_HEIGHT), gf_le32(rec + GF_REC_WIDTH),
                  rec[GF_REC_CHANNELS], rec[GF_REC_DTYPE]};
    gf_sizes_scan_add(&sc, gf_le16(rec + GF_REC_CODEC), &s,
                      gf_le64(rec + GF_REC_LENGTH));
  }
  *out = sc.out;
  return 0;
}

bool gf_dataset_paged(const gf_dataset *ds) { return ds && ds->pages; }

void gf_dataset_index_counters(const gf_dataset *ds, uint64_t *reads,
                               uint64_t *bytes, uint64_t *pages) {
  *reads = *bytes = *pages = 0;
  if (ds && ds->pages)
    gf_pages_counters(ds->pages, reads, bytes, pages);
}

const uint8_t *gf_dataset_summary(const gf_dataset *ds, uint32_t *size) {
  *size = ds ? ds->summary_size : 0;
  return *size ? ds->map + GF_INDEX_HEADER_SIZE : NULL;
}
