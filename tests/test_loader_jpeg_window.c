/* A JPEG sample under a transform with a fixed output size is decoded as
 * only its window (lib/pipeline/loader_jpeg.c; the arithmetic in
 * transform.h, "Decoded regions"):
 *  - with the DCT scaling off (GF_JPEG_SCALE_OFF) every sample's output is
 *    byte-identical to its file decoded whole followed by the CPU
 *    transform of the same window (gf_decode + gf_xform_ref), for
 *    RandomResizedCrop (with flip), Resize + CenterCrop, Resize to a fixed
 *    size and a random crop with padding, over two epochs; fewer pixels
 *    are decoded than the images hold (RandomResizedCrop, crop);
 *  - with it on, reduced scales are used (the stats count them) and the
 *    output stays within the tolerance docs/TRANSFORMS.md states of that
 *    reference: the mean absolute difference an output value (u8) at most
 *    TOL_MEAN, and no value off by more than TOL_MAX, on the synthetic
 *    images and on crops of the photographs in ../shared/data/photos
 *    (sides 200-500, quality 90: the benchmark's recipe; skipped without
 *    the data); the numbers are printed. Each scaled sample is also
 *    byte-identical to its image decoded whole at the scale the loader
 *    picked, followed by the transform of the window at that scale: the
 *    region decode and the window arithmetic are exact, only the scaling
 *    itself differs from a full decode;
 *  - the loader's stats: JPEG decodes by scale add up to the samples, and
 *    the decoded pixel fraction is below 1 where windows are cut. */
#include "jpeg_fixture.h"

#include "decode/decode.h"
#include "xform/transform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tolerance docs/TRANSFORMS.md states for DCT-scaled windows against a
 * full decode (u8 output, pixel units). */
#define TOL_MEAN 4.0
#define TOL_MAX 128

typedef struct diff {
  uint64_t n, sum, max, samples, off_samples;
} diff;

typedef struct mode {
  const char *name;
  uint32_t resize, h, w, random_crop, pad, hflip;
  bool windowed; /* fewer pixels decoded than the images hold */
} mode;

static const mode modes[] = {
    {"RandomResizedCrop 48x48 + flip", GF_RESIZE_RANDOM_RESIZED_CROP, 48, 48, 0,
     0, 1, true},
    {"Resize + CenterCrop 40x40", GF_RESIZE_SHORTER_CENTER_CROP, 40, 40, 0, 0,
     0, false},
    {"Resize 36x52", GF_RESIZE_EXACT, 36, 52, 0, 0, 0, false},
    {"random crop 64x56 pad 8 + flip", GF_RESIZE_NONE, 64, 56, 1, 8, 1, true},
    /* The training and evaluation sizes of the benchmark (photos only). */
    {"RandomResizedCrop 224x224 + flip", GF_RESIZE_RANDOM_RESIZED_CROP, 224,
     224, 0, 0, 1, true},
    {"Resize 256 + CenterCrop 224x224", GF_RESIZE_SHORTER_CENTER_CROP, 224, 224,
     0, 0, 0, false},
};
#define SMALL_MODES 4

/* The reference of a DCT-scaled window: the image decoded whole at the
 * scale the loader picks for this sample (the same rule: gf_jpeg_pick_denom
 * of gf_xform_region_rect's sizes), then the transform of the window
 * expressed at that scale (gf_xform_sample_init_region on the whole scaled
 * image). The loader's output must be these bytes exactly: its region
 * holds the same pixels as a whole decode at that scale. */
static int scaled_reference(const char *path, const gf_transform *t,
                            uint64_t epoch, uint64_t index,
                            const gf_decode_opts *o, uint8_t *out,
                            uint32_t *denom) {
  size_t len;
  uint8_t *buf = gf_test_read_file(path, &len);
  gf_shape full;
  if (!buf || gf_decode_shape(GF_CODEC_JPEG, buf, len, NULL, o, &full) < 0) {
    free(buf);
    return -1;
  }
  uint32_t y, x, rh, rw, wh, ww;
  gf_xform_region_rect(t, epoch, index, full.height, full.width, &y, &x, &rh,
                       &rw, &wh, &ww);
  uint32_t d = t->resize ? gf_jpeg_pick_denom(rh, rw, wh, ww) : 1;
  *denom = d;
  gf_jpeg_region r = {0, 0, full.height, full.width, d, false};
  uint8_t *px = malloc(gf_shape_bytes(&full));
  gf_shape s;
  uint32_t y0, x0;
  int rc = gf_jpeg_decode_region(buf, len, o, &r, px, gf_shape_bytes(&full), &s,
                                 &y0, &x0);
  free(buf);
  if (rc == 0) {
    gf_xform_region reg = {full.height, full.width, d, y0, x0};
    gf_xform_sample p;
    gf_xform_sample_init_region(t, epoch, index, 0, &s, t->height, t->width,
                                &reg, &p);
    rc = gf_xform_ref(t, px, gf_shape_bytes(&s), &p, 1, t->height, t->width,
                      s.channels, out);
  }
  free(px);
  return rc;
}

