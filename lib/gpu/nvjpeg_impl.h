/* The nvJPEG decoder's insides, shared by its two files: nvjpeg_cuda.c
 * (loading the library, opening and closing a decoder, its budgets through
 * nvJPEG's allocator hooks, its decode states) and nvjpeg_decode_cuda.c
 * (probing a file, decoding batches, the stats). Included only there. The
 * CUDA types are written as the runtime defines them (cudaStream_t is
 * `struct CUstream_st *`, cudaEvent_t `struct CUevent_st *`): only the
 * _cuda.c files include the runtime's header. */
#ifndef GF_GPU_NVJPEG_IMPL_H
#define GF_GPU_NVJPEG_IMPL_H

#include "gpu/nvjpeg.h"

#include "gpu/nvjpeg_api.h"
#include "gpu/pool.h"

#include <pthread.h>
#include <stdbool.h>

/* The functions taken from the library; the optional ones may be NULL. */
typedef struct nvj_lib {
  gf_nvj_GetProperty GetProperty;
  gf_nvj_CreateExV2 CreateExV2;
  gf_nvj_Destroy Destroy;
  gf_nvj_JpegStateCreate JpegStateCreate;
  gf_nvj_JpegStateDestroy JpegStateDestroy;
  gf_nvj_DecodeBatchedInitialize DecodeBatchedInitialize;
  gf_nvj_DecodeBatched DecodeBatched;
  gf_nvj_DecodeBatchedSupported DecodeBatchedSupported;
  gf_nvj_JpegStreamCreate JpegStreamCreate;
  gf_nvj_JpegStreamDestroy JpegStreamDestroy;
  gf_nvj_JpegStreamParseHeader JpegStreamParseHeader;
  gf_nvj_JpegStreamGetFrameDimensions JpegStreamGetFrameDimensions;
  gf_nvj_JpegStreamGetComponentsNum JpegStreamGetComponentsNum;
  gf_nvj_JpegStreamGetJpegEncoding JpegStreamGetJpegEncoding;
  /* optional */
  gf_nvj_GetHardwareDecoderInfo GetHardwareDecoderInfo;
  gf_nvj_DecodeBatchedPreAllocate DecodeBatchedPreAllocate;
  gf_nvj_JpegStreamGetSamplePrecision JpegStreamGetSamplePrecision;
} nvj_lib;

/* A decode state, the batch it was initialized for, and what its last
 * decode still uses. A state is not used again before that decode has
 * finished on the device (its event): nvJPEG keeps per-state buffers (the
 * GPU hybrid backend's pinned coefficients among them) that a decode
 * queued behind another would overwrite while the first is still being
 * copied, and the argument arrays given to nvjpegDecodeBatched are the
 * state's own for the same reason. */
typedef struct nvj_state {
  gf_nvj_state st;
  int n;      /* batch size; 0: initialize before the next use */
  int format; /* GF_NVJ_OUTPUT_* */
  struct CUevent_st *done; /* cudaEvent_t: recorded on the stream after
                              its last decode */
  bool event, pending; /* done exists / is recorded and not waited for */
  const unsigned char **data; /* nvjpegDecodeBatched's arrays */
  size_t *lens;
  gf_nvj_image *dst;
} nvj_state;

enum { FMT_RGB = 0, FMT_Y = 1 };
/* States a format takes in turn, so that the host's part of one batch
 * overlaps the device's part of the one before. */
#define RING 2

struct gf_nvjpeg {
  gf_nvjpeg_config cfg;
  nvj_lib f;
  int backend; /* GF_NVJPEG_HARDWARE or GF_NVJPEG_GPU_HYBRID */
  struct CUstream_st *stream; /* cudaStream_t */
  gf_nvj_dev_allocator_v2 dev_alloc; /* kept: nvJPEG holds on to them */
  gf_nvj_pinned_allocator_v2 pin_alloc;
  gf_nvj_handle handle;
  gf_nvj_jstream js;
  nvj_state batch[2][RING]; /* FMT_RGB, FMT_Y, each a ring */
  uint32_t next[2];          /* the ring's next state */
  nvj_state one;             /* images decoded one at a time */
  /* The budgets. */
  gf_device_pool *dpool;
  uint8_t *pinned;
  gf_pool *ppool;
  pthread_mutex_t mu; /* the pinned pool and what the hooks count */
  bool mu_init;
  bool on_device; /* cfg.device checked and made current: close may use
                     CUDA (before that, the stream is only a value) */
  uint64_t dev_allocs, dev_frees, dev_failures;
  uint64_t pin_allocs, pin_frees, pin_failures;
  uint64_t null_frees; /* frees nvJPEG made without a stream */
  bool alloc_failed; /* a hook refused a request since the flag was cleared */
  char alloc_msg[600];
  /* A decode call's scratch, max_batch each. */
  uint32_t *idx, *ids;
  gf_nvjpeg_stats st;
};

/* Shared between the two files (nvjpeg_cuda.c defines them). */
/* nvJPEG's name for status s. */
const char *gf_nvj__status_name(gf_nvj_status s);
/* A failed CUDA call (e: its cudaError_t; what: its name): GF_EDEVOOM or
 * GF_ECUDA, recorded. */
int gf_nvj__cuda_fail(int e, const char *what);
/* A failure of an nvJPEG call outside one image: the budget when a hook
 * refused a request, else nvJPEG's status; recorded. */
int gf_nvj__fail(gf_nvjpeg *h, gf_nvj_status s, const char *what);
/* Makes state s ready for a batch of n images in `format` (see
 * nvjpeg_cuda.c). */
gf_nvj_status gf_nvj__state_take(gf_nvjpeg *h, nvj_state *s, int n, int format);

#endif
