/* JPEG conformance against libjpeg-turbo's test images (../shared/data/jpeg).
 *
 * testorig.ppm is the picture the other files were encoded from, not a
 * decode of testorig.jpg (no libjpeg-turbo setting reproduces it: islow,
 * ifast and float IDCTs, fancy or not, all differ by up to 3). So the
 * pixels are held to libjpeg-turbo's own test suite instead, whose
 * expected outputs are MD5 sums of djpeg's PPM files:
 *   djpeg -dct int -skip 15,31 testorig.jpg    (every row but 15-31: the
 *                                               full-size fancy decode)
 *   djpeg -dct int -scale 1/2, 1/4, 1/8 testorig.jpg
 *   djpeg -dct int -skip 16,139 testimgari.jpg  (arithmetic coding)
 *   djpeg -dct int -crop 53x53+4+4 testimgari.jpg (a cropped window, 57
 *                                               columns from 0 after the
 *                                               iMCU alignment)
 * islow is integer arithmetic, the same on every platform and SIMD or not,
 * so these are exact. Then: the progressive testimgint.jpg and the
 * arithmetic testimgari.jpg hold the same coefficients and decode to the
 * same bytes; against the source picture testorig.ppm each file is within
 * the tolerance below (its JPEG loss); the 12-bit monkey12.jpg is refused
 * with a clear message. Skips (77) without the data folder. */
#include "testutil.h"
#include "decode/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Distance to the source picture, measured with libjpeg-turbo 2.1.5 (islow
 * is exact, so these do not vary by build): testorig.jpg max 3, mean
 * 0.1905; testimgint.jpg and testimgari.jpg max 17, mean 0.4712. */
#define ORIG_MAX_DIFF 3
#define ORIG_MEAN_DIFF 0.20
#define PROG_MAX_DIFF 17
#define PROG_MEAN_DIFF 0.48

/* ---- MD5 (RFC 1321), to compare with libjpeg-turbo's expected sums ---- */

typedef struct md5 {
  uint32_t h[4];
  uint64_t n;
  uint8_t buf[64];
} md5;

static uint32_t rol(uint32_t x, int c) { return x << c | x >> (32 - c); }

static void md5_block(md5 *m, const uint8_t *p) {
  static const int sh[4][4] = {
      {7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};
  uint32_t w[16], a = m->h[0], b = m->h[1], c = m->h[2], d = m->h[3];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
           (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
  for (int i = 0; i < 64; i++) {
    uint32_t f;
    int g;
    if (i < 16) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (i < 32) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) % 16;
    } else if (i < 48) {
      f = b ^ c ^ d;
      g = (3 * i + 5) % 16;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) % 16;
    }
    /* The RFC's table: floor(|sin(i + 1)| * 2^32). */
    uint32_t k = (uint32_t)floor(fabs(sin((double)(i + 1))) * 4294967296.0);
    uint32_t t = d;
    d = c;
    c = b;
    b = b + rol(a + f + k + w[g], sh[i / 16][i % 4]);
    a = t;
  }
  m->h[0] += a;
  m->h[1] += b;
  m->h[2] += c;
  m->h[3] += d;
}

static void md5_init(md5 *m) {
  *m = (md5){{0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u}, 0, {0}};
}

static void md5_add(md5 *m, const void *data, size_t len) {
  const uint8_t *p = data;
  for (size_t i = 0; i < len; i++) {
    m->buf[m->n % 64] = p[i];
    if (++m->n % 64 == 0)
      md5_block(m, m->buf);
  }
}

static void md5_hex(md5 *m, char out[33]) {
  uint64_t bits = m->n * 8;
  uint8_t pad = 0x80, zero = 0, len[8];
  md5_add(m, &pad, 1);
  while (m->n % 64 != 56)
    md5_add(m, &zero, 1);
  for (int i = 0; i < 8; i++)
    len[i] = (uint8_t)(bits >> (8 * i));
  md5_add(m, len, 8);
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", (m->h[i / 4] >> (8 * (i % 4))) & 0xffu);
}

/* The MD5 of the PPM file djpeg writes for rows [0, a) and [b, h) of an
 * RGB image w pixels wide (b == h: rows [0, a) only). */
