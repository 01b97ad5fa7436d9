/* The loader in GPU mode (skips with 77 without a GPU; GPUFEED_REQUIRE_GPU=1
 * makes that a failure):
 * - every batch's device output equals the CPU reference of the transform
 *   (f32 NCHW with random crop, padding, flip and normalisation; gradzstd
 *   samples unfiltered on the GPU inside the transform), bit for bit, and
 *   every epoch delivers each sample exactly once: from a PNG folder, from
 *   a dataset with a cache that is pinned and gathered from directly (in
 *   both gather methods, engine and kernel), with the cache kept pageable
 *   (GF_CACHE_DIRECT_OFF), and with every pin of the cache failing
 *   (injected: those samples take the copying path);
 * - the same with resize transforms (RandomResizedCrop + flip, Resize +
 *   CenterCrop) on ragged samples, gradzstd ones unfiltered on the CPU;
 * - every batch's device labels (gf_batch.labels_device), read back, equal
 *   its host labels: for batches gathered from the pinned cache and for
 *   batches copied through the staging slot;
 * - a batch released on a stream while a long kernel still reads it is not
 *   overwritten by later batches (a delay kernel proves it), on a stream
 *   of the test's and on the legacy default stream (the release event
 *   recorded by the loader's worker);
 * - a batch released on two streams (gf_loader_release_streams), either
 *   one held up by a long kernel, is not overwritten until both are done;
 * - batches released before their staging copy ran (the copy stream held
 *   up) keep their own pixels: the workers refilling the staging memory
 *   wait for the copy;
 * - 100 create/destroy cycles return cudaMemGetInfo to its baseline;
 * - device memory in use never exceeds the configured pool. */
#include "loader_fixture.h"

#include "common/fault.h"
#include "cuda_testutil.h"
#include "gpu/cudautil.h"
#include "gpu/stage.h"
#include "gpu_delay.h"
#include "gpu_testutil.h"
#include "xform/transform.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>


/* The config of the stream-ordering cases (2, 2b, 2c): the fixture's
 * dataset on device 0, batches of 8, 4 workers, `prefetch` slots. */
static gf_loader_config stream_cfg(const fixture *f, const gf_transform *t,
                                   uint32_t prefetch) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f->ds_dir;
  cfg.channels = 3;
  cfg.batch_size = 8;
  cfg.threads = 4;
  cfg.device = 0;
  cfg.prefetch = prefetch;
  cfg.transform = *t;
  return cfg;
}

/* The expected output of batch b under t, from the fixture's reference
 * pixels (libpng's, decoded independently of the loader). */
static void *expected(const fixture *f, const gf_transform *t,
                      const gf_batch *b, uint64_t *bytes) {
  uint64_t src_len = 0;
  for (uint32_t j = 0; j < b->count; j++)
    src_len += gf_shape_bytes(&f->ref_shape[b->indices[j]]);
  uint8_t *src = malloc(src_len);
  gf_xform_sample *ps = calloc(b->count, sizeof *ps);
  uint64_t off = 0;
  for (uint32_t j = 0; j < b->count; j++) {
    const gf_shape *s = &f->ref_shape[b->indices[j]];
    memcpy(src + off, f->ref[b->indices[j]], gf_shape_bytes(s));
    gf_xform_sample_init(t, b->epoch, b->indices[j], off, s, b->out_height,
                         b->out_width, 0, &ps[j]);
    off += gf_shape_bytes(s);
  }
  gf_xform_out_bytes(b->count, b->out_height, b->out_width, b->out_channels,
                     t->out_dtype, bytes);
  void *out = malloc(*bytes);
  CHECK_OK(gf_xform_ref(t, src, src_len, ps, b->count, b->out_height,
                        b->out_width, b->out_channels, out));
  free(src);
  free(ps);
  return out;
}

