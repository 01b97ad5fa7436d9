/* Damaged datasets: every kind of damage gives its error code with the file
 * (and where it applies the sample and offset) named, and never wrong data
 * as good. */
#include "format/format.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NS 40

static char g_dir[1024];
static char g_index[1100];
static uint8_t *g_data[NS];
static size_t g_len[NS];

static int build(const char *dir, uint64_t seed) {
  mkdir(dir, 0755);
  gf_writer_opts o = {.shard_size = 4096, .alignment = 1, .index_version = 0};
  gf_writer *w = NULL;
  int rc = gf_writer_create(dir, &o, &w);
  if (rc < 0)
    return rc;
  gf_writer_add_class(w, "a");
  gf_writer_add_class(w, "b");
  gf_writer_add_class(w, "c");
  for (int i = 0; i < NS && rc == 0; i++) {
    size_t len = 200 + (size_t)(gf_test_rand(&seed) % 600);
    uint8_t *d = malloc(len);
    for (size_t k = 0; k < len; k++)
      d[k] = (uint8_t)gf_test_rand(&seed);
    gf_shape sh = {16, 16, 3, GF_DTYPE_U8};
    char src[64];
    snprintf(src, sizeof src, "src/%d.png", i);
    rc = gf_writer_add(w, d, len, GF_CODEC_PNG, &sh, i % 3, src);
    if (dir == g_dir) {
      g_data[i] = d;
      g_len[i] = len;
    } else {
      free(d);
    }
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  gf_writer_destroy(w);
  return rc;
}

static void patch(const char *path, uint64_t off, const void *bytes, size_t n) {
  int fd = open(path, O_WRONLY);
  CHECK(fd >= 0);
  CHECK(pwrite(fd, bytes, n, (off_t)off) == (ssize_t)n);
  close(fd);
}

static void read_at(const char *path, uint64_t off, void *bytes, size_t n) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  CHECK(pread(fd, bytes, n, (off_t)off) == (ssize_t)n);
  close(fd);
}

static void flip(const char *path, uint64_t off, uint8_t mask) {
  uint8_t b;
  read_at(path, off, &b, 1);
  b ^= mask;
  patch(path, off, &b, 1);
}

static void fix_header_crc(void) {
  uint8_t h[GF_INDEX_HEADER_SIZE];
  read_at(g_index, 0, h, sizeof h);
  gf_put32(h + GF_IH_HEADER_CRC, gf_crc32c(0, h, GF_IH_HEADER_CRC));
  patch(g_index, 0, h, sizeof h);
}

static void put_header64(unsigned field, uint64_t v) {
  uint8_t b[8];
  gf_put64(b, v);
  patch(g_index, field, b, 8);
  fix_header_crc();
}

static uint64_t rec_off(uint64_t k) {
  uint8_t h[GF_INDEX_HEADER_SIZE];
  read_at(g_index, 0, h, sizeof h);
  return gf_le64(h + GF_IH_RECORDS_OFF) + k * GF_RECORD_SIZE;
}

static void fix_record_crc(uint64_t k) {
  uint8_t r[GF_RECORD_SIZE];
  read_at(g_index, rec_off(k), r, sizeof r);
  gf_put32(r + GF_REC_RECORD_CRC, gf_record_crc(k, r));
  patch(g_index, rec_off(k), r, sizeof r);
}

/* Whole-file snapshots to undo each damage. */
typedef struct snap {
  char path[1100];
  uint8_t *data;
  size_t len;
} snap;

static void take(snap *s, const char *path) {
  snprintf(s->path, sizeof s->path, "%s", path);
  s->data = gf_test_read_file(path, &s->len);
  CHECK(s->data != NULL);
}

static void restore(snap *s) {
  CHECK_OK(gf_test_write_file(s->path, s->data, s->len));
}

static void shard_name(uint32_t i, char *out, size_t cap) {
  snprintf(out, cap, "%s/shard-%06u.gfs", g_dir, i);
}

/* The last error has code `want` and names `file` in its path and
 * message. */
static void expect(long long rc, int want, const char *file, int line) {
  const gf_error_info *e = gf_last_error();
  if (rc != want || !strstr(e->message, file) || !strstr(e->path, file)) {
    fprintf(stderr, "%s:%d: got %lld (%s), wanted %s naming %s; message: %s\n",
            __FILE__, line, rc, gf_err_name((int)rc), gf_err_name(want), file,
            e->message);
    gf_test_failures++;
  }
}
#define EXPECT(rc, want, file) expect((long long)(rc), (want), (file), __LINE__)

