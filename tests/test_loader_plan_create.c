/* The memory plan is what create allocates: for many configurations, the
 * figures gf_loader_plan prints are compared with the bytes a loader made
 * from the same configuration really allocated, summed at its allocation
 * sites (gf_loader_allocated), and with the threads and slots it runs.
 * Host mode always; GPU mode too when a device is there (device 0), with
 * a JPEG folder too, whose plan holds nvJPEG's reservations where the GPU
 * may decode it (they are what create reserved when the decoder opened). */
#include "jpeg_fixture.h"
#include "loader_fixture.h"

#include "gpu/stage.h"
#include "pipeline/loader_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1234567 -> "1,234,567". */
static void grouped(uint64_t v, char out[32]) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v), o = 0;
  for (int i = 0; i < n; i++) {
    if (i && (n - i) % 3 == 0)
      out[o++] = ',';
    out[o++] = tmp[i];
  }
  out[o] = '\0';
}

/* The printed line of `item` shows `total` as its total. */
static bool row_total(const char *text, const char *where, const char *item,
                      uint64_t total) {
  char g[32], head[96];
  grouped(total, g);
  snprintf(head, sizeof head, "%-7s %-26s", where, item);
  const char *p = strstr(text, head);
  if (!p)
    return total == 0;
  size_t n = strcspn(p, "\n");
  char line[256];
  snprintf(line, sizeof line, "%.*s", (int)n, p);
  /* The total is the column after "bytes each": look for " <g> " past the
   * item's name, right-aligned in 17 characters. */
  char want[40];
  snprintf(want, sizeof want, "%17s  ", g);
  return strstr(line + strlen(head), want) != NULL;
}

static int checked, jpeg_opened;

static void compare(const gf_loader_config *cfg, bool gpu, const char *what) {
  gf_memory_plan p;
  gf_loader_sizes z;
  char text[4096];
  CHECK_OK(gf_loader_plan_get(cfg, &p, &z));
  CHECK(gf_loader_plan(cfg, text, sizeof text) > 0);
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(cfg, &l));
  if (!l)
    return;
  gf_loader_allocs a;
  gf_loader_allocated(l, &a);
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  int before = gf_test_failures;
  CHECK((st.device >= 0) == gpu);
  CHECK(a.slots == p.pinned_slots && st.slots == a.slots);
  CHECK(a.read_buffers == p.read_buffers && st.threads == a.read_buffers);
  uint64_t pinned = gpu ? a.stage_slots * a.stage_in_bytes : a.slot_bytes;
  CHECK(pinned == p.pinned_slots * p.pinned_slot_bytes);
  CHECK(a.slot_out_bytes == p.output_slots * p.output_slot_bytes);
  CHECK(a.slot_table_bytes == p.table_slots * p.table_slot_bytes);
  CHECK(a.read_buffer_bytes == p.read_buffers * p.read_buffer_bytes);
  /* The printed rows and the host total show the allocated bytes. */
  CHECK(row_total(text, "host", "pinned staging slots", pinned));
  CHECK(row_total(text, "host", "batch outputs", a.slot_out_bytes));
  CHECK(row_total(text, "host", "batch tables", a.slot_table_bytes));
  CHECK(row_total(text, "host", "read buffers", a.read_buffer_bytes));
  /* nvJPEG's reservations (a JPEG source, GPU mode): beside the pool,
   * what create reserved when the decoder opened; where it does not open
   * (no nvJPEG here) the plan still prints them and nothing is reserved. */
  uint64_t jdev = p.jpeg_gpu_mode ? p.jpeg_gpu_device_bytes : 0;
  uint64_t jpin = p.jpeg_gpu_mode ? p.jpeg_gpu_pinned_bytes : 0;
  /* The engines' own buffers: planned (not reserved by create), in the
   * device total. */
  uint64_t jeng = p.jpeg_gpu_mode ? p.jpeg_engine_bytes : 0;
  CHECK(jeng ==
        (p.jpeg_gpu_mode ? (uint64_t)p.jpeg_gpu_decoders * (32ull << 20) : 0));
  /* Files without a checksum under auto: the table of those checked. */
  uint64_t jchk = p.jpeg_gpu_mode ? p.jpeg_checked_bytes : 0;
  CHECK(gpu || !p.jpeg_gpu_mode);
  CHECK(row_total(text, "host", "JPEG files checked (CRC)", jchk));
  CHECK(row_total(text, "host", "nvJPEG pinned budget", jpin));
  CHECK(row_total(text, "device", "nvJPEG budget (own pool)", jdev));
  CHECK(row_total(text, "device", "JPEG engines (nvJPEG's)", jeng));
  if (st.jpeg_gpu_backend[0]) {
    CHECK(a.jpeg_gpu_device_bytes == jdev && a.jpeg_gpu_pinned_bytes == jpin);
    CHECK(a.jpeg_checked_bytes == jchk);
    CHECK(st.jpeg_gpu_device_budget == jdev &&
          st.jpeg_gpu_pinned_budget == jpin);
    jpeg_opened++;
  } else {
    CHECK(a.jpeg_gpu_device_bytes == 0 && a.jpeg_gpu_pinned_bytes == 0 &&
          a.jpeg_checked_bytes == 0);
    CHECK(st.jpeg_gpu_why[0] != '\0');
  }
  CHECK(row_total(text, "host", "total",
                  pinned + a.slot_out_bytes + a.slot_table_bytes +
                      a.read_buffer_bytes + cfg->cache_bytes + jpin + jchk));
  if (gpu) {
    uint64_t need = gf_memory_plan_device_need(&p);
    uint64_t pool = cfg->device_pool_bytes > need ? cfg->device_pool_bytes
                                                  : need;
    CHECK(st.device_pool_reserved == pool);
    CHECK(row_total(text, "device", "total", pool + jdev + jeng));
  } else {
    CHECK(strstr(text, "none (host mode)") != NULL);
  }
  if (gf_test_failures != before)
    printf("mismatch (%s):\n%s", what, text);
  checked++;
  gf_loader_destroy(l);
}

