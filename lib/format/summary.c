/* The index's summary table (docs/FORMAT.md, "Summary table"): per codec
 * and dtype, the record count and the largest pixels, values, channels
 * and stored length, so that a loader sizes its buffers without a pass
 * over a million records (a remote index would have to be read whole for
 * it). Built by the writer and by gf_dataset_check_index from the
 * records, checked at open, and turned into the loader's sizes under any
 * decode options: exactly what a scan of the records gives, or "not
 * exact" when a configured limit cuts through an entry (the caller then
 * scans). */
#include "format/format.h"

#include <stdio.h>
#include <string.h>

void gf_summary_init(gf_summary_acc *a) { memset(a, 0, sizeof *a); }

void gf_summary_add(gf_summary_acc *a, int codec, const gf_shape *s,
                    uint64_t length) {
  if (codec < 0 || codec >= GF_CODEC_COUNT_ || s->dtype > GF_DTYPE_U16)
    return; /* never for a record that passed its checks */
  gf_summary_entry *e = &a->e[codec][s->dtype];
  uint64_t px = (uint64_t)s->height * s->width;
  uint64_t values = px * s->channels;
  e->codec = (uint16_t)codec;
  e->dtype = (uint8_t)s->dtype;
  e->count++;
  if (s->channels > e->channels)
    e->channels = (uint8_t)s->channels;
  if (px > e->pixels)
    e->pixels = px;
  if (values > e->values)
    e->values = values;
  if (length > e->length)
    e->length = length;
}

uint32_t gf_summary_entries(const gf_summary_acc *a) {
  uint32_t n = 0;
  for (int c = 0; c < GF_CODEC_COUNT_; c++)
    for (int d = 0; d < 2; d++)
      n += a->e[c][d].count > 0;
  return n;
}

uint32_t gf_summary_write(const gf_summary_acc *a, uint8_t *out) {
  uint32_t n = 0;
  uint8_t *p = out + GF_SUMMARY_HEAD_SIZE;
  /* Entries in increasing (codec, dtype): the order of the array. */
  for (int c = 0; c < GF_CODEC_COUNT_; c++)
    for (int d = 0; d < 2; d++) {
      const gf_summary_entry *e = &a->e[c][d];
      if (!e->count)
        continue;
      memset(p, 0, GF_SUMMARY_ENTRY_SIZE);
      gf_put16(p + GF_SE_CODEC, e->codec);
      p[GF_SE_DTYPE] = e->dtype;
      p[GF_SE_CHANNELS] = e->channels;
      gf_put64(p + GF_SE_COUNT, e->count);
      gf_put64(p + GF_SE_PIXELS, e->pixels);
      gf_put64(p + GF_SE_VALUES, e->values);
      gf_put64(p + GF_SE_LENGTH, e->length);
      p += GF_SUMMARY_ENTRY_SIZE;
      n++;
    }
  memset(out, 0, GF_SUMMARY_HEAD_SIZE);
  gf_put32(out + GF_SM_ENTRIES, n);
  gf_put32(out + GF_SM_ENTRY_SIZE, GF_SUMMARY_ENTRY_SIZE);
  uint32_t crc = gf_crc32c(0, out, GF_SM_CRC);
  crc = gf_crc32c(crc, out + GF_SUMMARY_HEAD_SIZE,
                  (size_t)n * GF_SUMMARY_ENTRY_SIZE);
  gf_put32(out + GF_SM_CRC, crc);
  return GF_SUMMARY_HEAD_SIZE + n * GF_SUMMARY_ENTRY_SIZE;
}

static void entry_read(const uint8_t *p, gf_summary_entry *e) {
  e->codec = gf_le16(p + GF_SE_CODEC);
  e->dtype = p[GF_SE_DTYPE];
  e->channels = p[GF_SE_CHANNELS];
  e->count = gf_le64(p + GF_SE_COUNT);
  e->pixels = gf_le64(p + GF_SE_PIXELS);
  e->values = gf_le64(p + GF_SE_VALUES);
  e->length = gf_le64(p + GF_SE_LENGTH);
}

