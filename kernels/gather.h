/* The gather kernel: copies many byte ranges from anywhere the device can
 * read (pinned host memory mapped into the device's address space, or
 * device memory) into one device buffer, in a single launch. The GPU stage
 * uses it to take cached samples straight out of the pinned host cache
 * (zero-copy reads over the bus), with no CPU copy into a staging buffer.
 *
 * Work is cut into tiles of GF_GATHER_TILE bytes of one range; a block
 * copies a tile with 16-byte loads when source and destination allow it,
 * keeping a tile's loads in flight together to hide the bus latency. The
 * caller gives each range the number of its first tile (a prefix sum over
 * the ranges), so a block finds its range by binary search, and bounds the
 * grid (max_blocks), so the copy occupies only a few SMs while the
 * training step's kernels run beside it. Only CUDA builds include this. */
#ifndef GF_GATHER_H
#define GF_GATHER_H

#include "gather_seg.h"

#include <cuda_runtime.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GF_GATHER_TILE 65536u
#define GF_GATHER_THREADS 256u

/* gf_gather_seg (one range: src, dst, len, tile0) is in gather_seg.h. */

/* Tiles a range of len bytes is cut into. */
static inline uint64_t gf_gather_tiles(uint64_t len) {
  return (len + GF_GATHER_TILE - 1) / GF_GATHER_TILE;
}

/* Enqueues on s the copy of segs[0..n) (device memory, ordered by tile0,
 * tiles the total) into dst. The ranges were checked on the host: each
 * dst + len lies inside the destination, sources do not overlap it. grid:
 * min(tiles, max_blocks) blocks (max_blocks 0: 1). Returns cudaSuccess,
 * cudaErrorInvalidValue (NULL pointers, legacy stream) or the launch's
 * error. n 0 launches nothing. */
cudaError_t gf_launch_gather(const gf_gather_seg *segs, uint32_t n,
                             uint64_t tiles, uint8_t *dst,
                             uint32_t max_blocks, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif /* GF_GATHER_H */