/* Runs `epochs` epochs of dir under mode m and scaling `scale`, comparing
 * every sample with the reference; byte-identical required when `exact`,
 * else the differences are summed into *d (and, scaling on, each sample
 * must equal its scaled reference exactly). */
static void run(const char *dir, const mode *m, uint32_t scale, bool exact,
                uint32_t epochs, diff *d, gf_loader_stats *st_out) {
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = dir;
  c.batch_size = 8;
  c.threads = 2;
  c.device = GF_DEVICE_CPU;
  c.channels = 3;
  c.seed = 11;
  c.jpeg_scale = scale;
  c.transform.height = m->h;
  c.transform.width = m->w;
  c.transform.resize = m->resize;
  c.transform.random_crop = m->random_crop;
  c.transform.pad = m->pad;
  c.transform.hflip = m->hflip;
  c.transform.seed = 5;
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&c, &l));
  if (!l)
    return;
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = 3;
  size_t one = (size_t)m->h * m->w * 3;
  uint8_t *ref = malloc(one), *sref = malloc(one);
  uint64_t seen = 0, mism = 0;
  for (uint32_t e = 0; e < epochs; e++) {
    CHECK_OK(gf_loader_set_epoch(l, e));
    gf_batch *b;
    int rc;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      for (uint32_t j = 0; j < b->count; j++) {
        char rel[1024], path[5200];
        CHECK_OK(gf_loader_sample_path(l, b->indices[j], rel, sizeof rel));
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        uint32_t ch = 0;
        CHECK_OK(jfix_reference(path, &c.transform, e, b->indices[j], &o, ref,
                                one, &ch));
        const uint8_t *got = (const uint8_t *)b->output + (size_t)j * one;
        uint64_t sum = 0, mx = 0;
        for (size_t k = 0; k < one; k++) {
          int v = (int)got[k] - (int)ref[k];
          uint64_t a = (uint64_t)(v < 0 ? -v : v);
          sum += a;
          if (a > mx)
            mx = a;
        }
        seen++;
        if (exact && sum) {
          if (mism++ < 3)
            printf("%s: %s (sample %llu, epoch %u) differs from the full "
                   "decode's output (max %llu)\n",
                   m->name, rel, (unsigned long long)b->indices[j], e,
                   (unsigned long long)mx);
          gf_test_failures++;
        }
        uint32_t dn = 1;
        if (scale == GF_JPEG_SCALE_AUTO) {
          CHECK_OK(scaled_reference(path, &c.transform, e, b->indices[j], &o,
                                    sref, &dn));
          if (memcmp(sref, got, one) != 0) {
            if (mism++ < 3)
              printf("%s: %s (sample %llu, epoch %u) differs from its whole "
                     "decode at 1/%u's output\n",
                     m->name, rel, (unsigned long long)b->indices[j], e, dn);
            gf_test_failures++;
          }
        }
        d->n += one;
        d->sum += sum;
        d->samples++;
        d->off_samples += sum != 0;
        if (mx > d->max)
          d->max = mx;
      }
      gf_loader_release(l, b);
    }
    CHECK_ERR(rc, GF_EEPOCHEND);
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  uint64_t total = st.jpeg_decoded[0] + st.jpeg_decoded[1] +
                   st.jpeg_decoded[2] + st.jpeg_decoded[3];
  /* No cache: every delivered sample was decoded (all are JPEG), and the
   * batches prefetched past the last one delivered. */
  CHECK(total >= seen);
  if (scale == GF_JPEG_SCALE_OFF)
    CHECK(st.jpeg_decoded[0] == total);
  CHECK(st.jpeg_pixels_decoded <= st.jpeg_pixels_full);
  if (st_out)
    *st_out = st;
  free(ref);
  free(sref);
  gf_loader_destroy(l);
}

