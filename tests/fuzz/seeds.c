/* Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
 * from gpufeed's own writers, so that every seed is a valid input that the
 * fuzzer then mutates. Deterministic: the same build writes the same files.
 *
 *   gpufeed_fuzz_seeds tests/fuzz/corpus [../shared/data/pngsuite]
 *
 * With a PngSuite folder, a selection of its files (free to copy, see
 * tests/fuzz/PngSuite.LICENSE) is added to fuzz_png's corpus. The corpora
 * are checked in; run this again only to change them. */
#include "fuzz.h"

#include "decode/decode.h"
#include "format/format.h"
#include "pipeline/sampler.h"

static const char *out_root;

static void put(const char *target, const char *name, const void *data,
                size_t len) {
  char dir[4200], path[4608];
  snprintf(dir, sizeof dir, "%s/%s", out_root, target);
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  fuzz_write_file(path, data, len);
}

/* A growable byte buffer. */
typedef struct buf {
  uint8_t *p;
  size_t len, cap;
} buf;

static void add(buf *b, const void *p, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p)
      abort();
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

static void add_u32(buf *b, uint32_t v) {
  uint8_t le[4];
  fuzz_put32(le, v);
  add(b, le, 4);
}

static void *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    abort();
  }
  buf b = {0};
  uint8_t chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
    add(&b, chunk, n);
  fclose(f);
  *len = b.len;
  return b.p ? b.p : fuzz_alloc(1);
}

static void fill(uint8_t *px, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    px[i] = (uint8_t)((i * 3 + (x >> 24) % 5) & 0xff);
  }
}

/* ---- fuzz_dataset --------------------------------------------------------- */

typedef struct ds_sample {
  int codec;
  gf_shape shape;
  int64_t label;
  const char *source;
} ds_sample;

/* Builds a dataset with the writer and packs it as a fuzz_dataset input
 * (flags, index, shards), with flags 0, 7 and 15. */
static void dataset_seed_v(const char *name, const ds_sample *s, int n,
                           int classes, uint64_t shard_size, uint32_t align,
                           uint32_t version) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/%s", fuzz_tmpdir(), name);
  mkdir(dir, 0755);
  gf_writer_opts wo = {
      .shard_size = shard_size, .alignment = align, .index_version = version};
  gf_writer *w;
  FUZZ_ASSERT(gf_writer_create(dir, &wo, &w) == 0);
  for (int c = 0; c < classes; c++) {
    char cname[32];
    snprintf(cname, sizeof cname, "class%d", c);
    FUZZ_ASSERT(gf_writer_add_class(w, cname) == 0);
  }
  for (int i = 0; i < n; i++) {
    size_t bytes = (size_t)gf_shape_bytes(&s[i].shape);
    uint8_t *px = fuzz_alloc(bytes);
    fill(px, bytes, (uint32_t)i);
    void *enc;
    size_t len;
    if (s[i].codec == GF_CODEC_PNG)
      FUZZ_ASSERT(gf_png_encode(px, &s[i].shape, 6, &enc, &len) == 0);
    else
      FUZZ_ASSERT(gf_encode(s[i].codec, px, &s[i].shape, 0, &enc, &len) == 0);
    int rc = gf_writer_add(w, enc, len, s[i].codec, &s[i].shape, s[i].label,
                           s[i].source);
    if (rc)
      fprintf(stderr, "%s: %s\n", name, gf_last_error()->message);
    FUZZ_ASSERT(rc == 0);
    free(enc);
    free(px);
  }
  FUZZ_ASSERT(gf_writer_finish(w) == 0);
  gf_writer_destroy(w);

  for (unsigned flags = 0; flags <= 15; flags += flags ? 8 : 7) {
    buf b = {0};
    uint8_t f = (uint8_t)flags;
    add(&b, &f, 1);
    char path[4400];
    size_t len;
    snprintf(path, sizeof path, "%s/" GF_INDEX_NAME, dir);
    uint8_t *ix = slurp(path, &len);
    add_u32(&b, (uint32_t)len);
    add(&b, ix, len);
    free(ix);
    for (unsigned i = 0;; i++) {
      char shard[64];
      snprintf(shard, sizeof shard, GF_SHARD_FMT, i);
      snprintf(path, sizeof path, "%s/%s", dir, shard);
      struct stat st;
      if (stat(path, &st) != 0)
        break;
      uint8_t *sh = slurp(path, &len);
      add_u32(&b, (uint32_t)len);
      add(&b, sh, len);
      free(sh);
    }
    char fname[256];
    snprintf(fname, sizeof fname, "%s-flags%u", name, flags);
    put("fuzz_dataset", fname, b.p, b.len);
    free(b.p);
  }
}