static int open_rc(void) {
  gf_dataset *ds = NULL;
  int rc = gf_dataset_open(g_dir, &ds);
  CHECK((rc == 0) == (ds != NULL));
  gf_dataset_close(ds);
  return rc;
}

static void test_sample_bitflip(void) {
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  if (!ds)
    return;
  uint64_t k = 23;
  gf_sample_info info;
  CHECK_OK(gf_dataset_sample_info(ds, k, &info));
  const char *sp = gf_dataset_shard_path(ds, info.shard);
  snap s;
  take(&s, sp);
  flip(sp, info.offset + 5, 0x10);
  uint8_t buf[1000];
  EXPECT(gf_dataset_read(ds, k, buf, sizeof buf), GF_ECORRUPT, sp);
  const gf_error_info *e = gf_last_error();
  CHECK(e->sample == k && e->offset == info.offset);
  char want[128];
  snprintf(want, sizeof want, "sample %llu", (unsigned long long)k);
  CHECK(strstr(e->message, want) != NULL);
  snprintf(want, sizeof want, "offset %llu", (unsigned long long)info.offset);
  CHECK(strstr(e->message, want) != NULL);
  CHECK(strstr(e->message, "checksum") != NULL);
  /* The neighbours are untouched and still read. */
  CHECK(gf_dataset_read(ds, k - 1, buf, sizeof buf) == (int64_t)g_len[k - 1]);
  CHECK(gf_dataset_read(ds, k + 1, buf, sizeof buf) == (int64_t)g_len[k + 1]);
  /* The index itself is fine. */
  CHECK_OK(gf_dataset_check_index(ds));
  restore(&s);
  CHECK(gf_dataset_read(ds, k, buf, sizeof buf) == (int64_t)g_len[k]);
  CHECK(memcmp(buf, g_data[k], g_len[k]) == 0);

  /* A shard cut short after open: the read reaches its end early. */
  uint64_t last = 0;
  for (uint64_t i = 0; i < NS; i++) {
    gf_sample_info in;
    if (gf_dataset_sample_info(ds, i, &in) == 0 && in.shard == info.shard)
      last = i;
  }
  gf_sample_info li;
  CHECK_OK(gf_dataset_sample_info(ds, last, &li));
  CHECK(truncate(sp, (off_t)(li.offset + 3)) == 0);
  EXPECT(gf_dataset_read(ds, last, buf, sizeof buf), GF_ETRUNCATED, sp);
  CHECK(gf_last_error()->sample == last);
  restore(&s);
  free(s.data);
  gf_dataset_close(ds);
}

static void test_shard_damage(void) {
  char sp[1100];
  shard_name(1, sp, sizeof sp);
  snap s;
  take(&s, sp);
  /* Truncated: both sizes named. */
  CHECK(truncate(sp, (off_t)(s.len - 10)) == 0);
  EXPECT(open_rc(), GF_ETRUNCATED, "shard-000001.gfs");
  char sizes[64];
  snprintf(sizes, sizeof sizes, "%zu bytes long; the index says %zu",
           s.len - 10, s.len);
  CHECK(strstr(gf_last_error()->message, sizes) != NULL);
  /* Longer than recorded. */
  restore(&s);
  int fd = open(sp, O_WRONLY | O_APPEND);
  CHECK(fd >= 0 && write(fd, "x", 1) == 1);
  close(fd);
  EXPECT(open_rc(), GF_ECORRUPT, "shard-000001.gfs");
  /* Magic, version, header CRC. */
  restore(&s);
  flip(sp, 0, 0x01);
  EXPECT(open_rc(), GF_EFORMAT, "shard-000001.gfs");
  restore(&s);
  patch(sp, GF_SH_VERSION, "\x02\0\0\0", 4);
  EXPECT(open_rc(), GF_EVERSION, "shard-000001.gfs");
  restore(&s);
  flip(sp, GF_SH_SHARD, 0x01);
  EXPECT(open_rc(), GF_ECORRUPT, "shard-000001.gfs");
  CHECK(strstr(gf_last_error()->message, "checksum") != NULL);
  /* Not a regular file: a FIFO must not hang the open. */
  CHECK(unlink(sp) == 0);
  CHECK(mkfifo(sp, 0644) == 0);
  EXPECT(open_rc(), GF_ECORRUPT, "shard-000001.gfs");
  CHECK(strstr(gf_last_error()->message, "regular file") != NULL);
  /* Missing. */
  CHECK(unlink(sp) == 0);
  EXPECT(open_rc(), -ENOENT, "shard-000001.gfs");
  restore(&s);
  CHECK_OK(open_rc());
  free(s.data);

  /* A shard from another dataset (same size, valid header, other id). */
  char other[1100], osp[1200];
  snprintf(other, sizeof other, "%s-other", g_dir);
  CHECK_OK(build(other, 99));
  snprintf(osp, sizeof osp, "%s/shard-000000.gfs", other);
  char sp0[1100];
  shard_name(0, sp0, sizeof sp0);
  snap s0, so;
  take(&s0, sp0);
  take(&so, osp);
  /* Give the stranger exactly our shard's size so only its id differs. */
  uint8_t *f = calloc(1, s0.len);
  memcpy(f, so.data, so.len < s0.len ? so.len : s0.len);
  CHECK_OK(gf_test_write_file(sp0, f, s0.len));
  EXPECT(open_rc(), GF_ECORRUPT, "shard-000000.gfs");
  CHECK(strstr(gf_last_error()->message, "another dataset") != NULL);
  restore(&s0);
  free(f);
  free(s0.data);
  free(so.data);
  CHECK_OK(gf_dir_remove(other));
}

