/* The GPU resize's tiling (kernels/resize_tile.h, the steps the
 * xform_resize kernel runs) on the host: each block step run for every
 * thread index one after another, exactly as the kernel orders them
 * between its barriers, and every resampled pixel compared with the CPU
 * reference (gf_xform_ref, u8 NHWC output: the resampled pixel itself):
 * - random batches: every mode, antialiased or not, flips, 1-4 channels,
 *   sources from 1 pixel (windows of 1 px, upscaling) to 120, odd output
 *   sizes from 1 to 80 (partial tiles, several tiles a side);
 * - 224x224 from 200-500 px (the training and evaluation recipes);
 * - shrink factors whose tile needs several chunks of source rows (the
 *   chunks are counted: the case must take that path);
 * - huge shrink factors, where the plan must refuse the tile (the kernel's
 *   per-pixel path, which test_gpu_kernels checks on the device).
 * Runs in every build: no device needed. */
#include "testutil.h"

#include "resize_tile.h"
#include "xform/transform.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rs = 20261124;
static uint32_t rnd(uint32_t n) { return (uint32_t)(gf_test_rand(&rs) % n); }

typedef struct stats {
  uint64_t tiles, chunked, refused, pixels;
  uint64_t split; /* tiles made as two halves (the whole did not fit) */
} stats;

#define NTHREADS 128u /* the kernel's block */

/* The steps of one tile (after step 1), as the kernel (tile_staged)
 * orders them, the warp reductions and ballots made lane by lane;
 * returns false for a refused tile. */
static bool staged_tile(gf_rs_shared *sm, const gf_rs_tile *t, uint32_t c,
                        uint32_t ow, uint8_t *got, stats *st,
                        uint32_t *chunks) {
  gf_rs_tile_extent(sm);
  gf_rs_splan p = gf_rs_splan_make(sm, t, c);
  if (!p.ok)
    return false;
  CHECK(p.stride % 4 == 0 && p.seg_v <= p.seg_w && p.st % 4 == 0 &&
        p.st + (uint64_t)p.cap * p.stride <= 4u * GF_RS_POOL);
  /* A column's results hold cap rows and the whole words read past a
   * row's taps; odd, so the 32 columns fall in 32 banks. */
  CHECK(p.hsw % 2 == 1 && 4u * p.hsw >= p.cap + 7u &&
        p.st == 4u * (gf_rs_hs(&p) + c * GF_RS_TILE_W * p.hsw));
  for (uint32_t tid = 0; tid < NTHREADS; tid++)
    gf_rs_tile_sweights(sm, t, &p, tid);
  for (uint32_t a0 = 0; a0 < t->ny;) {
    uint32_t V = 0, B = 0;
    for (uint32_t k = 0; k < 32; k++)
      V |= (uint32_t)gf_rs_chunk_valid(sm, t, a0, k) << k;
    const uint32_t r0 = gf_rs_chunk_r0(sm, V);
    for (uint32_t k = 0; k < 32; k++)
      B |= (uint32_t)gf_rs_chunk_breaks(sm, t, p.cap, a0, r0, k) << k;
    uint32_t b, c0, c1;
    gf_rs_chunk_masks(sm, t, V, B, &b, &c0, &c1);
    /* The same chunk as the one-thread form. */
    gf_rs_tile_chunk(sm, t, p.cap, a0);
    CHECK(b == sm->chunk_end && (c0 == sm->r0 || c1 == c0) &&
          c1 - c0 == sm->r1 - sm->r0);
    CHECK(b > a0 && b <= t->ny && c1 - c0 <= p.cap);
    if (!(b > a0 && b <= t->ny && c1 - c0 <= p.cap))
      return true;
    (*chunks)++;
    const uint32_t nr = c1 - c0;
    /* Poison the results and staged rows: the steps must write what they
     * read (a staged byte read before it is copied shows). */
    memset((uint8_t *)(sm->pool + gf_rs_hs(&p)), 0x47,
           4u * (GF_RS_POOL - gf_rs_hs(&p)));
    for (uint32_t r = 0; r < nr; r++)
      for (uint32_t k = 0; k < p.stride / 4u; k++)
        gf_rs_tile_stage(sm, t, &p, c0, r, k, c);
    /* A staged row: the window row's bytes [seg_lo, seg_lo + seg_v) x c
     * from its address mod 4 on, zeros around them (nothing outside the
     * window's row was copied). */
    for (uint32_t r = 0; r < nr; r++) {
      const uint8_t *g = t->win + (uint64_t)(c0 + r) * t->pitch +
                         (uint64_t)p.seg_lo * c;
      const uint32_t sh = (uint32_t)((uintptr_t)g & 3u);
      const uint8_t *d = (const uint8_t *)sm->pool + p.st + r * p.stride;
      for (uint32_t k = 0; k < p.stride; k++) {
        const bool in = k >= sh && k - sh < p.seg_v * c;
        if (d[k] != (in ? g[k - sh] : 0u)) {
          CHECK(!"staged byte");
          return true;
        }
      }
    }
    /* The kernel's threads: lane = column, warp = first row. */
    for (uint32_t tid = 0; tid < NTHREADS; tid++)
      gf_rs_tile_hsum(sm, t, &p, c0, nr, tid % 32u, tid / 32u,
                      NTHREADS / 32u, c);
    for (uint32_t k = a0; k < b; k++)
      for (uint32_t col = 0; col < t->nx; col++) {
        uint32_t px[4];
        gf_rs_tile_vsum(sm, &p, c0, k, col, px, c);
        size_t e = (size_t)(t->y0 + k) * ow + t->x0 + col;
        for (uint32_t ch = 0; ch < c; ch++)
          got[e * c + ch] = (uint8_t)px[ch];
        st->pixels++;
      }
    a0 = b;
  }
  return true;
}

