/* Fuzz target: the dataset reader (docs/FORMAT.md) on untrusted files.
 *
 * Input layout:
 *   u8   flags    bit 0: repair every checksum (and dataset_id) before
 *                        writing, so mutations reach the field checks
 *                        behind the CRCs (the summary table's own CRC
 *                        too); bit 1: also repair each record's data CRC
 *                        (reads then reach the decoders); bit 2: set the
 *                        shard table to the real shard sizes; bit 3: with
 *                        bit 0, rewrite the summary table's entries from
 *                        the records (where they take its size), so that
 *                        mutated records still agree with it
 *   u32  L        length of the index (cut to what is there)
 *   L bytes       index.gfi
 *   then up to 4 shards, each: u32 length, bytes (cut to what is there)
 *
 * The files are written to a tmpfs folder; then gf_dataset_open, and on
 * success every record through gf_dataset_sample_info, gf_dataset_read and
 * (bounded) gf_decode, then gf_dataset_check_index. Each success is checked
 * against the promises of gpufeed.h and FORMAT.md (a record never points
 * outside its shard, a read returns exactly the record's length, a decode
 * the shape it announced; an index that passes check_index sizes a loader
 * from its summary table exactly as from a pass over its records); each
 * failure must carry its context. In the test build (the ctest replay,
 * GPUFEED_TESTING), the same folder is opened again through slow://
 * (tests/slow_storage.h: no descriptors, so the index is read in pages and
 * the shards opened on first use) and must give the same results. */
#include "fuzz.h"

#include "format/format.h"
#ifdef GPUFEED_TESTING
#include "slow_storage.h"
#endif

#define MAX_SHARDS 4
/* Decoded bytes a sample may take here: keeps each input fast. */
#define DECODE_LIMIT (1u << 22)

typedef struct part {
  uint8_t *p;
  size_t len;
} part;

/* The shard table's entry i, if it lies inside the index. */
static bool shard_entry(const part *ix, uint64_t i, uint64_t *off) {
  uint64_t soff = fuzz_le64(ix->p + GF_IH_SHARDS_OFF);
  uint32_t nsh = fuzz_le32(ix->p + GF_IH_SHARDS);
  if (i >= nsh || i > (UINT64_MAX - soff) / 8)
    return false;
  *off = soff + i * 8;
  return fuzz_in(*off, 8, ix->len);
}

/* CRC of [off, off + len) of the index, or of nothing when out of range. */
static uint32_t crc_range(uint32_t crc, const part *ix, uint64_t off,
                          uint64_t len) {
  if (!fuzz_in(off, len, ix->len))
    return crc;
  return gf_crc32c(crc, ix->p + off, (size_t)len);
}

/* Rewrites the checksums of the index and the shard headers as a writer
 * would have computed them for these bytes (FORMAT.md, field by field). */