static void test_index_damage(void) {
  snap s;
  take(&s, g_index);
  /* Truncated by a few bytes, to less than a header, to nothing. */
  CHECK(truncate(g_index, (off_t)(s.len - 8)) == 0);
  EXPECT(open_rc(), GF_ETRUNCATED, "index.gfi");
  CHECK(truncate(g_index, 60) == 0);
  EXPECT(open_rc(), GF_ETRUNCATED, "index.gfi");
  CHECK(truncate(g_index, 0) == 0);
  EXPECT(open_rc(), GF_ETRUNCATED, "index.gfi");
  restore(&s);
  /* Trailing bytes. */
  int fd = open(g_index, O_WRONLY | O_APPEND);
  CHECK(fd >= 0 && write(fd, "12345678", 8) == 8);
  close(fd);
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  restore(&s);
  /* Not ours at all. */
  flip(g_index, 3, 0x20);
  EXPECT(open_rc(), GF_EFORMAT, "index.gfi");
  CHECK_OK(gf_test_write_file(g_index, "hello", 5));
  EXPECT(open_rc(), GF_EFORMAT, "index.gfi");
  restore(&s);
  /* A later version: named with the ones supported. */
  patch(g_index, GF_IH_VERSION, "\x03\0\0\0", 4);
  EXPECT(open_rc(), GF_EVERSION, "index.gfi");
  CHECK(strstr(gf_last_error()->message, "version 3") != NULL);
  CHECK(strstr(gf_last_error()->message, "versions 1 to 2") != NULL);
  restore(&s);
  /* Header damage: caught by its CRC. */
  flip(g_index, GF_IH_COUNT, 0x04);
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  CHECK(strstr(gf_last_error()->message, "checksum") != NULL);
  restore(&s);
  /* Fields that pass the CRC but not the checks (a crafted header). */
  put_header64(GF_IH_COUNT, (1ull << 32) + 1); /* records past the file */
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  restore(&s);
  put_header64(GF_IH_COUNT, (1ull << 58) + 1); /* count * 64 wraps to 64 */
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  restore(&s);
  put_header64(GF_IH_NAMES_OFF, UINT64_MAX - 4); /* offset + size wraps */
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  restore(&s);
  put_header64(GF_IH_CLASSES_OFF, GF_INDEX_HEADER_SIZE); /* overlaps records */
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  CHECK(strstr(gf_last_error()->message, "overlap") != NULL);
  restore(&s);
  put_header64(GF_IH_FILE_SIZE, s.len + 64); /* claims more than there is */
  EXPECT(open_rc(), GF_ETRUNCATED, "index.gfi");
  restore(&s);
  {
    uint8_t b[4];
    gf_put32(b, 3); /* not a power of two */
    patch(g_index, GF_IH_ALIGNMENT, b, 4);
    fix_header_crc();
    EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
    restore(&s);
  }
  /* The shard and class tables: their CRC at open. */
  uint64_t cl_off = gf_le64(s.data + GF_IH_CLASSES_OFF);
  flip(g_index, cl_off, 0x01);
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  restore(&s);
  uint64_t sh_off = gf_le64(s.data + GF_IH_SHARDS_OFF);
  flip(g_index, sh_off + 8, 0x01);
  EXPECT(open_rc(), GF_ECORRUPT, "index.gfi");
  restore(&s);
  /* The name blob: only check_index reads all of it. */
  uint64_t nm_off = gf_le64(s.data + GF_IH_NAMES_OFF);
  flip(g_index, nm_off + 3, 0x01);
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  EXPECT(gf_dataset_check_index(ds), GF_ECORRUPT, "index.gfi");
  gf_dataset_close(ds);
  restore(&s);
  /* No index at all, or a FIFO in its place. */
  CHECK(unlink(g_index) == 0);
  EXPECT(open_rc(), -ENOENT, "index.gfi");
  CHECK(mkfifo(g_index, 0644) == 0);
  EXPECT(open_rc(), GF_EFORMAT, "index.gfi");
  CHECK(unlink(g_index) == 0);
  restore(&s);
  CHECK_OK(open_rc());
  free(s.data);
}

