/* What the tests need of a device beyond the library's calls: reading a
 * device batch back and the device's free memory. Built in every build
 * (part of gpufeed_testutil); without CUDA each call answers
 * GF_ENODEVICE. Any thread. */
#ifndef GF_GPU_TESTUTIL_H
#define GF_GPU_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Copies n bytes of device memory at src to host memory at dst and waits.
 * Returns 0, GF_ENODEVICE or GF_ECUDA (with the error recorded). */
int gf_test_copy_to_host(void *dst, const void *src, size_t n);
/* Free and total device memory of `device` (cudaMemGetInfo). Returns 0,
 * GF_ENODEVICE or GF_ECUDA. */
int gf_test_gpu_mem_info(int32_t device, uint64_t *free_bytes, uint64_t *total);

#endif /* GF_GPU_TESTUTIL_H */