/* Each dataset with a version 2 index (a summary table) and, named -v1,
 * with a version 1 index. */
static void dataset_seed(const char *name, const ds_sample *s, int n,
                         int classes, uint64_t shard_size, uint32_t align) {
  char v1[200];
  snprintf(v1, sizeof v1, "%s-v1", name);
  dataset_seed_v(name, s, n, classes, shard_size, align, GF_INDEX_VERSION);
  dataset_seed_v(v1, s, n, classes, shard_size, align, 1);
}

static void dataset_seeds(void) {
  const gf_shape rgb43 = {4, 3, 3, GF_DTYPE_U8};
  const ds_sample raw3[] = {{GF_CODEC_RAW, rgb43, 0, "a/x.png"},
                            {GF_CODEC_RAW, rgb43, 1, "b/y.png"},
                            {GF_CODEC_RAW, rgb43, 1, "b/z.png"}};
  dataset_seed("raw3-classes", raw3, 3, 2, 0, 1);
  const ds_sample mixed[] = {
      {GF_CODEC_RAW, {2, 5, 1, GF_DTYPE_U8}, -7, "gray.png"},
      {GF_CODEC_ZSTD, {3, 4, 3, GF_DTYPE_U8}, 12, "rgb.png"},
      {GF_CODEC_GRADZSTD, {5, 2, 4, GF_DTYPE_U8}, 0, NULL},
      {GF_CODEC_PNG, {4, 4, 2, GF_DTYPE_U8}, 3, "ga.png"},
      {GF_CODEC_ZSTD, {2, 3, 3, GF_DTYPE_U16}, 1, "deep.png"},
      {GF_CODEC_GRADZSTD, {3, 3, 1, GF_DTYPE_U16}, 2, "deep gray.png"},
      {GF_CODEC_PNG, {1, 1, 3, GF_DTYPE_U16}, 5, "one.png"},
      {GF_CODEC_RAW, {1, 2, 2, GF_DTYPE_U16}, 9, "r16.png"}};
  dataset_seed("mixed-nolabels", mixed, 8, 0, 0, 1);
  dataset_seed("mixed-4shards-align64", mixed, 6, 0, 200, 64);
  dataset_seed("one-align4096", raw3, 1, 2, 0, 4096);
  const ds_sample loco[] = {
      {GF_CODEC_LOCO, {9, 6, 3, GF_DTYPE_U8}, 0, "rgb.png"},
      {GF_CODEC_LOCO, {1, 17, 1, GF_DTYPE_U8}, 1, "row.png"},
      {GF_CODEC_LOCO, {20, 3, 4, GF_DTYPE_U8}, 0, "rgba.png"},
      {GF_CODEC_ZSTD, {2, 2, 2, GF_DTYPE_U8}, 1, "ga.png"}};
  dataset_seed("loco-classes", loco, 4, 2, 0, 1);
}

/* ---- fuzz_png -------------------------------------------------------------- */

