/* No valid image is refused for its size: a PNG folder of mixed sizes,
 * channel counts and bit depths (the first file the smallest), and the
 * datasets built from it (png and gradzstd codecs), load under the skip
 * and the fail policy with every image delivered exactly once an epoch,
 * its pixels those of a direct decode, none skipped; with a crop transform
 * every image arrives too (channels converted to 3: a transformed batch's
 * samples agree on channels). A file rewritten larger after create fails
 * naming the file and saying it changed (fail policy), or is skipped with
 * that reason (skip policy). A max_sample_bytes below the largest image
 * is refused at create, naming its file; the plan names it too. A file
 * that is not a PNG or beyond the limits does not count toward the size:
 * skipped when loaded (skip policy), or create fails naming it (fail).
 *
 * Usage: test_loader_sizes            the mixed folder and the grown file
 *        test_loader_sizes pngsuite   PngSuite's valid images as a folder
 *                                     (skips without the test data) */
#include "loader_fixture.h"

#include "decode/decode.h"
#include "format/format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mkdir_one(const char *p) {
  return mkdir(p, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

/* A PNG of shape s (u8 or u16) with pseudo-random content from seed. */
static int write_png(const char *path, gf_shape s, uint64_t seed,
                     bool noise) {
  size_t n = (size_t)gf_shape_bytes(&s);
  uint8_t *px = malloc(n);
  if (!px)
    return -ENOMEM;
  if (noise || s.dtype == GF_DTYPE_U16) {
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++)
      px[i] = (uint8_t)gf_test_rand(&st);
  } else {
    gf_test_fill_image(px, s.height, s.width, s.channels, seed);
  }
  void *png;
  size_t len;
  int rc = gf_png_encode(px, &s, 6, &png, &len);
  free(px);
  if (rc < 0)
    return rc;
  /* Written beside and renamed: a loader never sees half a file. */
  char tmp[4200];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
    free(png);
    return -ENAMETOOLONG;
  }
  rc = gf_test_write_file(tmp, png, len);
  free(png);
  if (rc == 0 && rename(tmp, path) != 0)
    rc = -errno;
  return rc;
}

/* The references: every listed file decoded directly under opts. */
typedef struct refs {
  uint64_t n;
  uint8_t **px;
  gf_shape *shape;
  int64_t *label;
} refs;

static int make_refs(const char *dir, const gf_decode_opts *o, refs *r) {
  gf_folder *fo;
  if (gf_folder_scan(dir, NULL, &fo) < 0)
    return -1;
  r->n = fo->count;
  r->px = calloc(r->n, sizeof *r->px);
  r->shape = calloc(r->n, sizeof *r->shape);
  r->label = calloc(r->n, sizeof *r->label);
  int rc = 0;
  for (uint64_t k = 0; k < r->n && rc == 0; k++) {
    char path[8800];
    snprintf(path, sizeof path, "%s/%s", dir, fo->entries[k].path);
    size_t len;
    uint8_t *png = gf_test_read_file(path, &len);
    gf_shape s;
    if (!png || gf_decode_shape(GF_CODEC_PNG, png, len, NULL, o, &s) < 0) {
      rc = -1;
    } else {
      r->px[k] = malloc(gf_shape_bytes(&s));
      rc = gf_decode(GF_CODEC_PNG, png, len, NULL, o, r->px[k],
                     gf_shape_bytes(&s), &r->shape[k]);
    }
    r->label[k] = fo->entries[k].label;
    free(png);
  }
  gf_folder_free(fo);
  return rc;
}

static void free_refs(refs *r) {
  for (uint64_t k = 0; k < r->n; k++)
    free(r->px[k]);
  free(r->px);
  free(r->shape);
  free(r->label);
}

/* Two epochs of src under policy: every sample once an epoch, equal to its
 * reference (without a transform), none skipped. crop: a 24x24 crop/pad
 * transform (then the output's shape is checked). */
