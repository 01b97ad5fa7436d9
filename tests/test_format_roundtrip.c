/* Writer -> reader: several shards, alignment 1 and 4096, classes, labels,
 * source names, a sample bigger than the shard size, byte-identical
 * output for identical calls, the writer's refusals, an empty dataset, and
 * a sample beyond 4 GiB in a sparse shard. */
#include "format/format.h"
#include "testutil.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 300

/* Sample i: its codec, shape and stored bytes (deterministic). */
typedef struct sample {
  int codec;
  gf_shape shape;
  size_t len;
  uint8_t *data;
  int64_t label;
  char source[64];
} sample;

static void make_sample(sample *s, int i) {
  uint64_t seed = 1000u + (uint64_t)i;
  s->codec = i % 4;
  uint32_t h = 1 + (uint32_t)(gf_test_rand(&seed) % 40);
  uint32_t w = 1 + (uint32_t)(gf_test_rand(&seed) % 40);
  uint32_t c = 1 + (uint32_t)(gf_test_rand(&seed) % 4);
  uint32_t dt = i % 7 == 0 ? GF_DTYPE_U16 : GF_DTYPE_U8;
  s->shape = (gf_shape){h, w, c, dt};
  if (s->codec == GF_CODEC_RAW)
    s->len = (size_t)gf_shape_bytes(&s->shape);
  else
    s->len = 1 + (size_t)(gf_test_rand(&seed) % 3000);
  if (i == 17)
    s->len = 25000; /* bigger than the small shard size below */
  s->data = malloc(s->len);
  for (size_t k = 0; k < s->len; k++)
    s->data[k] = (uint8_t)gf_test_rand(&seed);
  s->label = i % 3;
  if (i % 50 == 0)
    s->source[0] = '\0';
  else
    snprintf(s->source, sizeof s->source, "class %d/file %03d.png", i % 3, i);
}

static const char *classes[3] = {"cat", "dog with spaces",
                                 "\xc3\xa9l\xc3\xa9phant"};

static int write_dataset(const char *dir, uint32_t align, uint64_t shard_size,
                         sample *ss, int n) {
  mkdir(dir, 0755);
  gf_writer_opts o = {
      .shard_size = shard_size, .alignment = align, .index_version = 0};
  gf_writer *w = NULL;
  int rc = gf_writer_create(dir, &o, &w);
  if (rc < 0)
    return rc;
  for (int c = 0; c < 3 && rc == 0; c++)
    rc = gf_writer_add_class(w, classes[c]);
  for (int i = 0; i < n && rc == 0; i++)
    rc = gf_writer_add(w, ss[i].data, ss[i].len, ss[i].codec, &ss[i].shape,
                       ss[i].label, i % 50 == 0 ? NULL : ss[i].source);
  if (rc == 0) {
    CHECK(gf_writer_count(w) == (uint64_t)n);
    rc = gf_writer_finish(w);
  }
  /* gf_writer_bytes counts every byte of every shard. */
  uint64_t total = 0;
  for (uint32_t s = 0;; s++) {
    char p[1100];
    struct stat st;
    snprintf(p, sizeof p, "%s/shard-%06u.gfs", dir, s);
    if (stat(p, &st) != 0)
      break;
    total += (uint64_t)st.st_size;
  }
  CHECK(rc < 0 || gf_writer_bytes(w) == total);
  gf_writer_destroy(w);
  return rc;
}

static uint64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
}