static void png_seeds(const char *suite) {
  static const gf_shape made[] = {{1, 1, 1, GF_DTYPE_U8},
                                  {2, 3, 3, GF_DTYPE_U8},
                                  {5, 7, 4, GF_DTYPE_U16},
                                  {9, 2, 2, GF_DTYPE_U8},
                                  {4, 4, 1, GF_DTYPE_U16},
                                  {16, 16, 3, GF_DTYPE_U8}};
  for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
    size_t bytes = (size_t)gf_shape_bytes(&made[i]);
    uint8_t *px = fuzz_alloc(bytes);
    fill(px, bytes, (uint32_t)i + 100);
    void *png;
    size_t len;
    FUZZ_ASSERT(gf_png_encode(px, &made[i], 6, &png, &len) == 0);
    buf b = {0};
    uint8_t opt = (uint8_t)(i * 5 % 32);
    add(&b, &opt, 1);
    add(&b, png, len);
    char name[64];
    snprintf(name, sizeof name, "made-%ux%ux%u-%s-opt%u", made[i].height,
             made[i].width, made[i].channels,
             made[i].dtype == GF_DTYPE_U16 ? "u16" : "u8", opt);
    put("fuzz_png", name, b.p, b.len);
    free(b.p);
    free(png);
    free(px);
  }
  if (!suite)
    return;
  /* Every color type and depth, interlaced or not, odd sizes, filters,
   * transparency, zlib levels, ancillary chunks, and the corrupt x* files. */
  static const char *pick[] = {
      "basn0g01", "basn0g02", "basn0g04", "basn0g08", "basn0g16", "basn2c08",
      "basn2c16", "basn3p01", "basn3p02", "basn3p04", "basn3p08", "basn4a08",
      "basn4a16", "basn6a08", "basn6a16", "basi0g01", "basi0g16", "basi2c16",
      "basi3p04", "basi4a16", "basi6a08", "s01i3p01", "s01n3p01", "s09i3p02",
      "s35n3p04", "f00n2c08", "f01n2c08", "f02n2c08", "f03n2c08", "f04n2c08",
      "tbbn0g04", "tbrn2c08", "tm3n3p02", "tp1n3p08", "z00n2c08", "z09n2c08",
      "g04n0g16", "cs3n2c16", "ct1n0g04", "ccwn3p08", "oi4n2c16", "pp0n6a08",
      "xc1n0g08", "xc9n2c08", "xcrn0g04", "xcsn0g01", "xd0n2c08", "xd3n2c08",
      "xd9n2c08", "xdtn0g01", "xhdn0g08", "xlfn0g04", "xs1n0g01", "xs2n0g01",
      "xs4n0g01", "xs7n0g01"};
  for (size_t i = 0; i < sizeof pick / sizeof pick[0]; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s.png", suite, pick[i]);
    struct stat st;
    if (stat(path, &st) != 0) {
      fprintf(stderr, "seeds: %s missing, skipped\n", path);
      continue;
    }
    size_t len;
    uint8_t *png = slurp(path, &len);
    buf b = {0};
    uint8_t opt = (uint8_t)(i % 32);
    add(&b, &opt, 1);
    add(&b, png, len);
    char name[64];
    snprintf(name, sizeof name, "pngsuite-%s-opt%u", pick[i], opt);
    put("fuzz_png", name, b.p, b.len);
    free(b.p);
    free(png);
  }
}

/* ---- fuzz_jpeg ------------------------------------------------------------- */

/* JPEGs from gf_jpeg_encode_ex: gray and RGB, every subsampling,
 * progressive and arithmetic-coded, sizes that do and do not fill whole
 * MCUs, each with window parameters of its own. */