int gf_summary_check(const uint8_t *p, uint64_t size, uint64_t count,
                     const char *path) {
  const uint64_t at = GF_INDEX_HEADER_SIZE;
#define BAD(off, ...)                                                          \
  gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, at + (off),                          \
          "summary table: " __VA_ARGS__)
  if (size < GF_SUMMARY_HEAD_SIZE)
    return BAD(0, "%llu bytes, less than its %u-byte head",
               (unsigned long long)size, GF_SUMMARY_HEAD_SIZE);
  uint32_t n = gf_le32(p + GF_SM_ENTRIES);
  uint32_t esize = gf_le32(p + GF_SM_ENTRY_SIZE);
  if (esize != GF_SUMMARY_ENTRY_SIZE)
    return BAD(GF_SM_ENTRY_SIZE, "entry size %u, expected %u", esize,
               GF_SUMMARY_ENTRY_SIZE);
  if (n > GF_SUMMARY_MAX_ENTRIES ||
      size != GF_SUMMARY_HEAD_SIZE + (uint64_t)n * GF_SUMMARY_ENTRY_SIZE)
    return BAD(GF_SM_ENTRIES,
               "%u entries in %llu bytes (expected %u + %u an entry, at most "
               "%u entries)",
               n, (unsigned long long)size, GF_SUMMARY_HEAD_SIZE,
               GF_SUMMARY_ENTRY_SIZE, GF_SUMMARY_MAX_ENTRIES);
  uint32_t crc = gf_crc32c(0, p, GF_SM_CRC);
  crc = gf_crc32c(crc, p + GF_SUMMARY_HEAD_SIZE,
                  (size_t)n * GF_SUMMARY_ENTRY_SIZE);
  if (crc != gf_le32(p + GF_SM_CRC))
    return BAD(GF_SM_CRC, "checksum 0x%08x, expected 0x%08x", crc,
               gf_le32(p + GF_SM_CRC));
  if (gf_le32(p + GF_SM_RESERVED))
    return BAD(GF_SM_RESERVED, "reserved 0x%08x, expected 0",
               gf_le32(p + GF_SM_RESERVED));
  /* What any record that passes its own checks keeps to (FORMAT.md): an
   * entry outside it cannot be a summary of valid records, and sizes
   * derived from it stay bounded. */
  const gf_limits lim = gf_limits_resolve(NULL);
  uint64_t total = 0;
  uint32_t prev = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t off = GF_SUMMARY_HEAD_SIZE + (uint64_t)i * GF_SUMMARY_ENTRY_SIZE;
    const uint8_t *q = p + off;
    gf_summary_entry e;
    entry_read(q, &e);
    uint32_t key = (uint32_t)e.codec << 8 | e.dtype;
    uint64_t per = e.dtype == GF_DTYPE_U16 ? 2 : 1;
    if (i && key <= prev)
      return BAD(off,
                 "entry %u (codec %u, dtype %u) is not after the entry "
                 "before it (entries are in increasing codec and dtype)",
                 i, e.codec, e.dtype);
    prev = key;
    if (gf_le32(q + GF_SE_RESERVED))
      return BAD(off + GF_SE_RESERVED, "entry %u: reserved bytes are not zero",
                 i);
    if (e.dtype > GF_DTYPE_U16 || e.channels < 1 || e.channels > 4 ||
        !e.count || !e.pixels || e.pixels > lim.max_pixels ||
        e.values < e.pixels || e.values > e.pixels * e.channels ||
        e.values * per > lim.max_bytes || !e.length ||
        e.length > GF_MAX_STORED_BYTES)
      return BAD(off,
                 "entry %u (codec %u, dtype %u): %llu records of at most "
                 "%llu pixels, %llu values, %u channels and %llu stored "
                 "bytes is not what valid records give",
                 i, e.codec, e.dtype, (unsigned long long)e.count,
                 (unsigned long long)e.pixels, (unsigned long long)e.values,
                 e.channels, (unsigned long long)e.length);
    total += e.count; /* no overflow: each count was checked below it */
    if (total > count)
      return BAD(off, "entries count more than the index's %llu records",
                 (unsigned long long)count);
  }
  if (total != count)
    return BAD(0, "entries count %llu records, the index has %llu",
               (unsigned long long)total, (unsigned long long)count);
  return 0;
#undef BAD
}

/* An entry in words for a message, or "nothing" (NULL). */
static void describe(const gf_summary_entry *e, char *buf, size_t cap) {
  if (!e) {
    snprintf(buf, cap, "nothing");
    return;
  }
  snprintf(buf, cap,
           "codec %u, dtype %u: %llu records, at most %llu pixels, %llu "
           "values, %u channels, %llu bytes",
           e->codec, e->dtype, (unsigned long long)e->count,
           (unsigned long long)e->pixels, (unsigned long long)e->values,
           e->channels, (unsigned long long)e->length);
}

int gf_summary_compare(const uint8_t *p, const gf_summary_acc *a,
                       const char *path) {
  uint8_t
      want[GF_SUMMARY_HEAD_SIZE + GF_CODEC_COUNT_ * 2 * GF_SUMMARY_ENTRY_SIZE];
  uint32_t wsize = gf_summary_write(a, want);
  uint32_t n = gf_le32(p + GF_SM_ENTRIES), wn = gf_le32(want + GF_SM_ENTRIES);
  for (uint32_t i = 0; i < n || i < wn; i++) {
    uint64_t off = GF_SUMMARY_HEAD_SIZE + (uint64_t)i * GF_SUMMARY_ENTRY_SIZE;
    if (i < n && i < wn &&
        memcmp(p + off, want + off, GF_SUMMARY_ENTRY_SIZE) == 0)
      continue;
    gf_summary_entry s = {0}, r = {0};
    if (i < n)
      entry_read(p + off, &s);
    if (i < wn)
      entry_read(want + off, &r);
    char says[200], gives[200];
    describe(i < n ? &s : NULL, says, sizeof says);
    describe(i < wn ? &r : NULL, gives, sizeof gives);
    return gf_fail(GF_ECORRUPT, path, GF_NO_INDEX, GF_INDEX_HEADER_SIZE + off,
                   "summary table disagrees with the records: its entry %u "
                   "says %s; the records give %s",
                   i, says, gives);
  }
  (void)wsize;
  return 0;
}