static void run(const char *what, const char *src, const refs *r, int policy,
                const gf_decode_opts *o, bool crop, uint32_t threads) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = src;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = 3;
  cfg.threads = threads;
  cfg.error_policy = (uint32_t)policy;
  cfg.channels = o->channels;
  cfg.keep_16bit = o->keep_16bit;
  if (crop) {
    /* A transformed batch's samples agree on channels: convert them. */
    cfg.channels = 3;
    cfg.transform.height = 24;
    cfg.transform.width = 24;
    cfg.transform.pad = 1;
  }
  gf_loader *l = NULL;
  int before = gf_test_failures;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!l) {
    printf("%s: create failed: %s\n", what, gf_last_error()->message);
    return;
  }
  uint32_t *seen = calloc(r->n, sizeof *seen);
  for (int epoch = 0; epoch < 2; epoch++) {
    memset(seen, 0, r->n * sizeof *seen);
    for (;;) {
      gf_batch *b;
      int rc = gf_loader_next(l, &b);
      if (rc == GF_EEPOCHEND)
        break;
      if (rc < 0) {
        printf("%s: next: %s\n", what, gf_last_error()->message);
        gf_test_failures++;
        break;
      }
      CHECK(b->skipped == 0);
      for (uint32_t j = 0; j < b->count; j++) {
        uint64_t idx = b->indices[j];
        CHECK(idx < r->n);
        if (idx >= r->n)
          continue;
        seen[idx]++;
        CHECK(b->labels[j] == r->label[idx]);
        if (crop) {
          CHECK(b->out_height == 24 && b->out_width == 24);
          continue;
        }
        const gf_shape *s = &b->shapes[j];
        if (memcmp(s, &r->shape[idx], sizeof *s) != 0 ||
            memcmp((const uint8_t *)b->data + b->offsets[j], r->px[idx],
                   gf_shape_bytes(s)) != 0) {
          printf("%s: sample %llu (%ux%ux%u) differs from its decode "
                 "(%ux%ux%u)\n",
                 what, (unsigned long long)idx, s->height, s->width,
                 s->channels, r->shape[idx].height, r->shape[idx].width,
                 r->shape[idx].channels);
          gf_test_failures++;
        }
      }
      CHECK_OK(gf_loader_release(l, b));
    }
    for (uint64_t k = 0; k < r->n; k++)
      if (seen[k] != 1) {
        printf("%s: epoch %d delivered sample %llu %u times\n", what, epoch,
               (unsigned long long)k, seen[k]);
        gf_test_failures++;
      }
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  if (st.skipped)
    printf("%s: %llu skipped: %s\n", what, (unsigned long long)st.skipped,
           st.last_skip_reason);
  CHECK(st.skipped == 0);
  free(seen);
  gf_loader_destroy(l);
  printf("%s: %s\n", what, gf_test_failures == before ? "ok" : "FAILED");
}

/* Every way of loading dir: the folder (default and 16-bit kept, both
 * policies, 1 and 2 threads, with a crop) and its datasets. */
static void load_all(const char *tmp, const char *dir, const char *tag) {
  gf_decode_opts def = GF_DECODE_OPTS_INIT, k16 = GF_DECODE_OPTS_INIT;
  k16.keep_16bit = 1;
  refs r8, r16;
  memset(&r8, 0, sizeof r8);
  memset(&r16, 0, sizeof r16);
  CHECK_OK(make_refs(dir, &def, &r8));
  CHECK_OK(make_refs(dir, &k16, &r16));
  char what[256], ds[4200];
  for (int policy = 0; policy < 2; policy++) {
    const char *pn = policy == GF_ON_ERROR_SKIP ? "skip" : "fail";
    snprintf(what, sizeof what, "%s folder, %s policy", tag, pn);
    run(what, dir, &r8, policy, &def, false, 2);
    snprintf(what, sizeof what, "%s folder, 16-bit kept, %s policy", tag, pn);
    run(what, dir, &r16, policy, &k16, false, 1);
    snprintf(what, sizeof what, "%s folder, crop 24x24, %s policy", tag, pn);
    run(what, dir, &r8, policy, &def, true, 2);
  }
  static const int codecs[] = {GF_CODEC_PNG, GF_CODEC_GRADZSTD};
  for (int c = 0; c < 2; c++) {
    snprintf(ds, sizeof ds, "%s/ds_%s_%d", tmp, tag, c);
    CHECK_OK(fixture_build_dataset(dir, ds, codecs[c], 1));
    for (int policy = 0; policy < 2; policy++) {
      snprintf(what, sizeof what, "%s dataset (%s), %s policy", tag,
               c ? "gradzstd" : "png", policy ? "skip" : "fail");
      run(what, ds, &r8, policy, &def, false, 2);
    }
  }
  free_refs(&r8);
  free_refs(&r16);
}

/* The mixed folder: sizes, channel counts and bit depths in three classes,
 * the first file (a/0.png) the smallest of all. */
