/* The part of nvJPEG's C API that gpu/nvjpeg_cuda.c and
 * gpu/nvjpeg_decode_cuda.c call, declared here because nvjpeg.h is not
 * installed everywhere gpufeed builds: the library is loaded with dlopen
 * and these are the types of what dlsym returns.
 * Written from NVIDIA's nvJPEG documentation (CUDA 12 and 13: "nvJPEG Type
 * Declarations", "nvJPEG API Reference"); every value and layout below is
 * the library's ABI, so each one is stated with its C type and checked for
 * size where a mistake could hide.
 *
 * Names carry a gf_nvj prefix so that they can never clash with the real
 * header's. Enumerations travel as int (a C enum's type on every ABI
 * nvJPEG ships for). cudaStream_t is `struct CUstream_st *`, written out
 * so that this header needs no CUDA header. Only nvjpeg_impl.h includes
 * it. */
#ifndef GF_GPU_NVJPEG_API_H
#define GF_GPU_NVJPEG_API_H

#include <stddef.h>

struct CUstream_st;

/* nvjpegStatus_t */
typedef int gf_nvj_status;
#define GF_NVJ_STATUS_SUCCESS 0
#define GF_NVJ_STATUS_NOT_INITIALIZED 1
#define GF_NVJ_STATUS_INVALID_PARAMETER 2
#define GF_NVJ_STATUS_BAD_JPEG 3
#define GF_NVJ_STATUS_JPEG_NOT_SUPPORTED 4
#define GF_NVJ_STATUS_ALLOCATOR_FAILURE 5
#define GF_NVJ_STATUS_EXECUTION_FAILED 6
#define GF_NVJ_STATUS_ARCH_MISMATCH 7
#define GF_NVJ_STATUS_INTERNAL_ERROR 8
#define GF_NVJ_STATUS_IMPLEMENTATION_NOT_SUPPORTED 9
#define GF_NVJ_STATUS_INCOMPLETE_BITSTREAM 10

/* nvjpegBackend_t */
#define GF_NVJ_BACKEND_DEFAULT 0
#define GF_NVJ_BACKEND_HYBRID 1
#define GF_NVJ_BACKEND_GPU_HYBRID 2
#define GF_NVJ_BACKEND_HARDWARE 3

/* nvjpegOutputFormat_t (only the two used) */
#define GF_NVJ_OUTPUT_Y 2    /* luma only, into channel[0] */
#define GF_NVJ_OUTPUT_RGBI 5 /* interleaved RGB, into channel[0] */

/* nvjpegChromaSubsampling_t */
#define GF_NVJ_CSS_444 0
#define GF_NVJ_CSS_UNKNOWN (-1)

/* nvjpegJpegEncoding_t: the SOF marker's second byte. */
#define GF_NVJ_ENCODING_BASELINE_DCT 0xc0
#define GF_NVJ_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN 0xc1
#define GF_NVJ_ENCODING_PROGRESSIVE_DCT_HUFFMAN 0xc2

/* nvjpegCreateEx / nvjpegCreateExV2 flags (bit fields). */
#define GF_NVJ_FLAGS_DEFAULT 0u
#define GF_NVJ_FLAGS_HW_DECODE_NO_PIPELINE 1u
#define GF_NVJ_FLAGS_UPSAMPLING_WITH_INTERPOLATION 32u

/* libraryPropertyType (library_types.h) */
#define GF_NVJ_MAJOR_VERSION 0
#define GF_NVJ_MINOR_VERSION 1
#define GF_NVJ_PATCH_LEVEL 2

/* NVJPEG_MAX_COMPONENT */
#define GF_NVJ_MAX_COMPONENT 4

/* nvjpegImage_t: per plane, a device pointer and its pitch in bytes (for
 * interleaved formats only plane 0 is written). size_t pitches since CUDA
 * 10.1's nvJPEG. */
typedef struct gf_nvj_image {
  unsigned char *channel[GF_NVJ_MAX_COMPONENT];
  size_t pitch[GF_NVJ_MAX_COMPONENT];
} gf_nvj_image;
_Static_assert(sizeof(gf_nvj_image) == 8 * sizeof(void *),
               "nvjpegImage_t: four pointers then four size_t");

/* nvjpegDevAllocatorV2_t and nvjpegPinnedAllocatorV2_t: stream-ordered
 * allocators with a context; 0 is success, anything else failure. */
typedef int (*gf_nvj_malloc_v2)(void *ctx, void **ptr, size_t size,
                                struct CUstream_st *stream);