/* Opens dir and checks everything against ss. */
static void verify(const char *dir, uint32_t align, sample *ss, int n,
                   uint64_t shard_size) {
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  if (!ds)
    return;
  CHECK(gf_dataset_count(ds) == (uint64_t)n);
  CHECK(gf_dataset_alignment(ds) == align);
  CHECK(gf_dataset_num_classes(ds) == 3);
  for (uint32_t c = 0; c < 3; c++)
    CHECK(gf_dataset_class_name(ds, c) &&
          strcmp(gf_dataset_class_name(ds, c), classes[c]) == 0);
  CHECK(gf_dataset_class_name(ds, 3) == NULL);
  uint32_t nsh = gf_dataset_num_shards(ds);
  CHECK(nsh > 3); /* 300 samples of ~1.5 KB in 16 KB shards */
  CHECK(gf_dataset_shard_path(ds, nsh) == NULL);
  CHECK(gf_dataset_shard_object(ds, nsh) == NULL);
  CHECK(gf_dataset_shard_size(ds, nsh) == 0);
  uint64_t data_start = align > 64 ? align : 64;
  for (uint32_t s = 0; s < nsh; s++) {
    const char *p = gf_dataset_shard_path(ds, s);
    char want[64];
    snprintf(want, sizeof want, "/shard-%06u.gfs", s);
    CHECK(p && strstr(p, want) != NULL);
    CHECK(p && file_size(p) == gf_dataset_shard_size(ds, s));
    CHECK(gf_dataset_shard_object(ds, s) &&
          gf_dataset_shard_object(ds, s)->fd >= 0);
    CHECK(gf_dataset_shard_size(ds, s) % align == 0);
  }
  uint8_t *buf = malloc(30000);
  uint32_t big_shard = UINT32_MAX;
  for (int i = 0; i < n; i++) {
    gf_sample_info info;
    CHECK_OK(gf_dataset_sample_info(ds, (uint64_t)i, &info));
    CHECK(info.index == (uint64_t)i);
    CHECK(info.codec == (uint32_t)ss[i].codec);
    CHECK(info.length == ss[i].len);
    CHECK(memcmp(&info.shape, &ss[i].shape, sizeof info.shape) == 0);
    CHECK(info.label == ss[i].label);
    CHECK(info.checksum == gf_crc32c(0, ss[i].data, ss[i].len));
    CHECK(info.source_len == strlen(ss[i].source));
    CHECK(memcmp(info.source, ss[i].source, info.source_len) == 0);
    CHECK(info.offset % align == 0);
    CHECK(info.offset >= data_start);
    if (i == 0)
      CHECK(info.offset == data_start);
    if (i == 17)
      big_shard = info.shard;
    /* Shards fill up to the target size, a lone big sample excepted. */
    CHECK(info.offset + info.length <= shard_size || i == 17);
    int64_t got = gf_dataset_read(ds, (uint64_t)i, buf, 30000);
    CHECK(got == (int64_t)ss[i].len);
    CHECK(got > 0 && memcmp(buf, ss[i].data, ss[i].len) == 0);
  }
  /* The big sample, over the shard size, has its shard to itself. */
  for (int i = 0; ss[17].len > shard_size && i < n; i++) {
    gf_sample_info info;
    if (i != 17 && gf_dataset_sample_info(ds, (uint64_t)i, &info) == 0)
      CHECK(info.shard != big_shard);
  }
  gf_sample_info info;
  CHECK_ERR(gf_dataset_sample_info(ds, (uint64_t)n, &info), -ERANGE);
  CHECK_ERR(gf_dataset_read(ds, (uint64_t)n, buf, 30000), -ERANGE);
  CHECK_ERR(gf_dataset_read(ds, 1, buf, ss[1].len - 1), -ENOBUFS);
  CHECK(strstr(gf_last_error()->message, "shard-") != NULL);
  CHECK_OK(gf_dataset_check_index(ds));
  free(buf);
  gf_dataset_close(ds);
}

/* Every byte outside the sample extents of a shard is zero. */
static void check_padding_zero(const char *dir, int n) {
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  if (!ds)
    return;
  for (uint32_t s = 0; s < gf_dataset_num_shards(ds); s++) {
    size_t len;
    uint8_t *f = gf_test_read_file(gf_dataset_shard_path(ds, s), &len);
    CHECK(f != NULL);
    if (!f)
      continue;
    uint8_t *mask = calloc(len, 1);
    memset(mask, 1, 64); /* the header */
    for (int i = 0; i < n; i++) {
      gf_sample_info info;
      if (gf_dataset_sample_info(ds, (uint64_t)i, &info) == 0 &&
          info.shard == s)
        memset(mask + info.offset, 1, info.length);
    }
    size_t nonzero = 0;
    for (size_t k = 0; k < len; k++)
      if (!mask[k] && f[k])
        nonzero++;
    CHECK(nonzero == 0);
    free(mask);
    free(f);
  }
  gf_dataset_close(ds);
}

static bool same_file(const char *a, const char *b) {
  size_t la, lb;
  uint8_t *fa = gf_test_read_file(a, &la), *fb = gf_test_read_file(b, &lb);
  bool same = fa && fb && la == lb && memcmp(fa, fb, la) == 0;
  free(fa);
  free(fb);
  return same;
}

