/* `gpufeed verify` on a dataset whose index records a shape the stored
 * sample does not have, in a record whose own CRC was recomputed (so the
 * record passes every per-use check and its data its checksum): verify must
 * decode every sample and report the one whose decoded shape differs (png)
 * or that no longer decodes (zstd) by index, shard, offset and source, as
 * well as the index checksum, and exit 1. The same for loco records whose
 * stored bytes were damaged under a recomputed data CRC. Runs the CLI
 * ($GPUFEED). */
#include "testutil.h"

#include "common/common.h"
#include "format/format.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static const char *cli;

static int run(const char *cmd, char *out, size_t cap) {
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* Sets u32 field `field` of record `rec` to v and recomputes the record's
 * own CRC. (The records table's CRC in the header is left: it is tied to
 * the dataset id in every shard header.) */
static void forge(const char *ds, uint64_t rec, unsigned field, uint32_t v) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", ds, GF_INDEX_NAME);
  size_t len = 0;
  uint8_t *f = gf_test_read_file(path, &len);
  CHECK(f && len > GF_INDEX_HEADER_SIZE);
  if (!f || len <= GF_INDEX_HEADER_SIZE)
    return;
  uint64_t count = gf_le64(f + GF_IH_COUNT);
  uint64_t roff = gf_le64(f + GF_IH_RECORDS_OFF);
  CHECK(rec < count && roff + count * GF_RECORD_SIZE <= len);
  if (rec < count && roff + count * GF_RECORD_SIZE <= len) {
    uint8_t *r = f + roff + rec * GF_RECORD_SIZE;
    gf_put32(r + field, v);
    gf_put32(r + GF_REC_RECORD_CRC, gf_record_crc(rec, r));
    CHECK_OK(gf_test_write_file(path, f, len));
  }
  free(f);
  /* The record passes its checks; only the whole-table check fails. */
  gf_dataset *d = NULL;
  CHECK_OK(gf_dataset_open(ds, &d));
  if (d) {
    gf_sample_info s;
    CHECK_OK(gf_dataset_sample_info(d, rec, &s));
    CHECK_ERR(gf_dataset_check_index(d), GF_ECORRUPT);
  }
  gf_dataset_close(d);
}

/* Applies fn to the stored bytes of record `rec` in their shard, then sets
 * the record's data CRC to match (so only a decode can tell). */
static void damage_stored(const char *ds, uint64_t rec,
                          void (*fn)(uint8_t *p, size_t len)) {
  gf_dataset *d = NULL;
  gf_sample_info s;
  CHECK_OK(gf_dataset_open(ds, &d));
  if (!d)
    return;
  CHECK_OK(gf_dataset_sample_info(d, rec, &s));
  char shard[4200];
  snprintf(shard, sizeof shard, "%s", gf_dataset_shard_path(d, s.shard));
  gf_dataset_close(d);
  size_t len = 0;
  uint8_t *f = gf_test_read_file(shard, &len);
  CHECK(f && s.offset + s.length <= len);
  if (f && s.offset + s.length <= len) {
    fn(f + s.offset, (size_t)s.length);
    CHECK_OK(gf_test_write_file(shard, f, len));
    forge(ds, rec, GF_REC_DATA_CRC,
          gf_crc32c(0, f + s.offset, (size_t)s.length));
  }
  free(f);
}

/* loco records of 16-row images in bands of 8: the header, two band ends,
 * then band 0's stream. */
static void zero_band0_word(uint8_t *p, size_t len) {
  CHECK(len > 16);
  memset(p + 12, 0, 4); /* 32 zero bits: no code has more than 23 */
}
static void grow_last_band(uint8_t *p, size_t len) {
  CHECK(len > 16);
  p[8]++; /* band 1's end (low byte): the length no longer matches */
}

static void expect_in(const char *out, const char *want) {
  if (!strstr(out, want)) {
    fprintf(stderr, "expected '%s' in the output of verify:\n%s\n", want, out);
    gf_test_failures++;
  }
}

