/* The loader's GPU stage, behind a CUDA-free interface: pinned staging
 * slots the workers decode into, one device input and output block per
 * slot from the loader's device pool, a dedicated non-blocking copy stream,
 * and the event handoff to and from the caller's stream.
 *
 * Per slot, in order:
 *   1. the workers fill the pinned staging memory (host);
 *   2. gf_stage_submit: on the copy stream, wait for the slot's release
 *      event (the caller's stream finished with the previous batch's device
 *      blocks), copy the bytes and the per-sample parameters to the device,
 *      run the transform kernel into the output block, record `ready`;
 *   3. gf_stage_handoff: the caller's stream waits for `ready` (no host
 *      wait), or nothing at all when the batch's work is already over: a
 *      one-thread kernel after `ready` writes the submit's number into a
 *      done word of the slot's pinned memory (kernels/done.h), which
 *      handoff reads without a CUDA call;
 *   4. gf_stage_release: record a release event on each of the caller's
 *      streams (the next submit of the slot waits for all of them); on
 *      the legacy default stream the event is left to step 5;
 *   5. gf_stage_copy_done: asked by the worker about to refill the slot,
 *      not by release: records the release event left to it, then
 *      answers whether the copy out of the staging memory has completed
 *      (so the worker may refill it): an event query, no wait.
 *
 * stage_cuda.c and stage_stream_cuda.c (steps 3-5) implement it with
 * the CUDA runtime, stage_jpeg_cuda.c its JPEG decoding; stage_nocuda.c, in
 * builds without CUDA, answers GF_ENODEVICE. One stage belongs to one
 * loader; its calls come from the loader's consumer thread, except
 * gf_stage_copy_done, which a worker calls (outside the loader's lock). */
#ifndef GF_GPU_STAGE_H
#define GF_GPU_STAGE_H

#include "common/common.h"
#include "gpu/nvjpeg.h"
#include "xform/transform.h"

typedef struct gf_stage gf_stage;

typedef struct gf_stage_config {
  int32_t device;         /* CUDA device ordinal */
  uint32_t slots;         /* staging slots */
  uint32_t max_samples;   /* samples a batch */
  uint32_t pin_threads;   /* threads that may make slot 0's pages at create
                             (0 or 1: the calling thread alone) */
  uint64_t in_bytes;      /* staging bytes a slot (and device input block) */
  uint64_t out_bytes;     /* device output bytes a slot */
  uint64_t pool_bytes;    /* device pool reservation (>= what the slots
                             need; the rest is the caller's to allocate) */
  uint32_t loco;          /* 1: loco records are decoded on the GPU: a
                             device block of in_bytes a slot the records
                             land in, and an upload stream (a batch's copy
                             overlaps the previous batch's decode); 0:
                             none */
} gf_stage_config;

/* A sample's part in a loco batch (kernels/loco.h's gf_loco_item). */
typedef struct gf_stage_loco {
  uint32_t len;   /* its loco record's bytes at its place (0: its bytes are
                     pixels) */
  uint32_t band0; /* its first band: the bands of the samples before it */
} gf_stage_loco;

/* Device bytes the slots need from the pool for cfg (inputs, outputs,
 * parameters and gather lists, labels; each rounded to the pool's 256-byte
 * alignment). */
uint64_t gf_stage_pool_need(const gf_stage_config *cfg);
/* Of which, a slot's labels (gf_batch.labels_device): max_samples int64s,
 * rounded to 256 bytes. */
uint64_t gf_stage_label_bytes(uint32_t max_samples);

/* Whether `device` (or device 0 for GF_DEVICE_AUTO) can be used: 1 yes, 0
 * no (the reason in why: no CUDA in this build, no device, driver error).
 * Any thread. */
int gf_stage_probe(int32_t device, char *why, size_t cap);

/* Creates the stage: the pool, the staging memory (anonymous memory, to be
 * pinned by registration with cudaHostRegister), the device blocks, the
 * copy stream and the events. Only slot 0 is pinned here (what the first
 * batch needs; its pages made by up to pin_threads threads); the caller
 * pins the others with gf_stage_pin before it uses them. Returns 0, GF_ENODEVICE, GF_EDEVOOM, GF_ECUDA or -ENOMEM with
 * context. */
int gf_stage_create(const gf_stage_config *cfg, gf_stage **out);
/* Frees everything; no gf_stage_pin may still be running. */
void gf_stage_destroy(gf_stage *st);

/* Pins slot i's staging memory: makes its pages (transparent huge pages
 * where allowed, madvise MADV_POPULATE_WRITE: outside the driver, on the
 * calling thread), registers them with cudaHostRegister (mapped) and takes
 * their device address. 0 at once when
 * the slot is pinned already. Until it returned 0 the slot must not be
 * submitted (gf_stage_submit refuses it) nor its device address asked for.
 * Any thread (the loader's pinning thread), one call per slot at a time,
 * none during gf_stage_destroy. Returns 0, GF_EDEVOOM / GF_ECUDA (the
 * registration failed) or -ENOMEM (no pages), with context naming the slot
 * and its bytes. */
