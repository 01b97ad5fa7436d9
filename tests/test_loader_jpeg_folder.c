/* Folders of PNG and JPEG files as loader sources:
 *  - a mixed ImageFolder (.png, .jpg, .JPEG, .jpeg; odd sizes from 1x1 up,
 *    gray and RGB, the largest a JPEG whose frame header follows a 60 KiB
 *    APP1 segment, past the first 4 KiB create reads) delivers every file
 *    exactly once an epoch, none skipped: without a transform each
 *    sample's pixels are those of a direct decode of its file; under
 *    RandomResizedCrop (the window decode) every index arrives once; the
 *    plan names the largest file, sized from that late frame header;
 *  - a labels-file folder lists files of any name, each decoded as its
 *    first bytes say;
 *  - bad files, named in the error: content that disagrees with its name
 *    (a .png holding JPEG data) or is neither (garbage named .jpg) fails
 *    create under the fail policy (the header scan), and is skipped and
 *    counted under the skip policy; a JPEG cut short inside its image data
 *    or with corrupt data fails next() naming the file (fail policy), or
 *    is skipped and counted with every valid file delivered (skip policy),
 *    with the window decode and without. */
#include "jpeg_fixture.h"

#include "decode/decode.h"
#include "format/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFILES 30

/* Inserts an APP1 segment of `app` bytes (payload) after the SOI. */
static int add_app1(const char *path, uint32_t app) {
  size_t len;
  uint8_t *b = gf_test_read_file(path, &len);
  if (!b || app > 65533)
    return -1;
  size_t n = len + 4 + app;
  uint8_t *o = malloc(n);
  memcpy(o, b, 2);
  o[2] = 0xFF;
  o[3] = 0xE1;
  o[4] = (uint8_t)((app + 2) >> 8);
  o[5] = (uint8_t)(app + 2);
  memcpy(o + 6, "Exif\0\0", 6);
  for (uint32_t i = 6; i < app; i++)
    o[4 + 2 + i - 0] = (uint8_t)(i * 7); /* payload, no FF pairs needed */
  memcpy(o + 6 + app, b + 2, len - 2);
  free(b);
  int rc = gf_test_write_file(path, o, n);
  free(o);
  return rc;
}

/* The mixed folder: 30 files in 3 classes, sizes 1x1 up to 333x517 (the
 * largest, a JPEG with a 60 KiB APP1), every fourth a PNG. */
static int make_mixed(const char *dir) {
  int rc = jfix_mkdir(dir);
  static const char *const ext[] = {"jpg", "JPEG", "png", "jpeg"};
  uint64_t st = 3;
  for (uint32_t k = 0; k < 3 && rc == 0; k++) {
    char cd[4400];
    snprintf(cd, sizeof cd, "%s/c%u", dir, k);
    rc = jfix_mkdir(cd);
  }
  for (uint32_t i = 0; i < NFILES && rc == 0; i++) {
    uint32_t h = 1 + (uint32_t)(gf_test_rand(&st) % 150);
    uint32_t w = 1 + (uint32_t)(gf_test_rand(&st) % 150);
    if (i == 0)
      h = w = 1;
    if (i == 17)
      h = 333, w = 517;
    uint32_t c = i % 3 == 1 ? 1 : 3;
    const char *e = ext[i % 4];
    char p[4500];
    snprintf(p, sizeof p, "%s/c%u/f%02u.%s", dir, i % 3, i, e);
    if (e[0] == 'p')
      rc = jfix_write_png(p, h, w, c, 50 + i);
    else
      rc = jfix_write_jpeg(p, h, w, c, 50 + i, 70 + (int)i);
    if (rc == 0 && i == 17)
      rc = add_app1(p, 60000);
  }
  return rc;
}

/* Every file decoded directly (channels 3). */
typedef struct refs {
  uint64_t n;
  uint8_t **px;
  gf_shape *s;
} refs;

static int make_refs(const char *dir, refs *r) {
  gf_folder *f;
  if (gf_folder_scan(dir, NULL, &f) < 0)
    return -1;
  r->n = f->count;
  r->px = calloc(r->n, sizeof *r->px);
  r->s = calloc(r->n, sizeof *r->s);
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  o.channels = 3;
  int rc = 0;
  for (uint64_t i = 0; i < r->n && rc == 0; i++) {
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", dir, f->entries[i].path);
    size_t len;
    uint8_t *b = gf_test_read_file(p, &len);
    int codec = f->entries[i].codec;
    gf_shape s;
    rc = b ? gf_decode_shape(codec, b, len, NULL, &o, &s) : -1;
    if (rc == 0) {
      r->px[i] = malloc(gf_shape_bytes(&s));
      rc = gf_decode(codec, b, len, NULL, &o, r->px[i], gf_shape_bytes(&s),
                     &r->s[i]);
    }
    free(b);
  }
  gf_folder_free(f);
  return rc;
}

static gf_loader_config base(const char *dir, uint32_t threads) {
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = dir;
  c.batch_size = 7;
  c.threads = threads;
  c.device = GF_DEVICE_CPU;
  c.channels = 3;
  c.seed = 4;
  return c;
}

