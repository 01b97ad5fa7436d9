/* The public device pool's contract that holds in every build, with or
 * without CUDA or a device: every bad config is refused with -EINVAL naming
 * the field (before any device is looked at), a valid one either makes a
 * pool (on a machine with a device) or fails with GF_ENODEVICE saying why;
 * NULL handles are refused; the fraction turns into bytes the same way for
 * the same free memory. */
#include "testutil.h"

#include "gpu/pool.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define MiB (1ull << 20)

static bool has(const char *what) {
  const char *msg = gf_last_error()->message;
  if (strstr(msg, what))
    return true;
  fprintf(stderr, "message lacks \"%s\": %s\n", what, msg);
  return false;
}

/* Expects create to refuse cfg with -EINVAL and a message naming `field`. */
static void refused(const gf_device_pool_config *cfg, const char *field) {
  gf_device_pool *p = (gf_device_pool *)&p; /* must be reset to NULL */
  CHECK_ERR(gf_device_pool_create(cfg, &p), -EINVAL);
  CHECK(p == NULL);
  CHECK(has(field));
}

static void bad_configs(void) {
  gf_device_pool *p;
  refused(NULL, "needs a config");
  gf_device_pool_config c = GF_DEVICE_POOL_CONFIG_INIT;
  CHECK_ERR(gf_device_pool_create(&c, NULL), -EINVAL);
  refused(&c, "neither bytes nor fraction");

  c.bytes = MiB;
  c.struct_size = sizeof c + 8;
  refused(&c, "struct_size");
  c.struct_size = 2;
  refused(&c, "struct_size");
  c.struct_size = sizeof c;

  c.alignment = 3;
  refused(&c, "alignment 3 is not a power of two");
  c.alignment = 0;
  c.device = -1;
  refused(&c, "device -1");
  c.device = 0;
  c.fraction = 0.5f;
  refused(&c, "both bytes");
  c.bytes = 0;
  c.fraction = 1.5f;
  refused(&c, "fraction 1.5");
  c.fraction = -0.25f;
  refused(&c, "fraction -0.25");
  c.fraction = NAN;
  refused(&c, "fraction nan");
  c.fraction = 0;
  c.bytes = MiB;
  c.growth = 2;
  refused(&c, "growth 2");
  c.growth = 0;
  c.growth_chunk = MiB;
  refused(&c, "growth_chunk 1048576 is set but growth is off");
  c.growth_chunk = 0;
  c.limit = MiB / 2;
  refused(&c, "above the limit 524288");
  c.limit = 0;
  c.bytes = UINT64_MAX - 5;
  refused(&c, "overflows");
  c.bytes = MiB;
  c.reserved0 = 1;
  refused(&c, "reserved0");
  c.reserved0 = 0;
  c.reserved[3] = 1;
  refused(&c, "reserved[3]");
  c.reserved[3] = 0;
  c.bytes = 0;
  c.growth = 1;
  refused(&c, "growth from nothing needs a limit");
  c.limit = 8 * MiB;
  c.growth_chunk = 16 * MiB;
  refused(&c, "growth_chunk 16777216 is above the limit");

  /* Valid configs get as far as the device. */
  const gf_device_pool_config good[] = {
      {sizeof c, 0, MiB, 0.0f, 0, 0, 0, 0, 0, {0}},
      {sizeof c, 0, 0, 0.01f, 4096, 0, 0, 0, 0, {0}},
      {sizeof c, 0, 0, 0.0f, 0, 1, 0, 0, 8 * MiB, {0}},
      {sizeof c, 0, MiB, 0.0f, 1, 1, 0, 2 * MiB, 64 * MiB, {0}},
  };
  /* A cut struct (a size no header published) is refused, not read. */
  gf_device_pool_config cut = {offsetof(gf_device_pool_config, growth_chunk),
                               0, MiB, 0.0f, 0, 0, 0, 77, 77, {0}};
  refused(&cut, "struct_size");
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    gf_error_clear();
    int rc = gf_device_pool_create(&good[i], &p);
    if (rc == 0) {
      printf("config %zu: a pool on device 0\n", i);
      gf_device_pool_stats st = {.struct_size = sizeof st};
      CHECK_OK(gf_device_pool_stats_get(p, &st));
      CHECK(st.reserved_bytes <= st.limit);
      gf_device_pool_destroy(p);
      continue;
    }
    printf("config %zu: %s: %s\n", i, gf_err_name(rc),
           gf_last_error()->message);
    CHECK_ERR(rc, GF_ENODEVICE);
    CHECK(p == NULL);
    CHECK(gf_last_error()->code == GF_ENODEVICE);
    CHECK(strlen(gf_last_error()->message) > 20);
  }
}