static void jpeg_seeds(void) {
  static const struct {
    gf_shape s;
    gf_jpeg_enc_opts eo; /* subsampling, progressive, arithmetic, cmyk */
    uint8_t params[5];
  } made[] = {
      {{1, 1, 1, GF_DTYPE_U8}, {GF_JPEG_420, 0, 0, 0}, {0, 0, 0, 0, 0}},
      {{8, 8, 3, GF_DTYPE_U8}, {GF_JPEG_420, 0, 0, 0}, {19, 0, 0, 255, 255}},
      {{13, 7, 3, GF_DTYPE_U8}, {GF_JPEG_422, 0, 0, 0}, {6, 100, 200, 50, 90}},
      {{17, 33, 3, GF_DTYPE_U8}, {GF_JPEG_444, 0, 0, 0}, {9, 255, 255, 30, 30}},
      {{24, 20, 1, GF_DTYPE_U8},
       {GF_JPEG_444, 1, 0, 0},
       {13, 40, 80, 120, 160}},
      {{33, 18, 3, GF_DTYPE_U8}, {GF_JPEG_420, 1, 0, 0}, {30, 128, 1, 64, 250}},
      {{20, 21, 3, GF_DTYPE_U8}, {GF_JPEG_420, 0, 1, 0}, {2, 200, 10, 20, 200}},
      {{9, 40, 3, GF_DTYPE_U8}, {GF_JPEG_422, 1, 1, 0}, {23, 0, 255, 255, 1}},
      {{12, 12, 4, GF_DTYPE_U8}, {GF_JPEG_444, 0, 0, 1}, {0, 0, 0, 255, 255}},
      /* Luma 4x2 and 2x4, windows at 1/2 and 1/4: libjpeg-turbo 2.1 crops
       * these wrongly when scaling. */
      {{29, 37, 3, GF_DTYPE_U8}, {GF_JPEG_42, 0, 0, 0}, {6, 30, 10, 200, 230}},
      {{37, 29, 3, GF_DTYPE_U8}, {GF_JPEG_24, 1, 0, 0}, {8, 9, 60, 180, 140}},
  };
  for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
    size_t bytes = (size_t)gf_shape_bytes(&made[i].s);
    uint8_t *px = fuzz_alloc(bytes);
    fill(px, bytes, (uint32_t)i + 300);
    void *jpg;
    size_t len;
    FUZZ_ASSERT(gf_jpeg_encode_ex(px, &made[i].s, 60 + (int)i * 4,
                                  &made[i].eo, &jpg, &len) == 0);
    buf b = {0};
    add(&b, made[i].params, sizeof made[i].params);
    add(&b, jpg, len);
    static const char *sub[GF_JPEG_SUBSAMPLINGS] = {
        "420", "422", "444", "41", "42", "24", "14", "31"};
    char name[80];
    snprintf(name, sizeof name, "made-%ux%ux%u-%s%s%s%s-opt%u",
             made[i].s.height, made[i].s.width, made[i].s.channels,
             sub[made[i].eo.subsampling], made[i].eo.progressive ? "-prog" : "",
             made[i].eo.arithmetic ? "-arith" : "",
             made[i].eo.cmyk ? "-cmyk" : "", made[i].params[0]);
    put("fuzz_jpeg", name, b.p, b.len);
    free(b.p);
    free(jpg);
    free(px);
  }
}

/* ---- fuzz_jpeg_header ------------------------------------------------------ */

/* JPEGs whose frame header the scan must find: plain, gray, progressive,
 * arithmetic, CMYK (found, not sized), after an APP1 that runs past the
 * first 4 KiB, after fill bytes and a restart marker, and cut inside its
 * headers. */
static void jpeg_header_seeds(void) {
  gf_shape s = {21, 34, 3, GF_DTYPE_U8}, g = {9, 5, 1, GF_DTYPE_U8};
  gf_shape k = {8, 8, 4, GF_DTYPE_U8};
  static const gf_jpeg_enc_opts plain = {GF_JPEG_420, 0, 0, 0},
                                prog = {GF_JPEG_444, 1, 0, 0},
                                ari = {GF_JPEG_422, 0, 1, 0},
                                cmyk = {GF_JPEG_444, 0, 0, 1};
  const struct {
    const char *name;
    const gf_shape *s;
    const gf_jpeg_enc_opts *eo;
  } made[] = {{"rgb", &s, &plain}, {"gray", &g, &plain},
              {"prog", &s, &prog}, {"arith", &s, &ari}, {"cmyk", &k, &cmyk}};
  uint8_t px[21 * 34 * 4];
  fill(px, sizeof px, 77);
  void *jpg = NULL;
  size_t len = 0;
  for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
    void *j;
    size_t n;
    FUZZ_ASSERT(gf_jpeg_encode_ex(px, made[i].s, 80, made[i].eo, &j, &n) ==
                0);
    put("fuzz_jpeg_header", made[i].name, j, n);
    if (i == 0) {
      jpg = j;
      len = n;
    } else {
      free(j);
    }
  }
  const uint8_t *p = jpg;
  /* An APP1 segment of 5000 bytes (its length field) after the SOI. */
  buf b = {0};
  static const uint8_t app1[] = {0xFF, 0xE1, 0x13, 0x88, 'E', 'x', 'i', 'f',
                                 0, 0};
  uint8_t body[5000 - 8];
  fill(body, sizeof body, 5);
  add(&b, p, 2);
  add(&b, app1, sizeof app1);
  add(&b, body, sizeof body);
  add(&b, p + 2, len - 2);
  put("fuzz_jpeg_header", "app1-5000", b.p, b.len);
  b.len = 0;
  /* Fill bytes and a restart marker before the first segment. */
  static const uint8_t fillers[] = {0xFF, 0xFF, 0xFF, 0xD3};
  add(&b, p, 2);
  add(&b, fillers, sizeof fillers);
  add(&b, p + 2, len - 2);
  put("fuzz_jpeg_header", "fill-rst", b.p, b.len);
  put("fuzz_jpeg_header", "cut-headers", p, len < 60 ? len : 60);
  free(b.p);
  free(jpg);
}