/* Every byte of a record, flipped three ways: open still succeeds (records
 * are not read at open), check_index and the record's own use report it. */
static void test_record_flips(void) {
  snap s;
  take(&s, g_index);
  uint64_t k = 11;
  int missed = 0;
  for (unsigned b = 0; b < GF_RECORD_SIZE; b++) {
    static const uint8_t masks[3] = {0x01, 0x80, 0xff};
    for (int m = 0; m < 3; m++) {
      flip(g_index, rec_off(k) + b, masks[m]);
      gf_dataset *ds = NULL;
      CHECK_OK(gf_dataset_open(g_dir, &ds));
      if (!ds)
        continue;
      int rc1 = gf_dataset_check_index(ds);
      if (rc1 != GF_ECORRUPT || !strstr(gf_last_error()->message, "index.gfi"))
        missed++;
      gf_sample_info info;
      int rc2 = gf_dataset_sample_info(ds, k, &info);
      if (rc2 != GF_ECORRUPT ||
          !strstr(gf_last_error()->message, "index.gfi") ||
          gf_last_error()->sample != k)
        missed++;
      uint8_t buf[1000];
      int64_t got = gf_dataset_read(ds, k, buf, sizeof buf);
      if (got >= 0)
        missed++; /* wrong metadata returned as good */
      /* Other records are unaffected. */
      if (gf_dataset_read(ds, k + 1, buf, sizeof buf) != (int64_t)g_len[k + 1])
        missed++;
      gf_dataset_close(ds);
      restore(&s);
    }
  }
  CHECK(missed == 0);

  /* A record changed consistently (its own CRC recomputed, as a buggy or
   * crafted writer would): a different in-range offset passes the field
   * checks but the data CRC catches it; check_index catches the table. */
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  gf_sample_info a;
  CHECK_OK(gf_dataset_sample_info(ds, k, &a));
  gf_dataset_close(ds);
  uint8_t v[8];
  gf_put64(v, a.offset + 1);
  patch(g_index, rec_off(k) + GF_REC_OFFSET, v, 8);
  gf_put64(v, a.length - 1);
  patch(g_index, rec_off(k) + GF_REC_LENGTH, v, 8);
  fix_record_crc(k);
  ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  gf_sample_info info;
  CHECK_OK(gf_dataset_sample_info(ds, k, &info));
  uint8_t buf[1000];
  char sp[1100];
  shard_name(a.shard, sp, sizeof sp);
  EXPECT(gf_dataset_read(ds, k, buf, sizeof buf), GF_ECORRUPT, sp);
  EXPECT(gf_dataset_check_index(ds), GF_ECORRUPT, "index.gfi");
  gf_dataset_close(ds);
  restore(&s);

  /* Two whole records swapped (each with its valid CRC): their record
   * number is in the CRC, so neither passes in the other's place. */
  {
    uint8_t r1[GF_RECORD_SIZE], r2[GF_RECORD_SIZE];
    read_at(g_index, rec_off(k), r1, sizeof r1);
    read_at(g_index, rec_off(k + 1), r2, sizeof r2);
    patch(g_index, rec_off(k), r2, sizeof r2);
    patch(g_index, rec_off(k + 1), r1, sizeof r1);
    ds = NULL;
    CHECK_OK(gf_dataset_open(g_dir, &ds));
    EXPECT(gf_dataset_sample_info(ds, k, &info), GF_ECORRUPT, "index.gfi");
    EXPECT(gf_dataset_sample_info(ds, k + 1, &info), GF_ECORRUPT, "index.gfi");
    EXPECT(gf_dataset_check_index(ds), GF_ECORRUPT, "index.gfi");
    CHECK(gf_last_error()->sample == k);
    gf_dataset_close(ds);
    restore(&s);
  }

  /* offset + length wraps past 2^64: an overflow-naive check would let
   * it through (the sum lands inside the shard). */
  gf_put64(v, UINT64_MAX - 50);
  patch(g_index, rec_off(k) + GF_REC_OFFSET, v, 8);
  fix_record_crc(k);
  ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  EXPECT(gf_dataset_sample_info(ds, k, &info), GF_ECORRUPT, "index.gfi");
  CHECK(strstr(gf_last_error()->message, "outside") != NULL);
  EXPECT(gf_dataset_read(ds, k, buf, sizeof buf), GF_ECORRUPT, "index.gfi");
  gf_dataset_close(ds);
  restore(&s);

  /* Field checks behind a valid record CRC, one at a time. */
  struct {
    unsigned field, width;
    uint64_t value;
    const char *says;
  } bad[] = {
      {GF_REC_SHARD, 4, 1000, "shard 1000"},
      {GF_REC_LENGTH, 8, 0, "stored length 0"},
      {GF_REC_LENGTH, 8, (1ull << 30) + 1, "stored length"},
      {GF_REC_OFFSET, 8, 10, "outside"}, /* inside the shard header */
      {GF_REC_CODEC, 2, 77, "codec 77"},
      {GF_REC_CHANNELS, 1, 5, "shape"},
      {GF_REC_WIDTH, 4, 0, "shape"},
      {GF_REC_HEIGHT, 4, 70000, "shape"},
      {GF_REC_DTYPE, 1, 9, "shape"},
      {GF_REC_LABEL, 8, 3, "label 3"},
      {GF_REC_LABEL, 8, UINT64_MAX, "label -1"},
      {GF_REC_NAME_LEN, 4, 5000, "source name"},
      {GF_REC_NAME_OFF, 8, UINT64_MAX - 2, "source name"},
      {GF_REC_FLAGS, 4, 1, "flags"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint8_t w[8];
    gf_put64(w, bad[i].value);
    patch(g_index, rec_off(k) + bad[i].field, w, bad[i].width);
    fix_record_crc(k);
    ds = NULL;
    CHECK_OK(gf_dataset_open(g_dir, &ds));
    int rc = gf_dataset_sample_info(ds, k, &info);
    if (rc != GF_ECORRUPT || !strstr(gf_last_error()->message, bad[i].says) ||
        !strstr(gf_last_error()->message, "index.gfi")) {
      fprintf(stderr, "record field at %u = %llu: %s: %s\n", bad[i].field,
              (unsigned long long)bad[i].value, gf_err_name(rc),
              gf_last_error()->message);
      gf_test_failures++;
    }
    gf_dataset_close(ds);
    restore(&s);
  }

  /* A raw record whose length disagrees with its shape. */
  uint8_t c[2];
  gf_put16(c, GF_CODEC_RAW);
  patch(g_index, rec_off(k) + GF_REC_CODEC, c, 2);
  fix_record_crc(k);
  ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  EXPECT(gf_dataset_sample_info(ds, k, &info), GF_ECORRUPT, "index.gfi");
  CHECK(strstr(gf_last_error()->message, "raw sample") != NULL);
  gf_dataset_close(ds);
  restore(&s);

  /* A loco record of a 16-bit shape: loco codes 8-bit samples only. */
  gf_put16(c, GF_CODEC_LOCO);
  patch(g_index, rec_off(k) + GF_REC_CODEC, c, 2);
  uint8_t u16 = GF_DTYPE_U16;
  patch(g_index, rec_off(k) + GF_REC_DTYPE, &u16, 1);
  fix_record_crc(k);
  ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  EXPECT(gf_dataset_sample_info(ds, k, &info), GF_ECORRUPT, "index.gfi");
  CHECK(strstr(gf_last_error()->message, "loco sample of a u16") != NULL);
  gf_dataset_close(ds);
  restore(&s);
  free(s.data);
}

int main(void) {
  const char *tmp = gf_test_tmpdir();
  snprintf(g_dir, sizeof g_dir, "%s/ds", tmp);
  snprintf(g_index, sizeof g_index, "%s/index.gfi", g_dir);
  CHECK_OK(build(g_dir, 1));
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(g_dir, &ds));
  CHECK(gf_dataset_num_shards(ds) >= 3);
  gf_dataset_close(ds);
  if (gf_test_failures)
    return gf_test_finish();

  test_sample_bitflip();
  test_shard_damage();
  test_index_damage();
  test_record_flips();
  CHECK_OK(open_rc());
  for (int i = 0; i < NS; i++)
    free(g_data[i]);
  return gf_test_finish();
}