int main(void) {
  cli = getenv("GPUFEED");
  if (!cli || !cli[0]) {
    fprintf(stderr, "GPUFEED (the CLI binary) is not set\n");
    return 1;
  }
  const char *tmp = gf_test_tmpdir();
  char cmd[8192], out[16384];
  snprintf(cmd, sizeof cmd,
           "'%s' synth '%s/src' --count 6 --size 16x12 --classes 2 --quiet",
           cli, tmp);
  CHECK(run(cmd, out, sizeof out) == 0);

  /* png: stored as is, so a wrong recorded width shows only on decode. */
  snprintf(cmd, sizeof cmd, "'%s' build '%s/src' '%s/png' --codec png --quiet",
           cli, tmp, tmp);
  CHECK(run(cmd, out, sizeof out) == 0);
  snprintf(cmd, sizeof cmd, "'%s' verify '%s/png' 2>&1", cli, tmp);
  CHECK(run(cmd, out, sizeof out) == 0);
  expect_in(out, "all 6 samples OK");
  char ds[4096];
  snprintf(ds, sizeof ds, "%s/png", tmp);
  forge(ds, 2, GF_REC_WIDTH, 11);
  CHECK(run(cmd, out, sizeof out) == 1);
  /* ImageFolder order: class_000 holds images 0, 2, 4; record 2 is 4. */
  expect_in(out, "sample 2: shard-000000.gfs offset ");
  /* The decoder may check the recorded shape itself, or verify compares
   * the decoded one: either way the sample is named as not decoding to its
   * record. */
  if (!strstr(out, "(source class_000/img_000004.png): decoded shape "
                   "16x12x3 u8 differs from the index's 16x11x3 u8"))
    expect_in(out, "(source class_000/img_000004.png): decoding png: ");
  expect_in(out, "1 of 6 samples bad, and the index checksum is wrong");

  /* zstd: the recorded shape sizes the decode; a wrong one fails it. */
  snprintf(cmd, sizeof cmd,
           "'%s' build '%s/src' '%s/zstd' --codec zstd --quiet", cli, tmp, tmp);
  CHECK(run(cmd, out, sizeof out) == 0);
  snprintf(ds, sizeof ds, "%s/zstd", tmp);
  forge(ds, 4, GF_REC_HEIGHT, 15);
  snprintf(cmd, sizeof cmd, "'%s' verify '%s/zstd' --threads 2 2>&1", cli, tmp);
  CHECK(run(cmd, out, sizeof out) == 1);
  expect_in(out, "sample 4: shard-000000.gfs offset ");
  expect_in(out, "(source class_001/img_000003.png): decoding zstd: ");
  expect_in(out, "1 of 6 samples bad, and the index checksum is wrong");

  /* loco: the stored bytes damaged under a matching data CRC, in a band's
   * stream (the band decoder says so) and in the band table (the record's
   * structure check says so). */
  snprintf(cmd, sizeof cmd,
           "'%s' build '%s/src' '%s/loco' --codec loco --quiet", cli, tmp,
           tmp);
  CHECK(run(cmd, out, sizeof out) == 0);
  snprintf(cmd, sizeof cmd, "'%s' verify '%s/loco' 2>&1", cli, tmp);
  CHECK(run(cmd, out, sizeof out) == 0);
  expect_in(out, "all 6 samples OK");
  snprintf(ds, sizeof ds, "%s/loco", tmp);
  damage_stored(ds, 1, zero_band0_word);
  damage_stored(ds, 4, grow_last_band);
  CHECK(run(cmd, out, sizeof out) == 1);
  expect_in(out, "sample 1: shard-000000.gfs offset ");
  expect_in(out, "(source class_000/img_000002.png): decoding loco: ");
  expect_in(out, "loco band 0 (rows 0-7) is damaged");
  expect_in(out, "sample 4: shard-000000.gfs offset ");
  expect_in(out, "(source class_001/img_000003.png): decoding loco: ");
  expect_in(out, "its band table says");
  expect_in(out, "2 of 6 samples bad, and the index checksum is wrong");
  return gf_test_finish();
}
