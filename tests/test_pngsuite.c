/* PngSuite conformance: every valid image decodes under every request with
 * the shape its IHDR implies, and to exactly the pixels of a small
 * reference decoder written here on zlib alone (filters, Adam7, bit depths,
 * palettes, tRNS); interlaced images equal their non-interlaced twins; the
 * 14 corrupt x*.png are rejected with a message. */
#include "testutil.h"
#include "decode/decode.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h> /* the reference decoder inflates IDAT itself */

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

/* ---- reference decoder -------------------------------------------------- */

typedef struct ref_png {
  uint32_t w, h;
  int depth, ctype, interlace;
  uint8_t plte[256 * 3];
  int nplte;
  uint8_t trns[256];
  int ntrns; /* bytes of tRNS */
  uint8_t *idat;
  size_t nidat;
} ref_png;

static int ref_parse(const uint8_t *p, size_t len, ref_png *r) {
  memset(r, 0, sizeof *r);
  size_t k = 8;
  while (k + 12 <= len) {
    uint32_t n = be32(p + k);
    const uint8_t *d = p + k + 8;
    if (k + 12 + (size_t)n > len)
      return -1;
    if (!memcmp(p + k + 4, "IHDR", 4)) {
      r->w = be32(d);
      r->h = be32(d + 4);
      r->depth = d[8];
      r->ctype = d[9];
      r->interlace = d[12];
    } else if (!memcmp(p + k + 4, "PLTE", 4)) {
      r->nplte = (int)n / 3;
      memcpy(r->plte, d, n > sizeof r->plte ? sizeof r->plte : n);
    } else if (!memcmp(p + k + 4, "tRNS", 4)) {
      r->ntrns = (int)(n > 256 ? 256 : n);
      memcpy(r->trns, d, (size_t)r->ntrns);
    } else if (!memcmp(p + k + 4, "IDAT", 4)) {
      r->idat = realloc(r->idat, r->nidat + n);
      memcpy(r->idat + r->nidat, d, n);
      r->nidat += n;
    } else if (!memcmp(p + k + 4, "IEND", 4)) {
      break;
    }
    k += 12 + (size_t)n;
  }
  return r->w ? 0 : -1;
}