static void repair(part *ix, part *sh, int nsh, unsigned flags) {
  if (ix->len < GF_INDEX_HEADER_SIZE)
    return;
  uint8_t *h = ix->p;
  if (flags & 4)
    for (int i = 0; i < nsh; i++) {
      uint64_t off;
      if (shard_entry(ix, (uint64_t)i, &off))
        fuzz_put64(h + off, sh[i].len);
    }
  uint64_t count = fuzz_le64(h + GF_IH_COUNT);
  uint64_t roff = fuzz_le64(h + GF_IH_RECORDS_OFF);
  uint32_t rsize = fuzz_le32(h + GF_IH_RECORD_SIZE);
  uint32_t records_crc = 0;
  if (rsize == GF_RECORD_SIZE) {
    for (uint64_t n = 0; n < count; n++) {
      if (n > (UINT64_MAX - roff) / GF_RECORD_SIZE - 1)
        break;
      uint64_t at = roff + n * GF_RECORD_SIZE;
      if (!fuzz_in(at, GF_RECORD_SIZE, ix->len))
        break;
      uint8_t *rec = h + at;
      uint32_t shard = fuzz_le32(rec + GF_REC_SHARD);
      uint64_t off = fuzz_le64(rec + GF_REC_OFFSET);
      uint64_t len = fuzz_le64(rec + GF_REC_LENGTH);
      if ((flags & 2) && shard < (uint32_t)nsh && fuzz_in(off, len, sh[shard].len))
        fuzz_put32(rec + GF_REC_DATA_CRC,
                   gf_crc32c(0, sh[shard].p + off, (size_t)len));
      fuzz_put32(rec + GF_REC_RECORD_CRC, gf_record_crc(n, rec));
      records_crc = gf_crc32c(records_crc, rec, GF_REC_RECORD_CRC);
    }
  }
  /* The summary table (version 2): entries from the records with bit 3,
   * then its CRC over what its head says it holds. */
  uint32_t ssize = fuzz_le32(h + GF_IH_SUMMARY_SIZE);
  if (fuzz_le32(h + GF_IH_VERSION) >= 2 && ssize >= GF_SUMMARY_HEAD_SIZE &&
      fuzz_in(GF_INDEX_HEADER_SIZE, ssize, ix->len)) {
    uint8_t *sm = h + GF_INDEX_HEADER_SIZE;
    if ((flags & 8) && rsize == GF_RECORD_SIZE) {
      gf_summary_acc acc;
      gf_summary_init(&acc);
      for (uint64_t n = 0; n < count; n++) {
        if (n > (UINT64_MAX - roff) / GF_RECORD_SIZE - 1)
          break;
        uint64_t at = roff + n * GF_RECORD_SIZE;
        if (!fuzz_in(at, GF_RECORD_SIZE, ix->len))
          break;
        const uint8_t *rec = h + at;
        gf_shape s = {fuzz_le32(rec + GF_REC_HEIGHT),
                      fuzz_le32(rec + GF_REC_WIDTH), rec[GF_REC_CHANNELS],
                      rec[GF_REC_DTYPE]};
        gf_summary_add(&acc, rec[GF_REC_CODEC] | rec[GF_REC_CODEC + 1] << 8, &s,
                       fuzz_le64(rec + GF_REC_LENGTH));
      }
      if (GF_SUMMARY_HEAD_SIZE +
              gf_summary_entries(&acc) * GF_SUMMARY_ENTRY_SIZE ==
          ssize)
        gf_summary_write(&acc, sm);
    }
    uint64_t n = fuzz_le32(sm + GF_SM_ENTRIES);
    if (GF_SUMMARY_HEAD_SIZE + n * GF_SUMMARY_ENTRY_SIZE <= ssize) {
      uint32_t c = gf_crc32c(0, sm, GF_SM_CRC);
      c = gf_crc32c(c, sm + GF_SUMMARY_HEAD_SIZE,
                    (size_t)n * GF_SUMMARY_ENTRY_SIZE);
      fuzz_put32(sm + GF_SM_CRC, c);
    }
  }
  uint32_t nshards = fuzz_le32(h + GF_IH_SHARDS);
  uint64_t soff = fuzz_le64(h + GF_IH_SHARDS_OFF);
  uint64_t coff = fuzz_le64(h + GF_IH_CLASSES_OFF);
  uint64_t csize = fuzz_le64(h + GF_IH_CLASSES_SIZE);
  uint64_t noff = fuzz_le64(h + GF_IH_NAMES_OFF);
  uint64_t nsize = fuzz_le64(h + GF_IH_NAMES_SIZE);
  uint32_t tables = crc_range(0, ix, soff, (uint64_t)nshards * 8);
  tables = crc_range(tables, ix, coff, csize);
  uint32_t names = crc_range(0, ix, noff, nsize);
  uint32_t id_hi = crc_range(tables, ix, noff, nsize);
  fuzz_put32(h + GF_IH_RECORDS_CRC, records_crc);
  fuzz_put32(h + GF_IH_TABLES_CRC, tables);
  fuzz_put32(h + GF_IH_NAMES_CRC, names);
  uint64_t id = (uint64_t)records_crc | ((uint64_t)id_hi << 32);
  fuzz_put64(h + GF_IH_DATASET_ID, id);
  fuzz_put32(h + GF_IH_HEADER_CRC, gf_crc32c(0, h, GF_IH_HEADER_CRC));
  for (int i = 0; i < nsh; i++) {
    if (sh[i].len < GF_SHARD_HEADER_SIZE)
      continue;
    fuzz_put64(sh[i].p + GF_SH_DATASET_ID, id);
    fuzz_put32(sh[i].p + GF_SH_HEADER_CRC,
               gf_crc32c(0, sh[i].p, GF_SH_HEADER_CRC));
  }
}