/* ---- fuzz_zstd ------------------------------------------------------------- */

static void zstd_seeds(void) {
  static const struct {
    int codec;
    unsigned sel; /* fuzz_zstd's codec bits */
    gf_shape s;
  } z[] = {{GF_CODEC_ZSTD, 1, {4, 3, 3, GF_DTYPE_U8}},
           {GF_CODEC_GRADZSTD, 2, {4, 3, 3, GF_DTYPE_U8}},
           {GF_CODEC_ZSTD, 1, {7, 5, 1, GF_DTYPE_U16}},
           {GF_CODEC_GRADZSTD, 2, {6, 9, 4, GF_DTYPE_U16}},
           {GF_CODEC_GRADZSTD, 2, {1, 1, 2, GF_DTYPE_U8}},
           {GF_CODEC_RAW, 0, {3, 2, 3, GF_DTYPE_U8}},
           {GF_CODEC_RAW, 0, {2, 2, 4, GF_DTYPE_U16}},
           {GF_CODEC_ZSTD, 1, {32, 32, 3, GF_DTYPE_U8}}};
  for (size_t i = 0; i < sizeof z / sizeof z[0]; i++) {
    size_t bytes = (size_t)gf_shape_bytes(&z[i].s);
    uint8_t *px = fuzz_alloc(bytes);
    fill(px, bytes, (uint32_t)i + 200);
    void *enc;
    size_t len;
    FUZZ_ASSERT(gf_encode(z[i].codec, px, &z[i].s, 0, &enc, &len) == 0);
    for (unsigned v = 0; v < 2; v++) {
      /* channels and keep_16bit vary between the two copies */
      uint8_t hdr[7] = {(uint8_t)(z[i].sel | ((v ? (i % 4) : 0) << 2) |
                                  (v << 4) | (i == 3 ? 32 : 0)),
                        (uint8_t)z[i].s.height, (uint8_t)(z[i].s.height >> 8),
                        (uint8_t)z[i].s.width, (uint8_t)(z[i].s.width >> 8),
                        (uint8_t)z[i].s.channels, (uint8_t)z[i].s.dtype};
      buf b = {0};
      add(&b, hdr, sizeof hdr);
      add(&b, enc, len);
      char name[64];
      snprintf(name, sizeof name, "%s-%ux%ux%u-%s-%u",
               gf_codec_name(z[i].codec), z[i].s.height, z[i].s.width,
               z[i].s.channels, z[i].s.dtype ? "u16" : "u8", v);
      put("fuzz_zstd", name, b.p, b.len);
      free(b.p);
    }
    free(enc);
    free(px);
  }
}

/* ---- fuzz_loco ------------------------------------------------------------- */

/* loco records of every channel count, bands of 1 to 255 rows (heights a
 * multiple of the band and not), smooth and noisy content, each with a
 * different options byte. */