int gf_stage_pin(gf_stage *st, uint32_t i);

/* The staging memory of slot i (in_bytes bytes), from create on: the
 * workers may fill it once it is pinned. */
uint8_t *gf_stage_host(gf_stage *st, uint32_t i);

/* The device address of slot i's pinned staging memory (mapped); 0 before
 * gf_stage_pin. */
uint64_t gf_stage_host_dev(gf_stage *st, uint32_t i);

/* One range of a batch's device input gathered from pinned host memory:
 * the slot's staging memory or a record of the pinned host cache. */
typedef struct gf_stage_seg {
  const uint8_t *host; /* the bytes, in pinned host memory */
  uint64_t dev;        /* the same bytes' device address (mapped) */
  uint64_t dst;        /* offset in the slot's device input */
  uint64_t len;        /* bytes, > 0 */
} gf_stage_seg;

/* How gathered ranges reach the device (GPUFEED_DIRECT_COPY=engine|kernel
 * overrides the default for experiments; see docs/BENCH.md). */
typedef enum gf_direct_copy {
  GF_DIRECT_COPY_ENGINE = 0, /* the copy engines: one batched memcpy call */
  GF_DIRECT_COPY_KERNEL = 1, /* a gather kernel on a few SMs reading the
                                mapped host memory */
} gf_direct_copy;
/* The method in use ("engine" or "kernel"). */
const char *gf_stage_direct_copy(const gf_stage *st);

/* Enqueues slot i's batch: n samples described by params (offsets into the
 * slot's device input) with their n labels, the transform t into out_h x
 * out_w x out_c. The input comes from the staging memory, its first `used`
 * bytes copied as one block (segs NULL), or gathered from nsegs ranges
 * (segs: at most max_samples, each inside `used`, used <= in_bytes). The
 * labels go to the device with the parameters, before `ready`. *out gets
 * the device output pointer, *labels_dev the device labels ([n] int64)
 * and *out_len the output's bytes. With loco (n entries, NULL for none;
 * loco_bands bands in all, > 0), the input lands in the stage's loco
 * block and a decode kernel writes the samples' pixels into the slot's
 * device input, records decoded, the others copied; a malformed record
 * (possible only where its checksum matched: a writer's fault or a
 * crafted file) zeroes its sample and is reported by
 * gf_stage_loco_error. Returns 0, GF_ECUDA,
 * GF_ESHAPE/GF_EUNSUPPORTED (from validation), GF_EINTERNAL (a range
 * outside the input, or slot i not pinned) with context. */
int gf_stage_submit(gf_stage *st, uint32_t i, const gf_transform *t,
                    const gf_xform_sample *params, const int64_t *labels,
                    uint32_t n, uint32_t n_filtered, uint64_t used,
                    const gf_stage_seg *segs, uint32_t nsegs,
                    const gf_stage_loco *loco, uint32_t loco_bands,
                    uint32_t out_h, uint32_t out_w, uint32_t out_c,
                    void **out, const int64_t **labels_dev,
                    uint64_t *out_len);
/* 1 + the position of the first sample of slot i's last batch whose loco
 * record the GPU found malformed, 0 when none, or -1 while the batch's
 * work is still running (its done word not yet written). No CUDA call. */
int64_t gf_stage_loco_error(gf_stage *st, uint32_t i);
/* Makes `stream` (a cudaStream_t; NULL: the host waits) wait for slot i's
 * batch; no call into CUDA when the slot's done word says its work is
 * over. Returns 0 or GF_ECUDA. */
int gf_stage_handoff(gf_stage *st, uint32_t i, void *stream);
/* Records that streams[0..n) (cudaStream_t each; a NULL entry: nothing
 * pending there) are done with slot i's device blocks once they all reach
 * this point: an event per stream, each waited for by the copy stream
 * before the slot's next submit. It replaces what an earlier release of
 * the slot left pending. On the legacy default stream (cudaStreamLegacy,
 * 0x1: PyTorch's default stream) no CUDA call is made here: the worker
 * about to refill the slot records that stream's event
 * (gf_stage_copy_done), at a later point of the stream, after everything
 * queued there before this call. The legacy stream is the device's, the
 * same from every thread, and is never destroyed; another stream may be
 * gone by then, and the per-thread default stream is another thread's
 * there, so those are recorded here. Returns 0, -EINVAL (n >
 * GF_RELEASE_STREAMS_MAX) or GF_ECUDA (the events recorded before the
 * failure stay pending). */
int gf_stage_release(gf_stage *st, uint32_t i, void *const *streams,
                     uint32_t n);

/* Trace mode: times each slot's copy-stream work (H2D copy + transform)
 * with timing events. Records a reference event on the copy stream and
 * waits for it, reading the host clock (CLOCK_MONOTONIC) at that moment, so GPU times map onto the host timeline. Call once, after
 * create, before any submit. Returns 0 or GF_ECUDA. Without CUDA: 0, and
 * nothing is ever timed. */
