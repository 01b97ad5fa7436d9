/* Versioned structs: every struct of the API is accepted only at a size a
 * header has published for it (its version-1 sizeof; gf_loader_stats, at
 * version 2, also version 1's size, and nothing is written past the size
 * given); 4, 8, one byte short and 8 bytes long are refused with -EINVAL
 * naming the struct and the sizes accepted, before anything else is
 * read. */
#include "loader_fixture.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The sizes to refuse for a struct whose published size is v1. */
static void bad_sizes(uint32_t v1, uint32_t out[4]) {
  out[0] = 4;
  out[1] = 8;
  out[2] = v1 - 1;
  out[3] = v1 + 8;
}

/* rc is the refusal of `name` at size `given`, naming both and the sizes
 * accepted: v1 (version 1), and v2, v3, v4 (versions 2, 3 and 4) when not
 * 0. */
static void refused4(int rc, const char *name, uint32_t given, uint32_t v1,
                     uint32_t v2, uint32_t v3, uint32_t v4) {
  CHECK_ERR(rc, -EINVAL);
  const char *m = gf_last_error()->message;
  char g[48], a[160];
  snprintf(g, sizeof g, "struct_size %u ", given);
  if (v4)
    snprintf(a, sizeof a,
             "accepted: %u (version 1), %u (version 2), %u (version 3), %u "
             "(version 4)",
             v1, v2, v3, v4);
  else if (v3)
    snprintf(a, sizeof a,
             "accepted: %u (version 1), %u (version 2), %u (version 3)", v1,
             v2, v3);
  else if (v2)
    snprintf(a, sizeof a, "accepted: %u (version 1), %u (version 2)", v1, v2);
  else
    snprintf(a, sizeof a, "accepted: %u (version 1)", v1);
  if (!strstr(m, name) || !strstr(m, g) || !strstr(m, a)) {
    printf("unclear refusal of %s at %u: %s\n", name, given, m);
    gf_test_failures++;
  }
}

