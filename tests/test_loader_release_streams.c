/* gf_loader_release_streams and gf_batch.labels_device in host mode (the
 * GPU side is in test_gpu_loader): the argument checks refuse more than
 * GF_RELEASE_STREAMS_MAX streams and a NULL array with n > 0, leaving the
 * batch lent (a later release takes it); in host mode the streams are
 * ignored (any pointers), n == 0 is a plain release, and
 * gf_loader_release_on is the one-stream case; labels_device is NULL. Every
 * sample of two epochs is delivered once and right. */
#include "loader_fixture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 30, 3, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f.ds_dir;
  cfg.channels = 3;
  cfg.batch_size = 4;
  cfg.threads = 2;
  cfg.prefetch = 2;
  cfg.device = GF_DEVICE_CPU;
  gf_loader *l;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!l)
    return gf_test_finish();
  /* Never dereferenced in host mode: stand-ins for cudaStream_t. */
  int s0, s1, s2, s3, s4;
  void *streams[5] = {&s0, &s1, &s2, &s3, &s4};
  uint32_t *cnt = calloc(f.n, sizeof *cnt);
  for (int e = 0; e < 2; e++) {
    memset(cnt, 0, f.n * sizeof *cnt);
    gf_batch *b;
    int rc, k = 0;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      CHECK(b->labels_device == NULL);
      gf_test_failures += fixture_check_batch(&f, b);
      for (uint32_t j = 0; j < b->count; j++)
        cnt[b->indices[j]]++;
      /* Refused: the batch stays lent. */
      CHECK_ERR(gf_loader_release_streams(l, b, streams, 5), -EINVAL);
      CHECK(strstr(gf_last_error()->message, "at most 4") != NULL);
      CHECK_ERR(gf_loader_release_streams(l, b, NULL, 1), -EINVAL);
      CHECK_ERR(gf_loader_release_streams(NULL, b, streams, 1), -EINVAL);
      switch (k++ % 4) {
      case 0:
        CHECK_OK(gf_loader_release_streams(l, b, streams,
                                           GF_RELEASE_STREAMS_MAX));
        break;
      case 1:
        CHECK_OK(gf_loader_release_streams(l, b, NULL, 0));
        break;
      case 2:
        CHECK_OK(gf_loader_release_on(l, b, streams[0]));
        break;
      default:
        CHECK_OK(gf_loader_release_streams(l, b, streams, 2));
        break;
      }
      /* Given back once: a second release is refused. */
      CHECK_ERR(gf_loader_release_streams(l, b, NULL, 0), -EINVAL);
    }
    CHECK(rc == GF_EEPOCHEND);
    for (uint64_t i = 0; i < f.n; i++)
      CHECK(cnt[i] == 1);
  }
  free(cnt);
  gf_loader_destroy(l);
  fixture_free(&f);
  return gf_test_finish();
}