static int check_output(const fixture *f, const gf_transform *t,
                        const gf_batch *b) {
  uint64_t n;
  void *want = expected(f, t, b, &n);
  void *got = malloc(n);
  CHECK(b->on_device == 1);
  CHECK(b->output_bytes == n);
  CUDA_CHECK(cudaMemcpy(got, b->output, n, cudaMemcpyDeviceToHost));
  int bad = memcmp(got, want, n) != 0;
  if (bad)
    fprintf(stderr, "epoch %llu batch %llu: device output differs from the "
            "CPU reference\n", (unsigned long long)b->epoch,
            (unsigned long long)b->index);
  free(want);
  free(got);
  /* The device labels: the host labels, which are the fixture's. */
  int64_t *labels = calloc(b->count, sizeof *labels);
  int lbad = b->labels_device == NULL;
  if (!lbad) {
    CUDA_CHECK(cudaMemcpy(labels, b->labels_device,
                          b->count * sizeof *labels, cudaMemcpyDeviceToHost));
    lbad = memcmp(labels, b->labels, b->count * sizeof *labels) != 0;
  }
  for (uint32_t j = 0; j < b->count && !lbad; j++)
    lbad = labels[j] != f->ref_label[b->indices[j]];
  if (lbad)
    fprintf(stderr, "epoch %llu batch %llu (%u from the pinned cache): "
            "device labels %s\n", (unsigned long long)b->epoch,
            (unsigned long long)b->index, b->direct_count,
            b->labels_device ? "differ from the labels" : "missing");
  free(labels);
  return bad + lbad;
}

