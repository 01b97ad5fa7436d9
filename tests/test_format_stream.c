/* A writer that streams its shards out (gf_writer_opts.dataset_id and
 * on_shard, as a build into a bucket does): each shard is handed on once
 * closed, in order, final (its header has the given id, its size is the
 * shard table's), and may be moved away at once; the index written at
 * finish then opens with the shards put back beside it, every sample read
 * back; the index's dataset id is the one given. A hand-off that fails
 * fails the writer (sticky), and on_shard without an id is refused. */
#include "format/format.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N 40
#define ID 0x1234abcd5678ef01ull

typedef struct seen {
  const char *away; /* where the shards are moved */
  uint32_t n;
  uint64_t sizes[64];
  int fail_at; /* fail the hand-off of this shard (-1: none) */
} seen;

static int on_shard(void *ctx, uint32_t i, const char *path, uint64_t size) {
  seen *s = ctx;
  CHECK(i == s->n); /* in order, each once */
  if ((int)i == s->fail_at)
    return -EIO;
  struct stat st;
  CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == size);
  size_t len = 0;
  uint8_t *b = gf_test_read_file(path, &len);
  CHECK(b && len >= GF_SHARD_HEADER_SIZE);
  if (b && len >= GF_SHARD_HEADER_SIZE) /* final: the id is in already */
    CHECK(gf_le64(b + GF_SH_DATASET_ID) == ID);
  free(b);
  char to[4300];
  snprintf(to, sizeof to, "%s/%s", s->away, strrchr(path, '/') + 1);
  CHECK(rename(path, to) == 0);
  if (s->n < 64)
    s->sizes[s->n] = size;
  s->n++;
  return 0;
}

static int write_ds(const char *dir, seen *s, gf_writer_opts *o) {
  CHECK(mkdir(dir, 0755) == 0);
  gf_writer *w = NULL;
  int rc = gf_writer_create(dir, o, &w);
  if (rc < 0)
    return rc;
  gf_shape sh = {1, 100, 1, GF_DTYPE_U8};
  uint8_t px[100];
  for (int i = 0; i < N && rc == 0; i++) {
    memset(px, i, sizeof px);
    rc = gf_writer_add(w, px, sizeof px, GF_CODEC_RAW, &sh, i % 3, NULL);
  }
  if (rc == 0)
    rc = gf_writer_finish(w);
  /* Every shard closed was handed on (a failed hand-off: all before it). */
  CHECK(rc == 0 ? s->n == gf_writer_shards(w)
                : s->n + 1 == gf_writer_shards(w) && (int)s->n == s->fail_at);
  gf_writer_destroy(w);
  return rc;
}

int main(void) {
  const char *t = gf_test_tmpdir();
  char dir[4200], away[4200];
  snprintf(dir, sizeof dir, "%s/ds", t);
  snprintf(away, sizeof away, "%s/away", t);
  CHECK(mkdir(away, 0755) == 0);

  /* Streamed: 40 samples of 100 bytes in shards of 512: several. */
  seen s = {.away = away, .fail_at = -1};
  gf_writer_opts o = {.shard_size = 512,
                      .alignment = 1,
                      .index_version = 0,
                      .dataset_id = ID,
                      .on_shard = on_shard,
                      .on_shard_ctx = &s};
  CHECK_OK(write_ds(dir, &s, &o));
  CHECK(s.n >= 5);
  char from[4300], to[4300];
  snprintf(from, sizeof from, "%s/%s", dir, GF_INDEX_NAME);
  snprintf(to, sizeof to, "%s/%s", away, GF_INDEX_NAME);
  CHECK(rename(from, to) == 0);
  gf_dataset *ds = NULL;
  CHECK_OK(gf_dataset_open(away, &ds));
  if (ds) {
    CHECK(gf_dataset_count(ds) == N);
    CHECK(gf_dataset_num_shards(ds) == s.n);
    for (uint32_t i = 0; i < s.n && i < 64; i++)
      CHECK(gf_dataset_shard_size(ds, i) == s.sizes[i]);
    for (int i = 0; i < N; i++) {
      uint8_t b[100];
      CHECK(gf_dataset_read(ds, (uint64_t)i, b, sizeof b) == 100);
      CHECK(b[0] == (uint8_t)i && b[99] == (uint8_t)i);
    }
  }
  gf_dataset_close(ds);
  size_t len = 0;
  uint8_t *idx = gf_test_read_file(to, &len);
  CHECK(idx && len > GF_INDEX_HEADER_SIZE &&
        gf_le64(idx + GF_IH_DATASET_ID) == ID);
  free(idx);

  /* A hand-off that fails fails the writer: no index. */
  snprintf(dir, sizeof dir, "%s/ds2", t);
  snprintf(away, sizeof away, "%s/away2", t);
  CHECK(mkdir(away, 0755) == 0);
  seen f = {.away = away, .fail_at = 2};
  gf_writer_opts fo = {.shard_size = 512,
                       .alignment = 1,
                       .index_version = 0,
                       .dataset_id = ID,
                       .on_shard = on_shard,
                       .on_shard_ctx = &f};
  CHECK_ERR(write_ds(dir, &f, &fo), -EIO);
  snprintf(from, sizeof from, "%s/%s", dir, GF_INDEX_NAME);
  struct stat st;
  CHECK(stat(from, &st) != 0);

  /* on_shard needs an id. */
  snprintf(dir, sizeof dir, "%s/ds3", t);
  seen z = {.away = away, .fail_at = -1};
  gf_writer_opts zo = {.shard_size = 512,
                       .alignment = 1,
                       .index_version = 0,
                       .dataset_id = 0,
                       .on_shard = on_shard,
                       .on_shard_ctx = &z};
  CHECK_ERR(write_ds(dir, &z, &zo), -EINVAL);
  return gf_test_finish();
}