static void mixed(const char *tmp) {
  static const struct {
    const char *cls;
    gf_shape s;
  } imgs[] = {
      {"a", {4, 4, 1, GF_DTYPE_U8}},      {"a", {32, 32, 3, GF_DTYPE_U8}},
      {"a", {32, 32, 3, GF_DTYPE_U8}},    {"b", {40, 40, 3, GF_DTYPE_U8}},
      {"b", {40, 40, 3, GF_DTYPE_U8}},    {"b", {7, 100, 4, GF_DTYPE_U8}},
      {"c", {300, 20, 1, GF_DTYPE_U8}},   {"c", {40, 40, 4, GF_DTYPE_U16}},
      {"c", {33, 17, 2, GF_DTYPE_U8}},    {"c", {20, 300, 1, GF_DTYPE_U16}},
      {"c", {5, 9, 3, GF_DTYPE_U16}},
  };
  char dir[4200], path[4400];
  snprintf(dir, sizeof dir, "%s/mixed", tmp);
  CHECK_OK(mkdir_one(dir));
  for (size_t i = 0; i < sizeof imgs / sizeof imgs[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, imgs[i].cls);
    CHECK_OK(mkdir_one(path));
    snprintf(path, sizeof path, "%s/%s/%02zu.png", dir, imgs[i].cls, i);
    CHECK_OK(write_png(path, imgs[i].s, 100 + i, false));
  }
  load_all(tmp, dir, "mixed");

  /* Sized from every header: the largest is c/07.png (40x40 RGBA, 6,400
   * bytes at 8 bits), which the plan names; a max_sample_bytes below it
   * is refused at create, naming it. */
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = dir;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = 2;
  cfg.threads = 2;
  char plan[4096];
  CHECK(gf_loader_plan(&cfg, plan, sizeof plan) > 0);
  printf("%s", plan);
  CHECK(strstr(plan, "staging place: 6,400 B") != NULL);
  CHECK(strstr(plan, "c/07.png") != NULL);
  CHECK(strstr(plan, "image headers of 11 files (0 did not count") != NULL);
  cfg.max_sample_bytes = 6399;
  gf_loader *l = NULL;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  CHECK(l == NULL);
  const char *m = gf_last_error()->message;
  printf("%s\n", m);
  CHECK(strstr(m, "c/07.png") != NULL && strstr(m, "max_sample_bytes") &&
        strstr(m, "6400 bytes") != NULL);
  cfg.max_sample_bytes = 6400;
  CHECK_OK(gf_loader_create(&cfg, &l));
  gf_loader_destroy(l);
}

/* PngSuite's valid images (not x*.png) in three classes. */
static void pngsuite(const char *tmp) {
  char src[4096], dir[4200], path[4400];
  char *names[512];
  int n = gf_test_list_png("pngsuite", src, sizeof src, names, 512);
  snprintf(dir, sizeof dir, "%s/pngsuite", tmp);
  CHECK_OK(mkdir_one(dir));
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (names[i][0] != 'x') {
      snprintf(path, sizeof path, "%s/c%d", dir, k % 3);
      CHECK_OK(mkdir_one(path));
      snprintf(path, sizeof path, "%s/%s", src, names[i]);
      size_t len;
      void *data = gf_test_read_file(path, &len);
      CHECK(data != NULL);
      snprintf(path, sizeof path, "%s/c%d/%s", dir, k % 3, names[i]);
      if (data)
        CHECK_OK(gf_test_write_file(path, data, len));
      free(data);
      k++;
    }
    free(names[i]);
  }
  printf("PngSuite: %d valid images\n", k);
  CHECK(k > 100);
  load_all(tmp, dir, "pngsuite");
}

/* Files rewritten larger after create: 8 and 9 of ten 8x8 images, loaded
 * one a batch in storage order with one slot, so neither is read before
 * the rewrite; 8 then decodes larger than its place, 9 is a larger file
 * than the read buffer holds. */
