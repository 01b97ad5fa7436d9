/* `gpufeed build` with JPEG sources, through the CLI:
 *  - --codec jpeg stores a JPEG folder's files as they are (each record's
 *    bytes are its file's, codec jpeg, the decoded shape in the index);
 *    inspect names the codec, verify decodes every record; the loader on
 *    the dataset gives the folder's bytes, whole (no transform) and through
 *    the window decode (RandomResizedCrop, DCT scaling on);
 *  - a mixed PNG + JPEG folder: --codec jpeg refuses its PNG file and
 *    --codec png its JPEG file, each named, saying why; --codec gradzstd
 *    and raw decode both kinds, the dataset's pixels those of the folder;
 *  - a corrupt JPEG fails the build naming it (skipped and listed with
 *    --skip-bad), as does a .png file holding JPEG data. */
#include "jpeg_fixture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *cli, *tmp;

/* Runs "$GPUFEED <args>" through the shell with stdout and stderr in
 * tmp/out and tmp/err; returns its exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
  char args[4096], cmd[12000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out' 2>'%s/err'", cli, args, tmp,
           tmp);
  int st = system(cmd);
  return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* Whether tmp/<which> holds text. */
static bool says(const char *which, const char *text) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", tmp, which);
  size_t len;
  char *b = gf_test_read_file(p, &len);
  bool ok = false;
  if (b) {
    char *z = realloc(b, len + 1);
    if (z) {
      z[len] = '\0';
      ok = strstr(z, text) != NULL;
      b = z;
    }
  }
  if (!ok)
    printf("'%s' not in std%s: %s\n", text, which, b ? b : "(none)");
  free(b);
  return ok;
}

static int folder(const char *dir, bool mixed) {
  int rc = jfix_mkdir(dir);
  for (uint32_t k = 0; k < 2 && rc == 0; k++) {
    char cd[4400];
    snprintf(cd, sizeof cd, "%s/k%u", dir, k);
    rc = jfix_mkdir(cd);
  }
  uint64_t st = 8;
  for (uint32_t i = 0; i < 14 && rc == 0; i++) {
    uint32_t h = 3 + (uint32_t)(gf_test_rand(&st) % 120);
    uint32_t w = 3 + (uint32_t)(gf_test_rand(&st) % 120);
    uint32_t c = i % 4 == 1 ? 1 : 3;
    char p[4500];
    bool png = mixed && i % 5 == 2;
    snprintf(p, sizeof p, "%s/k%u/s%02u.%s", dir, i % 2, i,
             png     ? "png"
             : i % 2 ? "jpeg"
                     : "jpg");
    rc = png ? jfix_write_png(p, h, w, c, i)
             : jfix_write_jpeg(p, h, w, c, i, 88);
  }
  return rc;
}

/* Hash of one epoch of `src` (sequential order): each sample's shape and
 * pixels (no transform), or the outputs (RandomResizedCrop 32). */
static uint64_t epoch_hash(const char *src, bool rrc) {
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = src;
  c.batch_size = 5;
  c.threads = 2;
  c.device = GF_DEVICE_CPU;
  c.order = GF_ORDER_SEQUENTIAL;
  if (rrc) {
    c.channels = 3;
    c.transform.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
    c.transform.height = c.transform.width = 32;
    c.transform.hflip = 1;
  }
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&c, &l));
  if (!l)
    return 0;
  uint64_t h = 0xcbf29ce484222325ull;
  gf_batch *b;
  int rc;
  while ((rc = gf_loader_next(l, &b)) == 0) {
    if (rrc) {
      h = jfix_hash(h, b->output, (size_t)b->output_bytes);
    } else {
      for (uint32_t j = 0; j < b->count; j++) {
        h = jfix_hash(h, &b->shapes[j], sizeof b->shapes[j]);
        h = jfix_hash(h, (const uint8_t *)b->data + b->offsets[j],
                      gf_shape_bytes(&b->shapes[j]));
      }
    }
    h = jfix_hash(h, b->labels, b->count * sizeof *b->labels);
    gf_loader_release(l, b);
  }
  CHECK_ERR(rc, GF_EEPOCHEND);
  gf_loader_destroy(l);
  return h;
}

