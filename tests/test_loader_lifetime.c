/* Lifetime: destroy with batches out, break out of an epoch early, destroy
 * during prefetch, many create/destroy cycles, misuse answered with errors
 * (run under ASan/TSan in CI: no leak, no hang, no use after free). */
#include "loader_fixture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 50, 2, true, 1, 0));
  if (gf_test_failures)
    return gf_test_finish();
  uint64_t rs = 3;
  for (int i = 0; i < 40; i++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = i % 2 ? f.png_dir : f.ds_dir;
    cfg.batch_size = 1 + (uint32_t)(gf_test_rand(&rs) % 9);
    cfg.max_sample_bytes = 16 * 16 * 3; /* ragged folder: not scanned */
    cfg.threads = 1 + (uint32_t)(gf_test_rand(&rs) % 6);
    cfg.prefetch = 1 + (uint32_t)(gf_test_rand(&rs) % 4);
    cfg.cache_bytes = i % 3 ? 1 << 16 : 0;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    int take = (int)(gf_test_rand(&rs) % 5); /* 0: destroy during prefetch */
    gf_batch *held[8];
    int nheld = 0;
    for (int k = 0; k < take; k++) {
      gf_batch *b;
      int rc = gf_loader_next(l, &b);
      if (rc == -EBUSY) {
        /* Every slot is held: the documented answer, not a hang. */
        CHECK((uint32_t)nheld == cfg.prefetch);
        break;
      }
      if (rc != 0)
        break;
      CHECK(fixture_check_batch(&f, b) == 0);
      held[nheld++] = b;
    }
    if (nheld > 1 && i % 2) {
      CHECK_OK(gf_loader_release(l, held[0]));
      CHECK_ERR(gf_loader_release(l, held[0]), -EINVAL); /* twice */
    }
    if (i % 5 == 0) {
      /* Jump to another epoch mid-epoch; the new epoch is complete. */
      for (int k = 0; k < nheld; k++)
        gf_loader_release(l, held[k]);
      nheld = 0;
      CHECK_OK(gf_loader_set_epoch(l, 3));
      uint32_t *cnt = calloc(f.n, sizeof *cnt);
      gf_batch *b;
      int rc;
      while ((rc = gf_loader_next(l, &b)) == 0) {
        CHECK(b->epoch == 3);
        for (uint32_t j = 0; j < b->count; j++)
          cnt[b->indices[j]]++;
        gf_loader_release(l, b);
      }
      CHECK(rc == GF_EEPOCHEND);
      for (uint64_t s = 0; s < f.n; s++)
        CHECK(cnt[s] == 1);
      free(cnt);
    }
    /* Destroy with whatever is still held. */
    gf_loader_destroy(l);
  }
  gf_loader_destroy(NULL);
  /* Bad configs are refused with the field named. */
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  gf_loader *l = NULL;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  cfg.source = f.ds_dir;
  cfg.rank = 2;
  cfg.world = 2;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "rank") != NULL);
  cfg.rank = 0;
  cfg.struct_size = sizeof cfg + 8;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  cfg.struct_size = sizeof cfg;
  cfg.reserved[0] = 1;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  cfg.reserved[0] = 0;
  cfg.source = "/nonexistent/gpufeed";
  CHECK(gf_loader_create(&cfg, &l) < 0);
  CHECK(l == NULL);
  CHECK(strstr(gf_last_error()->message, "/nonexistent/gpufeed") != NULL);
  fixture_free(&f);
  return gf_test_finish();
}