/* One epoch: each index's count in seen[] (n entries); with refs, every
 * sample's pixels checked. Returns next()'s last status. */
static int epoch(gf_loader *l, uint64_t e, uint32_t *seen, uint64_t n,
                 const refs *r) {
  int rc = gf_loader_set_epoch(l, e);
  gf_batch *b;
  while (rc == 0 && (rc = gf_loader_next(l, &b)) == 0) {
    for (uint32_t j = 0; j < b->count; j++) {
      uint64_t i = b->indices[j];
      CHECK(i < n);
      if (i >= n)
        continue;
      seen[i]++;
      if (r && (memcmp(&b->shapes[j], &r->s[i], sizeof r->s[i]) != 0 ||
                memcmp((const uint8_t *)b->data + b->offsets[j], r->px[i],
                       gf_shape_bytes(&r->s[i])) != 0)) {
        printf("sample %llu: pixels differ from a direct decode\n",
               (unsigned long long)i);
        gf_test_failures++;
      }
    }
    gf_loader_release(l, b);
  }
  return rc;
}

static void exactly_once(const char *dir, const refs *r) {
  for (int mode = 0; mode < 3; mode++) {
    gf_loader_config c = base(dir, mode == 2 ? 4 : 2);
    if (mode >= 1) {
      c.transform.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
      c.transform.height = c.transform.width = 24;
      c.transform.hflip = 1;
      c.error_policy = mode == 2 ? GF_ON_ERROR_SKIP : GF_ON_ERROR_FAIL;
    }
    gf_loader *l = NULL;
    CHECK_OK(gf_loader_create(&c, &l));
    if (!l)
      continue;
    for (uint64_t e = 0; e < 2; e++) {
      uint32_t seen[NFILES] = {0};
      CHECK_ERR(epoch(l, e, seen, NFILES, mode == 0 ? r : NULL), GF_EEPOCHEND);
      for (int i = 0; i < NFILES; i++)
        if (seen[i] != 1) {
          printf("mode %d epoch %llu: sample %d delivered %u times\n", mode,
                 (unsigned long long)e, i, seen[i]);
          gf_test_failures++;
        }
    }
    gf_loader_stats st = {.struct_size = sizeof st};
    CHECK_OK(gf_loader_stats_get(l, &st));
    CHECK(st.skipped == 0);
    /* 22 of the 30 files are JPEG; prefetch may add the next epoch's. */
    CHECK(st.jpeg_decoded[0] + st.jpeg_decoded[1] + st.jpeg_decoded[2] +
              st.jpeg_decoded[3] >=
          44);
    gf_loader_destroy(l);
  }
  /* The plan: the largest file, sized from its late frame header by the
   * header scan itself (the skip policy reads no file whole to recheck a
   * header that did not count). */
  gf_loader_config c = base(dir, 2);
  c.error_policy = GF_ON_ERROR_SKIP;
  char plan[8192];
  CHECK(gf_loader_plan(&c, plan, sizeof plan) > 0);
  if (!strstr(plan, "c2/f17.JPEG") ||
      !strstr(plan, "image headers of 30 files (0 did not count")) {
    printf("the plan does not name the largest file f17.JPEG, or not every "
           "header counted:\n%s\n",
           plan);
    gf_test_failures++;
  }
}

/* A labels-file folder of names without a known extension: each decoded
 * by its content. */
static void labels_any_name(const char *root) {
  char dir[4300], p[4400], lab[4400];
  snprintf(dir, sizeof dir, "%s/flat", root);
  CHECK_OK(jfix_mkdir(dir));
  snprintf(p, sizeof p, "%s/a.bin", dir);
  CHECK_OK(jfix_write_jpeg(p, 20, 30, 3, 1, 90));
  snprintf(p, sizeof p, "%s/b", dir);
  CHECK_OK(jfix_write_png(p, 21, 31, 3, 2));
  snprintf(lab, sizeof lab, "%s/labels.txt", root);
  const char *lines = "a.bin 4\nb 5\n";
  CHECK_OK(gf_test_write_file(lab, lines, strlen(lines)));
  gf_loader_config c = base(dir, 1);
  c.labels_file = lab;
  c.batch_size = 2;
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&c, &l));
  if (!l)
    return;
  gf_batch *b;
  CHECK_OK(gf_loader_next(l, &b));
  if (b) {
    CHECK(b->count == 2);
    for (uint32_t j = 0; j < b->count; j++)
      CHECK(b->shapes[j].height == (b->indices[j] ? 21u : 20u));
    gf_loader_release(l, b);
  }
  gf_loader_destroy(l);
}

/* The folder dir with bad file `name` (made by `make`) added to class c1.
 * Under the fail policy: create (header: when_create) or next() fails
 * naming the file, saying `why`; under the skip policy every valid file
 * comes once and the bad one is skipped and counted. transform: the window
 * decode. */
