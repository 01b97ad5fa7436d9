/* JPEG decoding on the GPU with NVIDIA's nvJPEG, behind a CUDA-free
 * interface (streams are void *, a cudaStream_t).
 *
 * nvJPEG is found at run time, never at build time: gf_nvjpeg_open loads
 * libnvjpeg.so.13 (then libnvjpeg.so) with dlopen and takes the functions it
 * needs with dlsym (their declarations are in gpu/nvjpeg_api.h), so the
 * library builds and runs where nvJPEG is missing, and a caller that cannot
 * open a decoder gets a sentence saying why (for gf_loader_stats and the
 * bench) and keeps decoding JPEG on the CPU.
 *
 * Backends. GF_NVJPEG_HARDWARE uses the GPU's JPEG engines (A100, H100,
 * H200 and later): baseline JPEG, one scan, 1 or 3 channels, no 4:1:1 or
 * 4:1:0. GF_NVJPEG_GPU_HYBRID decodes on the SMs (Huffman too, for batches
 * of more than 50 baseline images) and takes progressive JPEG as well.
 * GF_NVJPEG_AUTO takes the hardware backend where the GPU has engines and
 * the GPU hybrid one elsewhere. What a handle's batched decoder takes is
 * what nvjpegDecodeBatchedSupported says (nvJPEG 13.0's hardware handle
 * took the progressive test image too, but on an H200 none of the
 * progressive files libjpeg writes with its simple progression, gray or
 * 4:2:0: the loader asks with one of those at open); whatever it does not
 * take, and
 * what nvJPEG never decodes (arithmetic coding, 12-bit samples, CMYK), is
 * reported per image (GF_EUNSUPPORTED) so the caller routes it to the CPU
 * decoder; nothing is refused for its size.
 *
 * Memory. What nvJPEG allocates through its allocator hooks
 * (nvjpegCreateExV2's device and pinned allocators) comes from two fixed
 * reservations made at open, which the memory plan counts beside the
 * loader's device pool (gf_nvjpeg_plan): a device pool of exactly
 * device_budget bytes (the same best-fit pool with stream-ordered reuse as
 * gf_device_pool, which is what nvJPEG's stream-ordered V2 allocator
 * contract asks for), and one pinned host block of pinned_budget bytes
 * sub-allocated best-fit. Nothing past them is taken through the hooks: a
 * request that does not fit fails inside nvJPEG, and the decode returns
 * GF_EDEVOOM naming the budget, the request and what was free. The
 * loader's own device pool is untouched, so it still holds exactly its
 * planned bytes. The GPU hybrid backend takes all of its working memory
 * through the hooks: about 12 bytes a pixel of a batch's images for each
 * of a format's two decode states (see gf_nvjpeg_decode), measured with
 * nvJPEG 13.0: 337 MiB a state for 256 images of 200 to 500 pixels a side
 * (28.9 Mpixel), 674 MiB for the two. The hardware backend takes none:
 * its buffers are the JPEG engines' own, allocated by nvJPEG beside the
 * budget, which does not bind them (24 to 44 MiB for batches of 128 and
 * 256 such images on an H200 with the engines' pipelining, 22-25 MiB
 * without it; bench/RESULTS.md): the memory plan prints them as planned,
 * GF_NVJPEG_ENGINE_BYTES a decoder, below.
 *
 * Pixels. Chroma is upsampled by interpolation, as libjpeg's default
 * ("fancy") upsampling does, so that an image decodes to nearly the same
 * bytes on the GPU as on the CPU: testorig.jpg within 3 (mean 0.19) of
 * libjpeg's islow decode, where nvJPEG's own default, repeating chroma
 * samples, is within 34 (mean 1.37); GF_NVJPEG_REPEAT_CHROMA asks for
 * that one.
 *
 * nvjpeg_cuda.c and nvjpeg_decode_cuda.c implement it; nvjpeg_nocuda.c,
 * in builds without CUDA, answers GF_ENODEVICE. Threads: one handle is used
 * by one thread at a time (nvJPEG's decode states are not thread-safe);
 * different handles may be used by different threads. */
#ifndef GF_GPU_NVJPEG_H
#define GF_GPU_NVJPEG_H

#include "common/common.h"

typedef struct gf_nvjpeg gf_nvjpeg;

typedef enum gf_nvjpeg_backend {
  GF_NVJPEG_AUTO = 0,       /* hardware where there are engines, else GPU
                               hybrid */
  GF_NVJPEG_HARDWARE = 1,   /* the JPEG engines; refused without them */
  GF_NVJPEG_GPU_HYBRID = 2, /* the SMs */
} gf_nvjpeg_backend;

