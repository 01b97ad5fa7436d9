/* The summary table (docs/FORMAT.md, "Summary table"): a summary whose
 * own CRC holds but whose entry lies about the records opens (open checks
 * only its structure) and is caught by gf_dataset_check_index, GF_ECORRUPT
 * naming the index and the entry with what it says and what the records
 * give; a summary whose bytes change under its CRC is refused at open. */
#include "format/format.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int build(const char *dir) {
  mkdir(dir, 0755);
  gf_writer_opts wo = {
      .shard_size = 16u << 10, .alignment = 1, .index_version = 0};
  gf_writer *w;
  int rc = gf_writer_create(dir, &wo, &w);
  for (uint64_t i = 0; rc == 0 && i < 50; i++) {
    gf_shape s = {2 + (uint32_t)(i % 3), 3, 1, GF_DTYPE_U8};
    uint8_t px[12] = {(uint8_t)i};
    rc = gf_writer_add(w, px, (size_t)gf_shape_bytes(&s), GF_CODEC_RAW, &s,
                       (int64_t)(i % 4), NULL);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  return rc;
}

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* The index with entry 0's pixels and values raised by one; its CRC made right again
 * when fix_crc. */
static void edit(const char *path, bool fix_crc) {
  size_t len;
  uint8_t *b = gf_test_read_file(path, &len);
  CHECK(b && len > GF_INDEX_HEADER_SIZE + GF_SUMMARY_HEAD_SIZE);
  if (!b)
    return;
  uint8_t *sm = b + GF_INDEX_HEADER_SIZE;
  uint32_t n = (uint32_t)sm[0] | (uint32_t)sm[1] << 8 |
               (uint32_t)sm[2] << 16 | (uint32_t)sm[3] << 24;
  CHECK(n >= 1);
  uint8_t *e = sm + GF_SUMMARY_HEAD_SIZE;
  /* One channel: pixels and values move together, as valid records'
   * would; the records give one less. */
  put64(e + GF_SE_PIXELS, get64(e + GF_SE_PIXELS) + 1);
  put64(e + GF_SE_VALUES, get64(e + GF_SE_VALUES) + 1);
  if (fix_crc) {
    uint32_t crc = gf_crc32c(0, sm, GF_SM_CRC);
    crc = gf_crc32c(crc, e, (size_t)n * GF_SUMMARY_ENTRY_SIZE);
    for (int i = 0; i < 4; i++)
      sm[GF_SM_CRC + i] = (uint8_t)(crc >> (8 * i));
  }
  FILE *f = fopen(path, "wb");
  CHECK(f && fwrite(b, 1, len, f) == len);
  if (f)
    fclose(f);
  free(b);
}

int main(void) {
  char dir[4200], index[4300];
  snprintf(dir, sizeof dir, "%s/ds", gf_test_tmpdir());
  snprintf(index, sizeof index, "%s/index.gfi", dir);

  /* Unchanged: open and the full check pass. */
  CHECK_OK(build(dir));
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  if (ds)
    CHECK_OK(gf_dataset_check_index(ds));
  gf_dataset_close(ds);

  /* An entry that lies, under a CRC that holds. */
  edit(index, true);
  ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  if (ds) {
    CHECK_ERR(gf_dataset_check_index(ds), GF_ECORRUPT);
    const char *m = gf_last_error()->message;
    printf("%s\n", m);
    CHECK(strstr(m, "index.gfi") != NULL);
    CHECK(strstr(m, "summary table disagrees with the records: its entry 0 "
                    "says codec") != NULL);
    CHECK(strstr(m, "says codec 0, dtype 0: 50 records, at most 13 pixels, "
                    "13 values") != NULL);
    CHECK(strstr(m, "; the records give codec 0, dtype 0: 50 records, at "
                    "most 12 pixels, 12 values") != NULL);
  }
  gf_dataset_close(ds);

  /* Changed bytes under the old CRC: refused at open. */
  char cmd[4400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  CHECK_OK(build(dir));
  edit(index, false);
  ds = NULL;
  CHECK_ERR(gf_dataset_open(dir, &ds), GF_ECORRUPT);
  printf("%s\n", gf_last_error()->message);
  CHECK(strstr(gf_last_error()->message, "summary") != NULL);
  gf_dataset_close(ds);
  return gf_test_finish();
}