static void null_handles(void) {
  void *ptr = &ptr;
  CHECK_ERR(gf_device_pool_alloc(NULL, 1, NULL, &ptr), -EINVAL);
  CHECK(ptr == NULL);
  CHECK(has("needs a pool"));
  CHECK_ERR(gf_device_pool_free(NULL, &ptr, NULL), -EINVAL);
  gf_device_pool_stats st = {.struct_size = sizeof st};
  CHECK_ERR(gf_device_pool_stats_get(NULL, &st), -EINVAL);
  CHECK_ERR(gf_device_pool_reset_peak(NULL), -EINVAL);
  gf_device_pool_destroy(NULL);
}

static void settle(void) {
  gf_device_pool_config c = GF_DEVICE_POOL_CONFIG_INIT;
  gf_devpool_params pp;
  c.fraction = 0.5f;
  CHECK_OK(gf_devpool_params_check(&c, &pp));
  CHECK(pp.bytes == 0 && pp.alignment == 256 && !pp.growth);
  CHECK_OK(gf_devpool_params_settle(&pp, 1000 * MiB + 1000));
  /* 0.5 * (1000 MiB + 1000) rounded down to 256. */
  CHECK(pp.bytes == 500 * MiB + 256 && pp.limit == pp.bytes);
  gf_devpool_params again;
  CHECK_OK(gf_devpool_params_check(&c, &again));
  CHECK_OK(gf_devpool_params_settle(&again, 1000 * MiB + 1000));
  CHECK(again.bytes == pp.bytes);

  /* A limit caps what the fraction gives. */
  c.limit = 100 * MiB;
  CHECK_OK(gf_devpool_params_check(&c, &pp));
  CHECK_OK(gf_devpool_params_settle(&pp, 1000 * MiB));
  CHECK(pp.bytes == 100 * MiB && pp.limit == 100 * MiB);

  /* Too little free memory for one aligned block. */
  c.limit = 0;
  CHECK_OK(gf_devpool_params_check(&c, &pp));
  CHECK_ERR(gf_devpool_params_settle(&pp, 300), -EINVAL);
  CHECK(has("holds no 256-byte aligned block"));

  /* Growth: the default chunk, cut to a small limit. */
  c = (gf_device_pool_config)GF_DEVICE_POOL_CONFIG_INIT;
  c.growth = 1;
  c.limit = 8 * MiB;
  CHECK_OK(gf_devpool_params_check(&c, &pp));
  CHECK(pp.growth && pp.growth_chunk == 8 * MiB && pp.bytes == 0);
  c.limit = 1024 * MiB;
  c.bytes = 1000;
  CHECK_OK(gf_devpool_params_check(&c, &pp));
  CHECK(pp.growth_chunk == GF_POOL_DEFAULT_CHUNK && pp.bytes == 1024);
  CHECK_OK(gf_devpool_params_settle(&pp, 1ull << 40));
  CHECK(pp.bytes == 1024 && pp.limit == 1024 * MiB);
}

int main(void) {
  bad_configs();
  null_handles();
  settle();
  return gf_test_finish();
}