static void sweep(const fixture *f, int32_t device) {
  static const uint32_t batch[] = {1, 3, 16, 37};
  static const uint32_t threads[] = {0, 1, 3, 7};
  static const uint32_t prefetch[] = {0, 2, 5};
  bool gpu = device >= 0;
  for (int i = 0; i < 4 * 4 * 3; i++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    bool png = i % 5 == 3;
    cfg.source = png ? f->png_dir : f->ds_dir;
    cfg.device = device;
    cfg.batch_size = batch[i % 4];
    cfg.threads = threads[(i / 4) % 4];
    cfg.prefetch = prefetch[(i / 16) % 3];
    cfg.staging_slots = i % 7 == 2 ? 3 : 0;
    cfg.channels = i % 3 == 1 ? 3 : 0;
    cfg.io_direct = i % 4 == 2;
    cfg.cache_bytes = i % 6 == 1 ? 1u << 20 : 0;
    /* The images are of varied sizes (3-16 x 3-16, gray or RGB, the
     * largest not first): a folder is sized from every file's header, or
     * by a max_sample_bytes above its largest image (768 bytes). */
    cfg.max_sample_bytes = png ? (i % 2 ? 1024 : 0) : (i % 8 == 5 ? 1000 : 0);
    if (i % 2) {
      cfg.transform.out_dtype = GF_OUT_F16;
      cfg.transform.height = 8;
      cfg.transform.width = 8;
    } else if (i % 10 == 4) {
      cfg.transform.hflip = 1;
    }
    if (gpu && i % 9 == 4)
      cfg.device_pool_bytes = i % 2 ? 1000 : 64u << 20;
    char what[160];
    snprintf(what, sizeof what,
             "%s device %d batch %u threads %u prefetch %u slots %u "
             "direct %u cache %llu",
             png ? "png" : "ds", device, cfg.batch_size, cfg.threads,
             cfg.prefetch, cfg.staging_slots, cfg.io_direct,
             (unsigned long long)cfg.cache_bytes);
    compare(&cfg, gpu, what);
  }
}

/* A JPEG folder under transforms that let the GPU decode it (gpu_decode
 * auto and all), one that does not (the identity), and gpu_decode off. */
static void sweep_jpeg(const char *dir, int32_t device) {
  static const uint32_t batch[] = {1, 3, 16};
  for (int i = 0; i < 12; i++) {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = dir;
    cfg.device = device;
    cfg.batch_size = batch[i % 3];
    cfg.threads = 1 + i % 2;
    cfg.gpu_decode = (uint32_t)(i / 3) % 3; /* auto, off, all */
    cfg.channels = i % 2 ? 3 : 1;
    if (i != 5) {
      cfg.transform.out_dtype = GF_OUT_F16;
      cfg.transform.height = 8;
      cfg.transform.width = 8;
      cfg.transform.resize = GF_RESIZE_RANDOM_RESIZED_CROP;
    }
    if (device >= 0 && i % 4 == 1)
      cfg.device_pool_bytes = 64u << 20;
    char what[160];
    snprintf(what, sizeof what, "jpeg device %d batch %u gpu_decode %u",
             device, cfg.batch_size, cfg.gpu_decode);
    compare(&cfg, device >= 0, what);
  }
}

int main(void) {
  fixture f;
  CHECK_OK(fixture_make(&f, gf_test_tmpdir(), 40, 2, true, 4096, 0));
  if (gf_test_failures)
    return gf_test_finish();
  char jdir[4200], p[4400];
  snprintf(jdir, sizeof jdir, "%s/jpg", gf_test_tmpdir());
  snprintf(p, sizeof p, "%s/c0", jdir);
  CHECK_OK(jfix_mkdir(jdir));
  CHECK_OK(jfix_mkdir(p));
  for (uint32_t i = 0; i < 20; i++) {
    snprintf(p, sizeof p, "%s/c0/%02u.jpg", jdir, i);
    CHECK_OK(jfix_write_jpeg(p, 9 + i * 7, 30 - i, i % 3 ? 3 : 1, i, 85));
  }
  sweep(&f, GF_DEVICE_CPU);
  sweep_jpeg(jdir, GF_DEVICE_CPU);
  char why[256];
  if (gf_stage_probe(0, why, sizeof why)) {
    sweep(&f, 0);
    sweep_jpeg(jdir, 0);
    printf("nvJPEG opened in %d configurations\n", jpeg_opened);
  }
  else if (getenv("GPUFEED_REQUIRE_GPU") &&
           strcmp(getenv("GPUFEED_REQUIRE_GPU"), "1") == 0)
    CHECK(!"GPUFEED_REQUIRE_GPU=1 but GPU mode cannot be checked");
  else
    printf("GPU mode not checked: %s\n", why);
  printf("%d configurations compared\n", checked);
  fixture_free(&f);
  return gf_test_finish();
}
