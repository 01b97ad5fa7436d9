/* JPEG decoded on the GPU by nvJPEG inside the loader (gf_gpu_decode). Skips
 * with 77 without a GPU (GPUFEED_REQUIRE_GPU=1 makes that a failure) and
 * without nvJPEG (GPUFEED_REQUIRE_NVJPEG=1 makes that a failure), over a
 * folder of JPEGs written by the library's own encoder: odd sizes (7 to
 * 308 pixels a side), gray and RGB, 4:2:0, 4:2:2 and 4:4:4, progressive,
 * one arithmetic-coded (the CPU's), crops of the test photographs when
 * GPUFEED_TEST_DATA has them, and corrupt files: one cut short (no EOI)
 * and one with a broken Huffman table, which the worker's header check
 * keeps on the CPU:
 * - with gpu_decode all and the skip policy, every valid sample is
 *   delivered exactly once an epoch and the corrupt ones never, each batch
 *   the same samples as the same batch of a second loader that decodes on
 *   the CPU (gpu_decode off; DCT scaling off in both, so both decode at
 *   full scale), its output within the tolerance: per output pixel (u8) at
 *   most TOL_MAX apart, the mean difference at most TOL_MEAN (nvJPEG is
 *   within 3 of libjpeg before the resize, whose weights sum to 1: 3, +1
 *   for the rounding of the resampled value), for 3 channels with
 *   RandomResizedCrop and without a resize (a centred crop), and for 1
 *   channel (luma: nvJPEG's Y against the CPU's weighted sum of its R, G,
 *   B: TOL_MAX_LUMA);
 * - nvJPEG decoded samples (stats), and an image it refuses (an injected
 *   refusal: GF_FAULT_NVJPEG_IMAGE) is decoded again on the CPU and
 *   delivered;
 * - every image refused (the fault made sticky), with a file cut short and
 *   closed with an EOI added (which the header check passes to the GPU):
 *   the outputs equal the CPU loader's bit for bit, and that file, decoded
 *   again on the CPU, is skipped as there (the CPU decoder's verdict);
 * - under the fail policy each corrupt file fails next() naming the file;
 * - the loader's device pool's peak stays within its reservation (the
 *   same as the CPU loader's), nvJPEG's peaks within its budgets;
 * - gpu_decode off decodes nothing on the GPU and says why in the stats;
 *   GPUFEED_NVJPEG=off in the environment, which once turned nvJPEG off
 *   for every loader, changes nothing (only the config decides).
 * Before it looks for a device: gpu_decode's checks, and the plan's nvJPEG
 * rows (from the config alone) for each gpu_decode, channels 4, the
 * identity transform and host mode. What nvJPEG makes
 * of the file cut short and closed (damage inside the entropy-coded data,
 * which the JPEG engines may decode without a word) is printed, not
 * checked: gpufeed.h says so (gf_gpu_decode). */
#include "common/fault.h"
#include "cuda_testutil.h"
#include "decode/decode.h"
#include "gpu/stage.h"
#include "jpeg_fixture.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOL_MAX 4
#define TOL_MAX_LUMA 4
#define TOL_MEAN 0.5

enum { K_420, K_444, K_422, K_PROG, K_ARITH };

static char root[4200];
static uint64_t n_files;
static const char *const bad_cut = "c01/zz_cut.jpg";
static const char *const bad_huff = "c00/zz_huffman.jpg";
static const char *const bad_eoi = "c00/zz_cut_eoi.jpg"; /* added later */

/* An h x w x c JPEG of the test pattern, encoded as `kind`. */
static int write_kind(const char *path, uint32_t h, uint32_t w, uint32_t c,
                      int kind, uint64_t seed, uint8_t **file, size_t *flen) {
  uint8_t *px = malloc((size_t)h * w * c);
  if (!px)
    return -ENOMEM;
  gf_test_fill_image(px, h, w, c, seed);
  gf_shape s = {h, w, c, GF_DTYPE_U8};
  gf_jpeg_enc_opts eo = {GF_JPEG_420, false, false, 0};
  eo.subsampling = kind == K_444 ? GF_JPEG_444
                   : kind == K_422 ? GF_JPEG_422
                                   : GF_JPEG_420;
  eo.progressive = kind == K_PROG;
  eo.arithmetic = kind == K_ARITH;
  void *jpg;
  size_t len;
  int rc = gf_jpeg_encode_ex(px, &s, 90, &eo, &jpg, &len);
  free(px);
  if (rc < 0)
    return rc;
  rc = gf_test_write_file(path, jpg, len);
  if (file) {
    *file = jpg;
    *flen = len;
  } else {
    free(jpg);
  }
  return rc;
}

