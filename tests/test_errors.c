/* The error table, names, messages and per-thread context. */
#include "testutil.h"
#include "common/common.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static void *other_thread(void *arg) {
  (void)arg;
  /* Each thread sees its own context: a fresh thread has none. */
  CHECK(gf_last_error()->code == 0);
  gf_fail(GF_EDECODE, "b.png", 3, GF_NO_INDEX, "bad");
  CHECK(gf_last_error()->code == GF_EDECODE);
  return NULL;
}

int main(void) {
  CHECK(gf_version() == GF_VERSION_NUMBER);
  char v[32];
  snprintf(v, sizeof v, "%d.%d.%d", GF_VERSION_MAJOR, GF_VERSION_MINOR,
           GF_VERSION_PATCH);
  CHECK(strcmp(gf_version_string(), v) == 0);

  /* Every code in the table has its name and message, distinct values, and
   * lies outside the errno range. */
  static const struct { int v; const char *name; const char *msg; } table[] = {
#define ROW_(n, val, m) {val, "GF_E" #n, m},
      GF_ERRNO_MAP(ROW_)
#undef ROW_
  };
  size_t n = sizeof table / sizeof table[0];
  for (size_t i = 0; i < n; i++) {
    CHECK(table[i].v < -1000);
    CHECK(strcmp(gf_err_name(table[i].v), table[i].name) == 0);
    CHECK(strcmp(gf_strerror(table[i].v), table[i].msg) == 0);
    for (size_t j = i + 1; j < n; j++)
      CHECK(table[i].v != table[j].v);
  }
  /* errno values pass through. */
  CHECK(strcmp(gf_err_name(-ENOENT), "ENOENT") == 0);
  CHECK(strcmp(gf_strerror(-ENOSPC), strerror(ENOSPC)) == 0);
  CHECK(strcmp(gf_err_name(-999999), "UNKNOWN") == 0);
  CHECK(strcmp(gf_strerror(12345), "unknown error") == 0);
  CHECK(strcmp(gf_err_name(0), "OK") == 0);

  /* Context: path, sample and offset are kept and named in the message. */
  gf_error_clear();
  CHECK(gf_last_error()->code == 0);
  int rc = gf_fail(GF_ECORRUPT, "shard-000001.gfs", 42, 4096,
                   "checksum 0x%08x, expected 0x%08x", 1u, 2u);
  CHECK(rc == GF_ECORRUPT);
  const gf_error_info *e = gf_last_error();
  CHECK(e->code == GF_ECORRUPT);
  CHECK(e->sample == 42 && e->offset == 4096);
  CHECK(strcmp(e->path, "shard-000001.gfs") == 0);
  CHECK(strstr(e->message, "shard-000001.gfs") != NULL);
  CHECK(strstr(e->message, "sample 42") != NULL);
  CHECK(strstr(e->message, "offset 4096") != NULL);
  CHECK(strstr(e->message, "expected 0x00000002") != NULL);

  /* Adding context to an error a callee recorded without a path. */
  gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX, "bad CRC in IDAT");
  rc = gf_fail_context(GF_EDECODE, "cat/1.png", 7, "decoding");
  CHECK(rc == GF_EDECODE);
  CHECK(strcmp(gf_last_error()->path, "cat/1.png") == 0);
  CHECK(gf_last_error()->sample == 7);
  CHECK(strstr(gf_last_error()->message, "cat/1.png: sample 7: decoding: bad CRC") != NULL);
  /* ... and to a bare errno no callee recorded. */
  gf_error_clear();
  rc = gf_fail_context(-EIO, "x.gfs", GF_NO_INDEX, "reading");
  CHECK(rc == -EIO);
  CHECK(strstr(gf_last_error()->message, "x.gfs: reading: Input/output error") != NULL);

  /* Per-thread. */
  gf_fail(GF_ELIMIT, "a", 1, GF_NO_INDEX, "big");
  pthread_t t;
  CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
  pthread_join(t, NULL);
  CHECK(gf_last_error()->code == GF_ELIMIT);

  /* Limits. */
  gf_limits lim = {0, 0, 0, 0};
  gf_shape ok = {100, 200, 3, GF_DTYPE_U8};
  CHECK(gf_limits_check(&lim, &ok, NULL, GF_NO_INDEX) == 0);
  CHECK(gf_shape_bytes(&ok) == 60000);
  gf_shape tall = {1u << 31, 1, 1, GF_DTYPE_U8};
  CHECK(gf_limits_check(&lim, &tall, "t.png", 0) == GF_ELIMIT);
  CHECK(strstr(gf_last_error()->message, "t.png") != NULL);
  gf_shape bad = {1, 1, 5, GF_DTYPE_U8};
  CHECK(gf_limits_check(&lim, &bad, NULL, GF_NO_INDEX) == GF_ESHAPE);
  CHECK(gf_shape_bytes(&bad) == 0);
  gf_limits small = {10, 10, 50, 0};
  gf_shape mid = {8, 8, 1, GF_DTYPE_U8};
  CHECK(gf_limits_check(&small, &mid, NULL, GF_NO_INDEX) == GF_ELIMIT); /* 64 px > 50 */

  /* struct_size checks. */
  CHECK(gf_check_struct_size(16, 32, "x") == 0);
  CHECK(gf_check_struct_size(64, 32, "x") == -EINVAL);
  CHECK(gf_check_struct_size(0, 32, "x") == -EINVAL);
  return gf_test_finish();
}