/* Steps 1-4 of one tile from a poisoned shared state (nothing may be
 * read before it is made: 0x47474747 as a weight shows in any sum that
 * reads it); false when the plan refuses it. */
static bool tile_run(gf_rs_shared *sm, const gf_rs_tile *t, uint32_t c,
                     uint32_t ow, uint8_t *got, stats *st, uint32_t *chunks) {
  memset(sm, 0x47, sizeof *sm);
  for (uint32_t tid = 0; tid < NTHREADS; tid++)
    gf_rs_tile_taps(sm, t, tid);
  return staged_tile(sm, t, c, ow, got, st, chunks);
}

/* Runs the kernel's tile loop for resized sample s of a batch (out_h x
 * out_w x c, shorter side S) into got (u8 NHWC, that sample's part);
 * pixels of refused tiles are marked in `refused` (1 a pixel). */
static void emulate(const gf_xform_sample *s, const uint8_t *src,
                    uint32_t oh, uint32_t ow, uint32_t c, uint32_t S,
                    uint8_t *got, uint8_t *refused, stats *st,
                    gf_rs_shared *sm) {
  gf_rs_tile t;
  uint32_t gh, gw; /* as the kernel's tile_sample */
  gf_xform_geom_size(s, &gh, &gw);
  gf_xform_geom(s->resize, gh, gw, oh, ow, S, &t.rs_h, &t.rs_w, &t.off_y,
                &t.off_x);
  const uint32_t aa = !(s->resize & GF_XFORM_NO_AA);
  gf_rs_axis_init(&t.ay, s->win_h, t.rs_h, aa);
  gf_rs_axis_init(&t.ax, s->win_w, t.rs_w, aa);
  t.img = src + s->src_offset;
  t.img_end = t.img + (uint64_t)s->h * s->w * c;
  t.win = src + s->src_offset +
          ((uint64_t)s->crop_y * s->w + (uint32_t)s->crop_x) * c;
  t.pitch = s->w * c;
  t.c = c;
  t.ow = ow;
  t.flip = s->flip;
  const uint32_t tiles_x = (ow + GF_RS_TILE_W - 1) / GF_RS_TILE_W;
  const uint32_t tiles = tiles_x * ((oh + GF_RS_TILE_H - 1) / GF_RS_TILE_H);
  for (uint32_t tile = 0; tile < tiles; tile++) {
    t.y0 = tile / tiles_x * GF_RS_TILE_H;
    t.x0 = tile % tiles_x * GF_RS_TILE_W;
    t.ny = oh - t.y0 < GF_RS_TILE_H ? oh - t.y0 : GF_RS_TILE_H;
    t.nx = ow - t.x0 < GF_RS_TILE_W ? ow - t.x0 : GF_RS_TILE_W;
    uint32_t chunks = 0;
    st->tiles++;
    /* As the kernel's tile_any: the whole tile, else its two halves of
     * GF_RS_TILE_W / 2 columns, a half that does not fit pixel by pixel. */
    if (tile_run(sm, &t, c, ow, got, st, &chunks))
      goto done;
    st->split++;
    for (uint32_t x = 0; x < t.nx; x += GF_RS_TILE_W / 2) {
      gf_rs_tile u = t;
      u.x0 = t.x0 + x;
      u.nx = t.nx - x < GF_RS_TILE_W / 2 ? t.nx - x : GF_RS_TILE_W / 2;
      if (tile_run(sm, &u, c, ow, got, st, &chunks))
        continue;
      st->refused++;
      for (uint32_t y = u.y0; y < u.y0 + u.ny; y++)
        for (uint32_t xx = u.x0; xx < u.x0 + u.nx; xx++)
          refused[(size_t)y * ow + xx] = 1;
    }
  done:
    st->chunked += chunks > 1;
  }
}