/* The folder: root/c00, root/c01. */
static void make_folder(const char *dir) {
  snprintf(root, sizeof root, "%s/jpg", dir);
  CHECK_OK(jfix_mkdir(root));
  char p[4400];
  for (int k = 0; k < 2; k++) {
    snprintf(p, sizeof p, "%s/c%02d", root, k);
    CHECK_OK(jfix_mkdir(p));
  }
  uint32_t made = 0;
  for (uint32_t i = 0; i < 44; i++) {
    uint32_t h = 9 + (i * 37) % 300, w = 7 + (i * 53) % 280;
    uint32_t c = i % 4 == 1 ? 1 : 3;
    int kind = i == 7 ? K_ARITH
               : i % 9 == 4 ? K_PROG
                            : (int)(i % 3); /* 420, 444, 422 */
    snprintf(p, sizeof p, "%s/c%02u/s%03u.jpg", root, i % 2, i);
    CHECK_OK(write_kind(p, h, w, c, kind, 1000 + i, NULL, NULL));
    made++;
  }
  /* Crops of the photographs, when the test data has them. */
  made += (uint32_t)jfix_photo_folder(root, 16, 2, 90, 260, 3);
  /* Corrupt: cut short (no EOI), and a Huffman table whose code counts
   * overflow: both kept on the CPU by the worker's checks. */
  uint8_t *f;
  size_t len;
  snprintf(p, sizeof p, "%s/%s", root, bad_cut);
  CHECK_OK(write_kind(p, 120, 90, 3, K_420, 7, &f, &len));
  CHECK_OK(gf_test_write_file(p, f, len * 6 / 10));
  free(f);
  snprintf(p, sizeof p, "%s/%s", root, bad_huff);
  CHECK_OK(write_kind(p, 100, 140, 3, K_420, 8, &f, &len));
  bool broke = false;
  for (size_t k = 2; k + 21 < len && !broke; k++)
    if (f[k] == 0xFF && f[k + 1] == 0xC4) { /* DHT: its 16 counts */
      memset(f + k + 5, 0xFF, 16);
      broke = true;
    }
  CHECK(broke);
  CHECK_OK(gf_test_write_file(p, f, len));
  free(f);
  n_files = made + 2;
  printf("folder: %u valid JPEGs, 2 corrupt\n", made);
}

static gf_loader_config config(uint32_t gpu_decode, uint32_t channels,
                               uint32_t resize) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = root;
  cfg.batch_size = 8;
  cfg.threads = 2;
  cfg.seed = 5;
  cfg.device = 0;
  cfg.channels = channels;
  cfg.error_policy = GF_ON_ERROR_SKIP;
  cfg.jpeg_scale = GF_JPEG_SCALE_OFF;
  cfg.gpu_decode = gpu_decode;
  /* Two decoders (the default is one): slots finalised at once by the two
   * workers decode at once, each on its decoder's stream. */
  cfg.gpu_decoders = 2;
  cfg.transform.out_dtype = GF_OUT_U8;
  cfg.transform.layout = GF_LAYOUT_NHWC;
  cfg.transform.height = 40;
  cfg.transform.width = 48;
  cfg.transform.resize = resize;
  cfg.transform.hflip = resize == GF_RESIZE_RANDOM_RESIZED_CROP;
  cfg.transform.seed = 11;
  return cfg;
}

static gf_loader_stats stats_of(gf_loader *l) {
  gf_loader_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  CHECK_OK(gf_loader_stats_get(l, &st));
  return st;
}

/* Whether sample idx is one of the corrupt files. */
static bool corrupt(gf_loader *l, uint64_t idx) {
  char name[4200];
  if (gf_loader_sample_path(l, idx, name, sizeof name) < 0)
    return false;
  return strcmp(name, bad_cut) == 0 || strcmp(name, bad_huff) == 0 ||
         strcmp(name, bad_eoi) == 0;
}

/* The file cut short at 60% and closed with an EOI: whole-looking to the
 * worker's checks, damaged inside its entropy-coded data. */