static void ppm_md5(const uint8_t *px, uint32_t w, uint32_t h, uint32_t a,
                    uint32_t b, char out[33]) {
  md5 m;
  md5_init(&m);
  char head[64];
  int n = snprintf(head, sizeof head, "P6\n%u %u\n255\n", w, a + (h - b));
  md5_add(&m, head, (size_t)n);
  md5_add(&m, px, (size_t)a * w * 3);
  md5_add(&m, px + (size_t)b * w * 3, (size_t)(h - b) * w * 3);
  md5_hex(&m, out);
}

static void check_md5(const char *what, const char *got, const char *want) {
  printf("%-40s md5 %s (libjpeg-turbo: %s)\n", what, got, want);
  CHECK(strcmp(got, want) == 0);
}

/* A binary PPM (P6, maxval 255) as RGB; NULL if it is not one. */
static uint8_t *read_ppm(const uint8_t *f, size_t len, gf_shape *s) {
  unsigned w = 0, h = 0, maxv = 0;
  int n = 0;
  if (len < 2 || memcmp(f, "P6", 2) != 0)
    return NULL;
  char head[64];
  memcpy(head, f, len < sizeof head - 1 ? len : sizeof head - 1);
  head[len < sizeof head - 1 ? len : sizeof head - 1] = '\0';
  if (sscanf(head, "P6 %u %u %u%n", &w, &h, &maxv, &n) != 3 || maxv != 255)
    return NULL;
  size_t off = (size_t)n + 1; /* one whitespace byte after maxval */
  *s = (gf_shape){h, w, 3, GF_DTYPE_U8};
  size_t bytes = (size_t)gf_shape_bytes(s);
  if (!bytes || off + bytes > len)
    return NULL;
  uint8_t *px = malloc(bytes);
  if (px)
    memcpy(px, f + off, bytes);
  return px;
}

static uint8_t *load(const char *dir, const char *name, size_t *len) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  uint8_t *f = gf_test_read_file(path, len);
  if (!f)
    fprintf(stderr, "cannot read %s\n", path);
  CHECK(f != NULL);
  return f;
}

/* Decodes a JPEG file as RGB. */
static uint8_t *decode_rgb(const uint8_t *f, size_t len, gf_shape *s) {
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  CHECK_OK(gf_decode_shape(GF_CODEC_JPEG, f, len, NULL, &o, s));
  size_t n = (size_t)gf_shape_bytes(s);
  uint8_t *px = n ? malloc(n) : NULL;
  gf_shape got;
  if (px && gf_decode(GF_CODEC_JPEG, f, len, NULL, &o, px, n, &got) < 0) {
    fprintf(stderr, "decode: %s\n", gf_last_error()->message);
    gf_test_failures++;
    free(px);
    return NULL;
  }
  CHECK(px && memcmp(&got, s, sizeof got) == 0);
  return px;
}

/* Max and mean absolute difference to the source picture, held to bounds. */
static void compare(const char *name, const uint8_t *a, const uint8_t *b,
                    size_t n, int max_ok, double mean_ok) {
  int max = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    int d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    max = d > max ? d : max;
    sum += (uint64_t)d;
  }
  double mean = (double)sum / (double)n;
  printf("%-40s vs testorig.ppm: max abs diff %d, mean %.4f (allowed %d, "
         "%.4f)\n",
         name, max, mean, max_ok, mean_ok);
  CHECK(max <= max_ok);
  CHECK(mean <= mean_ok);
}

/* A window of f at 1/denom through the region call. */
static uint8_t *region(const uint8_t *f, size_t len, uint32_t y, uint32_t x,
                       uint32_t h, uint32_t w, uint32_t denom, gf_shape *s) {
  gf_jpeg_region r = {y, x, h, w, denom, false};
  size_t cap = (size_t)h * w * 3;
  uint8_t *px = malloc(cap);
  uint32_t y0, x0;
  CHECK_OK(gf_jpeg_decode_region(f, len, NULL, &r, px, cap, s, &y0, &x0));
  return px;
}