/* One batch: the reference, then the tiles; returns mismatches. */
static int run_batch(const char *what, const gf_transform *t,
                     const gf_xform_sample *s, uint32_t n,
                     const uint8_t *src, uint64_t src_len, uint32_t oh,
                     uint32_t ow, uint32_t c, stats *st) {
  gf_transform u = *t;
  u.out_dtype = GF_OUT_U8;
  u.layout = GF_LAYOUT_NHWC;
  size_t per = (size_t)oh * ow * c;
  uint8_t *want = malloc(per * n), *got = malloc(per);
  uint8_t *refused = malloc((size_t)oh * ow);
  gf_rs_shared *sm = malloc(sizeof *sm);
  CHECK(want && got && refused && sm);
  CHECK_OK(gf_xform_ref(&u, src, src_len, s, n, oh, ow, c, want));
  int bad = 0;
  for (uint32_t i = 0; i < n; i++)
    if (s[i].resize) {
      memset(got, 0x5A, per);
      memset(refused, 0, (size_t)oh * ow);
      emulate(&s[i], src, oh, ow, c, gf_xform_resize_size(t, oh), got,
              refused, st, sm);
      for (size_t e = 0; e < per; e++) {
        if (refused[e / c] || got[e] == want[i * per + e])
          continue;
        if (bad < 5)
          fprintf(stderr,
                  "%s: sample %u (%ux%ux%u window %d,%d %ux%u mode %u "
                  "flip %u) y %zu x %zu ch %zu: got %u want %u\n",
                  what, i, s[i].h, s[i].w, c, s[i].crop_y,
                  s[i].crop_x, s[i].win_h, s[i].win_w, s[i].resize,
                  s[i].flip, e / c / ow, e / c % ow, e % c, got[e],
                  want[i * per + e]);
        bad++;
      }
    }
  free(want);
  free(got);
  free(refused);
  free(sm);
  return bad;
}

/* A batch of n samples of random shapes under t, laid out back to back
 * (at odd offsets) and filled with noise or smooth content. */
static uint8_t *make_batch(const gf_transform *t, gf_xform_sample *s,
                           const gf_shape *sh, uint32_t n, uint32_t oh,
                           uint32_t ow, uint64_t *len) {
  uint64_t off = rnd(7);
  for (uint32_t i = 0; i < n; i++) {
    gf_xform_sample_init(t, rnd(50), gf_test_rand(&rs), off, &sh[i], oh, ow,
                         0, &s[i]);
    off += (uint64_t)sh[i].height * sh[i].width * sh[i].channels + rnd(5);
  }
  uint8_t *src = malloc(off ? off : 1);
  CHECK(src != NULL);
  for (uint32_t i = 0; i < n; i++) {
    const gf_shape *h = &sh[i];
    if (rnd(2))
      gf_test_fill_image(src + s[i].src_offset, h->height, h->width,
                         h->channels, gf_test_rand(&rs));
    else
      for (uint64_t k = 0; k < (uint64_t)h->height * h->width * h->channels;
           k++)
        src[s[i].src_offset + k] = (uint8_t)gf_test_rand(&rs);
  }
  *len = off;
  return src;
}

static void random_case(int idx, bool big, stats *st) {
  gf_transform t;
  memset(&t, 0, sizeof t);
  t.resize = 1 + rnd(3);
  t.no_antialias = rnd(4) == 0;
  t.hflip = rnd(2);
  t.seed = gf_test_rand(&rs);
  if (t.resize == GF_RESIZE_RANDOM_RESIZED_CROP && rnd(3) == 0) {
    t.scale[0] = 0.3f;
    t.scale[1] = 0.9f;
    t.ratio[0] = 0.5f;
    t.ratio[1] = 2.0f;
  }
  uint32_t c = 1 + rnd(4);
  uint32_t n = 1 + rnd(big ? 6 : 8);
  t.height = big ? 224 : 1 + rnd(80);
  t.width = big ? 224 : 1 + rnd(80);
  if (t.resize == GF_RESIZE_SHORTER_CENTER_CROP && rnd(3) == 0)
    t.resize_size = 1 + rnd(t.height + 10); /* often smaller: padding */
  gf_shape *sh = calloc(n, sizeof *sh);
  gf_xform_sample *s = calloc(n, sizeof *s);
  uint32_t maxs = big ? 301 : (rnd(4) ? 120 : 6);
  for (uint32_t i = 0; i < n; i++)
    sh[i] = (gf_shape){(big ? 200 : 1) + rnd(maxs), (big ? 200 : 1) + rnd(maxs),
                       c, GF_DTYPE_U8};
  CHECK_OK(gf_xform_check(&t));
  uint64_t len;
  uint8_t *src = make_batch(&t, s, sh, n, t.height, t.width, &len);
  char what[64];
  snprintf(what, sizeof what, "%s case %d", big ? "224" : "random", idx);
  CHECK(run_batch(what, &t, s, n, src, len, t.height, t.width, c, st) == 0);
  free(src);
  free(s);
  free(sh);
}