static void bad_file(const char *root, const char *name, int kind,
                     bool when_create, const char *why, bool transform) {
  char dir[4300], cmd[9000];
  snprintf(dir, sizeof dir, "%s/bad_%d_%d", root, kind, transform);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s/mixed' '%s'", dir, root,
           dir);
  CHECK(system(cmd) == 0);
  char p[4500];
  snprintf(p, sizeof p, "%s/c1/%s", dir, name);
  if (kind == 0) { /* a JPEG named .png */
    CHECK_OK(jfix_write_jpeg(p, 40, 40, 3, 9, 90));
  } else if (kind == 1) { /* garbage named .jpg */
    CHECK_OK(gf_test_write_file(p, "GIF89a not a jpeg at all", 24));
  } else { /* 2: a JPEG cut inside its data; 3: its data overwritten */
    CHECK_OK(jfix_write_jpeg(p, 120, 160, 3, 9, 90));
    size_t len;
    uint8_t *b = gf_test_read_file(p, &len);
    size_t sos = 0;
    for (size_t i = 2; b && i + 1 < len; i++)
      if (b[i] == 0xFF && b[i + 1] == 0xDA) {
        sos = i;
        break;
      }
    CHECK(sos > 0);
    if (kind == 2) {
      CHECK_OK(gf_test_write_file(p, b, sos + 40));
    } else {
      for (size_t i = sos + 20; i < len - 2; i++)
        b[i] = (uint8_t)(i * 37);
      CHECK_OK(gf_test_write_file(p, b, len));
    }
    free(b);
  }
  /* Which index the bad file got. */
  gf_folder *f;
  uint64_t bad = UINT64_MAX, n = 0;
  if (gf_folder_scan(dir, NULL, &f) == 0) {
    n = f->count;
    for (uint64_t i = 0; i < n; i++)
      if (strstr(f->entries[i].path, name))
        bad = i;
    gf_folder_free(f);
  }
  CHECK(bad != UINT64_MAX && n == NFILES + 1);
  if (bad == UINT64_MAX || n != NFILES + 1)
    return;
  for (int policy = 0; policy < 2; policy++) {
    gf_loader_config c = base(dir, 3);
    c.error_policy = policy ? GF_ON_ERROR_SKIP : GF_ON_ERROR_FAIL;
    if (transform) {
      c.transform.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
      c.transform.height = c.transform.width = 32;
    }
    gf_loader *l = NULL;
    int rc = gf_loader_create(&c, &l);
    if (!policy && when_create) {
      CHECK_ERR(rc, GF_EDECODE);
    } else {
      CHECK_OK(rc);
      if (!l)
        continue;
      uint32_t seen[NFILES + 1] = {0};
      rc = epoch(l, 0, seen, n, NULL);
    }
    if (!policy) {
      const gf_error_info *e = gf_last_error();
      if (rc >= 0 || !strstr(e->path, name) || !strstr(e->message, name) ||
          !strstr(e->message, why)) {
        printf("%s (fail policy, %s): rc %d, error \"%s\" (path %s): the "
               "file and \"%s\" not named\n",
               name, transform ? "window" : "whole", rc, e->message, e->path,
               why);
        gf_test_failures++;
      }
    } else {
      uint32_t seen[NFILES + 1] = {0};
      rc = epoch(l, 1, seen, n, NULL);
      CHECK_ERR(rc, GF_EEPOCHEND);
      for (uint64_t i = 0; i < n; i++)
        if (seen[i] != (i == bad ? 0u : 1u)) {
          printf("%s (skip policy): sample %llu delivered %u times\n", name,
                 (unsigned long long)i, seen[i]);
          gf_test_failures++;
        }
      gf_loader_stats st = {.struct_size = sizeof st};
      CHECK_OK(gf_loader_stats_get(l, &st));
      CHECK(st.skipped == 2); /* once an epoch */
      if (!strstr(st.last_skip_reason, name)) {
        printf("%s: skip reason does not name it: %s\n", name,
               st.last_skip_reason);
        gf_test_failures++;
      }
    }
    gf_loader_destroy(l);
  }
}

int main(void) {
  const char *root = gf_test_tmpdir();
  char mixed[4300];
  snprintf(mixed, sizeof mixed, "%s/mixed", root);
  CHECK_OK(make_mixed(mixed));
  refs r = {0};
  CHECK_OK(make_refs(mixed, &r));
  if (gf_test_failures)
    return gf_test_finish();
  exactly_once(mixed, &r);
  labels_any_name(root);
  for (int t = 0; t < 2; t++) {
    bad_file(root, "z_is_jpeg.png", 0, true, "named .png but holds JPEG data",
             t);
    bad_file(root, "z_garbage.jpg", 1, true, "neither a PNG nor a JPEG", t);
    bad_file(root, "z_cut.jpg", 2, false, "", t);
    bad_file(root, "z_corrupt.jpg", 3, false, "", t);
  }
  for (uint64_t i = 0; i < r.n; i++)
    free(r.px[i]);
  free(r.px);
  free(r.s);
  return gf_test_finish();
}