static void add_cut_eoi(void) {
  char p[4400];
  snprintf(p, sizeof p, "%s/%s", root, bad_eoi);
  uint8_t *f;
  size_t len;
  CHECK_OK(write_kind(p, 140, 110, 3, K_420, 9, &f, &len));
  size_t cut = len * 6 / 10;
  f[cut] = 0xFF;
  f[cut + 1] = 0xD9;
  CHECK_OK(gf_test_write_file(p, f, cut + 2));
  free(f);
  n_files++;
}

enum { INJECT_NONE, INJECT_ONE, INJECT_ALL };

/* Two epochs of a GPU-decoding loader (gpu_decode mode) against a
 * CPU-decoding one; returns the GPU loader's stats. */
static gf_loader_stats compare_as(uint32_t mode, uint32_t channels,
                                  uint32_t resize, int inject, uint64_t bad) {
  gf_loader_config ca = config(mode, channels, resize);
  gf_loader_config cb = config(GF_GPU_DECODE_OFF, channels, resize);
  gf_loader *a = NULL, *b = NULL;
  /* The 5th image nvJPEG inspects refused, or every one. */
  if (inject == INJECT_ONE)
    CHECK_OK(gf_fault_arm(GF_FAULT_NVJPEG_IMAGE, 5, GF_EUNSUPPORTED, 0));
  if (inject == INJECT_ALL)
    CHECK_OK(gf_fault_arm(GF_FAULT_NVJPEG_IMAGE, 1, GF_EUNSUPPORTED,
                          GF_FAULT_STICKY));
  uint32_t tol = inject == INJECT_ALL ? 0 : channels == 1 ? TOL_MAX_LUMA
                                                          : TOL_MAX;
  CHECK_OK(gf_loader_create(&ca, &a));
  CHECK_OK(gf_loader_create(&cb, &b));
  gf_loader_stats st;
  memset(&st, 0, sizeof st);
  if (!a || !b) {
    gf_loader_destroy(a);
    gf_loader_destroy(b);
    return st;
  }
  st = stats_of(a);
  if (!st.jpeg_gpu_backend[0]) {
    const char *req = getenv("GPUFEED_REQUIRE_NVJPEG");
    bool missing = strstr(st.jpeg_gpu_why, "cannot load") != NULL;
    if (missing && !(req && strcmp(req, "1") == 0)) {
      gf_loader_destroy(a);
      gf_loader_destroy(b);
      gf_test_skip(false, "%s", st.jpeg_gpu_why);
    }
    printf("no GPU decoder: %s\n", st.jpeg_gpu_why);
    CHECK(!"gpu_decode all or auto opened no decoder");
  }
  uint8_t *seen = calloc(n_files, 1);
  uint64_t pixels = 0, sum = 0, host_null = 0, batches = 0;
  uint32_t worst = 0;
  for (int e = 0; e < 2; e++) {
    memset(seen, 0, n_files);
    gf_batch *x, *y;
    for (;;) {
      int ra = gf_loader_next(a, &x);
      int rb = gf_loader_next(b, &y);
      CHECK(ra == rb);
      if (ra == GF_EEPOCHEND || ra != rb || ra < 0) {
        if (ra < 0 && ra != GF_EEPOCHEND)
          CHECK_OK(ra);
        if (ra == 0)
          gf_loader_release(a, x);
        if (rb == 0)
          gf_loader_release(b, y);
        break;
      }
      batches++;
      host_null += x->data == NULL;
      CHECK(x->count == y->count && x->epoch == y->epoch &&
            x->index == y->index && x->on_device && y->on_device);
      CHECK(x->output_bytes == y->output_bytes);
      CHECK(x->out_channels == (channels ? channels : 3));
      uint64_t n = x->output_bytes < y->output_bytes ? x->output_bytes
                                                     : y->output_bytes;
      uint8_t *ga = malloc(n ? n : 1), *gb = malloc(n ? n : 1);
      CUDA_CHECK(cudaMemcpy(ga, x->output, n, cudaMemcpyDeviceToHost));
      CUDA_CHECK(cudaMemcpy(gb, y->output, n, cudaMemcpyDeviceToHost));
      uint64_t per = n / (x->count ? x->count : 1);
      for (uint32_t j = 0; j < x->count && j < y->count; j++) {
        uint64_t idx = x->indices[j];
        CHECK(idx == y->indices[j] && x->labels[j] == y->labels[j]);
        CHECK(idx < n_files && !corrupt(a, idx));
        if (idx < n_files) {
          if (seen[idx])
            printf("epoch %d: sample %llu delivered twice\n", e,
                   (unsigned long long)idx);
          CHECK(!seen[idx]);
          seen[idx] = 1;
        }
        uint32_t m = 0;
        uint64_t s = 0;
        for (uint64_t k = j * per; k < (j + 1) * per; k++) {
          uint32_t d = ga[k] > gb[k] ? ga[k] - gb[k] : gb[k] - ga[k];
          m = d > m ? d : m;
          s += d;
        }
        if (m > tol) {
          char name[4200] = "?";
          gf_loader_sample_path(a, idx, name, sizeof name);
          printf("sample %llu (%s): max difference %u\n",
                 (unsigned long long)idx, name, m);
        }
        worst = m > worst ? m : worst;
        sum += s;
        pixels += per;
      }
      free(ga);
      free(gb);
      gf_loader_release(a, x);
      gf_loader_release(b, y);
    }
    for (uint64_t i = 0; i < n_files; i++)
      if (!corrupt(a, i) && !seen[i]) {
        printf("epoch %d: sample %llu never delivered\n", e,
               (unsigned long long)i);
        gf_test_failures++;
      }
  }
  free(seen);
  double mean = pixels ? (double)sum / (double)pixels : 0;
  st = stats_of(a);
  gf_loader_stats sb = stats_of(b);
  printf("channels %u, resize %u, refusals injected %d: %llu batches, "
         "%llu with data NULL; output max difference %u, mean %.4f "
         "(tolerance %u, %.2f); GPU decoded %llu, CPU %llu, refused %llu "
         "(%s backend); CPU loader: CPU %llu; skipped %llu / %llu\n",
         channels, resize, inject, (unsigned long long)batches,
         (unsigned long long)host_null, worst, mean, tol,
         inject == INJECT_ALL ? 0.0 : TOL_MEAN,
         (unsigned long long)st.jpeg_gpu_decoded,
         (unsigned long long)st.jpeg_cpu_decoded,
         (unsigned long long)st.jpeg_gpu_refused, st.jpeg_gpu_backend,
         (unsigned long long)sb.jpeg_cpu_decoded,
         (unsigned long long)st.skipped, (unsigned long long)sb.skipped);
  CHECK(worst <= tol && mean <= (inject == INJECT_ALL ? 0.0 : TOL_MEAN));
  /* Two epochs: each skips the corrupt files, as the CPU loader does. */
  CHECK(st.skipped == 2 * bad && sb.skipped == 2 * bad);
  CHECK(sb.jpeg_gpu_decoded == 0 && sb.jpeg_gpu_backend[0] == '\0' &&
        strstr(sb.jpeg_gpu_why, "gpu_decode off") != NULL);
  if (inject == INJECT_ALL) {
    CHECK(st.jpeg_gpu_decoded == 0 && host_null == 0);
    /* Refused: every image that passed nvJPEG's own checks (fired), and
     * those it does not take. */
    uint64_t fired = gf_fault_fired(GF_FAULT_NVJPEG_IMAGE);
    /* Read after the fault count: the loader goes on filling its slots
     * with the next epoch, and a refusal that fired inside a decode call
     * is counted when that call returns (at most 5 s to catch up). */
    gf_loader_stats sr = stats_of(a);
    for (int w = 0; w < 5000 && sr.jpeg_gpu_refused < fired; w++) {
      usleep(1000);
      sr = stats_of(a);
    }
    CHECK(fired > 0 && fired <= sr.jpeg_gpu_refused);
  } else {
    CHECK(st.jpeg_gpu_decoded > 0 && host_null > 0);
  }
  if (inject == INJECT_ONE)
    CHECK(gf_fault_fired(GF_FAULT_NVJPEG_IMAGE) == 1 &&
          st.jpeg_gpu_refused >= 1);
  /* Under auto the folder's files were judged by a CPU decode read whole
   * before the engines took them, once each: the damaged ones failed
   * (each epoch: a failure is not remembered), the others were known by
   * their CRC32C in the second epoch (the loader may have run ahead into
   * a third). */
  printf("checked %llu, failed %llu (%llu files)\n",
         (unsigned long long)st.jpeg_checked,
         (unsigned long long)st.jpeg_check_failed, (unsigned long long)n_files);
  if (mode == GF_GPU_DECODE_AUTO)
    CHECK(st.jpeg_checked > 0 && st.jpeg_checked < 2 * n_files &&
          st.jpeg_check_failed >= 2);
  else
    CHECK(st.jpeg_checked == 0 && st.jpeg_check_failed == 0);
  gf_fault_disarm(GF_FAULT_NVJPEG_IMAGE);
  /* Memory: the pool within its reservation, nvJPEG within its budgets. */
  printf("device pool peak %llu of %llu; nvJPEG device peak %llu of %llu, "
         "pinned peak %llu of %llu\n",
         (unsigned long long)st.device_pool_peak,
         (unsigned long long)st.device_pool_reserved,
         (unsigned long long)st.jpeg_gpu_device_peak,
         (unsigned long long)st.jpeg_gpu_device_budget,
         (unsigned long long)st.jpeg_gpu_pinned_peak,
         (unsigned long long)st.jpeg_gpu_pinned_budget);
  CHECK(st.device_pool_peak <= st.device_pool_reserved);
  CHECK(st.device_pool_reserved == sb.device_pool_reserved);
  CHECK(st.jpeg_gpu_device_peak <= st.jpeg_gpu_device_budget &&
        st.jpeg_gpu_pinned_peak <= st.jpeg_gpu_pinned_budget &&
        st.jpeg_gpu_device_budget > 0);
  gf_loader_destroy(a);
  gf_loader_destroy(b);
  return st;
}

