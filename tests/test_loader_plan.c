/* The memory plan: computed from the config and the source alone, the
 * device side identical whatever the thread count (the same on every
 * machine), the figures those of the buffers the loader makes. */
#include "loader_fixture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The line of `text` that starts with `prefix`, copied into out. */
static void line_of(const char *text, const char *prefix, char *out,
                    size_t cap) {
  out[0] = '\0';
  const char *p = strstr(text, prefix);
  if (!p)
    return;
  size_t n = strcspn(p, "\n");
  if (n >= cap)
    n = cap - 1;
  memcpy(out, p, n);
  out[n] = '\0';
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 40, 2, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f.ds_dir;
  cfg.channels = 3;
  cfg.batch_size = 16;
  cfg.threads = 3;
  cfg.transform.out_dtype = GF_OUT_F16;
  cfg.transform.height = 8;
  cfg.transform.width = 8;
  char a[4096], b[4096];
  int n = gf_loader_plan(&cfg, a, sizeof a);
  CHECK(n > 0);
  printf("%s", a);
  /* Samples are 12x10 RGB: a slot holds 16 x 360 bytes; the device slot
   * adds the f16 output (16 x 8x8x3 x 2), 16 sample descriptors, 16
   * gather ranges (32 bytes each) and 16 labels (8 bytes each), each part
   * rounded to 256 bytes: 5,888 + 6,144 + 768 + 512 + 256. */
  CHECK(strstr(a, "5,760") != NULL);
  CHECK(strstr(a, "13,568") != NULL);
  CHECK(strstr(a, "and its labels (256 B, int64)") != NULL);
  /* Native channels: a dataset's index says RGB, so the output is sized
   * for 3 channels, as above; a PNG folder may hold any count: 4, so the
   * f16 output takes 16 x 8x8x4 x 2 = 8,192 bytes. */
  cfg.channels = 0;
  CHECK(gf_loader_plan(&cfg, b, sizeof b) > 0);
  CHECK(strstr(b, "13,568") != NULL);
  cfg.source = f.png_dir;
  cfg.max_sample_bytes = 360;
  CHECK(gf_loader_plan(&cfg, b, sizeof b) > 0);
  CHECK(strstr(b, "15,616") != NULL);
  cfg.source = f.ds_dir;
  cfg.max_sample_bytes = 0;
  cfg.channels = 3;
  cfg.threads = 7;
  CHECK(gf_loader_plan(&cfg, b, sizeof b) > 0);
  char da[256], db[256];
  line_of(a, "device  total", da, sizeof da);
  line_of(b, "device  total", db, sizeof db);
  CHECK(da[0] && strcmp(da, db) == 0);
  line_of(a, "host    read buffers", da, sizeof da);
  line_of(b, "host    read buffers", db, sizeof db);
  CHECK(strcmp(da, db) != 0); /* host read buffers follow the threads */
  /* The cache is pinned as it fills when a GPU may be used (the plan says
   * so from the config alone), and not in host mode or when turned off. */
  cfg.cache_bytes = 1 << 20;
  CHECK(gf_loader_plan(&cfg, b, sizeof b) > 0);
  CHECK(strstr(b, "sample cache (pinned)") != NULL);
  cfg.device = GF_DEVICE_CPU;
  CHECK(gf_loader_plan(&cfg, b, sizeof b) > 0);
  CHECK(strstr(b, "sample cache (budget)") != NULL);
  cfg.device = GF_DEVICE_AUTO;
  cfg.cache_direct = GF_CACHE_DIRECT_OFF;
  CHECK(gf_loader_plan(&cfg, b, sizeof b) > 0);
  CHECK(strstr(b, "sample cache (budget)") != NULL);
  cfg.cache_direct = 2;
  CHECK_ERR(gf_loader_plan(&cfg, b, sizeof b), -EINVAL);
  cfg.cache_direct = GF_CACHE_DIRECT_AUTO;
  cfg.cache_bytes = 0;
  /* A buffer too small is refused, a bad config named. */
  CHECK_ERR(gf_loader_plan(&cfg, a, 16), -ENOBUFS);
  cfg.rank = 5;
  CHECK_ERR(gf_loader_plan(&cfg, a, sizeof a), -EINVAL);
  fixture_free(&f);
  return gf_test_finish();
}