static void grown(const char *tmp, int policy) {
  char dir[4200], path[4400], f8[4400], f9[4400];
  snprintf(dir, sizeof dir, "%s/grown%d", tmp, policy);
  snprintf(path, sizeof path, "%s/k", dir);
  CHECK_OK(mkdir_one(dir));
  CHECK_OK(mkdir_one(path));
  for (int i = 0; i < 10; i++) {
    snprintf(path, sizeof path, "%s/k/%02d.png", dir, i);
    CHECK_OK(write_png(path, (gf_shape){8, 8, 3, GF_DTYPE_U8}, 7 + i, false));
  }
  snprintf(f8, sizeof f8, "%s/k/08.png", dir);
  snprintf(f9, sizeof f9, "%s/k/09.png", dir);
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = dir;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = 1;
  cfg.threads = 1;
  cfg.prefetch = 1;
  cfg.order = GF_ORDER_SEQUENTIAL;
  cfg.error_policy = (uint32_t)policy;
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!l)
    return;
  CHECK_OK(write_png(f8, (gf_shape){64, 64, 3, GF_DTYPE_U8}, 1, false));
  CHECK_OK(write_png(f9, (gf_shape){256, 256, 3, GF_DTYPE_U8}, 2, true));
  int delivered = 0, failures = 0;
  for (int guard = 0; guard < 40; guard++) {
    gf_batch *b;
    int rc = gf_loader_next(l, &b);
    if (rc == GF_EEPOCHEND)
      break;
    if (rc < 0) {
      const gf_error_info *e = gf_last_error();
      printf("fail policy: %s\n", e->message);
      const char *want = failures == 0 ? f8 : f9;
      CHECK(strstr(e->message, want) != NULL);
      CHECK(strstr(e->message, "changed since the loader was created") !=
            NULL);
      failures++;
      continue;
    }
    CHECK(b->indices[0] < 8);
    delivered++;
    CHECK_OK(gf_loader_release(l, b));
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  CHECK(delivered == 8);
  if (policy == GF_ON_ERROR_SKIP) {
    printf("skip policy: %llu skipped, the last: %s\n",
           (unsigned long long)st.skipped, st.last_skip_reason);
    CHECK(failures == 0 && st.skipped == 2);
    CHECK(strstr(st.last_skip_reason, f9) != NULL);
    CHECK(strstr(st.last_skip_reason, "changed since the loader was "
                                      "created") != NULL);
  } else {
    CHECK(failures == 2);
  }
  gf_loader_destroy(l);
}

/* Files that do not count toward the size: one not a PNG, one wider than
 * the limits. The skip policy skips both when loaded (reason given) and
 * delivers the rest; the plan says 2 did not count and sizes from the
 * valid ones; the fail policy fails create naming the first of them. */
static void uncounted(const char *tmp) {
  char dir[4200], path[4400];
  snprintf(dir, sizeof dir, "%s/uncounted", tmp);
  snprintf(path, sizeof path, "%s/k", dir);
  CHECK_OK(mkdir_one(dir));
  CHECK_OK(mkdir_one(path));
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/k/%d.png", dir, i);
    CHECK_OK(write_png(path, (gf_shape){8, 8 + (uint32_t)i, 3, GF_DTYPE_U8},
                       3 + i, false));
  }
  snprintf(path, sizeof path, "%s/k/3.png", dir);
  CHECK_OK(gf_test_write_file(path, "notapng\n", 8));
  char wide[4400];
  snprintf(wide, sizeof wide, "%s/k/4.png", dir);
  CHECK_OK(write_png(wide, (gf_shape){10, 100, 3, GF_DTYPE_U8}, 9, false));
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = dir;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = 1;
  cfg.threads = 2;
  cfg.limits.max_width = 64;
  cfg.error_policy = GF_ON_ERROR_SKIP;
  char plan[4096];
  CHECK(gf_loader_plan(&cfg, plan, sizeof plan) > 0);
  CHECK(strstr(plan, "staging place: 240 B") != NULL);
  CHECK(strstr(plan, "image headers of 5 files (2 did not count") != NULL);
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&cfg, &l));
  int delivered = 0;
  for (int guard = 0; l && guard < 20; guard++) {
    gf_batch *b;
    int rc = gf_loader_next(l, &b);
    if (rc < 0) {
      CHECK(rc == GF_EEPOCHEND);
      break;
    }
    CHECK(b->indices[0] < 3);
    delivered++;
    CHECK_OK(gf_loader_release(l, b));
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  if (l)
    CHECK_OK(gf_loader_stats_get(l, &st));
  printf("uncounted, skip policy: %d delivered, %llu skipped, the last: %s\n",
         delivered, (unsigned long long)st.skipped, st.last_skip_reason);
  CHECK(delivered == 3 && st.skipped == 2);
  gf_loader_destroy(l);
  cfg.error_policy = GF_ON_ERROR_FAIL;
  l = NULL;
  CHECK(gf_loader_create(&cfg, &l) < 0 && l == NULL);
  printf("uncounted, fail policy: %s\n", gf_last_error()->message);
  snprintf(path, sizeof path, "%s/k/3.png", dir);
  CHECK(strstr(gf_last_error()->message, path) != NULL);
}

int main(int argc, char **argv) {
  const char *tmp = gf_test_tmpdir();
  if (argc > 1 && strcmp(argv[1], "pngsuite") == 0) {
    pngsuite(tmp);
    return gf_test_finish();
  }
  mixed(tmp);
  grown(tmp, GF_ON_ERROR_FAIL);
  grown(tmp, GF_ON_ERROR_SKIP);
  uncounted(tmp);
  return gf_test_finish();
}