/* A JPEG folder of odd sizes, gray and RGB, qualities 60-95. */
static int make_folder(const char *dir, uint32_t n) {
  /* dir is at most 4200 bytes: the names below fit. */
  uint64_t st = 99;
  int rc = jfix_mkdir(dir);
  for (uint32_t k = 0; k < 2 && rc == 0; k++) {
    char cd[4300];
    snprintf(cd, sizeof cd, "%s/k%u", dir, k);
    rc = jfix_mkdir(cd);
  }
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    uint32_t h = 81 + (uint32_t)(gf_test_rand(&st) % 390);
    uint32_t w = 81 + (uint32_t)(gf_test_rand(&st) % 390);
    uint32_t c = i % 5 == 3 ? 1 : 3;
    int q = 60 + (int)(gf_test_rand(&st) % 36);
    char p[4400];
    snprintf(p, sizeof p, "%s/k%u/f%03u.%s", dir, i % 2, i,
             i % 3 ? "jpg" : "JPEG");
    rc = jfix_write_jpeg(p, h, w, c, 1000 + i, q);
  }
  return rc;
}

static void all_modes(const char *dir, const char *what, size_t nmodes) {
  for (size_t k = 0; k < nmodes; k++) {
    const mode *m = &modes[k];
    diff off = {0}, on = {0};
    gf_loader_stats so, sn;
    memset(&so, 0, sizeof so); /* run() fills them only on success */
    memset(&sn, 0, sizeof sn);
    run(dir, m, GF_JPEG_SCALE_OFF, true, 2, &off, &so);
    run(dir, m, GF_JPEG_SCALE_AUTO, false, 2, &on, &sn);
    double frac_off = so.jpeg_pixels_full ? (double)so.jpeg_pixels_decoded /
                                                (double)so.jpeg_pixels_full
                                          : 0;
    double frac_on = sn.jpeg_pixels_full ? (double)sn.jpeg_pixels_decoded /
                                               (double)sn.jpeg_pixels_full
                                         : 0;
    double mean = on.n ? (double)on.sum / (double)on.n : 0;
    printf("%s, %s: scaling off: %llu samples identical, %.1f%% of the "
           "pixels decoded; scaling on: decodes at 1/1 %llu, 1/2 %llu, "
           "1/4 %llu, 1/8 %llu, %.1f%% of the pixels decoded, mean abs "
           "diff %.3f, max %llu, %llu of %llu samples differ\n",
           what, m->name, (unsigned long long)(off.samples - off.off_samples),
           100 * frac_off, (unsigned long long)sn.jpeg_decoded[0],
           (unsigned long long)sn.jpeg_decoded[1],
           (unsigned long long)sn.jpeg_decoded[2],
           (unsigned long long)sn.jpeg_decoded[3], 100 * frac_on, mean,
           (unsigned long long)on.max, (unsigned long long)on.off_samples,
           (unsigned long long)on.samples);
    CHECK(off.samples > 0 && off.off_samples == 0);
    if (m->windowed)
      CHECK(frac_off < 0.9);
    if (m->resize != GF_RESIZE_NONE) {
      /* The images are 81-500 px a side: for outputs of 36-64 most allow
       * a reduced scale, for 224 some. */
      if (m->h < 100) {
        CHECK(sn.jpeg_decoded[1] + sn.jpeg_decoded[2] + sn.jpeg_decoded[3] >
              sn.jpeg_decoded[0]);
        CHECK(frac_on < frac_off);
      }
      /* (the stats count batches prefetched past the last one read too) */
      CHECK(frac_on <= frac_off + 0.05);
      if (mean > TOL_MEAN || on.max > TOL_MAX) {
        printf("  beyond the stated tolerance (mean %.1f, max %d)\n", TOL_MEAN,
               TOL_MAX);
        gf_test_failures++;
      }
    } else {
      /* No resampling: no scaling, the same bytes. */
      CHECK(sn.jpeg_decoded[1] + sn.jpeg_decoded[2] + sn.jpeg_decoded[3] == 0 &&
            on.sum == 0);
    }
  }
}

int main(void) {
  char dir[4200], photos[4200];
  snprintf(dir, sizeof dir, "%s/jpegs", gf_test_tmpdir());
  CHECK_OK(make_folder(dir, 40));
  if (gf_test_failures)
    return gf_test_finish();
  all_modes(dir, "synthetic", SMALL_MODES);
  snprintf(photos, sizeof photos, "%s/photos", gf_test_tmpdir());
  /* As the benchmark's dataset: sides 200-500, quality 90. */
  if (jfix_photo_folder(photos, 48, 3, 200, 500, 7) > 0)
    all_modes(photos, "photo crops", sizeof modes / sizeof modes[0]);
  else
    printf("no ../shared/data/photos: the photo crops are not measured\n");
  return gf_test_finish();
}