static gf_loader_stats compare(uint32_t channels, uint32_t resize, int inject,
                               uint64_t bad) {
  return compare_as(GF_GPU_DECODE_ALL, channels, resize, inject, bad);
}

/* Under the fail policy each corrupt file fails the next() of its batch,
 * named, and the epoch goes on past it (in listing order the two are in
 * different batches: the last of c00 and the last of c01). */
static void fails_named(void) {
  gf_loader_config cfg = config(GF_GPU_DECODE_ALL, 3,
                                GF_RESIZE_SHORTER_CENTER_CROP);
  cfg.error_policy = GF_ON_ERROR_FAIL;
  cfg.order = GF_ORDER_SEQUENTIAL;
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!l)
    return;
  bool cut = false, huff = false;
  int errors = 0;
  gf_batch *b;
  for (int i = 0; i < 1000; i++) {
    int rc = gf_loader_next(l, &b);
    if (rc == GF_EEPOCHEND)
      break;
    if (rc == 0) {
      gf_loader_release(l, b);
      continue;
    }
    const char *m = gf_last_error()->message;
    printf("fail policy: %s: %s\n", gf_err_name(rc), m);
    errors++;
    CHECK(rc == GF_EDECODE);
    cut = cut || strstr(m, strrchr(bad_cut, '/') + 1) != NULL;
    huff = huff || strstr(m, strrchr(bad_huff, '/') + 1) != NULL;
  }
  CHECK(errors == 2 && cut && huff);
  gf_loader_destroy(l);
}

