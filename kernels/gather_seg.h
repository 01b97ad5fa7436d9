/* One range of the gather kernel's work list (kernels/gather.h), in plain
 * C: the host fills an array of them in pinned memory and the kernel reads
 * the same bytes, and the GPU stage's memory plan (lib/gpu/stage_plan.c,
 * built with and without CUDA) sizes the device copy of that array from
 * this one definition. */
#ifndef GF_GATHER_SEG_H
#define GF_GATHER_SEG_H

#include <assert.h> /* static_assert */
#include <stddef.h> /* offsetof */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gf_gather_seg {
  uint64_t src;   /* device address of the bytes to copy */
  uint64_t dst;   /* offset in the destination buffer */
  uint64_t len;   /* bytes (> 0) */
  uint64_t tile0; /* tiles of the ranges before this one */
} gf_gather_seg;

/* The C host code and the CUDA kernel must lay it out alike: four packed
 * 8-byte fields, compiled on both sides. */
static_assert(sizeof(gf_gather_seg) == 32 &&
                  offsetof(gf_gather_seg, tile0) == 24,
              "gf_gather_seg must be four unpadded 8-byte fields, the same "
              "in C and CUDA C++");

#ifdef __cplusplus
}
#endif
#endif /* GF_GATHER_SEG_H */
