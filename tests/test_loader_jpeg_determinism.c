/* The window decode keeps the loader's promises on a JPEG folder under
 * RandomResizedCrop with flip and DCT scaling on (f16 NCHW, normalised):
 *  - 1 and 8 threads give byte-identical batches, epoch after epoch (the
 *    window is chosen from (seed, epoch, index) and the frame header,
 *    never from timing);
 *  - a resume mid-epoch (state exported after k batches, imported into a
 *    new loader) gives byte-identical batches from there on, through the
 *    next epoch too;
 *  - DCT scaling off gives different bytes (it is on: reduced scales are
 *    used) and its own run is as deterministic. */
#include "jpeg_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 52
#define B 8
#define EPOCHS 2

static int make_folder(const char *dir) {
  uint64_t st = 21;
  int rc = jfix_mkdir(dir);
  for (uint32_t k = 0; k < 3 && rc == 0; k++) {
    char cd[4400];
    snprintf(cd, sizeof cd, "%s/c%u", dir, k);
    rc = jfix_mkdir(cd);
  }
  for (uint32_t i = 0; i < N && rc == 0; i++) {
    uint32_t h = 40 + (uint32_t)(gf_test_rand(&st) % 300);
    uint32_t w = 40 + (uint32_t)(gf_test_rand(&st) % 300);
    char p[4500];
    snprintf(p, sizeof p, "%s/c%u/i%03u.jpg", dir, i % 3, i);
    rc = jfix_write_jpeg(p, h, w, i % 7 == 2 ? 1 : 3, 300 + i, 85);
  }
  return rc;
}

static gf_loader_config config(const char *dir, uint32_t threads,
                               uint32_t scale) {
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = dir;
  c.batch_size = B;
  c.threads = threads;
  c.prefetch = threads > 1 ? 4 : 2;
  c.device = GF_DEVICE_CPU;
  c.channels = 3;
  c.seed = 77;
  c.jpeg_scale = scale;
  gf_transform *t = &c.transform;
  t->resize = GF_RESIZE_RANDOM_RESIZED_CROP;
  t->height = t->width = 40;
  t->hflip = 1;
  t->out_dtype = GF_OUT_F16;
  t->layout = GF_LAYOUT_NCHW;
  const float mean[3] = {123.675f, 116.28f, 103.53f},
              sd[3] = {58.395f, 57.12f, 57.375f};
  for (int k = 0; k < 3; k++) {
    t->mean[k] = mean[k];
    t->std[k] = sd[k];
  }
  return c;
}

/* Hashes of every batch of EPOCHS epochs from the loader's current place
 * (at most cap); returns how many. */
static int run(gf_loader *l, uint64_t first_epoch, uint64_t *h, int cap) {
  int n = 0;
  for (uint64_t e = first_epoch; e < EPOCHS; e++) {
    gf_batch *b;
    int rc;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      if (n < cap)
        h[n++] = jfix_batch_hash(b);
      gf_loader_release(l, b);
    }
    CHECK_ERR(rc, GF_EEPOCHEND);
  }
  return n;
}

static int whole(const char *dir, uint32_t threads, uint32_t scale, uint64_t *h,
                 int cap, gf_loader_stats *st) {
  gf_loader_config c = config(dir, threads, scale);
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&c, &l));
  if (!l)
    return 0;
  int n = run(l, 0, h, cap);
  st->struct_size = sizeof *st;
  CHECK_OK(gf_loader_stats_get(l, st));
  gf_loader_destroy(l);
  return n;
}

int main(void) {
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/jpegs", gf_test_tmpdir());
  CHECK_OK(make_folder(dir));
  if (gf_test_failures)
    return gf_test_finish();
  enum { CAP = 64 };
  uint64_t one[CAP], eight[CAP], off1[CAP], off8[CAP];
  gf_loader_stats s1, s8, so;
  int n1 = whole(dir, 1, GF_JPEG_SCALE_AUTO, one, CAP, &s1);
  int n8 = whole(dir, 8, GF_JPEG_SCALE_AUTO, eight, CAP, &s8);
  CHECK(n1 == EPOCHS * ((N + B - 1) / B) && n1 == n8);
  for (int i = 0; i < n1 && i < n8; i++)
    if (one[i] != eight[i]) {
      printf("batch %d: 1 and 8 threads differ\n", i);
      gf_test_failures++;
    }
  /* Reduced scales were used: the test covers them. */
  CHECK(s1.jpeg_decoded[1] + s1.jpeg_decoded[2] + s1.jpeg_decoded[3] > 0);

  /* Resume after k batches of epoch 0, and after k of epoch 1. */
  int per = (N + B - 1) / B;
  int ks[] = {1, 3, per + 2};
  for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
    int k = ks[t];
    gf_loader_config c = config(dir, 4, GF_JPEG_SCALE_AUTO);
    gf_loader *l = NULL;
    CHECK_OK(gf_loader_create(&c, &l));
    if (!l)
      continue;
    gf_loader_state st;
    int got = 0;
    uint64_t e = 0;
    while (got < k) {
      gf_batch *b;
      int rc = gf_loader_next(l, &b);
      if (rc == GF_EEPOCHEND) {
        e++;
        continue;
      }
      CHECK_OK(rc);
      if (rc < 0)
        break;
      CHECK(jfix_batch_hash(b) == one[got]);
      got++;
      gf_loader_release(l, b);
    }
    CHECK_OK(gf_loader_state_export(l, &st));
    gf_loader_destroy(l);
    c = config(dir, 3, GF_JPEG_SCALE_AUTO);
    l = NULL;
    CHECK_OK(gf_loader_create(&c, &l));
    if (!l)
      continue;
    CHECK_OK(gf_loader_state_import(l, &st));
    uint64_t rest[CAP];
    int n = run(l, e, rest, CAP);
    CHECK(got + n == n1);
    for (int i = 0; i < n && got + i < n1; i++)
      if (rest[i] != one[got + i]) {
        printf("resumed after %d batches: batch %d differs\n", k, got + i);
        gf_test_failures++;
      }
    gf_loader_destroy(l);
  }

  /* Scaling off: its own bytes, as deterministic. */
  int m1 = whole(dir, 1, GF_JPEG_SCALE_OFF, off1, CAP, &so);
  int m8 = whole(dir, 8, GF_JPEG_SCALE_OFF, off8, CAP, &so);
  CHECK(m1 == n1 && m8 == m1);
  int same = 0;
  for (int i = 0; i < m1 && i < m8; i++) {
    CHECK(off1[i] == off8[i]);
    same += off1[i] == one[i];
  }
  CHECK(same < m1);
  CHECK(so.jpeg_decoded[1] + so.jpeg_decoded[2] + so.jpeg_decoded[3] == 0);
  return gf_test_finish();
}