static void test_refusals(const char *tmp) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/refuse", tmp);
  mkdir(dir, 0755);
  gf_writer *w = NULL;
  gf_writer_opts bad = {.shard_size = 0, .alignment = 3, .index_version = 0};
  CHECK_ERR(gf_writer_create(dir, &bad, &w), -EINVAL);
  CHECK(w == NULL);
  char nodir[1100];
  snprintf(nodir, sizeof nodir, "%s/missing", tmp);
  CHECK_ERR(gf_writer_create(nodir, NULL, &w), -ENOENT);
  CHECK(strstr(gf_last_error()->message, "missing") != NULL);
  CHECK_OK(gf_writer_create(dir, NULL, &w));
  if (!w)
    return;
  uint8_t px[12] = {0};
  gf_shape sh = {2, 2, 3, GF_DTYPE_U8};
  CHECK_ERR(gf_writer_add(w, px, 0, GF_CODEC_PNG, &sh, 0, "empty.png"),
            -EINVAL);
  CHECK(strstr(gf_last_error()->message, "empty.png") != NULL);
  CHECK_ERR(gf_writer_add(w, px, 11, GF_CODEC_RAW, &sh, 0, "short.raw"),
            GF_ESHAPE);
  CHECK(strstr(gf_last_error()->message, "short.raw") != NULL);
  CHECK_ERR(gf_writer_add(w, px, 12, 9, &sh, 0, "codec"), -EINVAL);
  gf_shape deep = {2, 2, 3, GF_DTYPE_U16}; /* loco codes 8-bit samples */
  CHECK_ERR(gf_writer_add(w, px, 12, GF_CODEC_LOCO, &deep, 0, "deep.png"),
            GF_ESHAPE);
  CHECK(strstr(gf_last_error()->message, "deep.png") != NULL &&
        strstr(gf_last_error()->message, "8-bit") != NULL);
  gf_shape five = {2, 2, 5, GF_DTYPE_U8};
  CHECK_ERR(gf_writer_add(w, px, 12, GF_CODEC_PNG, &five, 0, "c5"), GF_ESHAPE);
  gf_shape huge = {70000, 2, 1, GF_DTYPE_U8};
  CHECK_ERR(gf_writer_add(w, px, 12, GF_CODEC_PNG, &huge, 0, "big"), GF_ELIMIT);
  CHECK_ERR(gf_writer_add_class(w, ""), -EINVAL);
  CHECK(gf_writer_count(w) == 0);
  CHECK_OK(gf_writer_add_class(w, "only"));
  CHECK_OK(gf_writer_add(w, px, 12, GF_CODEC_RAW, &sh, 0, "ok.raw"));
  CHECK_OK(gf_writer_add(w, px, 12, GF_CODEC_RAW, &sh, 1, "label1.raw"));
  /* Label 1 with a single class: refused at finish, naming the sample. */
  CHECK_ERR(gf_writer_finish(w), -EINVAL);
  CHECK(gf_last_error()->sample == 1);
  gf_writer_destroy(w);
  CHECK_OK(gf_dir_remove(dir));

  /* A folder that is not empty is refused. */
  mkdir(dir, 0755);
  char f[1100];
  snprintf(f, sizeof f, "%s/keep.txt", dir);
  CHECK_OK(gf_test_write_file(f, "x", 1));
  w = NULL;
  CHECK_ERR(gf_writer_create(dir, NULL, &w), -ENOTEMPTY);
  CHECK(w == NULL);
  CHECK(strstr(gf_last_error()->message, "must be empty") != NULL);
  gf_writer_destroy(NULL);
}

static void test_empty(const char *tmp) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/empty", tmp);
  mkdir(dir, 0755);
  gf_writer *w = NULL;
  CHECK_OK(gf_writer_create(dir, NULL, &w));
  CHECK_OK(gf_writer_finish(w));
  CHECK(gf_writer_bytes(w) == 0);
  gf_writer_destroy(w);
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  CHECK(gf_dataset_count(ds) == 0);
  CHECK(gf_dataset_num_shards(ds) == 0);
  CHECK(gf_dataset_num_classes(ds) == 0);
  CHECK_OK(gf_dataset_check_index(ds));
  gf_sample_info info;
  CHECK_ERR(gf_dataset_sample_info(ds, 0, &info), -ERANGE);
  gf_dataset_close(ds);
  gf_dataset_close(NULL);
}

/* A sample at an offset past 4 GiB (the shard is sparse: a hole of 5 GiB
 * costs no disk). */