/* The bytes-total column of the plan's row `item` under `where` (the
 * fixed columns of the table: item, count, bytes each, bytes total);
 * UINT64_MAX when there is no such row. */
static uint64_t row_bytes(const char *plan, const char *where,
                          const char *item) {
  char head[64];
  snprintf(head, sizeof head, "%-7s %-26s", where, item);
  const char *r = strstr(plan, head);
  if (!r)
    return UINT64_MAX;
  uint64_t v = 0;
  for (const char *c = r + strlen(head) + 1 + 6 + 1 + 15 + 1;
       *c && *c != '\n' && c < r + strlen(head) + 1 + 6 + 1 + 15 + 1 + 17; c++)
    if (*c >= '0' && *c <= '9')
      v = v * 10 + (uint64_t)(*c - '0');
  return v;
}

/* The printed plan's nvJPEG rows hold these totals (0: no row); with
 * them, the JPEG engines' own buffers, 32 MiB a decoder, in the device
 * total beside the pool. */
static void plan_rows(const gf_loader_config *cfg, uint64_t dev,
                      uint64_t pin) {
  char plan[8192], want[64];
  CHECK(gf_loader_plan(cfg, plan, sizeof plan) > 0);
  const char *d = strstr(plan, "nvJPEG budget (own pool)");
  const char *p = strstr(plan, "nvJPEG pinned budget");
  CHECK((d != NULL) == (dev != 0) && (p != NULL) == (pin != 0));
  uint64_t k = cfg->gpu_decoders ? cfg->gpu_decoders : GF_GPU_DECODERS_DEFAULT;
  uint64_t eng = dev ? k * (32ull << 20) : 0;
  uint64_t e = row_bytes(plan, "device", "JPEG engines (nvJPEG's)");
  CHECK(dev ? e == eng : e == UINT64_MAX);
  uint64_t pool = row_bytes(plan, "device", "pool reservation (= slots)");
  if (pool == UINT64_MAX)
    pool = row_bytes(plan, "device", "pool reservation");
  /* (No device rows in host mode.) */
  CHECK(pool != UINT64_MAX || !dev);
  if (pool != UINT64_MAX)
    CHECK(row_bytes(plan, "device", "total") == pool + dev + eng);
  if (d && dev) {
    snprintf(want, sizeof want, " %.1f MiB", (double)dev / 1048576.0);
    CHECK(strstr(d, want) && strstr(d, want) < strchr(d, '\n'));
  }
  if (p && pin) {
    snprintf(want, sizeof want, " %.1f MiB", (double)pin / 1048576.0);
    CHECK(strstr(p, want) && strstr(p, want) < strchr(p, '\n'));
  }
}

