/* The seam between the C library and the CUDA kernels: extern "C"
 * launchers, each enqueuing its work on the stream it is given. Only CUDA
 * builds include this header (it needs cuda_runtime.h): the CUDA side of
 * lib/gpu and the GPU tests.
 *
 * Launchers return cudaSuccess or the error of the launch itself
 * (cudaErrorInvalidValue for arguments they refuse); errors of the kernel
 * while it runs surface at the next synchronisation, as CUDA's always do.
 * They never synchronise, allocate or touch the legacy default stream
 * (a NULL or cudaStreamLegacy stream is refused). Any host thread. */
#ifndef GF_KERNELS_H
#define GF_KERNELS_H

#include <cuda_runtime.h>

#include "xform/transform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One batch transform (see gf_transform and lib/xform/transform.h for
 * what it computes, byte-identical to gf_xform_ref). Pointers are device
 * memory unless said otherwise. */
#define GF_XFORM_RESIZE_PER_PIXEL 1u
#define GF_XFORM_RESIZE_TILES 2u

typedef struct gf_xform_launch {
  const uint8_t *src;        /* the samples' HWC uint8 bytes */
  uint64_t src_len;          /* bytes readable at src: nothing past it is
                                read, whatever the samples say */
  const gf_xform_sample *samples; /* n entries, checked on the host with
                                gf_xform_validate(..., GF_XFORM_FOR_GPU) */
  uint32_t n;                /* samples (0: nothing is launched) */
  uint32_t n_filtered;       /* how many have filtered = 1 (counted on the
                                host): 0 launches no unfilter kernel */
  uint32_t out_h, out_w, out_c;
  uint32_t out_dtype;        /* gf_out_dtype */
  uint32_t layout;           /* gf_layout */
  uint32_t n_resized;        /* how many have resize != 0 (counted on the
                                host): 0 launches no resize kernel */
  uint32_t resize_size;      /* SHORTER_CENTER_CROP's shorter side S
                                (gf_xform_resize_size); 0 otherwise */
  uint32_t reserved0;        /* zero */
  uint32_t resize_path;      /* 0 (default): a resized sample in bands
                                of 32 output rows, a thread a column
                                (kernels/resize_band.cuh) where the
                                output is at most 256 wide and the
                                shrink moderate (horizontal support at
                                most 3.25: under ~3.2x antialiased),
                                the others as GF_XFORM_RESIZE_TILES
                                does; GF_XFORM_RESIZE_TILES: each 32x32
                                tile in two passes through shared
                                memory, pixel by pixel where its taps
                                do not fit (RGB shrinks beyond ~10x);
                                GF_XFORM_RESIZE_PER_PIXEL: every
                                resized pixel on its own (the tiles'
                                fallback). Tests and benches choose; the
                                same bytes whichever */
  uint32_t resize_rows;      /* output rows a band of the default path:
                                0 (default) chosen from the batch's
                                size, else 1-32; tests and benches set it
                                (the same bytes) */
  uint32_t resize_tpb;       /* tiles of a sample a resize block makes: 0
                                (default) chosen from the batch's size;
                                tests set it to cover every choice (the
                                same bytes) */
  float mean[4];             /* per channel, as gf_transform's */
  float std[4];              /* per channel; 0 means 1 */
  void *dst;                 /* n * out_h * out_w * out_c elements, dense;
                                aligned to at least its element size (16
                                bytes lets the kernels store 4 at a time) */
  int32_t *status;           /* optional (NULL): set to the first problem
                                a kernel meets with a sample that
                                gf_xform_validate would have refused:
                                GF_ESHAPE (bounds, channels),
                                GF_EUNSUPPORTED (filtered row too wide),
                                -EINVAL (filtered sample but n_filtered 0,
                                bad flags; a resized sample with
                                n_resized 0 is left unwritten); that
                                sample's output is all
                                padding. Leave it 0 before the launch. */
} gf_xform_launch;

/* Enqueues the transform of a->n samples on stream s: crop/pad or
 * resize (a third kernel, for the samples with resize set; when every
 * sample is resized, n_resized == n and n_filtered 0, that kernel alone,
 * which then also pads and reports refused samples, and pads a sample
 * that is not resized after all), flip,
 * conversion and normalisation in one pass; gradient-filtered samples are
 * unfiltered inside the same pass by a second kernel of the same launch
 * (one block a sample, no intermediate global buffer), which writes
 * exactly those samples' outputs. *a is read before the call returns.
 * Returns cudaSuccess, cudaErrorInvalidValue (NULL pointers, unknown dtype
 * or layout, output out of GF_XFORM limits, dst misaligned, legacy stream,
 * unknown resize_path, resize_rows over 32)
 * or the launch's error. */
cudaError_t gf_launch_xform(const gf_xform_launch *a, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* GF_KERNELS_H */