static void loco_seeds(void) {
  static const struct {
    uint8_t h, w, c, rows, opt;
    bool noise;
  } l[] = {{1, 1, 1, 8, 0, false},    {2, 3, 3, 1, 1, false},
           {9, 7, 4, 3, 2, false},    {17, 5, 2, 8, 3, false},
           {16, 16, 3, 8, 8, false},  {16, 16, 3, 2, 12, true},
           {33, 20, 1, 255, 6, false}, {40, 9, 4, 5, 9, true}};
  for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
    size_t bytes = (size_t)l[i].h * l[i].w * l[i].c;
    uint8_t *px = fuzz_alloc(bytes);
    fill(px, bytes, (uint32_t)i + 400);
    if (l[i].noise) {
      uint32_t x = (uint32_t)i + 1;
      for (size_t k = 0; k < bytes; k++) {
        x = x * 1103515245u + 12345u;
        px[k] = (uint8_t)(x >> 23);
      }
    }
    void *rec;
    size_t len;
    FUZZ_ASSERT(gf_loco_encode(px, l[i].h, l[i].w, l[i].c, l[i].rows, &rec,
                               &len) == 0);
    uint8_t hdr[4] = {l[i].opt, l[i].h, l[i].w, l[i].c};
    buf b = {0};
    add(&b, hdr, sizeof hdr);
    add(&b, rec, len);
    char name[64];
    snprintf(name, sizeof name, "loco-%ux%ux%u-rows%u-%s-opt%u", l[i].h,
             l[i].w, l[i].c, l[i].rows, l[i].noise ? "noise" : "smooth",
             l[i].opt);
    put("fuzz_loco", name, b.p, b.len);
    free(b.p);
    free(rec);
    free(px);
  }
}

/* ---- fuzz_labels ----------------------------------------------------------- */

static void labels_seeds(void) {
  static const struct {
    const char *name, *text;
  } l[] = {
      {"simple", "a.png 0\nb.PNG 1\nsub/c.png 2\n"},
      {"spaces-crlf-comments",
       "# a comment\r\n\r\nwith space.png \t 5\r\n  sub/deeper/d.png -3\n"},
      {"link-inside", "link.png 1\n./a.png 2\nsub/../a.png 3\n"},
      {"escapes", "../outside.png 1\n"},
      {"link-out", "out.png 1\n"},
      {"absolute", "/etc/passwd 0\n"},
      {"missing-label", "a.png\n"},
      {"bad-label", "a.png 12x\n"},
      {"big-label", "a.png 9223372036854775807\nb.PNG -9223372036854775808\n"},
      {"overflow-label", "a.png 9223372036854775808\n"},
      {"loop-dir-fifo", "loop.png 1\ndirlink 2\nfifo.png 3\n"},
      {"hidden-notes-nonl", ".hidden.png 4\nnotes.txt 5"},
      {"no-entries", "# nothing\n\n"},
      {"nul", "a.png 1\n\0b.PNG 2\n"},
  };
  for (size_t i = 0; i < sizeof l / sizeof l[0]; i++) {
    size_t len = strlen(l[i].text);
    if (strcmp(l[i].name, "nul") == 0)
      len = 17;
    put("fuzz_labels", l[i].name, l[i].text, len);
  }
  /* A line at the 8192-byte limit and one past it. */
  for (int over = 0; over < 2; over++) {
    buf b = {0};
    const char *tail = "a.png 1";
    size_t pad = 8192 - strlen(tail) + (size_t)over;
    for (size_t k = 0; k < pad; k++)
      add(&b, " ", 1);
    add(&b, tail, strlen(tail));
    add(&b, "\n", 1);
    put("fuzz_labels", over ? "line-8193" : "line-8192", b.p, b.len);
    free(b.p);
  }
}

/* ---- fuzz_loader_state / fuzz_sampler_state -------------------------------- */

/* A state's input: flags, world byte, rank byte, the 120 state bytes. */
static void put_state(const char *target, const char *name, uint8_t flags,
                      uint8_t world, uint8_t rank, const gf_loader_state *st) {
  uint8_t b[3 + sizeof *st];
  b[0] = flags;
  b[1] = world;
  b[2] = rank;
  memcpy(b + 3, st, sizeof *st);
  put(target, name, b, sizeof b);
}