/* What needs no device: the config's checks, the plan's rows (from the
 * config alone), host mode's reason. */
static void host_checks(void) {
  gf_loader_config cfg = config(GF_GPU_DECODE_ALL, 3,
                                GF_RESIZE_RANDOM_RESIZED_CROP);
  gf_loader *l = NULL;
  cfg.gpu_decode = 3;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "gpu_decode") != NULL);
  cfg.gpu_decode = GF_GPU_DECODE_ALL;
  cfg.gpu_decode_percent = 101;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "gpu_decode_percent") != NULL);
  cfg.gpu_decode_percent = 50;
  /* All: the GPU hybrid backend's default budgets (64 MiB + 4 MiB a
   * sample of a batch, 64 MiB pinned); auto: the JPEG engines' 16 MiB
   * each, and for a folder (its files not known good: the engines would
   * not see damage inside the image data) the table of files checked
   * once, 8 bytes a file. */
  uint64_t k = cfg.gpu_decoders;
  plan_rows(&cfg, k * ((64u << 20) + 8 * (4u << 20)), k * (64u << 20));
  /* Each decoder its own reservations. */
  cfg.gpu_decoders = 3;
  plan_rows(&cfg, 3 * ((64u << 20) + 8 * (4u << 20)), 3 * (64u << 20));
  cfg.gpu_decoders = 0; /* the default, one */
  plan_rows(&cfg, GF_GPU_DECODERS_DEFAULT * ((64u << 20) + 8 * (4u << 20)),
            GF_GPU_DECODERS_DEFAULT * (64u << 20));
  cfg.gpu_decoders = GF_GPU_DECODERS_MAX + 1;
  CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
  CHECK(strstr(gf_last_error()->message, "gpu_decoders") != NULL);
  cfg.gpu_decoders = 2;
  cfg.gpu_decode = GF_GPU_DECODE_AUTO;
  plan_rows(&cfg, 2 * (16u << 20), 2 * (16u << 20));
  {
    char plan[8192], want[64];
    CHECK(gf_loader_plan(&cfg, plan, sizeof plan) > 0);
    const char *r = strstr(plan, "JPEG files checked (CRC)");
    snprintf(want, sizeof want, " %llu ", (unsigned long long)n_files);
    CHECK(r && strstr(r, want) && strstr(r, want) < strchr(r, '\n'));
    if (!r)
      printf("%s", plan);
    cfg.gpu_decode = GF_GPU_DECODE_ALL;
    CHECK(gf_loader_plan(&cfg, plan, sizeof plan) > 0);
    CHECK(!strstr(plan, "JPEG files checked"));
    cfg.gpu_decode = GF_GPU_DECODE_AUTO;
  }
  cfg.gpu_decode = GF_GPU_DECODE_OFF;
  plan_rows(&cfg, 0, 0);
  cfg.gpu_decode = GF_GPU_DECODE_AUTO;
  cfg.channels = 4;
  plan_rows(&cfg, 0, 0);
  cfg.channels = 3;
  cfg.device = GF_DEVICE_CPU;
  plan_rows(&cfg, 0, 0);
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (l) {
    gf_loader_stats st = stats_of(l);
    CHECK(st.jpeg_gpu_backend[0] == '\0' &&
          strstr(st.jpeg_gpu_why, "host mode") != NULL);
    gf_loader_destroy(l);
  }
  cfg.device = 0;
  memset(&cfg.transform, 0, sizeof cfg.transform); /* the identity */
  plan_rows(&cfg, 0, 0);
}