int main(void) {
  cli = getenv("GPUFEED");
  if (!cli || !*cli)
    gf_test_skip(false, "GPUFEED (the CLI) is not set");
  tmp = gf_test_tmpdir();
  char jsrc[4300], msrc[4300], ds[4300];
  snprintf(jsrc, sizeof jsrc, "%s/jsrc", tmp);
  snprintf(msrc, sizeof msrc, "%s/msrc", tmp);
  CHECK_OK(folder(jsrc, false));
  CHECK_OK(folder(msrc, true));
  if (gf_test_failures)
    return gf_test_finish();

  /* 1. --codec jpeg: the files as they are. */
  snprintf(ds, sizeof ds, "%s/ds_jpeg", tmp);
  CHECK(run("build '%s' '%s' --codec jpeg --threads 3", jsrc, ds) == 0);
  CHECK(says("out", "codec         jpeg"));
  gf_dataset *d = NULL;
  CHECK_OK(gf_dataset_open(ds, &d));
  for (uint64_t i = 0; d && i < gf_dataset_count(d); i++) {
    gf_sample_info si;
    CHECK_OK(gf_dataset_sample_info(d, i, &si));
    CHECK(si.codec == GF_CODEC_JPEG && si.shape.dtype == GF_DTYPE_U8 &&
          (si.shape.channels == 1 || si.shape.channels == 3));
    char p[4600];
    snprintf(p, sizeof p, "%s/%.*s", jsrc, (int)si.source_len, si.source);
    size_t flen;
    uint8_t *file = gf_test_read_file(p, &flen);
    uint8_t *rec = malloc(si.length);
    CHECK(file && rec &&
          gf_dataset_read(d, i, rec, si.length) == (int64_t)si.length);
    CHECK(file && flen == si.length && memcmp(file, rec, flen) == 0);
    free(file);
    free(rec);
  }
  gf_dataset_close(d);
  CHECK(run("inspect '%s' --json", ds) == 0);
  CHECK(says("out", "\"jpeg\""));
  CHECK(run("verify '%s'", ds) == 0);
  CHECK(says("out", "all 14 samples OK"));
  CHECK(epoch_hash(ds, false) == epoch_hash(jsrc, false));
  CHECK(epoch_hash(ds, true) == epoch_hash(jsrc, true));

  /* 2. A mixed folder. */
  char ds2[4400];
  snprintf(ds2, sizeof ds2, "%s/ds_refused", tmp);
  CHECK(run("build '%s' '%s' --codec jpeg", msrc, ds2) == 1);
  CHECK(says("err", "s02.png") && says("err", "a PNG file: --codec jpeg "
                                              "stores JPEG files as they are"));
  CHECK(run("build '%s' '%s' --codec png", msrc, ds2) == 1);
  CHECK(says("err", "s00.jpg") && says("err", "a JPEG file: --codec png "
                                              "stores PNG files as they are"));
  const char *pixels[] = {"gradzstd", "raw"};
  for (int k = 0; k < 2; k++) {
    snprintf(ds2, sizeof ds2, "%s/ds_%s", tmp, pixels[k]);
    CHECK(run("build '%s' '%s' --codec %s", msrc, ds2, pixels[k]) == 0);
    CHECK(run("verify '%s'", ds2) == 0);
    CHECK(epoch_hash(ds2, false) == epoch_hash(msrc, false));
  }

  /* 3. Bad sources, named. */
  char p[4600];
  snprintf(p, sizeof p, "%s/k1/s99.jpg", jsrc);
  CHECK_OK(gf_test_write_file(p, "\xFF\xD8\xFF\xE0 cut short", 13));
  snprintf(ds2, sizeof ds2, "%s/ds_bad", tmp);
  CHECK(run("build '%s' '%s' --codec jpeg", jsrc, ds2) == 1);
  CHECK(says("err", "s99.jpg"));
  CHECK(run("build '%s' '%s' --codec jpeg --skip-bad", jsrc, ds2) == 0);
  CHECK(says("out", "skipped       1") && says("out", "s99.jpg"));
  remove(p);
  snprintf(p, sizeof p, "%s/k0/s98.png", jsrc);
  CHECK_OK(jfix_write_jpeg(p, 9, 9, 3, 1, 90));
  snprintf(ds2, sizeof ds2, "%s/ds_bad2", tmp);
  CHECK(run("build '%s' '%s' --codec gradzstd", jsrc, ds2) == 1);
  CHECK(says("err", "s98.png") &&
        says("err", "named .png but holds JPEG data"));
  return gf_test_finish();
}
