/* A dataset whose records hold codec jpeg (4): the writer takes them, the
 * reader opens the index and hands each sample back with its codec and
 * shape, gf_decode gives the same pixels as decoding the source file,
 * `gpufeed inspect` counts them by codec and `gpufeed verify` passes, then
 * names a damaged JPEG sample (CRC32C) and one whose record's width is
 * wrong (the decode disagrees). */
#include "format/format.h"
#include "decode/decode.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define NS 6

static int run(const char *cmd, char *out, size_t cap) {
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static void expect_in(const char *out, const char *want) {
  if (!strstr(out, want)) {
    fprintf(stderr, "expected '%s' in:\n%s\n", want, out);
    gf_test_failures++;
  }
}

int main(void) {
  const char *cli = getenv("GPUFEED");
  if (!cli || !cli[0]) {
    fprintf(stderr, "GPUFEED (the CLI binary) is not set\n");
    return 1;
  }
  char ds[4096];
  snprintf(ds, sizeof ds, "%s/ds", gf_test_tmpdir());
  mkdir(ds, 0755);

  uint8_t *file[NS];
  size_t len[NS];
  gf_shape shape[NS];
  gf_writer_opts wo = {.shard_size = 0, .alignment = 1, .index_version = 0};
  gf_writer *w = NULL;
  CHECK_OK(gf_writer_create(ds, &wo, &w));
  if (!w)
    return gf_test_finish();
  CHECK_OK(gf_writer_add_class(w, "gray"));
  CHECK_OK(gf_writer_add_class(w, "rgb"));
  for (int i = 0; i < NS; i++) {
    uint32_t c = i % 2 ? 3 : 1;
    gf_shape s = {11 + 7 * (uint32_t)i, 30 - 3 * (uint32_t)i, c, GF_DTYPE_U8};
    uint8_t *px = malloc((size_t)gf_shape_bytes(&s));
    gf_test_fill_image(px, s.height, s.width, c, (uint64_t)i + 40);
    void *f = NULL;
    CHECK_OK(gf_jpeg_encode(px, &s, 85, &f, &len[i]));
    free(px);
    file[i] = f;
    shape[i] = s;
    char src[32];
    snprintf(src, sizeof src, "%s/%d.jpg", c == 1 ? "gray" : "rgb", i);
    CHECK_OK(gf_writer_add(w, f, len[i], GF_CODEC_JPEG, &s, i % 2, src));
  }
  CHECK_OK(gf_writer_finish(w));
  gf_writer_destroy(w);

  gf_dataset *d = NULL;
  CHECK_OK(gf_dataset_open(ds, &d));
  if (d) {
    CHECK(gf_dataset_count(d) == NS);
    CHECK_OK(gf_dataset_check_index(d));
    for (uint64_t i = 0; i < NS; i++) {
      gf_sample_info si;
      CHECK_OK(gf_dataset_sample_info(d, i, &si));
      CHECK(si.codec == GF_CODEC_JPEG && si.length == len[i]);
      CHECK(memcmp(&si.shape, &shape[i], sizeof si.shape) == 0);
      uint8_t *buf = malloc(len[i]);
      CHECK(gf_dataset_read(d, i, buf, len[i]) == (int64_t)len[i]);
      size_t n = (size_t)gf_shape_bytes(&shape[i]);
      uint8_t *a = malloc(n), *b = malloc(n);
      gf_shape sa, sb;
      CHECK_OK(gf_decode((int)si.codec, buf, len[i], &si.shape, NULL, a, n,
                         &sa));
      CHECK_OK(gf_jpeg_decode(file[i], len[i], NULL, b, n, &sb));
      CHECK(memcmp(&sa, &shape[i], sizeof sa) == 0 &&
            memcmp(&sb, &sa, sizeof sb) == 0 && memcmp(a, b, n) == 0);
      free(a);
      free(b);
      free(buf);
    }
    gf_dataset_close(d);
  }

  char cmd[8400], out[16384];
  snprintf(cmd, sizeof cmd, "'%s' inspect '%s' 2>&1", cli, ds);
  CHECK(run(cmd, out, sizeof out) == 0);
  expect_in(out, "jpeg 6");
  snprintf(cmd, sizeof cmd, "'%s' verify '%s' 2>&1", cli, ds);
  CHECK(run(cmd, out, sizeof out) == 0);
  expect_in(out, "all 6 samples OK");

  /* A flipped byte inside sample 3's JPEG data: its CRC32C names it. */
  gf_dataset *d2 = NULL;
  gf_sample_info si;
  CHECK_OK(gf_dataset_open(ds, &d2));
  if (d2) {
    CHECK_OK(gf_dataset_sample_info(d2, 3, &si));
    char shard[4200];
    snprintf(shard, sizeof shard, "%s", gf_dataset_shard_path(d2, si.shard));
    gf_dataset_close(d2);
    size_t sl;
    uint8_t *sf = gf_test_read_file(shard, &sl);
    CHECK(sf && si.offset + si.length <= sl);
    if (sf && si.offset + si.length <= sl) {
      sf[si.offset + si.length / 2] ^= 0x10;
      CHECK(gf_test_write_file(shard, sf, sl) == 0);
      CHECK(run(cmd, out, sizeof out) == 1);
      expect_in(out, "sample 3: ");
      expect_in(out, "rgb/3.jpg");
      expect_in(out, "1 of 6 samples bad");
      sf[si.offset + si.length / 2] ^= 0x10;
      CHECK(gf_test_write_file(shard, sf, sl) == 0);
      CHECK(run(cmd, out, sizeof out) == 0);
    }
    free(sf);
  }
  /* The record says another width: the decode refuses it. */
  gf_shape wrong = shape[2];
  wrong.width += 1;
  uint8_t dst[64 * 64 * 3];
  gf_shape o;
  CHECK_ERR(gf_decode(GF_CODEC_JPEG, file[2], len[2], &wrong, NULL, dst,
                      sizeof dst, &o),
            GF_ESHAPE);
  expect_in(gf_last_error()->message, "its record says");
  for (int i = 0; i < NS; i++)
    free(file[i]);
  return gf_test_finish();
}