/* Reads and decodes sample idx of an open dataset, checking each result. */
static void use_record(gf_dataset *ds, uint64_t idx) {
  gf_sample_info info;
  int rc = gf_dataset_sample_info(ds, idx, &info);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_dataset_sample_info");
    FUZZ_ASSERT(rc == GF_ECORRUPT);
    return;
  }
  /* A record that passed its checks points inside its shard. */
  FUZZ_ASSERT(info.index == idx);
  FUZZ_ASSERT(info.shard < gf_dataset_num_shards(ds));
  FUZZ_ASSERT(info.length >= 1 && info.length <= GF_MAX_STORED_BYTES);
  FUZZ_ASSERT(fuzz_in(info.offset, info.length,
                      gf_dataset_shard_size(ds, info.shard)));
  FUZZ_ASSERT(info.codec < GF_CODEC_COUNT_);
  FUZZ_ASSERT(info.shape.channels >= 1 && info.shape.channels <= 4);
  FUZZ_ASSERT(gf_shape_bytes(&info.shape) > 0);
  FUZZ_ASSERT(info.source_len <= GF_MAX_NAME_LEN);
  if (gf_dataset_num_classes(ds))
    FUZZ_ASSERT(info.label >= 0 &&
                (uint64_t)info.label < gf_dataset_num_classes(ds));
  if (info.source_len)
    FUZZ_ASSERT(info.source != NULL);

  size_t len = (size_t)info.length;
  uint8_t *buf = fuzz_alloc(len);
  int64_t got = gf_dataset_read(ds, idx, buf, len);
  if (got < 0) {
    FUZZ_CHECK_FAILURE(got, "gf_dataset_read");
    free(buf);
    return;
  }
  FUZZ_ASSERT((uint64_t)got == info.length);
  FUZZ_ASSERT(gf_crc32c(0, buf, len) == info.checksum);
  if (len > 1) { /* a buffer one byte short is refused, never overrun */
    uint8_t *small = fuzz_alloc(len - 1);
    int64_t r2 = gf_dataset_read(ds, idx, small, len - 1);
    FUZZ_ASSERT(r2 < 0);
    FUZZ_CHECK_FAILURE(r2, "gf_dataset_read (small buffer)");
    free(small);
  }

  /* The loader's next step: decode with the record's stored shape. */
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.limits.max_bytes = DECODE_LIMIT;
  o.limits.max_pixels = DECODE_LIMIT;
  const gf_shape *stored = info.codec == GF_CODEC_PNG ? NULL : &info.shape;
  gf_shape s;
  rc = gf_decode_shape((int)info.codec, buf, len, stored, &o, &s);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_decode_shape");
    free(buf);
    return;
  }
  uint64_t bytes = gf_shape_bytes(&s);
  FUZZ_ASSERT(bytes > 0 && bytes <= DECODE_LIMIT);
  uint8_t *px = fuzz_alloc((size_t)bytes);
  gf_shape out;
  rc = gf_decode((int)info.codec, buf, len, stored, &o, px, (size_t)bytes,
                 &out);
  if (rc < 0)
    FUZZ_CHECK_FAILURE(rc, "gf_decode");
  else
    FUZZ_ASSERT(memcmp(&out, &s, sizeof s) == 0);
  free(px);
  free(buf);
}