static void refused(int rc, const char *name, uint32_t given, uint32_t v1) {
  refused4(rc, name, given, v1, 0, 0, 0);
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 8, 2, false, 1, 3));
  if (gf_test_failures)
    return gf_test_finish();
  uint32_t bad[4];

  /* gf_loader_config: create and plan. */
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f.ds_dir;
  cfg.batch_size = 4;
  cfg.threads = 1;
  cfg.device = GF_DEVICE_CPU;
  uint32_t v1 = sizeof cfg;
  bad_sizes(v1, bad);
  char plan[4096];
  for (int i = 0; i < 4; i++) {
    cfg.struct_size = bad[i];
    gf_loader *l = NULL;
    refused(gf_loader_create(&cfg, &l), "gf_loader_config", bad[i], v1);
    CHECK(l == NULL);
    refused(gf_loader_plan(&cfg, plan, sizeof plan), "gf_loader_config",
            bad[i], v1);
  }
  cfg.struct_size = v1;
  /* gf_remote_config, through the loader's config (read for any source:
   * a bad one is refused even where it would not be used). */
  gf_remote_config rcfg = GF_REMOTE_CONFIG_INIT;
  uint32_t rv1 = sizeof rcfg;
  bad_sizes(rv1, bad);
  cfg.remote = &rcfg;
  for (int i = 0; i < 4; i++) {
    rcfg.struct_size = bad[i];
    gf_loader *rl = NULL;
    refused(gf_loader_create(&cfg, &rl), "gf_remote_config", bad[i], rv1);
    CHECK(rl == NULL);
  }
  rcfg.struct_size = rv1;
  rcfg.reserved[1] = 7;
  gf_loader *rl = NULL;
  CHECK_ERR(gf_loader_create(&cfg, &rl), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "reserved") != NULL);
  rcfg.reserved[1] = 0;
  CHECK_OK(gf_loader_create(&cfg, &rl));
  gf_loader_destroy(rl);
  cfg.remote = NULL;
  CHECK(gf_loader_plan(&cfg, plan, sizeof plan) > 0);
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!l)
    return gf_test_finish();

  /* gf_loader_stats, at version 4 (2: the JPEG counters, 3: the GPU
   * decoder's, 4: the remote source's): other sizes refused, nothing
   * written past the size field; the older versions' sizes accepted,
   * nothing written past them. */
  v1 = offsetof(gf_loader_stats, jpeg_decoded);
  uint32_t v2 = offsetof(gf_loader_stats, jpeg_gpu_backend);
  uint32_t v3 = offsetof(gf_loader_stats, remote);
  uint32_t v4 = sizeof(gf_loader_stats);
  uint32_t bad_stats[7] = {4, 8, v1 - 1, v1 + 8, v2 + 8, v3 + 8, v4 + 8};
  for (int i = 0; i < 7; i++) {
    gf_loader_stats st;
    memset(&st, 0xee, sizeof st);
    st.struct_size = bad_stats[i];
    refused4(gf_loader_stats_get(l, &st), "gf_loader_stats", bad_stats[i], v1,
             v2, v3, v4);
    CHECK(st.threads == 0xeeeeeeeeu);
  }
  gf_loader_stats st;
  memset(&st, 0xee, sizeof st);
  st.struct_size = v1;
  CHECK_OK(gf_loader_stats_get(l, &st));
  CHECK(st.threads == 1);
  CHECK(st.jpeg_decoded[0] == 0xeeeeeeeeeeeeeeeeull &&
        st.jpeg_pixels_full == 0xeeeeeeeeeeeeeeeeull);
  st.struct_size = v2;
  CHECK_OK(gf_loader_stats_get(l, &st));
  CHECK(st.threads == 1 && st.jpeg_decoded[0] == 0 &&
        st.jpeg_pixels_full == 0);
  CHECK(st.jpeg_gpu_decoded == 0xeeeeeeeeeeeeeeeeull &&
        (uint8_t)st.jpeg_gpu_why[0] == 0xee);
  st.struct_size = v3;
  CHECK_OK(gf_loader_stats_get(l, &st));
  /* Host mode: no GPU decoder, and the reason said. */
  CHECK(st.jpeg_gpu_decoded == 0 && st.jpeg_gpu_backend[0] == '\0' &&
        st.jpeg_gpu_why[0] != '\0');
  CHECK((uint8_t)st.remote[0] == 0xee &&
        st.fetch_requests == 0xeeeeeeeeeeeeeeeeull);
  st.struct_size = v4;
  CHECK_OK(gf_loader_stats_get(l, &st));
  /* A local source: no remote figures. */
  CHECK(st.remote[0] == '\0' && st.fetch_requests == 0 &&
        st.disk_cache_hits == 0);
  gf_loader_destroy(l);

  /* gf_decode_opts. */
  uint8_t px[48] = {0}, dst[64];
  gf_shape s = {4, 4, 3, GF_DTYPE_U8}, out;
  gf_decode_opts o = GF_DECODE_OPTS_INIT;
  v1 = sizeof o;
  bad_sizes(v1, bad);
  for (int i = 0; i < 4; i++) {
    o.struct_size = bad[i];
    refused(gf_decode(GF_CODEC_RAW, px, 48, &s, &o, dst, 64, &out),
            "gf_decode_opts", bad[i], v1);
  }
  o.struct_size = v1;
  CHECK_OK(gf_decode(GF_CODEC_RAW, px, 48, &s, &o, dst, 64, &out));

  /* gf_device_pool_config: refused before any device is looked for. */
  gf_device_pool_config pc = GF_DEVICE_POOL_CONFIG_INIT;
  pc.bytes = 1 << 20;
  v1 = sizeof pc;
  bad_sizes(v1, bad);
  for (int i = 0; i < 4; i++) {
    pc.struct_size = bad[i];
    gf_device_pool *p = NULL;
    refused(gf_device_pool_create(&pc, &p), "gf_device_pool_config", bad[i],
            v1);
    CHECK(p == NULL);
  }
  pc.struct_size = v1;
  gf_device_pool *pool = NULL;
  int rc = gf_device_pool_create(&pc, &pool);
  CHECK(rc == 0 || rc == GF_ENODEVICE || rc == GF_ECUDA);

  /* gf_device_pool_stats: needs a pool, so a device. */
  if (pool) {
    v1 = sizeof(gf_device_pool_stats);
    bad_sizes(v1, bad);
    for (int i = 0; i < 4; i++) {
      gf_device_pool_stats ps;
      memset(&ps, 0xee, sizeof ps);
      ps.struct_size = bad[i];
      refused(gf_device_pool_stats_get(pool, &ps), "gf_device_pool_stats",
              bad[i], v1);
    }
    gf_device_pool_stats ps = {.struct_size = v1};
    CHECK_OK(gf_device_pool_stats_get(pool, &ps));
    gf_device_pool_destroy(pool);
  } else {
    printf("gf_device_pool_stats not checked: no device pool (%s)\n",
           gf_last_error()->message);
  }
  fixture_free(&f);
  return gf_test_finish();
}