static void loader_state_seeds(void) {
  /* fuzz_loader_state's loader: 23 samples, batches of 4, rank 1 of 2,
   * seed 7: share 12. The seeds' states are its own (fingerprint 0: the
   * target's flag 0 fills in the real one), cursors from several world
   * sizes (flag 1 rebuilds them valid). */
  static const struct {
    uint8_t flags;
    uint32_t world, rank;
    uint64_t epoch, start, batch, position;
  } s[] = {{1, 2, 1, 0, 0, 0, 0},     {1, 2, 1, 0, 0, 1, 4},
           {3, 2, 0, 3, 0, 2, 8},     {3, 3, 2, 1, 0, 1, 4},
           {3, 1, 0, 2, 5, 2, 8},     {7, 4, 3, 0, 0, 1, 4},
           {1, 2, 1, 0, 0, 3, 12},    {0, 2, 1, 0, 0, 0, 0},
           {3, 2, 1, UINT64_MAX, 0, 2, 11}};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
    gf_sampler_config cfg = GF_SAMPLER_CONFIG_INIT;
    cfg.n = 23;
    cfg.seed = 7;
    cfg.world = s[i].world;
    cfg.rank = s[i].rank;
    cfg.batch_size = 4;
    gf_sampler sm;
    FUZZ_ASSERT(gf_sampler_init(&sm, &cfg) == 0);
    gf_sampler_set_resume(&sm, s[i].epoch, s[i].start);
    uint64_t share = gf_sampler_samples_per_epoch(&sm);
    uint64_t pos = s[i].position < share ? s[i].position : share;
    uint64_t k = s[i].batch * 4 <= pos ? s[i].batch : pos / 4;
    gf_loader_state st;
    FUZZ_ASSERT(gf_sampler_state_export(&sm, 0, s[i].epoch, pos, k, &st) ==
                0);
    char name[64];
    snprintf(name, sizeof name, "state-%zu-flags%u", i, s[i].flags);
    put_state("fuzz_loader_state", name, s[i].flags, (uint8_t)(s[i].world - 1),
              (uint8_t)s[i].rank, &st);
  }
}

static void sampler_state_seeds(void) {
  static const struct {
    uint64_t n, batch;
    uint32_t order, world, partition, drop_last, window;
    uint64_t block, epoch, start, k;
    uint8_t world2; /* 0: import at the same world size */
  } c[] = {
      {23, 4, GF_ORDER_SHUFFLE, 2, GF_PARTITION_PAD, 0, 0, 0, 0, 0, 1, 0},
      {23, 4, GF_ORDER_SHUFFLE, 4, GF_PARTITION_PAD, 0, 0, 0, 0, 0, 1, 3},
      {1000, 32, GF_ORDER_SEQUENTIAL, 1, GF_PARTITION_PAD, 1, 0, 0, 5, 0, 30,
       0},
      {1000, 7, GF_ORDER_BLOCK, 3, GF_PARTITION_DROP, 0, 4, 10, 2, 0, 47, 8},
      {1000, 7, GF_ORDER_BLOCK, 2, GF_PARTITION_PAD, 0, 4, 10, 2, 311, 20, 3},
      {1, 1, GF_ORDER_SHUFFLE, 1, GF_PARTITION_PAD, 0, 0, 0, 0, 0, 1, 2},
      {1ull << 40, 256, GF_ORDER_BLOCK, 8, GF_PARTITION_PAD, 1, 0, 0, 9, 0,
       4096, 5}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    gf_sampler_config cfg = GF_SAMPLER_CONFIG_INIT;
    cfg.n = c[i].n;
    cfg.seed = 1234 + i;
    cfg.order = c[i].order;
    cfg.world = c[i].world;
    cfg.partition = c[i].partition;
    cfg.batch_size = c[i].batch;
    cfg.drop_last = c[i].drop_last;
    cfg.block_size = c[i].block;
    cfg.window_blocks = c[i].window;
    gf_sampler s;
    FUZZ_ASSERT(gf_sampler_init(&s, &cfg) == 0);
    gf_sampler_set_resume(&s, c[i].epoch, c[i].start);
    uint64_t share = gf_sampler_samples_per_epoch(&s);
    uint64_t k = c[i].k;
    uint64_t pos = k * c[i].batch < share ? k * c[i].batch : share;
    gf_loader_state st;
    FUZZ_ASSERT(gf_sampler_state_export(&s, 0x5eed, c[i].epoch, pos, k,
                                        &st) == 0);
    for (uint8_t flags = 0; flags < 2; flags++) {
      uint8_t f = (uint8_t)(flags | (c[i].world2 ? 2 : 0));
      char name[64];
      snprintf(name, sizeof name, "state-%zu-flags%u", i, f);
      put_state("fuzz_sampler_state", name, f,
                (uint8_t)(c[i].world2 ? c[i].world2 - 1 : 0), (uint8_t)i,
                &st);
    }
  }
}