static void test_sparse(const char *tmp) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/sparse", tmp);
  mkdir(dir, 0755);
  gf_writer_opts o = {
      .shard_size = 16ull << 30, .alignment = 4096, .index_version = 0};
  gf_writer *w = NULL;
  CHECK_OK(gf_writer_create(dir, &o, &w));
  if (!w)
    return;
  uint8_t a[100], b[5000];
  uint64_t seed = 7;
  for (size_t i = 0; i < sizeof a; i++)
    a[i] = (uint8_t)gf_test_rand(&seed);
  for (size_t i = 0; i < sizeof b; i++)
    b[i] = (uint8_t)gf_test_rand(&seed);
  gf_shape sh = {10, 10, 1, GF_DTYPE_U8};
  gf_shape shb = {50, 100, 1, GF_DTYPE_U8};
  CHECK_OK(gf_writer_add(w, a, sizeof a, GF_CODEC_RAW, &sh, 0, "a"));
  int rc = gf_writer_test_hole(w, 5ull << 30);
  if (rc == -EFBIG) {
    gf_writer_destroy(w);
    gf_test_skip(false, "this file system refuses 5 GiB files");
  }
  CHECK_OK(rc);
  CHECK_OK(gf_writer_add(w, b, sizeof b, GF_CODEC_RAW, &shb, 1, "b"));
  CHECK_OK(gf_writer_finish(w));
  CHECK(gf_writer_bytes(w) > (5ull << 30));
  gf_writer_destroy(w);

  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(dir, &ds));
  if (!ds)
    return;
  CHECK(gf_dataset_num_shards(ds) == 1);
  CHECK(gf_dataset_shard_size(ds, 0) > (5ull << 30));
  gf_sample_info info;
  CHECK_OK(gf_dataset_sample_info(ds, 1, &info));
  CHECK(info.offset > (4ull << 30));
  CHECK(info.offset % 4096 == 0);
  uint8_t got[5000];
  CHECK(gf_dataset_read(ds, 1, got, sizeof got) == (int64_t)sizeof b);
  CHECK(memcmp(got, b, sizeof b) == 0);
  CHECK(gf_dataset_read(ds, 0, got, sizeof got) == (int64_t)sizeof a);
  CHECK(memcmp(got, a, sizeof a) == 0);
  struct stat st;
  CHECK(stat(gf_dataset_shard_path(ds, 0), &st) == 0);
  printf("sparse shard: %llu bytes long, %llu bytes on disk\n",
         (unsigned long long)st.st_size,
         (unsigned long long)st.st_blocks * 512);
  CHECK_OK(gf_dataset_check_index(ds));
  gf_dataset_close(ds);
  CHECK_OK(gf_dir_remove(dir));
}

int main(void) {
  const char *tmp = gf_test_tmpdir();
  static sample ss[N];
  for (int i = 0; i < N; i++)
    make_sample(&ss[i], i);
  const uint64_t shard_size = 16384;
  char d1[1024], d2[1024], d3[1024];
  snprintf(d1, sizeof d1, "%s/packed", tmp);
  snprintf(d2, sizeof d2, "%s/packed-again", tmp);
  snprintf(d3, sizeof d3, "%s/aligned", tmp);

  CHECK_OK(write_dataset(d1, 1, shard_size, ss, N));
  verify(d1, 1, ss, N, shard_size);
  check_padding_zero(d1, N);

  /* The same calls give the same bytes. */
  CHECK_OK(write_dataset(d2, 1, shard_size, ss, N));
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(d1, &ds));
  char a[1100], b[1100];
  snprintf(a, sizeof a, "%s/index.gfi", d1);
  snprintf(b, sizeof b, "%s/index.gfi", d2);
  CHECK(same_file(a, b));
  for (uint32_t s = 0; ds && s < gf_dataset_num_shards(ds); s++) {
    snprintf(a, sizeof a, "%s/shard-%06u.gfs", d1, s);
    snprintf(b, sizeof b, "%s/shard-%06u.gfs", d2, s);
    CHECK(same_file(a, b));
  }
  /* No temporary left behind. */
  snprintf(a, sizeof a, "%s/index.gfi.tmp", d1);
  CHECK(access(a, F_OK) != 0);
  gf_dataset_close(ds);
  /* A trailing slash names the same files. */
  char slashed[1100];
  snprintf(slashed, sizeof slashed, "%s/", d1);
  ds = NULL;
  CHECK_OK(gf_dataset_open(slashed, &ds));
  CHECK(ds && strstr(gf_dataset_shard_path(ds, 0), "//") == NULL);
  gf_dataset_close(ds);

  /* Aligned for O_DIRECT: extents, shard sizes and data start at 4096. */
  CHECK_OK(write_dataset(d3, 4096, shard_size * 4, ss, N));
  verify(d3, 4096, ss, N, shard_size * 4);
  check_padding_zero(d3, N);

  test_refusals(tmp);
  test_empty(tmp);
  test_sparse(tmp);
  for (int i = 0; i < N; i++)
    free(ss[i].data);
  return gf_test_finish();
}