/* ---- sizes under decode options ------------------------------------------ */

/* Decoded bytes a sample takes under o: gf_decode's conversion rules
 * (channels as asked, 16 bits kept only when asked). A png record's shape
 * was taken with 16 bits reduced, so keep_16bit may double it. */
static uint64_t out_bytes(int codec, const gf_shape *stored,
                          const gf_decode_opts *o) {
  gf_shape s = *stored;
  if (o->channels)
    s.channels = o->channels;
  if (codec == GF_CODEC_PNG && o->keep_16bit)
    s.dtype = GF_DTYPE_U16;
  else if (s.dtype == GF_DTYPE_U16 && !o->keep_16bit)
    s.dtype = GF_DTYPE_U8;
  return gf_shape_bytes(&s);
}

void gf_sizes_scan_init(gf_sizes_scan *sc, const gf_decode_opts *opts) {
  memset(sc, 0, sizeof *sc);
  sc->opts = *opts;
  sc->native = *opts;
  sc->native.channels = 0;
  sc->native.keep_16bit = 1;
  sc->max_bytes = gf_limits_resolve(&opts->limits).max_bytes;
}

/* A damaged record cannot make the buffers larger than the limits allow:
 * sizes beyond them are left out here and refused when the sample is read. */
void gf_sizes_scan_add(gf_sizes_scan *sc, int codec, const gf_shape *shape,
                       uint64_t length) {
  gf_record_sizes *z = &sc->out;
  if (codec >= 0 && codec < GF_CODEC_COUNT_)
    z->by_codec[codec]++;
  uint64_t d = out_bytes(codec, shape, &sc->opts);
  uint64_t nat = out_bytes(codec, shape, &sc->native);
  if (nat <= sc->max_bytes && nat > z->max_native)
    z->max_native = nat;
  if (d <= sc->max_bytes && d > z->max_decoded)
    z->max_decoded = d;
  uint32_t ch = sc->opts.channels ? sc->opts.channels : shape->channels;
  if (d <= sc->max_bytes && ch > z->max_channels)
    z->max_channels = ch;
  if (length <= sc->max_bytes && length > z->max_stored)
    z->max_stored = length;
}

bool gf_summary_sizes(const uint8_t *p, const gf_decode_opts *opts,
                      gf_record_sizes *out) {
  memset(out, 0, sizeof *out);
  if (opts->channels > 4)
    return false; /* gf_decode refuses it; a scan says what it says */
  const uint64_t lim = gf_limits_resolve(&opts->limits).max_bytes;
  uint32_t n = gf_le32(p + GF_SM_ENTRIES);
  for (uint32_t i = 0; i < n; i++) {
    gf_summary_entry e;
    entry_read(p + GF_SUMMARY_HEAD_SIZE + (uint64_t)i * GF_SUMMARY_ENTRY_SIZE,
               &e);
    /* Within an entry every record has the same bytes a value under any
     * options (out_bytes), so the largest decoded sample is the largest
     * pixels (channels set) or values (native channels) times it. */
    uint64_t per = 1;
    if (opts->keep_16bit &&
        (e.codec == GF_CODEC_PNG || e.dtype == GF_DTYPE_U16))
      per = 2;
    uint64_t native_per =
        e.codec == GF_CODEC_PNG || e.dtype == GF_DTYPE_U16 ? 2 : 1;
    uint64_t d =
        opts->channels ? e.pixels * opts->channels * per : e.values * per;
    uint64_t nat = e.values * native_per;
    /* A scan leaves out each record beyond the limit; an entry whose
     * largest record is beyond it may hold others below, which only a
     * scan can tell. */
    if (d > lim || nat > lim || e.length > lim)
      return false;
    if (e.codec < GF_CODEC_COUNT_)
      out->by_codec[e.codec] += e.count;
    if (d > out->max_decoded)
      out->max_decoded = d;
    if (nat > out->max_native)
      out->max_native = nat;
    uint32_t ch = opts->channels ? opts->channels : e.channels;
    if (ch > out->max_channels)
      out->max_channels = ch;
    if (e.length > out->max_stored)
      out->max_stored = e.length;
  }
  return true;
}