/* An index that passed check_index: the summary's sizes (where it has one
 * and they are exact) are a pass over the records', under a few decode
 * options. */
static void check_sizes(const gf_dataset *ds) {
  static const uint32_t ch[] = {0, 1, 3, 4};
  for (int k = 0; k < 8; k++) {
    gf_decode_opts o = GF_DECODE_OPTS_INIT;
    o.channels = ch[k % 4];
    o.keep_16bit = (uint32_t)(k / 4);
    o.limits.max_bytes = k == 5 ? 64 : 0;
    gf_record_sizes a, b;
    int ra = gf_dataset_max_sizes(ds, &o, true, &a);
    int rb = gf_dataset_max_sizes(ds, &o, false, &b);
    FUZZ_ASSERT(ra >= 0 && rb == 0);
    FUZZ_ASSERT(memcmp(&a, &b, sizeof a) == 0);
  }
}

#ifdef GPUFEED_TESTING
/* Every record's results through ds, for comparing two opens. */
typedef struct outcome {
  int rc;
  gf_sample_info info;
  uint32_t data_crc, source_crc;
  int64_t got;
} outcome;

static void outcomes(gf_dataset *ds, outcome *o, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    memset(&o[i], 0, sizeof o[i]);
    o[i].rc = gf_dataset_sample_info(ds, i, &o[i].info);
    if (o[i].rc < 0)
      continue;
    o[i].source_crc = gf_crc32c(0, o[i].info.source, o[i].info.source_len);
    o[i].info.source = NULL; /* compared by content */
    size_t len = (size_t)o[i].info.length;
    uint8_t *buf = fuzz_alloc(len);
    o[i].got = gf_dataset_read(ds, i, buf, len);
    if (o[i].got > 0)
      o[i].data_crc = gf_crc32c(0, buf, (size_t)o[i].got);
    free(buf);
  }
}

/* The folder opened again without descriptors: a local open's success is
 * its success (a shard's damage may show only when the shard is used), a
 * local failure in the index its failure; the same records, bytes and
 * check. */
