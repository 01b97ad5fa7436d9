/* A per-thread scratch buffer for work that cannot write straight into the
 * caller's buffer (a decode that converts after decompressing, the CPU
 * transform's unfiltered copy of a gradient-filtered sample). Any thread:
 * the state is per thread, released when the thread exits. */
#ifndef GF_SCRATCH_H
#define GF_SCRATCH_H

#include "common/common.h"

/* A buffer of at least n bytes. Small ones are kept for the thread's next
 * call (freed at thread exit), large ones are malloc'd and freed on
 * release. n must have passed the limits. Returns NULL on -ENOMEM (with
 * context recorded). Each gf_scratch_get is paired with one
 * gf_scratch_release; one buffer at a time per thread. */
void *gf_scratch_get(size_t n);
void gf_scratch_release(void *p);

#endif /* GF_SCRATCH_H */