/* ---- fuzz_http_reply ------------------------------------------------------
 */

/* A response head to a request (head, or bytes [off, off + len) of a
 * size-byte object opened with version kind `kind`). */
static void http_seed(const char *name, bool head, uint64_t off, uint64_t len,
                      uint64_t size, unsigned kind, const char *text) {
  buf b = {0};
  uint8_t le[8];
  add(&b, "R", 1);
  fuzz_put64(le, off);
  add(&b, le, 8);
  fuzz_put64(le, len);
  add(&b, le, 8);
  fuzz_put64(le, size);
  add(&b, le, 8);
  uint8_t k = (uint8_t)((head ? 1 : 0) | (kind << 1));
  add(&b, &k, 1);
  add(&b, text, strlen(text));
  put("fuzz_http_reply", name, b.p, b.len);
  free(b.p);
}

static void http_reply_seeds(void) {
  http_seed("get-206", false, 100, 100, 1000, 1,
            "HTTP/1.1 206 Partial Content\r\nServer: nginx\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: 100\r\nContent-Range: bytes 100-199/1000\r\n"
            "ETag: \"v1\"\r\nLast-Modified: Tue, 14 Nov 2023 22:13:20 GMT"
            "\r\n\r\n");
  http_seed("get-206-weak", false, 0, 10, 1000, 2,
            "HTTP/2 206\r\ncontent-range: bytes 0-9/*\r\n"
            "etag: W/\"v1\"\r\n\r\n");
  http_seed("get-200-whole", false, 0, 1000, 1000, 3,
            "HTTP/1.0 200 OK\r\nContent-Length: 1000\r\n"
            "Last-Modified: Tue, 14 Nov 2023 22:13:20 GMT\r\n\r\n");
  http_seed("get-200-to-range", false, 10, 10, 1000, 1,
            "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
  http_seed("get-100-then-206", false, 5, 5, 50, 0,
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 206 Partial\r\n"
            "Content-Range: bytes 5-9/50\r\nContent-Length: 5\r\n\r\n");
  http_seed("get-503-retry-after", false, 0, 1, 1, 0,
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\n"
            "Content-Length: 0\r\n\r\n");
  http_seed("get-429-date", false, 0, 1, 1, 0,
            "HTTP/1.1 429 Too Many Requests\r\n"
            "Retry-After: Tue, 14 Nov 2023 22:13:25 GMT\r\n\r\n");
  http_seed("get-412", false, 0, 8, 64, 1,
            "HTTP/1.1 412 Precondition Failed\r\n\r\n");
  http_seed("get-gzip", false, 0, 8, 64, 1,
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-7/64\r\n"
            "Content-Encoding: gzip\r\n\r\n");
  http_seed("head-200", true, 0, 0, 0, 0,
            "HTTP/1.1 200 OK\r\nContent-Length: 123456\r\n"
            "ETag: \"65536-abc\"\r\nAccept-Ranges: bytes\r\n\r\n");
  http_seed("head-404", true, 0, 0, 0, 0, "HTTP/1.1 404 Not Found\r\n\r\n");
  static const char *const urls[] = {
      "https://user:pa%40ss@Example.com:8443/data/ds/?X-Amz-Signature=abc#f",
      "http://[::1]:8080/ds",
      "HTTP://127.0.0.1/caf%C3%A9/a b",
  };
  for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
    char name[32], text[256];
    snprintf(name, sizeof name, "url-%zu", i);
    snprintf(text, sizeof text, "U%s", urls[i]);
    put("fuzz_http_reply", name, text, strlen(text));
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s CORPUS_DIR [PNGSUITE_DIR]\n", argv[0]);
    return 2;
  }
  out_root = argv[1];
  mkdir(out_root, 0755);
  dataset_seeds();
  png_seeds(argc == 3 ? argv[2] : NULL);
  jpeg_seeds();
  jpeg_header_seeds();
  zstd_seeds();
  loco_seeds();
  labels_seeds();
  loader_state_seeds();
  sampler_state_seeds();
  http_reply_seeds();
  printf("seeds written to %s\n", out_root);
  return 0;
}