int gf_stage_timing_enable(gf_stage *st);
/* Takes slot i's timing of its last submit: 1 and *start_ns (host clock)
 * and *dur_ns when there was one and it has completed (with `wait`, waits
 * for its completion), 0 when there is none or it is still running (it is
 * kept for a later call), or a negative code. The slot's next submit
 * forgets an untaken timing. Called by whoever owns slot i (the loader's
 * lock orders them). */
int gf_stage_timing_take(gf_stage *st, uint32_t i, bool wait,
                         uint64_t *start_ns, uint64_t *dur_ns);

/* NVTX ranges around the loader's stages, for Nsight Systems: in CUDA
 * builds nvtxRangePushA / nvtxRangePop on the calling thread (nearly free
 * when no tool is attached), no-ops otherwise. Any thread. */
void gf_gpu_range_push(const char *name);
void gf_gpu_range_pop(void);
/* A range that may end on another thread or out of order (a batch held by
 * the caller): nvtxRangeStartA / nvtxRangeEnd; 0 without CUDA. */
uint64_t gf_gpu_range_start(const char *name);
void gf_gpu_range_end(uint64_t id);

/* JPEG decoding on the GPU (gpu/nvjpeg.h) into the slots' device input
 * blocks. The decoders are the stage's: each on a stream of its own
 * (joined to the copy stream after each decode), closed with the stage,
 * and their reservations are their own (the stage's pool is untouched). */

#define GF_STAGE_DECODERS_MAX GF_GPU_DECODERS_MAX /* the config's bound */

/* Opens `count` decoders (1 to GF_STAGE_DECODERS_MAX) from *cfg (their
 * device and streams are the stage's; the rest as gf_nvjpeg_open takes
 * it; each makes the reservations cfg names). Several decode calls then
 * run at once, from different threads: nvJPEG's hardware backend spends
 * most of a batch's call on the host (a copy, a kernel and an event a
 * image). Returns what gf_nvjpeg_open returns for the first that fails
 * (none is left open then), the reason in why[0..cap) too; 0 at once when
 * some are open. Call before any submit, on the thread that created the
 * stage. */
int gf_stage_jpeg_open(gf_stage *st, const gf_nvjpeg_config *cfg,
                       uint32_t count, char *why, size_t cap);
/* gf_nvjpeg_probe with the stage's decoder (serialised with the decode
 * calls). Returns what it returns, or GF_EINTERNAL when none is open. */
int gf_stage_jpeg_probe(gf_stage *st, const uint8_t *data, size_t len,
                        gf_nvjpeg_info *info);
/* The open decoder's backend name ("hardware", "gpu_hybrid"), or NULL. */
const char *gf_stage_jpeg_backend(const gf_stage *st);
/* Queues the decode of imgs[0..n) for slot i: image k's pixels go to
 * dst_off[k] of the slot's device input (each image's dst and dst_cap are
 * set here: dst_cap is cap, the range checked against the input block),
 * on a decoder's stream after the slot's release events, and the slot's
 * `copied` event is recorded after it (nvJPEG reads the files' bytes, in
 * the staging memory, until the stream passes it): gf_stage_copy_done
 * then answers for the decode too, and the copy stream waits for it (the
 * slot's submit follows the decode). Each image's status as
 * gf_nvjpeg_decode sets it. Any thread: a call takes a free decoder, or
 * waits for one. Returns what gf_nvjpeg_decode returns, GF_EINTERNAL (a range
 * outside the input, no decoder, slot not pinned) or GF_ECUDA. */
int gf_stage_jpeg_decode(gf_stage *st, uint32_t i, gf_nvjpeg_image *imgs,
                         const uint64_t *dst_off, uint64_t cap,
                         uint32_t n, gf_nvjpeg_result *res);
/* Waits until the copy stream has passed slot i's `copied` event (the
 * staging memory is no longer read). Returns 0 or GF_ECUDA. */
int gf_stage_copied_wait(gf_stage *st, uint32_t i);
/* Records slot i's release event on the legacy default stream when its
 * release left it here (gf_stage_release), then: 1 when the copy out of
 * slot i's staging memory has completed (or none was made, or it failed:
 * a failed copy reads it no more), 0 while it runs. Any worker, any
 * number at once. */
int gf_stage_copy_done(gf_stage *st, uint32_t i);
/* The decoders' statistics, summed (the backend, version and engines the
 * first's); false (and *out zeroed) when none is open. Any thread. */
bool gf_stage_jpeg_stats(gf_stage *st, gf_nvjpeg_stats *out);

/* The loader's device pool (for the caller's own buffers). */
gf_device_pool *gf_stage_pool(gf_stage *st);

/* Pins [addr, addr + len) of anonymous host memory for device reads
 * (cudaHostRegister, mapped) and writes its device address to *dev: the
 * host cache's pinner. Returns 0, GF_ENODEVICE (no CUDA) or GF_ECUDA /
 * GF_EDEVOOM with context. Any thread. */
int gf_gpu_pin(int32_t device, void *addr, size_t len, uint64_t *dev);
/* Undoes gf_gpu_pin once no device work reads the memory any more. */
void gf_gpu_unpin(int32_t device, void *addr);

#endif