static void compare_paged(const char *dir, int local_rc, const char *local_path,
                          gf_dataset *local) {
  static bool registered;
  if (!registered) {
    FUZZ_ASSERT(slow_storage_register() == 0);
    registered = true;
  }
  char url[4200];
  snprintf(url, sizeof url, "slow://%s", dir);
  gf_dataset *ds = NULL;
  /* Only the header in the first read: every table and record is read
   * through the pages, as from a large index. */
  gf_dataset__test_first_read = GF_INDEX_HEADER_SIZE;
  int rc = gf_dataset_open(url, &ds);
  gf_dataset__test_first_read = 0;
  size_t pl = strlen(local_path);
  bool index_err = pl >= 9 && strcmp(local_path + pl - 9, "index.gfi") == 0;
  if (local_rc == 0)
    FUZZ_ASSERT(rc == 0);
  else if (index_err)
    FUZZ_ASSERT(rc == local_rc);
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_dataset_open (paged)");
    return;
  }
  if (local) {
    uint64_t n = gf_dataset_count(ds);
    FUZZ_ASSERT(n == gf_dataset_count(local));
    outcome *a = calloc(n ? n : 1, sizeof *a),
            *b = calloc(n ? n : 1, sizeof *b);
    FUZZ_ASSERT(a && b);
    outcomes(local, a, n);
    outcomes(ds, b, n);
    FUZZ_ASSERT(memcmp(a, b, n * sizeof *a) == 0);
    free(a);
    free(b);
    FUZZ_ASSERT(gf_dataset_check_index(ds) == gf_dataset_check_index(local));
  } else {
    for (uint64_t i = 0; i < gf_dataset_count(ds); i++)
      use_record(ds, i);
    (void)gf_dataset_check_index(ds);
  }
  gf_dataset_close(ds);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 5)
    return 0;
  const char *dir = fuzz_tmpdir();
  unsigned flags = data[0];
  size_t pos = 1;
  size_t ilen = fuzz_le32(data + pos);
  pos += 4;
  if (ilen > size - pos)
    ilen = size - pos;
  part ix = {fuzz_alloc(ilen), ilen};
  memcpy(ix.p, data + pos, ilen);
  pos += ilen;
  part sh[MAX_SHARDS];
  int nsh = 0;
  while (nsh < MAX_SHARDS && size - pos >= 4) {
    size_t l = fuzz_le32(data + pos);
    pos += 4;
    if (l > size - pos)
      l = size - pos;
    sh[nsh].p = fuzz_alloc(l);
    memcpy(sh[nsh].p, data + pos, l);
    sh[nsh].len = l;
    pos += l;
    nsh++;
  }
  if (flags & 1)
    repair(&ix, sh, nsh, flags);

  char path[4200];
  snprintf(path, sizeof path, "%s/" GF_INDEX_NAME, dir);
  fuzz_write_file(path, ix.p, ix.len);
  for (int i = 0; i < MAX_SHARDS; i++) {
    char name[64];
    snprintf(name, sizeof name, GF_SHARD_FMT, (unsigned)i);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (i < nsh)
      fuzz_write_file(path, sh[i].p, sh[i].len);
    else
      unlink(path);
  }

  gf_dataset *ds = NULL;
  int rc = gf_dataset_open(dir, &ds);
  char local_path[sizeof gf_last_error()->path];
  snprintf(local_path, sizeof local_path, "%s",
           rc < 0 ? gf_last_error()->path : "");
  if (rc < 0) {
    FUZZ_CHECK_FAILURE(rc, "gf_dataset_open");
  } else {
    uint64_t n = gf_dataset_count(ds);
    /* The records table lies inside the index: n is bounded by its size. */
    FUZZ_ASSERT(n <= ix.len / GF_RECORD_SIZE);
    uint32_t nc = gf_dataset_num_classes(ds);
    for (uint32_t c = 0; c < nc; c++) {
      const char *name = gf_dataset_class_name(ds, c);
      FUZZ_ASSERT(name && name[0] && strlen(name) <= GF_MAX_NAME_LEN);
    }
    FUZZ_ASSERT(gf_dataset_class_name(ds, nc) == NULL);
    uint32_t ns = gf_dataset_num_shards(ds);
    FUZZ_ASSERT(ns <= (uint32_t)nsh);
    for (uint32_t i = 0; i < ns; i++)
      FUZZ_ASSERT(gf_dataset_shard_path(ds, i) != NULL);
    FUZZ_ASSERT(gf_dataset_shard_path(ds, ns) == NULL);
    uint32_t a = gf_dataset_alignment(ds);
    FUZZ_ASSERT(a >= 1 && a <= GF_MAX_ALIGNMENT && (a & (a - 1)) == 0);
    for (uint64_t i = 0; i < n; i++)
      use_record(ds, i);
    gf_sample_info info;
    FUZZ_ASSERT(gf_dataset_sample_info(ds, n, &info) == -ERANGE);
    rc = gf_dataset_check_index(ds);
    if (rc < 0) {
      FUZZ_CHECK_FAILURE(rc, "gf_dataset_check_index");
      FUZZ_ASSERT(rc == GF_ECORRUPT);
    } else {
      check_sizes(ds);
    }
    rc = 0;
  }
#ifdef GPUFEED_TESTING
  compare_paged(dir, rc, local_path, ds);
#endif
  gf_dataset_close(ds);
  free(ix.p);
  for (int i = 0; i < nsh; i++)
    free(sh[i].p);
  return 0;
}