typedef int (*gf_nvj_free_v2)(void *ctx, void *ptr, size_t size,
                              struct CUstream_st *stream);
typedef struct gf_nvj_dev_allocator_v2 {
  gf_nvj_malloc_v2 dev_malloc;
  gf_nvj_free_v2 dev_free;
  void *dev_ctx;
} gf_nvj_dev_allocator_v2;
typedef struct gf_nvj_pinned_allocator_v2 {
  gf_nvj_malloc_v2 pinned_malloc;
  gf_nvj_free_v2 pinned_free;
  void *pinned_ctx;
} gf_nvj_pinned_allocator_v2;
_Static_assert(sizeof(gf_nvj_dev_allocator_v2) == 3 * sizeof(void *),
               "nvjpegDevAllocatorV2_t: malloc, free, context");
_Static_assert(sizeof(gf_nvj_pinned_allocator_v2) == 3 * sizeof(void *),
               "nvjpegPinnedAllocatorV2_t: malloc, free, context");

/* Opaque handles (nvjpegHandle_t, nvjpegJpegState_t, nvjpegJpegStream_t):
 * pointers to the library's structs. */
typedef struct gf_nvj_handle_s *gf_nvj_handle;
typedef struct gf_nvj_state_s *gf_nvj_state;
typedef struct gf_nvj_jstream_s *gf_nvj_jstream;

/* The functions, one pointer type each, named after the symbol. */
typedef gf_nvj_status (*gf_nvj_GetProperty)(int type, int *value);
typedef gf_nvj_status (*gf_nvj_CreateExV2)(
    int backend, gf_nvj_dev_allocator_v2 *dev_allocator,
    gf_nvj_pinned_allocator_v2 *pinned_allocator, unsigned int flags,
    gf_nvj_handle *handle);
typedef gf_nvj_status (*gf_nvj_Destroy)(gf_nvj_handle handle);
typedef gf_nvj_status (*gf_nvj_GetHardwareDecoderInfo)(
    gf_nvj_handle handle, unsigned int *num_engines,
    unsigned int *num_cores_per_engine);
typedef gf_nvj_status (*gf_nvj_JpegStateCreate)(gf_nvj_handle handle,
                                                 gf_nvj_state *state);
typedef gf_nvj_status (*gf_nvj_JpegStateDestroy)(gf_nvj_state state);
typedef gf_nvj_status (*gf_nvj_DecodeBatchedInitialize)(
    gf_nvj_handle handle, gf_nvj_state state, int batch_size,
    int max_cpu_threads, int output_format);
typedef gf_nvj_status (*gf_nvj_DecodeBatched)(
    gf_nvj_handle handle, gf_nvj_state state,
    const unsigned char *const *data, const size_t *lengths,
    gf_nvj_image *destinations, struct CUstream_st *stream);
typedef gf_nvj_status (*gf_nvj_DecodeBatchedPreAllocate)(
    gf_nvj_handle handle, gf_nvj_state state, int batch_size, int width,
    int height, int chroma_subsampling, int output_format);
typedef gf_nvj_status (*gf_nvj_DecodeBatchedSupported)(
    gf_nvj_handle handle, gf_nvj_jstream jpeg_stream, int *is_supported);
typedef gf_nvj_status (*gf_nvj_JpegStreamCreate)(gf_nvj_handle handle,
                                                  gf_nvj_jstream *jpeg_stream);
typedef gf_nvj_status (*gf_nvj_JpegStreamDestroy)(gf_nvj_jstream jpeg_stream);
typedef gf_nvj_status (*gf_nvj_JpegStreamParseHeader)(
    gf_nvj_handle handle, const unsigned char *data, size_t length,
    gf_nvj_jstream jpeg_stream);
typedef gf_nvj_status (*gf_nvj_JpegStreamGetFrameDimensions)(
    gf_nvj_jstream jpeg_stream, unsigned int *width, unsigned int *height);
typedef gf_nvj_status (*gf_nvj_JpegStreamGetComponentsNum)(
    gf_nvj_jstream jpeg_stream, unsigned int *components_num);
typedef gf_nvj_status (*gf_nvj_JpegStreamGetJpegEncoding)(
    gf_nvj_jstream jpeg_stream, int *jpeg_encoding);
typedef gf_nvj_status (*gf_nvj_JpegStreamGetSamplePrecision)(
    gf_nvj_jstream jpeg_stream, unsigned int *precision);

#endif /* GF_GPU_NVJPEG_API_H */