/* Resize((oh, ow)) of one h x w x c image (and its flip): returns the
 * tiles that needed several chunks and the refused ones in *st. */
static void exact_case(const char *what, uint32_t h, uint32_t w, uint32_t c,
                       uint32_t oh, uint32_t ow, uint32_t no_aa, stats *st) {
  gf_transform t;
  memset(&t, 0, sizeof t);
  t.resize = GF_RESIZE_EXACT;
  t.no_antialias = no_aa;
  t.height = oh;
  t.width = ow;
  CHECK_OK(gf_xform_check(&t));
  gf_shape sh[2] = {{h, w, c, GF_DTYPE_U8}, {h, w, c, GF_DTYPE_U8}};
  gf_xform_sample s[2];
  uint64_t len;
  uint8_t *src = make_batch(&t, s, sh, 2, oh, ow, &len);
  s[1].flip = 1;
  CHECK(run_batch(what, &t, s, 2, src, len, oh, ow, c, st) == 0);
  free(src);
}

static void print_stats(const char *what, const stats *st) {
  printf("%s: %llu tiles (%llu made as halves, %llu halves refused), %llu "
         "pixels compared, %llu tiles in several chunks\n",
         what, (unsigned long long)st->tiles, (unsigned long long)st->split,
         (unsigned long long)st->refused, (unsigned long long)st->pixels,
         (unsigned long long)st->chunked);
}

int main(void) {
  stats st = {0, 0, 0, 0, 0};
  for (int i = 0; i < 300; i++)
    random_case(i, false, &st);
  print_stats("random (windows of up to 120 px to 1)", &st);
  CHECK(st.pixels > 0 && st.refused < st.tiles / 10);
  stats big = {0, 0, 0, 0, 0};
  for (int i = 0; i < 6; i++)
    random_case(i, true, &big);
  print_stats("224x224 from 200-500 px", &big);
  CHECK(big.refused == 0 && big.pixels > 0); /* shrinks under 3: tiled */

  /* Several chunks a tile: 6x down vertically (32 rows need ~200 source
   * rows; the pool holds ~20 at 3 channels). */
  stats ch = {0, 0, 0, 0, 0};
  exact_case("6x down, rgb", 333, 301, 3, 56, 50, 0, &ch);
  exact_case("8x down, rgba, plain bilinear", 330, 77, 4, 37, 45, 1, &ch);
  exact_case("20x down, gray", 1300, 70, 1, 65, 7, 0, &ch);
  print_stats("chunked", &ch);
  CHECK(ch.chunked > 0 && ch.refused == 0);

  /* 9x down at 3 channels: a whole tile's source columns do not fit the
   * pool, its halves' do (up to ~10x): every tile in halves, none pixel by
   * pixel. */
  stats sp = {0, 0, 0, 0, 0};
  exact_case("9x down, rgb", 900, 810, 3, 100, 90, 0, &sp);
  print_stats("halves", &sp);
  CHECK(sp.split == sp.tiles && sp.tiles > 0 && sp.refused == 0);

  /* Huge shrink factors: the plan refuses the tile (per-pixel path). */
  stats hu = {0, 0, 0, 0, 0};
  exact_case("500x down across", 9, 4000, 3, 9, 8, 0, &hu);
  exact_case("60x down, rgba", 1200, 1200, 4, 20, 20, 0, &hu);
  CHECK(hu.split == hu.tiles && hu.refused >= hu.tiles && hu.tiles > 0);
  /* Plain bilinear never widens its taps: the same shrink stays tiled. */
  stats pb = {0, 0, 0, 0, 0};
  exact_case("60x down, plain bilinear", 1200, 1200, 4, 20, 20, 1, &pb);
  CHECK(pb.refused == 0 && pb.pixels > 0);
  return gf_test_finish();
}