/* What nvJPEG makes of the file cut short and closed with an EOI, left to
 * it: printed (skipped when nvJPEG reports it, delivered when the JPEG
 * engines decode it without a word). */
static void probe_cut_eoi(void) {
  gf_loader_config cfg = config(GF_GPU_DECODE_ALL, 3,
                                GF_RESIZE_RANDOM_RESIZED_CROP);
  gf_loader *l = NULL;
  CHECK_OK(gf_loader_create(&cfg, &l));
  if (!l)
    return;
  bool delivered = false;
  gf_batch *b;
  int rc;
  while ((rc = gf_loader_next(l, &b)) == 0) {
    for (uint32_t j = 0; j < b->count; j++) {
      char name[4200];
      delivered = delivered ||
                  (gf_loader_sample_path(l, b->indices[j], name,
                                         sizeof name) >= 0 &&
                   strcmp(name, bad_eoi) == 0);
    }
    gf_loader_release(l, b);
  }
  CHECK(rc == GF_EEPOCHEND);
  gf_loader_stats st = stats_of(l);
  printf("%s left to nvJPEG (%s backend): %s; skipped %llu (last: %s)\n",
         bad_eoi, st.jpeg_gpu_backend,
         delivered ? "delivered (decoded without an error)" : "skipped",
         (unsigned long long)st.skipped, st.last_skip_reason);
  gf_loader_destroy(l);
}

int main(void) {
  make_folder(gf_test_tmpdir());
  if (gf_test_failures)
    return gf_test_finish();
  host_checks();
  if (gf_test_failures)
    return gf_test_finish();
  char why[256];
  if (!gf_stage_probe(0, why, sizeof why))
    gf_test_skip(true, "%s", why);
  gf_loader_config cfg = config(GF_GPU_DECODE_ALL, 3,
                                GF_RESIZE_RANDOM_RESIZED_CROP);

  compare(3, GF_RESIZE_RANDOM_RESIZED_CROP, INJECT_ONE, 2);
  compare(1, GF_RESIZE_SHORTER_CENTER_CROP, INJECT_NONE, 2);
  compare(3, GF_RESIZE_NONE, INJECT_NONE, 2); /* a centred crop, padded */
  fails_named();
  add_cut_eoi();
  compare(3, GF_RESIZE_RANDOM_RESIZED_CROP, INJECT_ALL, 3);
  /* Under auto the folder goes to the engines too, each file judged once
   * by a CPU decode read whole first: the file cut and closed with an
   * EOI, which the engines decode without a word (probe_cut_eoi), is
   * never delivered. */
  compare_as(GF_GPU_DECODE_AUTO, 3, GF_RESIZE_RANDOM_RESIZED_CROP, INJECT_NONE,
             3);
  probe_cut_eoi();

  /* Turned off by the config: nothing on the GPU, and why. The
   * environment has no say: GPUFEED_NVJPEG=off, once read, is ignored. */
  setenv("GPUFEED_NVJPEG", "off", 1);
  for (int off = 1; off >= 0; off--) {
    cfg.gpu_decode = off ? GF_GPU_DECODE_OFF : GF_GPU_DECODE_ALL;
    gf_loader *l = NULL;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (!l)
      continue;
    gf_loader_stats st = stats_of(l);
    if (off)
      CHECK(st.jpeg_gpu_backend[0] == '\0' &&
            strstr(st.jpeg_gpu_why, "gpu_decode off") != NULL);
    else
      CHECK(st.jpeg_gpu_backend[0] != '\0');
    gf_batch *b;
    CHECK_OK(gf_loader_next(l, &b));
    if (b) {
      CHECK(!off || b->data != NULL);
      gf_loader_release(l, b);
    }
    st = stats_of(l);
    if (off)
      CHECK(st.jpeg_gpu_decoded == 0 && st.jpeg_cpu_decoded > 0);
    else
      CHECK(st.jpeg_gpu_decoded > 0);
    gf_loader_destroy(l);
  }
  unsetenv("GPUFEED_NVJPEG");
  return gf_test_finish();
}