int main(void) {
  const char *data = gf_test_data_dir();
  if (!data)
    gf_test_skip(false, "no test data folder (GPUFEED_TEST_DATA)");
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/jpeg", data);
  snprintf(path, sizeof path, "%s/testorig.ppm", dir);
  size_t len;
  uint8_t *ppm = gf_test_read_file(path, &len);
  if (!ppm)
    gf_test_skip(false, "%s is missing", path);
  gf_shape rs;
  uint8_t *ref = read_ppm(ppm, len, &rs);
  CHECK(ref != NULL);
  free(ppm);
  if (!ref)
    return gf_test_finish();
  char sum[33];

  /* Baseline 4:2:0, full size through the public call, then scaled. */
  uint8_t *f = load(dir, "testorig.jpg", &len);
  gf_shape s;
  uint8_t *px = f ? decode_rgb(f, len, &s) : NULL;
  CHECK(px && memcmp(&s, &rs, sizeof s) == 0);
  if (px && memcmp(&s, &rs, sizeof s) == 0) {
    ppm_md5(px, s.width, s.height, 15, 32, sum);
    check_md5("testorig.jpg, rows but 15-31", sum,
              "c4c65c1e43d7275cd50328a61e6534f0");
    compare("testorig.jpg", px, ref, (size_t)gf_shape_bytes(&s),
            ORIG_MAX_DIFF, ORIG_MEAN_DIFF);
  }
  static const struct {
    uint32_t denom;
    const char *md5;
  } scales[] = {{2, "e692a315cea26b988c8e8b29a5dbcd81"},
                {4, "79cd778f8bf1a117690052cacdd54eca"},
                {8, "391b3d4aca640c8567d6f8745eb2142f"}};
  for (size_t i = 0; f && i < sizeof scales / sizeof scales[0]; i++) {
    gf_shape ss;
    uint8_t *sp = region(f, len, 0, 0, rs.height, rs.width, scales[i].denom,
                         &ss);
    ppm_md5(sp, ss.width, ss.height, ss.height, ss.height, sum);
    char what[64];
    snprintf(what, sizeof what, "testorig.jpg at 1/%u (%ux%u)",
             scales[i].denom, ss.width, ss.height);
    check_md5(what, sum, scales[i].md5);
    free(sp);
  }
  free(px);
  free(f);

  /* Progressive and arithmetic-coded: the same coefficients. */
  size_t ilen, alen;
  uint8_t *fi = load(dir, "testimgint.jpg", &ilen);
  uint8_t *fa = load(dir, "testimgari.jpg", &alen);
  gf_shape si, sa;
  uint8_t *pi = fi ? decode_rgb(fi, ilen, &si) : NULL;
  uint8_t *pa = fa ? decode_rgb(fa, alen, &sa) : NULL;
  CHECK(pi && pa && memcmp(&si, &rs, sizeof si) == 0 &&
        memcmp(&sa, &rs, sizeof sa) == 0);
  if (pi && pa && memcmp(&si, &rs, sizeof si) == 0 &&
      memcmp(&sa, &rs, sizeof sa) == 0) {
    CHECK(memcmp(pi, pa, (size_t)gf_shape_bytes(&rs)) == 0);
    ppm_md5(pa, sa.width, sa.height, 16, 140, sum);
    check_md5("testimgari.jpg, rows but 16-139", sum,
              "087c6b123db16ac00cb88c5b590bb74a");
    compare("testimgint.jpg", pi, ref, (size_t)gf_shape_bytes(&rs),
            PROG_MAX_DIFF, PROG_MEAN_DIFF);
    compare("testimgari.jpg", pa, ref, (size_t)gf_shape_bytes(&rs),
            PROG_MAX_DIFF, PROG_MEAN_DIFF);
    gf_shape cs;
    uint8_t *cp = region(fa, alen, 4, 0, 53, 57, 1, &cs);
    CHECK(cs.height == 53 && cs.width == 57);
    ppm_md5(cp, cs.width, cs.height, cs.height, cs.height, sum);
    check_md5("testimgari.jpg window 57x53 at (0,4)", sum,
              "886c6775af22370257122f8b16207e6d");
    free(cp);
  }
  free(pi);
  free(pa);
  free(fi);
  free(fa);

  /* 12-bit: refused, by the shape call and the decode, naming it. */
  f = load(dir, "monkey12.jpg", &len);
  if (f) {
    uint8_t dst[64];
    gf_shape o;
    CHECK_ERR(gf_decode_shape(GF_CODEC_JPEG, f, len, NULL, NULL, &o),
              GF_EUNSUPPORTED);
    CHECK(strstr(gf_last_error()->message, "12-bit JPEG") != NULL);
    printf("monkey12.jpg: %s\n", gf_last_error()->message);
    CHECK_ERR(gf_decode(GF_CODEC_JPEG, f, len, NULL, NULL, dst, sizeof dst, &o),
              GF_EUNSUPPORTED);
    CHECK(strstr(gf_last_error()->message, "12-bit JPEG") != NULL);
  }
  free(f);
  free(ref);
  return gf_test_finish();
}