int main(void) {
  char why[256];
  if (!gf_stage_probe(0, why, sizeof why))
    gf_test_skip(true, "%s", why);
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, 90, 3, true, 4096, 3));
  /* The same images as loco records (the RGB ones decoded on the GPU, the
   * gray ones converted on the CPU and copied). */
  char loco_ds[4200];
  snprintf(loco_ds, sizeof loco_ds, "%s/loco", dir);
  CHECK_OK(fixture_build_dataset(f.png_dir, loco_ds, GF_CODEC_LOCO, 4096));
  if (gf_test_failures)
    return gf_test_finish();

  gf_transform t;
  memset(&t, 0, sizeof t);
  t.out_dtype = GF_OUT_F32;
  t.layout = GF_LAYOUT_NCHW;
  t.height = 12;
  t.width = 10;
  t.random_crop = 1;
  t.pad = 2;
  t.hflip = 1;
  t.seed = 77;
  float mean[3] = {123.7f, 116.3f, 103.5f}, sd[3] = {58.4f, 57.1f, 57.4f};
  memcpy(t.mean, mean, sizeof mean);
  memcpy(t.std, sd, sizeof sd);

  /* 1. Outputs equal the reference; exactly once; the fused unfilter ran.
   * mode 0: dataset, cache gathered by the copy engines; 1: the same with
   * the gather kernel; 2: cache not pinned; 3: pinning fails; 4: PNG
   * folder, no cache; 5: the loco dataset, its records gathered from the
   * pinned cache into the loco block; 6: the loco dataset, no cache. */
  for (int mode = 0; mode < 7; mode++) {
    int src = mode == 4;
    bool loco = mode >= 5;
    setenv("GPUFEED_DIRECT_COPY", mode == 1 ? "kernel" : "engine", 1);
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = loco ? loco_ds : src ? f.png_dir : f.ds_dir;
    cfg.cache_direct = mode == 2 ? GF_CACHE_DIRECT_OFF : GF_CACHE_DIRECT_AUTO;
    /* Every registration of the cache's chunks fails (the staging slots
     * are pinned through their own site, cuda_stage_register). */
    if (mode == 3)
      CHECK_OK(gf_fault_arm(GF_FAULT_CUDA_HOST_REGISTER, 1,
                            GF_EDEVOOM, GF_FAULT_STICKY));
    cfg.channels = 3;
    cfg.max_sample_bytes = 16 * 16 * 3;
    cfg.batch_size = 16;
    cfg.threads = 4;
    cfg.device = 0;
    cfg.transform = t;
    cfg.cache_bytes = src || mode == 6 ? 0 : 1 << 20;
    cfg.prefetch = 2;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (gf_test_failures)
      return gf_test_finish();
    uint64_t filtered = 0, direct = 0, null_data = 0, copied_batches = 0;
    uint64_t gpu_loco = 0;
    for (int e = 0; e < 3; e++) {
      uint32_t *cnt = calloc(f.n, sizeof *cnt);
      gf_batch *b;
      int rc;
      while ((rc = gf_loader_next(l, &b)) == 0) {
        gf_test_failures += check_output(&f, &t, b);
        copied_batches += b->direct_count == 0;
        direct += b->direct_count;
        uint32_t nl = 0;
        for (uint32_t j = 0; j < b->count; j++) {
          cnt[b->indices[j]]++;
          filtered += b->filtered[j] == 1;
          nl += b->filtered[j] == 2;
        }
        gpu_loco += nl;
        null_data += b->data == NULL && b->direct_count > 0;
        CHECK((b->data == NULL) == (b->direct_count > 0 || nl > 0));
        gf_loader_release(l, b);
      }
      if (rc != GF_EEPOCHEND)
        fprintf(stderr, "mode %d epoch %d: %s\n", mode, e,
                gf_last_error()->message);
      CHECK(rc == GF_EEPOCHEND);
      for (uint64_t i = 0; i < f.n; i++)
        CHECK(cnt[i] == 1);
      free(cnt);
    }
    gf_loader_stats st = {.struct_size = sizeof st};
    gf_loader_stats_get(l, &st);
    printf("mode %d (%s): %llu gradient-filtered samples unfiltered on the "
           "GPU; %llu samples gathered from the pinned cache (%llu bytes "
           "pinned, %llu failed pins)\n",
           mode, src ? "png folder" : "dataset", (unsigned long long)filtered,
           (unsigned long long)st.cache_direct,
           (unsigned long long)st.cache_pinned_bytes,
           (unsigned long long)st.cache_pin_failures);
    printf("mode %d: %llu loco records decoded on the GPU\n", mode,
           (unsigned long long)gpu_loco);
    if (!src && !loco)
      CHECK(filtered > 0); /* a quarter of the dataset is gradzstd */
    if (loco)
      CHECK(gpu_loco > 0 && filtered == 0);
    CHECK(st.cache_direct == direct);
    /* Device labels were checked on both kinds of batch: gathered from the
     * pinned cache (modes 0 and 1) and copied through the staging slot. */
    CHECK(copied_batches > 0);
    if (mode <= 1 || mode == 5) {
      /* Epochs 2 and 3 come from the cache, nearly all of it pinned. */
      CHECK(direct >= f.n);
      CHECK(null_data > 0);
      CHECK(st.cache_pinned_bytes > 0 && st.cache_pin_failures == 0);
    } else {
      CHECK(direct == 0 && null_data == 0);
      CHECK(st.cache_pinned_bytes == 0);
      CHECK(st.cache_pin_failures == (mode == 3 ? 1u : 0u));
    }
    if (mode == 3)
      gf_fault_disarm_all();
    CHECK(st.device == 0);
    CHECK(st.device_pool_peak > 0 && st.device_pool_peak <= st.device_pool_reserved);
    gf_loader_destroy(l);
  }

  unsetenv("GPUFEED_DIRECT_COPY");

  /* 1b. Resize transforms on ragged samples (RandomResizedCrop + flip, f16
   * NCHW; Resize + CenterCrop, bf16 NHWC): every output equals the CPU
   * reference, each sample once an epoch, gradzstd samples unfiltered on
   * the CPU (none left filtered for the GPU); modes 4 and 5: the loco
   * dataset, its RGB records decoded on the GPU and then resized. */
  for (int mode = 0; mode < 6; mode++) {
    gf_transform rt;
    memset(&rt, 0, sizeof rt);
    bool rrc = mode < 2 || mode == 4;
    rt.resize = rrc ? GF_RESIZE_RANDOM_RESIZED_CROP
                    : GF_RESIZE_SHORTER_CENTER_CROP;
    rt.hflip = rrc;
    rt.out_dtype = rrc ? GF_OUT_F16 : GF_OUT_BF16;
    rt.layout = rrc ? GF_LAYOUT_NCHW : GF_LAYOUT_NHWC;
    rt.height = 11;
    rt.width = 9;
    rt.seed = 5;
    memcpy(rt.mean, mean, sizeof mean);
    memcpy(rt.std, sd, sizeof sd);
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = mode >= 4 ? loco_ds : mode % 2 ? f.png_dir : f.ds_dir;
    cfg.channels = 3;
    cfg.max_sample_bytes = 16 * 16 * 3;
    cfg.batch_size = 16;
    cfg.threads = 4;
    cfg.device = 0;
    cfg.transform = rt;
    cfg.cache_bytes = mode % 2 ? 0 : 1 << 20;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (gf_test_failures)
      return gf_test_finish();
    uint64_t filtered = 0, on_gpu = 0;
    for (int e = 0; e < 2; e++) {
      uint32_t *cnt = calloc(f.n, sizeof *cnt);
      gf_batch *b;
      int rc;
      while ((rc = gf_loader_next(l, &b)) == 0) {
        gf_test_failures += check_output(&f, &rt, b);
        CHECK(b->out_height == 11 && b->out_width == 9);
        for (uint32_t j = 0; j < b->count; j++) {
          cnt[b->indices[j]]++;
          filtered += b->filtered[j] == 1;
          on_gpu += b->filtered[j] == 2;
        }
        gf_loader_release(l, b);
      }
      CHECK(rc == GF_EEPOCHEND);
      for (uint64_t i = 0; i < f.n; i++)
        CHECK(cnt[i] == 1);
      free(cnt);
    }
    CHECK(filtered == 0);
    CHECK((on_gpu > 0) == (mode >= 4));
    gf_loader_destroy(l);
  }

  /* 2. A batch released on a stream while a kernel still reads it: a
   * stream of its own, then the legacy default stream (whose release event
   * the loader's worker records, not the release). */
  for (int legacy = 0; legacy < 2; legacy++) {
    gf_loader_config cfg = stream_cfg(&f, &t, 2);
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (!l)
      break;
    void *stream = cudaStreamLegacy;
    if (!legacy)
      CHECK_OK(gf_gpu_stream_create(0, &stream));
    gf_batch *b;
    CHECK_OK(gf_loader_next_on(l, stream, &b));
    uint64_t n;
    void *want = expected(&f, &t, b, &n);
    void *dst;
    CUDA_CHECK(cudaMalloc(&dst, n));
    /* 200 ms on the stream, then copy what the batch's output holds. */
    CUDA_CHECK(gf_test_launch_delay((cudaStream_t)stream, 200000000ull,
                                    b->output, dst, n));
    CHECK_OK(gf_loader_release_on(l, b, stream));
    /* Meanwhile the host takes and releases more batches: with two slots,
     * the second one after this reuses the released batch's blocks. */
    for (int k = 0; k < 4; k++) {
      gf_batch *c;
      if (gf_loader_next(l, &c) == 0)
        gf_loader_release(l, c);
    }
    CHECK_OK(gf_gpu_stream_sync(stream));
    void *got = malloc(n);
    CUDA_CHECK(cudaMemcpy(got, dst, n, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got, want, n) == 0);
    printf("released batch intact after a 200 ms kernel (%s): %s\n",
           legacy ? "legacy default stream" : "a stream",
           memcmp(got, want, n) == 0 ? "yes" : "NO");
    free(got);
    free(want);
    cudaFree(dst);
    if (!legacy)
      gf_gpu_stream_destroy(stream);
    gf_loader_destroy(l);
  }

  /* 2b. A batch released on two streams, one of them held up by a long
   * kernel (first the stream given first, then the one given second): the
   * slot's blocks are reused only after both. */
  for (int slow = 0; slow < 2; slow++) {
    gf_loader_config cfg = stream_cfg(&f, &t, 2);
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    if (!l)
      break;
    void *streams[2];
    CHECK_OK(gf_gpu_stream_create(0, &streams[0]));
    CHECK_OK(gf_gpu_stream_create(0, &streams[1]));
    gf_batch *b;
    CHECK_OK(gf_loader_next_on(l, streams[slow], &b));
    /* The other stream sees the batch too (stream order after next_on's
     * stream). */
    cudaEvent_t ev;
    CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(ev, (cudaStream_t)streams[slow]));
    CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)streams[!slow], ev, 0));
    uint64_t n;
    void *want = expected(&f, &t, b, &n);
    int64_t *want_labels = malloc(b->count * sizeof *want_labels);
    memcpy(want_labels, b->labels, b->count * sizeof *want_labels);
    uint32_t count = b->count;
    void *dst, *dst_labels;
    CUDA_CHECK(cudaMalloc(&dst, n));
    CUDA_CHECK(cudaMalloc(&dst_labels, count * sizeof(int64_t)));
    /* 200 ms on the slow stream, then copy the batch's output; the fast
     * stream copies its labels at once. */
    CUDA_CHECK(gf_test_launch_delay((cudaStream_t)streams[slow], 200000000ull,
                                    b->output, dst, n));
    CUDA_CHECK(gf_test_launch_delay((cudaStream_t)streams[!slow], 0,
                                    b->labels_device, dst_labels,
                                    count * sizeof(int64_t)));
    CHECK_OK(gf_loader_release_streams(l, b, streams, 2));
    /* Meanwhile the host takes and releases more batches: with two slots,
     * the second one after this reuses the released batch's blocks. */
    for (int k = 0; k < 4; k++) {
      gf_batch *c;
      if (gf_loader_next(l, &c) == 0)
        gf_loader_release(l, c);
    }
    CHECK_OK(gf_gpu_stream_sync(streams[0]));
    CHECK_OK(gf_gpu_stream_sync(streams[1]));
    void *got = malloc(n);
    int64_t *got_labels = malloc(count * sizeof *got_labels);
    CUDA_CHECK(cudaMemcpy(got, dst, n, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(got_labels, dst_labels, count * sizeof(int64_t),
                          cudaMemcpyDeviceToHost));
    int intact = memcmp(got, want, n) == 0;
    CHECK(intact);
    CHECK(memcmp(got_labels, want_labels, count * sizeof(int64_t)) == 0);
    printf("batch released on two streams, stream %d held 200 ms: intact "
           "%s\n", slow, intact ? "yes" : "NO");
    free(got);
    free(got_labels);
    free(want);
    free(want_labels);
    cudaFree(dst);
    cudaFree(dst_labels);
    cudaEventDestroy(ev);
    gf_gpu_stream_destroy(streams[0]);
    gf_gpu_stream_destroy(streams[1]);
    /* The argument checks (host-side, the batch stays lent): */
    gf_batch *c;
    if (gf_loader_next(l, &c) == 0) {
      void *five[5] = {NULL, NULL, NULL, NULL, NULL};
      CHECK_ERR(gf_loader_release_streams(l, c, five, 5), -EINVAL);
      CHECK_ERR(gf_loader_release_streams(l, c, NULL, 1), -EINVAL);
      CHECK_OK(gf_loader_release_streams(l, c, NULL, 0));
    }
    gf_loader_destroy(l);
  }

  /* 2c. Batches released before their staging copy ran: the copy stream
   * is held up (the next submit of a slot released on a stream that runs
   * a 300 ms kernel waits for it), so the batches after it are handed
   * over and released while their copies still wait to read the staging
   * memory. The workers refilling those slots must wait for the copies:
   * each batch's output, read on the stream it was taken on, is its own. */
  {
    gf_loader_config cfg = stream_cfg(&f, &t, 3);
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    void *slow = NULL, *fast = NULL;
    CHECK_OK(gf_gpu_stream_create(0, &slow));
    CHECK_OK(gf_gpu_stream_create(0, &fast));
    gf_batch *b;
    if (l && slow && fast && gf_loader_next_on(l, slow, &b) == 0) {
      CUDA_CHECK(gf_test_launch_delay((cudaStream_t)slow, 300000000ull, NULL,
                                      NULL, 0));
      CHECK_OK(gf_loader_release_on(l, b, slow));
      enum { K = 7 };
      void *want[K] = {0}, *dst[K] = {0};
      uint64_t bytes[K] = {0};
      int taken = 0;
      for (int tries = 0; taken < K && tries < 2 * K; tries++) {
        int rc = gf_loader_next_on(l, fast, &b);
        if (rc == GF_EEPOCHEND)
          continue;
        CHECK_OK(rc);
        if (rc)
          break;
        want[taken] = expected(&f, &t, b, &bytes[taken]);
        CUDA_CHECK(cudaMalloc(&dst[taken], bytes[taken]));
        CUDA_CHECK(gf_test_launch_delay((cudaStream_t)fast, 0, b->output,
                                        dst[taken], bytes[taken]));
        CHECK_OK(gf_loader_release_on(l, b, fast));
        taken++;
      }
      CHECK(taken == K);
      CHECK_OK(gf_gpu_stream_sync(fast));
      int intact = 0;
      for (int k = 0; k < taken; k++) {
        void *got = malloc(bytes[k]);
        CUDA_CHECK(cudaMemcpy(got, dst[k], bytes[k], cudaMemcpyDeviceToHost));
        intact += memcmp(got, want[k], bytes[k]) == 0;
        free(got);
        free(want[k]);
        cudaFree(dst[k]);
      }
      CHECK(intact == taken);
      printf("batches released before their copy ran (copy stream held "
             "300 ms): %d of %d intact\n",
             intact, taken);
    }
    gf_gpu_stream_destroy(slow);
    gf_gpu_stream_destroy(fast);
    gf_loader_destroy(l);
  }

  /* 3. 100 create/destroy cycles give every byte back; 4. the budget. */
  {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.channels = 3;
    cfg.batch_size = 8;
    cfg.threads = 2;
    cfg.device = 0;
    cfg.transform = t;
    cfg.device_pool_bytes = 64ull << 20;
    uint64_t free0, total, free1;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(0)); /* the context exists before the baseline */
    CHECK_OK(gf_test_gpu_mem_info(0, &free0, &total));
    uint64_t worst = 0;
    /* GPUFEED_TEST_QUICK (under compute-sanitizer): 10 cycles. */
    int cycles = getenv("GPUFEED_TEST_QUICK") ? 10 : 100;
    for (int i = 0; i < cycles; i++) {
      gf_loader *l;
      CHECK_OK(gf_loader_create(&cfg, &l));
      if (!l)
        break;
      gf_batch *b;
      if (i % 10 == 0 && gf_loader_next(l, &b) == 0)
        gf_loader_release(l, b);
      uint64_t fr;
      CHECK_OK(gf_test_gpu_mem_info(0, &fr, &total));
      if (free0 - fr > worst)
        worst = free0 - fr;
      gf_loader_destroy(l);
    }
    CHECK_OK(gf_test_gpu_mem_info(0, &free1, &total));
    printf("device memory: baseline free %llu, after %d loaders %llu; most "
           "in use by one loader %llu (pool budget %llu)\n",
           (unsigned long long)free0, cycles, (unsigned long long)free1,
           (unsigned long long)worst,
           (unsigned long long)cfg.device_pool_bytes);
    CHECK(free1 + (2u << 20) >= free0);
    /* The pool is the loader's only device memory (the copy stream and
     * events take a little driver memory: 4 MiB of slack). */
    CHECK(worst <= cfg.device_pool_bytes + (4u << 20));
  }
  /* 5. Two GPUs: rank 0 and 1 of world 2 in one process, one loader per
   * device, deliver the whole dataset exactly once between them, each
   * pool on its own device. */
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev >= 2) {
    gf_loader *l[2];
    uint32_t *cnt = calloc(f.n, sizeof *cnt);
    for (int r = 0; r < 2; r++) {
      gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
      cfg.source = f.ds_dir;
      cfg.channels = 3;
      cfg.batch_size = 8;
      cfg.threads = 2;
      cfg.device = r;
      cfg.rank = (uint32_t)r;
      cfg.world = 2;
      cfg.transform = t;
      CHECK_OK(gf_loader_create(&cfg, &l[r]));
    }
    /* Alternate between the two, as two training processes would run. */
    int done[2] = {0, 0};
    while (!done[0] || !done[1]) {
      for (int r = 0; r < 2; r++) {
        if (done[r])
          continue;
        gf_batch *b;
        int rc = gf_loader_next(l[r], &b);
        if (rc != 0) {
          CHECK(rc == GF_EEPOCHEND);
          done[r] = 1;
          continue;
        }
        int dev = -1;
        struct cudaPointerAttributes pa;
        CUDA_CHECK(cudaPointerGetAttributes(&pa, b->output));
        dev = pa.device;
        CHECK(dev == r);
        CUDA_CHECK(cudaSetDevice(r));
        gf_test_failures += check_output(&f, &t, b);
        for (uint32_t j = 0; j < b->count; j++)
          cnt[b->indices[j]]++;
        gf_loader_release(l[r], b);
      }
    }
    for (int r = 0; r < 2; r++) {
      gf_loader_stats st = {.struct_size = sizeof st};
      gf_loader_stats_get(l[r], &st);
      CHECK(st.device == r);
      gf_loader_destroy(l[r]);
    }
    /* 90 samples over 2 ranks: no padding, each exactly once. */
    for (uint64_t i = 0; i < f.n; i++)
      CHECK(cnt[i] == 1);
    printf("two devices: rank 0 on GPU 0 and rank 1 on GPU 1 delivered all "
           "%llu samples exactly once\n", (unsigned long long)f.n);
    free(cnt);
  } else {
    printf("one device: the two-device check needs two GPUs (not run)\n");
  }
  fixture_free(&f);
  return gf_test_finish();
}