/* gf_nvjpeg_config.flags */
#define GF_NVJPEG_REPEAT_CHROMA 1u /* chroma upsampled by repeating samples
                                      (nvJPEG's default) rather than by
                                      interpolation (see "Pixels") */
#define GF_NVJPEG_NO_PIPELINE 2u   /* hardware: no images buffered ahead
                                      (NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE) */

/* The budgets a config leaves 0 get: for the device, a base and so much an
 * image of max_batch (two states of the GPU hybrid backend at 12 bytes a
 * pixel: images of 175,000 pixels on average, 420 x 420, ImageNet's
 * being nearer 110,000); for pinned memory, one size. */
#define GF_NVJPEG_DEFAULT_DEVICE_BASE (64ull << 20)
#define GF_NVJPEG_DEFAULT_DEVICE_PER_IMAGE (4ull << 20)
#define GF_NVJPEG_DEFAULT_PINNED_BUDGET (64ull << 20)
/* What the hardware backend opened with GF_NVJPEG_NO_PIPELINE (the
 * loader's) holds beside both budgets, a decoder: the engines' buffers and
 * nvJPEG's own, allocated outside its allocator hooks. Not a reservation
 * of ours, so planned from measurement, with headroom: 22-25 MiB on an
 * H200 with nvJPEG 13.0 for batches of 32 to 256 images of 64 to 300 px
 * (38.7 MiB pipelined; bench/RESULTS.md, 2026-11-29, third session).
 * test_gpu_nvjpeg holds a decoder to it. */
#define GF_NVJPEG_ENGINE_BYTES (32ull << 20)

typedef struct gf_nvjpeg_config {
  int32_t device;          /* CUDA device ordinal */
  uint32_t backend;        /* gf_nvjpeg_backend */
  void *stream;            /* cudaStream_t every decode is queued on (the
                              loader's copy stream); it must outlive the
                              handle; NULL: refused, nothing runs on the
                              legacy default stream */
  uint32_t max_batch;      /* most images one gf_nvjpeg_decode takes (> 0) */
  uint32_t flags;          /* GF_NVJPEG_* */
  uint64_t device_budget;  /* bytes nvJPEG may hold on the device; 0:
                              GF_NVJPEG_DEFAULT_DEVICE_BASE + max_batch *
                              GF_NVJPEG_DEFAULT_DEVICE_PER_IMAGE */
  uint64_t pinned_budget;  /* bytes of pinned host memory; 0:
                              GF_NVJPEG_DEFAULT_PINNED_BUDGET */
  uint32_t max_width;      /* hardware: when both are set, the decode state */
  uint32_t max_height;     /* takes its buffers for max_batch images this
                              large at open (nvjpegDecodeBatchedPreAllocate)
                              rather than growing them as images come */
  const char *library;     /* the file dlopen loads; NULL: libnvjpeg.so.13,
                              then libnvjpeg.so */
} gf_nvjpeg_config;

/* The two reservations a config makes (its budgets after defaults): what
 * the memory plan prints for the GPU decoder. Plain arithmetic, in every
 * build; a default budget that overflows is UINT64_MAX. cfg: as given
 * to gf_nvjpeg_open (max_batch and the budgets are read). */
void gf_nvjpeg_plan(const gf_nvjpeg_config *cfg, uint64_t *device_bytes,
                    uint64_t *pinned_bytes);

/* Opens a decoder: loads nvJPEG, creates its handle on cfg->device with
 * the allocator hooks over the two budgets, reserved here. *out is the
 * caller's, closed with gf_nvjpeg_close. The loader opens none when its
 * config says gpu_decode off.
 *
 * Returns 0, or a code with the reason both in gf_last_error() and in
 * why[0..cap) (why may be NULL), one sentence fit for gf_loader_stats:
 *   GF_EUNSUPPORTED  no decoder here: the library not found (dlerror's
 *                    text), a function missing from it, or the hardware
 *                    backend asked for on a GPU without JPEG engines;
 *   GF_ENODEVICE     built without CUDA, or no such device;
 *   GF_EDEVOOM       a budget could not be reserved;
 *   GF_ECUDA         nvJPEG or CUDA failed otherwise (status named);
 *   -EINVAL          a bad field, named.
 * Any thread. */
int gf_nvjpeg_open(const gf_nvjpeg_config *cfg, gf_nvjpeg **out, char *why,
                   size_t cap);
/* Waits for the decodes queued on the stream, then frees everything,
 * both reservations included. NULL accepted. */
void gf_nvjpeg_close(gf_nvjpeg *h);

/* "hardware" or "gpu_hybrid": the backend the handle decodes with. */
const char *gf_nvjpeg_backend_name(const gf_nvjpeg *h);

/* What a JPEG's headers say, and whether this handle decodes it. */
typedef struct gf_nvjpeg_info {
  uint32_t width, height;
  uint32_t components;     /* in the stream: 1 grey, 3 colour, 4 CMYK... */
  uint32_t supported;      /* 1: gf_nvjpeg_decode takes it; 0: the CPU
                              decoder's (why says what) */
  char why[192];
} gf_nvjpeg_info;

/* Parses the headers of data[0..len) on the host. Returns 0 (info filled;
 * supported may be 0: progressive on the hardware backend, arithmetic
 * coding, 12-bit samples, CMYK...), or GF_EDECODE when the headers are
 * corrupt or cut short (the message says which). The calling thread owns h
 * (see above). */
int gf_nvjpeg_probe(gf_nvjpeg *h, const uint8_t *data, size_t len,
                    gf_nvjpeg_info *info);

/* One image of a decode call. The caller fills the first part. */
typedef struct gf_nvjpeg_image {
  const uint8_t *data;     /* the JPEG file's bytes, host memory; read
                              until the decode's work on the stream is
                              done */
  size_t len;
  void *dst;               /* device memory: height rows of width *
                              channels bytes, interleaved, no padding */
  uint64_t dst_cap;        /* bytes at dst */
  uint32_t channels;       /* 3: RGB (a grey JPEG comes out replicated);
                              1: luma (a colour JPEG's Y) */
  uint32_t reserved0;      /* must be zero */
  uint64_t sample;         /* for messages: the sample's index, or
                              GF_NO_INDEX */
  const char *name;        /* for messages: its file, or NULL */
  /* Filled by the call. */
  int32_t status;          /* 0 decoded; GF_EUNSUPPORTED not this backend's
                              (decode it on the CPU); GF_EDECODE corrupt;
                              GF_ESHAPE dst too small; GF_EDEVOOM the
                              budget ran out before it was decoded */
  uint32_t width, height;  /* from its headers (0 when they did not parse) */
  char why[256];           /* when status != 0: a sentence naming the
                              image */
} gf_nvjpeg_image;

/* What one decode call did. */
typedef struct gf_nvjpeg_result {
  uint32_t decoded;        /* images with status 0 */
  uint32_t unsupported;    /* GF_EUNSUPPORTED: for the CPU decoder */
  uint32_t failed;         /* any other status */
  uint32_t batch_calls;    /* nvjpegDecodeBatched calls over several images */
  uint32_t fallbacks;      /* of which failed as a whole, so that their
                              images were decoded again one at a time on
                              the GPU (a log line at warn level says so) */
} gf_nvjpeg_result;

/* Queues the decode of imgs[0..n) (n <= max_batch) on the handle's stream:
 * the images this backend takes, in one batched call per output format
 * (RGB, luma); the others are left with their status set. When a batched
 * call fails as a whole (one corrupt image fails the whole call on the
 * hardware backend), its images are decoded again one at a time, so that
 * only the bad ones fail; a failed image never poisons the next call.
 * Returns when the work is queued: the pixels are there once the stream
 * has passed this point (record an event on it). Calls may follow each
 * other without waiting: each format's decode states serve in turn, two
 * of them, and a state is taken again only once its last decode has
 * finished (a host wait, when the call two before is still running; the
 * GPU hybrid backend holds two batches' working memory for it).
 *
 * Returns 0 when the call ran (each image's status says how it went; res
 * may be NULL), GF_EDEVOOM when a budget ran out (the message names which,
 * its size, the request and what was free; images not decoded carry the
 * same status), GF_ECUDA (nvJPEG or CUDA failed beyond one image),
 * -EINVAL (n 0 or above max_batch, a NULL, reserved0 set, channels not 1
 * or 3). The calling thread owns h. */
int gf_nvjpeg_decode(gf_nvjpeg *h, gf_nvjpeg_image *imgs, uint32_t n,
                     gf_nvjpeg_result *res);

typedef struct gf_nvjpeg_stats {
  char backend[16];        /* gf_nvjpeg_backend_name */
  int32_t version[3];      /* nvJPEG's major, minor, patch */
  uint32_t hw_engines;     /* hardware: JPEG engines, and cores an engine */
  uint32_t hw_cores;       /* (0 when nvJPEG does not say) */
  uint64_t device_budget, device_in_use, device_peak;
  uint64_t device_allocs, device_frees, device_alloc_failures;
  uint64_t pinned_budget, pinned_in_use, pinned_peak;
  uint64_t pinned_allocs, pinned_frees, pinned_alloc_failures;
  uint64_t null_stream_frees; /* frees nvJPEG made naming no stream
                              (ordered on the decoder's stream) */
  uint64_t images;         /* decoded, since open */
  uint64_t unsupported, failed;
  uint64_t batch_calls, fallbacks, reinits; /* reinits: decode states
                              initialized for a new batch size or after a
                              failure */
} gf_nvjpeg_stats;
/* Fills *st. The calling thread owns h. */
void gf_nvjpeg_stats_get(gf_nvjpeg *h, gf_nvjpeg_stats *st);

#endif /* GF_GPU_NVJPEG_H */
