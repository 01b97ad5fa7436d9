/* The loco decoder on the GPU (decode/loco_band.h's band decoder, one
 * thread a band): a batch's loco records, copied to the device, decoded
 * into their samples' places in the slot's device input, where the
 * transform then reads them as plain HWC uint8 pixels. CUDA builds only. */
#ifndef GF_KERNELS_LOCO_H
#define GF_KERNELS_LOCO_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "xform/transform.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A sample's part in the decode, filled on the host. */
typedef struct gf_loco_item {
  uint32_t len;   /* its loco record's bytes at src + src_offset (the
                     record starts 4-byte aligned); 0: the bytes there are
                     already its pixels, copied as they are */
  uint32_t band0; /* its first band in the batch's band numbering (a prefix
                     sum of the samples' band counts) */
} gf_loco_item;


typedef struct gf_loco_launch {
  const uint8_t *src;          /* the records (and copied samples) */
  uint64_t src_len;
  uint8_t *dst;                /* the samples' pixels, at the same offsets */
  uint64_t dst_len;
  const gf_xform_sample *samples; /* n: src_offset, h, w, c (device) */
  const gf_loco_item *items;   /* n (device) */
  uint32_t n;
  uint32_t bands;              /* the batch's bands in all */
  uint32_t ncopy;              /* samples with len 0 (0: no copy kernel) */
  uint32_t *error;             /* optional (mapped host memory): set to
                                  1 + the first sample whose record is
                                  malformed (its pixels are zero) */
} gf_loco_launch;

/* Enqueues the decode (and the copies) on s: a thread a band, 64 a block,
 * each band's context state (3,240 bytes) in shared memory. Nothing is
 * read or written outside src[0, src_len) and dst[0, dst_len), whatever
 * the records hold. Returns cudaSuccess, cudaErrorInvalidValue (NULL
 * pointers, a legacy stream) or the launch's error. */
cudaError_t gf_launch_loco(const gf_loco_launch *a, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* GF_KERNELS_LOCO_H */