static int paeth(int a, int b, int c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static uint32_t sample_at(const uint8_t *row, uint32_t i, int depth) {
  if (depth == 16)
    return (uint32_t)row[2 * i] << 8 | row[2 * i + 1];
  if (depth == 8)
    return row[i];
  uint32_t per = 8u / (uint32_t)depth, byte = row[i / per];
  uint32_t shift = 8 - (uint32_t)depth * (i % per + 1);
  return (byte >> shift) & ((1u << depth) - 1);
}

/* Decodes into the shape gpufeed gives natively (keep16: 16-bit stays).
 * Returns a malloc'd image and sets *s, or NULL. */
static uint8_t *ref_decode(const uint8_t *file, size_t len, int keep16,
                           gf_shape *s) {
  ref_png r;
  if (ref_parse(file, len, &r) < 0)
    return NULL;
  static const int in_ch[7] = {1, 0, 3, 1, 2, 0, 4};
  int ch = in_ch[r.ctype];
  bool alpha_from_trns = r.ntrns > 0 && (r.ctype == 0 || r.ctype == 2 ||
                                         r.ctype == 3);
  uint32_t oc = r.ctype == 3 ? 3 : (uint32_t)ch;
  if (alpha_from_trns)
    oc++;
  bool out16 = r.depth == 16 && keep16;
  *s = (gf_shape){r.h, r.w, oc, out16 ? GF_DTYPE_U16 : GF_DTYPE_U8};
  uint32_t maxv = out16 ? 65535 : 255;
  size_t ob = out16 ? 2 : 1;
  uint8_t *img = calloc((size_t)r.h * r.w * oc, ob);
  static const int x0[7] = {0, 4, 0, 2, 0, 1, 0}, y0[7] = {0, 0, 4, 0, 2, 0, 1};
  static const int dx[7] = {8, 8, 4, 4, 2, 2, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
  int passes = r.interlace ? 7 : 1;
  /* Inflate everything at once: the size follows from the passes. */
  size_t raw_len = 0;
  for (int p = 0; p < passes; p++) {
    uint32_t pw = r.interlace ? (r.w + (uint32_t)(dx[p] - x0[p]) - 1) / (uint32_t)dx[p] : r.w;
    uint32_t ph = r.interlace ? (r.h + (uint32_t)(dy[p] - y0[p]) - 1) / (uint32_t)dy[p] : r.h;
    if (pw && ph)
      raw_len += (size_t)ph * (1 + ((size_t)pw * ch * r.depth + 7) / 8);
  }
  uint8_t *raw = malloc(raw_len + 1);
  uLongf got = raw_len;
  if (uncompress(raw, &got, r.idat, r.nidat) != Z_OK || got != raw_len) {
    free(raw);
    free(img);
    free(r.idat);
    return NULL;
  }
  uint8_t *q = raw;
  for (int p = 0; p < passes; p++) {
    uint32_t pw = r.interlace ? (r.w + (uint32_t)(dx[p] - x0[p]) - 1) / (uint32_t)dx[p] : r.w;
    uint32_t ph = r.interlace ? (r.h + (uint32_t)(dy[p] - y0[p]) - 1) / (uint32_t)dy[p] : r.h;
    if (!pw || !ph)
      continue;
    size_t rb = ((size_t)pw * ch * r.depth + 7) / 8;
    size_t bpp = (size_t)ch * r.depth / 8;
    if (bpp < 1)
      bpp = 1;
    uint8_t *prev = calloc(rb, 1);
    for (uint32_t y = 0; y < ph; y++, q += 1 + rb) {
      int ft = q[0];
      uint8_t *row = q + 1;
      for (size_t i = 0; i < rb; i++) {
        int a = i >= bpp ? row[i - bpp] : 0, b = prev[i];
        int c = i >= bpp ? prev[i - bpp] : 0;
        int pred = ft == 1 ? a : ft == 2 ? b : ft == 3 ? (a + b) / 2
                 : ft == 4 ? paeth(a, b, c) : 0;
        row[i] = (uint8_t)(row[i] + pred);
      }
      memcpy(prev, row, rb);
      uint32_t iy = r.interlace ? (uint32_t)y0[p] + y * (uint32_t)dy[p] : y;
      for (uint32_t x = 0; x < pw; x++) {
        uint32_t ix = r.interlace ? (uint32_t)x0[p] + x * (uint32_t)dx[p] : x;
        uint32_t v[4] = {0, 0, 0, 0}, o[4] = {0, 0, 0, 0}, n = 0;
        for (int k = 0; k < ch; k++)
          v[k] = sample_at(row, x * (uint32_t)ch + (uint32_t)k, r.depth);
        if (r.ctype == 3) {
          uint32_t idx = v[0];
          for (int k = 0; k < 3; k++)
            o[n++] = (int)idx < r.nplte ? r.plte[idx * 3 + (uint32_t)k] : 0;
          if (alpha_from_trns)
            o[n++] = (int)idx < r.ntrns ? r.trns[idx] : 255;
        } else {
          uint32_t full = (1u << r.depth) - 1;
          bool transparent = false;
          if (alpha_from_trns && r.ctype == 0)
            transparent = v[0] == ((uint32_t)r.trns[0] << 8 | r.trns[1]);
          if (alpha_from_trns && r.ctype == 2)
            transparent = r.ntrns >= 6 &&
                          v[0] == ((uint32_t)r.trns[0] << 8 | r.trns[1]) &&
                          v[1] == ((uint32_t)r.trns[2] << 8 | r.trns[3]) &&
                          v[2] == ((uint32_t)r.trns[4] << 8 | r.trns[5]);
          for (int k = 0; k < ch; k++) {
            uint32_t x8 = v[k];
            if (r.depth < 8)
              x8 = x8 * (255 / full); /* 1, 2, 4 bits: 255, 85, 17 */
            else if (r.depth == 16 && !keep16)
              x8 = (uint32_t)((x8 * 510ull + 65535) / 131070);
            o[n++] = x8;
          }
          if (alpha_from_trns)
            o[n++] = transparent ? 0 : maxv;
        }
        uint8_t *dst = img + ((size_t)iy * r.w + ix) * oc * ob;
        for (uint32_t k = 0; k < n; k++) {
          if (out16) {
            uint16_t h16 = (uint16_t)o[k];
            memcpy(dst + 2 * k, &h16, 2);
          } else {
            dst[k] = (uint8_t)o[k];
          }
        }
      }
    }
    free(prev);
  }
  free(raw);
  free(r.idat);
  return img;
}

/* ---- the suite ---------------------------------------------------------- */

static uint8_t *decode(const void *f, size_t len, uint32_t ch, int k16,
                       gf_shape *out, int *rc) {
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = ch;
  o.keep_16bit = (uint32_t)k16;
  gf_shape s;
  *rc = gf_decode_shape(GF_CODEC_PNG, f, len, NULL, &o, &s);
  if (*rc < 0)
    return NULL;
  size_t n = (size_t)gf_shape_bytes(&s);
  uint8_t *px = malloc(n);
  *rc = gf_decode(GF_CODEC_PNG, f, len, NULL, &o, px, n, out);
  if (*rc == 0 && memcmp(out, &s, sizeof s) != 0) {
    fprintf(stderr, "decode shape differs from decode_shape\n");
    gf_test_failures++;
  }
  if (*rc < 0) {
    free(px);
    return NULL;
  }
  return px;
}

int main(void) {
  char dir[4096];
  char *names[512];
  int nn = gf_test_list_png("pngsuite", dir, sizeof dir, names, 512);

  int valid = 0, corrupt = 0, refchecked = 0, twins = 0;
  for (int i = 0; i < nn; i++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    size_t len;
    uint8_t *f = gf_test_read_file(path, &len);
    CHECK(f != NULL);
    if (!f)
      continue;
    gf_shape out;
    int rc;
    if (names[i][0] == 'x') {
      corrupt++;
      for (int k16 = 0; k16 <= 1; k16++) {
        gf_error_clear();
        uint8_t *px = decode(f, len, 0, k16, &out, &rc);
        if (rc >= 0 || !gf_last_error()->message[0]) {
          fprintf(stderr, "%s: not rejected (%d) or no message\n", names[i],
                  rc);
          gf_test_failures++;
        }
        free(px);
      }
      free(f);
      continue;
    }
    valid++;
    /* The IHDR says the dimensions; the reference says the native shape
     * and the pixels. */
    for (int k16 = 0; k16 <= 1; k16++) {
      gf_shape rs;
      uint8_t *ref = ref_decode(f, len, k16, &rs);
      uint8_t *nat = decode(f, len, 0, k16, &out, &rc);
      if (rc < 0) {
        fprintf(stderr, "%s: %s\n", names[i], gf_last_error()->message);
        gf_test_failures++;
      }
      CHECK(ref != NULL);
      if (ref && nat) {
        refchecked += k16 == 0;
        if (memcmp(&out, &rs, sizeof rs) != 0 ||
            memcmp(ref, nat, (size_t)gf_shape_bytes(&rs)) != 0) {
          fprintf(stderr, "%s keep16=%d: differs from the reference decoder "
                          "(%ux%ux%u/%u vs %ux%ux%u/%u)\n",
                  names[i], k16, out.height, out.width, out.channels,
                  out.dtype, rs.height, rs.width, rs.channels, rs.dtype);
          gf_test_failures++;
        }
        CHECK(out.width == be32(f + 16) && out.height == be32(f + 20));
        /* Requests are the native pixels converted. */
        for (uint32_t ch = 1; ch <= 4; ch++) {
          gf_shape cs;
          uint8_t *conv = decode(f, len, ch, k16, &cs, &rc);
          CHECK_OK(rc);
          if (!conv)
            continue;
          gf_shape want = out;
          want.channels = ch;
          CHECK(memcmp(&cs, &want, sizeof want) == 0);
          uint8_t *exp = malloc((size_t)gf_shape_bytes(&want));
          gf_convert_pixels(nat, &out, exp, &want,
                            (size_t)out.height * out.width);
          CHECK(memcmp(exp, conv, (size_t)gf_shape_bytes(&want)) == 0);
          free(exp);
          free(conv);
        }
      }
      free(ref);
      free(nat);
    }
    /* Interlaced twins: basi* = basn*, sNNi* = sNNn*. */
    size_t nl = strlen(names[i]);
    bool inter = (strncmp(names[i], "basi", 4) == 0) ||
                 (names[i][0] == 's' && nl > 4 && names[i][3] == 'i');
    if (inter) {
      char twin[4400];
      snprintf(twin, sizeof twin, "%s/%s", dir, names[i]);
      twin[strlen(dir) + 1 + 3] = 'n';
      size_t tl;
      uint8_t *tf = gf_test_read_file(twin, &tl);
      CHECK(tf != NULL);
      for (int k16 = 0; tf && k16 <= 1; k16++) {
        gf_shape a, b;
        int ra, rb;
        uint8_t *pa = decode(f, len, 0, k16, &a, &ra);
        uint8_t *pb = decode(tf, tl, 0, k16, &b, &rb);
        CHECK(pa && pb && memcmp(&a, &b, sizeof a) == 0 &&
              memcmp(pa, pb, (size_t)gf_shape_bytes(&a)) == 0);
        free(pa);
        free(pb);
      }
      twins += tf != NULL;
      free(tf);
    }
    free(f);
  }
  /* Facts of the suite checked without any decoder: basn0g01 is black and
   * white only (1 bit -> 0 or 255), basn3p01 has 2 colours, and the
   * transparent tbbn3p08 gets an alpha channel from its tRNS. */
  {
    char path[4400];
    size_t len;
    snprintf(path, sizeof path, "%s/basn0g01.png", dir);
    uint8_t *f = gf_test_read_file(path, &len);
    gf_shape s;
    int rc;
    uint8_t *px = f ? decode(f, len, 0, 0, &s, &rc) : NULL;
    CHECK(px && s.channels == 1 && s.width == 32 && s.height == 32);
    int blacks = 0, whites = 0, others = 0;
    for (size_t k = 0; px && k < 32 * 32; k++)
      blacks += px[k] == 0, whites += px[k] == 255,
          others += px[k] != 0 && px[k] != 255;
    CHECK(blacks > 0 && whites > 0 && others == 0);
    free(px);
    free(f);
    snprintf(path, sizeof path, "%s/tbbn3p08.png", dir);
    f = gf_test_read_file(path, &len);
    px = f ? decode(f, len, 0, 0, &s, &rc) : NULL;
    CHECK(px && s.channels == 4);
    int transparent = 0;
    for (size_t k = 0; px && k < (size_t)s.width * s.height; k++)
      transparent += px[k * 4 + 3] == 0;
    CHECK(transparent > 0);
    free(px);
    free(f);
  }
  fprintf(stderr,
          "%d valid (%d checked against the reference decoder, %d "
          "interlaced twins), %d corrupt rejected\n",
          valid, refchecked, twins, corrupt);
  CHECK(corrupt == 14);
  CHECK(valid >= 150);
  CHECK(refchecked == valid);
  CHECK(twins >= 30);
  for (int i = 0; i < nn; i++)
    free(names[i]);
  return gf_test_finish();
}
