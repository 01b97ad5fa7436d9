/* The GPU JPEG decoder (lib/gpu/nvjpeg_cuda.c, nvjpeg_decode_cuda.c) on a
 * real device with NVIDIA's libnvjpeg, for each backend the GPU has
 * (hardware, GPU hybrid):
 *   - a batch of copies of two small JPEGs embedded below (a colour
 *     gradient, 4:2:0, and a grey one), to RGB and to luma, against the
 *     pattern they were made from (within what JPEG at quality 95 loses);
 *   - testorig.jpg against libjpeg's islow decode of it (testorig.ppm),
 *     the maximum and mean absolute difference stated and bounded (TOL_*,
 *     and REP_* with chroma repeated, GF_NVJPEG_REPEAT_CHROMA); its
 *     progressive twin decoded or left to the CPU, as the backend says;
 *     the arithmetic-coded and 12-bit ones left to the CPU;
 *   - corrupt input (cut in its headers, not a JPEG, empty, cut in its
 *     scan) in a batch with good images: each bad one fails naming its
 *     sample, the good ones decode, and the next batch is whole;
 *   - a batched call failing as a whole (injected: nvjpeg_batch), decoded
 *     again one image at a time with the same pixels;
 *   - calls queued back to back (of two sizes, RGB and luma), the stream
 *     waited for only after the last: every image of every call right;
 *   - a buffer too small for its image: GF_ESHAPE for that image alone;
 *   - the budgets: nvJPEG's allocations counted and within them, the
 *     device budget reserved at open and given back at close, and budgets
 *     too small: GF_EDEVOOM naming the budget, no crash (the hardware
 *     backend takes nothing through the hooks: there, what it holds
 *     beyond the budget is measured and bounded instead: opened as the
 *     loader opens it, after full batches of 273 x 280 images, at most
 *     what the memory plan prints for it, GF_NVJPEG_ENGINE_BYTES).
 * Before any device: opening with a library that is not there gives
 * GF_EUNSUPPORTED and a reason that says so.
 * Skips (77) without a CUDA device or without libnvjpeg (a failure under
 * GPUFEED_REQUIRE_GPU=1); the testorig parts need ../shared/data/jpeg
 * (GPUFEED_TEST_DATA) and are left out without it. */
#include "cuda_testutil.h"
#include "gpu_testutil.h"

#include "common/fault.h"
#include "decode/decode.h"
#include "gpu/nvjpeg.h"

#include <stdlib.h>
#include <string.h>

/* testorig.jpg decoded by nvJPEG against testorig.ppm (libjpeg, islow
 * IDCT, "fancy" chroma upsampling): the largest and the mean absolute
 * difference over all samples that this test accepts, with chroma
 * interpolated (the default; nvJPEG 13.0 on an H200: 3 and 0.19 with
 * either backend) and repeated (34 and 1.37). testimgint.jpg, progressive,
 * was encoded apart from testorig.jpg: against the same reference it
 * measured 17 / 0.47 and 30 / 1.43. */
#define TOL_MAX 4
#define TOL_MEAN 0.25
#define REP_MAX 40
#define REP_MEAN 1.5
#define PROG_MAX 40
#define PROG_MEAN 1.5
/* The embedded images against the pattern they were made from (libjpeg
 * itself decodes them within 5 and 0.66 of it, grey exactly). */
#define EMB_MAX 16
#define EMB_MEAN 2.0

/* 48 x 32, RGB (4x + 40, 6y + 30, 2(x + y) + 60), quality 95, 4:2:0,
 * baseline, made by libjpeg (PIL). */
static const uint8_t k_color_jpg[909] = {
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01,
    0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xdb, 0x00, 0x43,
    0x00, 0x02, 0x01, 0x01, 0x01, 0x01, 0x01, 0x02, 0x01, 0x01, 0x01, 0x02,
    0x02, 0x02, 0x02, 0x02, 0x04, 0x03, 0x02, 0x02, 0x02, 0x02, 0x05, 0x04,
    0x04, 0x03, 0x04, 0x06, 0x05, 0x06, 0x06, 0x06, 0x05, 0x06, 0x06, 0x06,
    0x07, 0x09, 0x08, 0x06, 0x07, 0x09, 0x07, 0x06, 0x06, 0x08, 0x0b, 0x08,
    0x09, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x06, 0x08, 0x0b, 0x0c, 0x0b, 0x0a,
    0x0c, 0x09, 0x0a, 0x0a, 0x0a, 0xff, 0xdb, 0x00, 0x43, 0x01, 0x02, 0x02,
    0x02, 0x02, 0x02, 0x02, 0x05, 0x03, 0x03, 0x05, 0x0a, 0x07, 0x06, 0x07,
    0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
    0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
    0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
    0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
    0x0a, 0x0a, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x20, 0x00, 0x30, 0x03,
    0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xc4, 0x00,
    0x1f, 0x00, 0x00, 0x01, 0x05, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05,
    0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0xff, 0xc4, 0x00, 0xb5, 0x10, 0x00,
    0x02, 0x01, 0x03, 0x03, 0x02, 0x04, 0x03, 0x05, 0x05, 0x04, 0x04, 0x00,
    0x00, 0x01, 0x7d, 0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21,
    0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81,
    0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24,
    0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25,
    0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a,
    0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56,
    0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a,
    0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86,
    0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
    0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3,
    0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6,
    0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9,
    0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1,
    0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xff, 0xc4, 0x00,
    0x1f, 0x01, 0x00, 0x03, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05,
    0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0xff, 0xc4, 0x00, 0xb5, 0x11, 0x00,
    0x02, 0x01, 0x02, 0x04, 0x04, 0x03, 0x04, 0x07, 0x05, 0x04, 0x04, 0x00,
    0x01, 0x02, 0x77, 0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31,
    0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08,
    0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15,
    0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18,
    0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39,
    0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55,
    0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84,
    0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
    0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
    0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4,
    0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7,
    0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea,
    0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xff, 0xda, 0x00,
    0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00, 0xfc,
    0xd9, 0xd1, 0x7e, 0x1d, 0x74, 0xfd, 0xc7, 0xe9, 0x5d, 0x76, 0x8b, 0xf0,
    0xef, 0xa7, 0xee, 0x3f, 0x4a, 0xf4, 0xad, 0x17, 0xe1, 0xd7, 0x4f, 0xdc,
    0x7e, 0x95, 0xd7, 0x68, 0xbf, 0x0e, 0xfa, 0x7e, 0xe3, 0xf4, 0xaf, 0xa2,
    0xa3, 0x99, 0x6b, 0xb9, 0xc1, 0xc3, 0xbc, 0x63, 0xb7, 0xbc, 0x79, 0xa6,
    0x8b, 0xf0, 0xef, 0xa7, 0xee, 0x3f, 0x4a, 0xeb, 0xb4, 0x5f, 0x87, 0x7d,
    0x3f, 0x71, 0xfa, 0x57, 0xa5, 0x68, 0xbf, 0x0e, 0xfa, 0x7e, 0xe3, 0xf4,
    0xae, 0xbb, 0x45, 0xf8, 0x77, 0xd3, 0xf7, 0x1f, 0xa5, 0x7a, 0x94, 0x73,
    0x2f, 0x33, 0xf7, 0x6e, 0x1d, 0xe3, 0x1d, 0xbd, 0xe3, 0xcd, 0x34, 0x5f,
    0x87, 0x7d, 0x3f, 0x71, 0xfa, 0x57, 0x5d, 0xa2, 0xfc, 0x3a, 0xe9, 0xfb,
    0x8f, 0xd2, 0xbd, 0x2b, 0x45, 0xf8, 0x77, 0xd3, 0xf7, 0x1f, 0xa5, 0x75,
    0xda, 0x2f, 0xc3, 0xae, 0x9f, 0xb8, 0xfd, 0x2b, 0xd5, 0xa3, 0x99, 0x69,
    0xb9, 0xfb, 0xaf, 0x0e, 0xf1, 0x8f, 0xc3, 0xef, 0x1e, 0x27, 0xa2, 0xfc,
    0x3a, 0xe9, 0xfb, 0x8f, 0xd2, 0xba, 0xed, 0x17, 0xe1, 0xdf, 0x4f, 0xdc,
    0x7e, 0x95, 0xe9, 0x5a, 0x2f, 0xc3, 0xae, 0x9f, 0xb8, 0xfd, 0x2b, 0xae,
    0xd1, 0x7e, 0x1d, 0xf4, 0xfd, 0xc7, 0xe9, 0x5f, 0x8b, 0x51, 0xcc, 0xbc,
    0xcf, 0xf1, 0xa7, 0x87, 0x78, 0xc7, 0x6f, 0x78, 0xf3, 0x4d, 0x17, 0xe1,
    0xdf, 0x4f, 0xdc, 0x7e, 0x95, 0xd7, 0x68, 0xbf, 0x0e, 0xfa, 0x7e, 0xe3,
    0xf4, 0xaf, 0x4a, 0xd1, 0x7e, 0x1d, 0xf4, 0xfd, 0xc7, 0xe9, 0x5d, 0x76,
    0x8b, 0xf0, 0xef, 0xa7, 0xee, 0x3f, 0x4a, 0xf5, 0x68, 0xe6, 0x5a, 0x6e,
    0x7e, 0xeb, 0xc3, 0xbc, 0x63, 0xf0, 0xfb, 0xc7, 0x9a, 0x68, 0xbf, 0x0e,
    0xfa, 0x7e, 0xe3, 0xf4, 0xae, 0xbb, 0x45, 0xf8, 0x75, 0xd3, 0xf7, 0x1f,
    0xa5, 0x7a, 0x56, 0x8b, 0xf0, 0xef, 0xa7, 0xee, 0x3f, 0x4a, 0xeb, 0xb4,
    0x5f, 0x87, 0x5d, 0x3f, 0x71, 0xfa, 0x57, 0xab, 0x47, 0x32, 0xdb, 0x53,
    0xf7, 0x6e, 0x1d, 0xe3, 0x1d, 0xbd, 0xe3, 0xff, 0xd9,
};
/* 24 x 16, grey 5x + 3y + 20, quality 95, baseline. */
static const uint8_t k_gray_jpg[399] = {
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01,
    0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xdb, 0x00, 0x43,
    0x00, 0x02, 0x01, 0x01, 0x01, 0x01, 0x01, 0x02, 0x01, 0x01, 0x01, 0x02,
    0x02, 0x02, 0x02, 0x02, 0x04, 0x03, 0x02, 0x02, 0x02, 0x02, 0x05, 0x04,
    0x04, 0x03, 0x04, 0x06, 0x05, 0x06, 0x06, 0x06, 0x05, 0x06, 0x06, 0x06,
    0x07, 0x09, 0x08, 0x06, 0x07, 0x09, 0x07, 0x06, 0x06, 0x08, 0x0b, 0x08,
    0x09, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x06, 0x08, 0x0b, 0x0c, 0x0b, 0x0a,
    0x0c, 0x09, 0x0a, 0x0a, 0x0a, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x10,
    0x00, 0x18, 0x01, 0x01, 0x11, 0x00, 0xff, 0xc4, 0x00, 0x1f, 0x00, 0x00,
    0x01, 0x05, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    0x09, 0x0a, 0x0b, 0xff, 0xc4, 0x00, 0xb5, 0x10, 0x00, 0x02, 0x01, 0x03,
    0x03, 0x02, 0x04, 0x03, 0x05, 0x05, 0x04, 0x04, 0x00, 0x00, 0x01, 0x7d,
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06,
    0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08,
    0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72,
    0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45,
    0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59,
    0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75,
    0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3,
    0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
    0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9,
    0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
    0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4,
    0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xff, 0xda, 0x00, 0x08, 0x01, 0x01,
    0x00, 0x00, 0x3f, 0x00, 0xfc, 0xbf, 0xf8, 0x49, 0xe0, 0x8f, 0xf5, 0x5f,
    0xb9, 0xf4, 0xed, 0x5f, 0x50, 0x7c, 0x24, 0xf0, 0x47, 0xfa, 0xaf, 0xdc,
    0xfa, 0x76, 0xaf, 0xa8, 0x3e, 0x12, 0x78, 0x23, 0xfd, 0x57, 0xee, 0x7d,
    0x3b, 0x57, 0xc3, 0xff, 0x00, 0x09, 0x3c, 0x11, 0xfe, 0xab, 0xf7, 0x3e,
    0x9d, 0xab, 0xea, 0x0f, 0x84, 0x9e, 0x08, 0xff, 0x00, 0x55, 0xfb, 0x9f,
    0x4e, 0xd5, 0xf5, 0x07, 0xc2, 0x4f, 0x04, 0x7f, 0xaa, 0xfd, 0xcf, 0xa7,
    0x6a, 0xff, 0xd9,
};

enum { CW = 48, CH = 32, GW = 24, GH = 16 };

static uint8_t color_px(uint32_t x, uint32_t y, uint32_t c) {
  return (uint8_t)(c == 0   ? 4 * x + 40
                   : c == 1 ? 6 * y + 30
                            : 2 * (x + y) + 60);
}
static uint8_t gray_px(uint32_t x, uint32_t y) {
  return (uint8_t)(5 * x + 3 * y + 20);
}
/* JFIF's luma of the colour pattern. */
static uint8_t color_luma(uint32_t x, uint32_t y) {
  double v = 0.299 * color_px(x, y, 0) + 0.587 * color_px(x, y, 1) +
             0.114 * color_px(x, y, 2);
  return (uint8_t)(v + 0.5);
}

#define MAXN 256
#define SLOT (256u << 10) /* device bytes an image: 227 x 149 x 3 fits */

static cudaStream_t stream;
static uint8_t *arena;    /* MAXN slots, device */
static uint8_t *host_out; /* their copy */
static gf_nvjpeg_image imgs[MAXN];

typedef struct job {
  const uint8_t *data;
  size_t len;
  uint32_t channels;
  const char *name;
} job;

/* Decodes jobs[0..n) into slots 0..n-1 (poisoned first) and copies them
 * back. Returns the call's status. */
static int run(gf_nvjpeg *h, const job *jobs, uint32_t n,
               gf_nvjpeg_result *res) {
  memset(imgs, 0, n * sizeof imgs[0]);
  for (uint32_t i = 0; i < n; i++) {
    imgs[i].data = jobs[i].data;
    imgs[i].len = jobs[i].len;
    imgs[i].dst = arena + (size_t)i * SLOT;
    imgs[i].dst_cap = SLOT;
    imgs[i].channels = jobs[i].channels;
    imgs[i].sample = 1000 + i;
    imgs[i].name = jobs[i].name;
  }
  CUDA_OK(cudaMemsetAsync(arena, 0xA5, (size_t)n * SLOT, stream));
  int rc = gf_nvjpeg_decode(h, imgs, n, res);
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(host_out, arena, (size_t)n * SLOT,
                     cudaMemcpyDeviceToHost));
  return rc;
}

typedef struct diff {
  int max;
  double mean;
} diff;

/* Slot i's output against the embedded pattern it should hold. */
static diff against_pattern(uint32_t i, bool color, uint32_t channels) {
  const uint8_t *p = host_out + (size_t)i * SLOT;
  uint32_t w = color ? CW : GW, ht = color ? CH : GH;
  diff d = {0, 0};
  for (uint32_t y = 0; y < ht; y++)
    for (uint32_t x = 0; x < w; x++)
      for (uint32_t c = 0; c < channels; c++) {
        int want = color ? (channels == 3 ? color_px(x, y, c)
                                          : color_luma(x, y))
                         : gray_px(x, y);
        int e = abs((int)p[((size_t)y * w + x) * channels + c] - want);
        d.max = e > d.max ? e : d.max;
        d.mean += e;
      }
  d.mean /= (double)w * ht * channels;
  return d;
}

static diff against(const uint8_t *got, const uint8_t *want, size_t n) {
  diff d = {0, 0};
  for (size_t k = 0; k < n; k++) {
    int e = abs((int)got[k] - (int)want[k]);
    d.max = e > d.max ? e : d.max;
    d.mean += e;
  }
  d.mean /= (double)n;
  return d;
}

/* A batch of copies of the embedded images, to RGB and to luma. */
static void embedded(gf_nvjpeg *h, const char *label) {
  enum { N = 96 };
  job jobs[N];
  for (uint32_t i = 0; i < N; i++) {
    bool color = i % 2 == 0;
    jobs[i] = (job){color ? k_color_jpg : k_gray_jpg,
                    color ? sizeof k_color_jpg : sizeof k_gray_jpg,
                    i % 4 < 2 ? 3u : 1u, color ? "color.jpg" : "gray.jpg"};
  }
  gf_nvjpeg_result res;
  CHECK_OK(run(h, jobs, N, &res));
  CHECK(res.decoded == N && res.failed == 0 && res.unsupported == 0);
  diff worst[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  for (uint32_t i = 0; i < N; i++) {
    bool color = i % 2 == 0;
    uint32_t kind = i % 4; /* 0 colour RGB, 1 grey RGB, 2 colour Y, 3 grey Y */
    if (imgs[i].status != 0) {
      fprintf(stderr, "%s: image %u: %s\n", label, i, imgs[i].why);
      CHECK(imgs[i].status == 0);
      continue;
    }
    CHECK(imgs[i].width == (color ? CW : GW) &&
          imgs[i].height == (color ? CH : GH));
    diff d = against_pattern(i, color, jobs[i].channels);
    if (d.max > worst[kind].max)
      worst[kind].max = d.max;
    if (d.mean > worst[kind].mean)
      worst[kind].mean = d.mean;
    /* Every copy of a kind the same bytes as its first. */
    size_t bytes = (size_t)(color ? CW * CH : GW * GH) * jobs[i].channels;
    CHECK(memcmp(host_out + (size_t)i * SLOT, host_out + (size_t)kind * SLOT,
                 bytes) == 0);
    /* Nothing written past the image. */
    CHECK(host_out[(size_t)i * SLOT + bytes] == 0xA5);
  }
  static const char *kinds[4] = {"colour to RGB", "grey to RGB",
                                 "colour to luma", "grey to luma"};
  for (int k = 0; k < 4; k++) {
    printf("%s: embedded %s: max %d, mean %.3f against the pattern\n", label,
           kinds[k], worst[k].max, worst[k].mean);
    CHECK(worst[k].max <= EMB_MAX && worst[k].mean <= EMB_MEAN);
  }
}

/* A P6 PPM with maxval 255: its pixels (malloc'd), width and height. */
static uint8_t *read_ppm(const char *path, uint32_t *w, uint32_t *ht) {
  size_t len = 0;
  uint8_t *f = gf_test_read_file(path, &len);
  if (!f)
    return NULL;
  unsigned W = 0, H = 0, M = 0;
  int used = 0;
  if (sscanf((const char *)f, "P6 %u %u %u%n", &W, &H, &M, &used) != 3 ||
      M != 255 || (size_t)used + 1 + (size_t)W * H * 3 > len) {
    free(f);
    return NULL;
  }
  uint8_t *px = malloc((size_t)W * H * 3);
  memcpy(px, f + used + 1, (size_t)W * H * 3);
  free(f);
  *w = W;
  *ht = H;
  return px;
}

typedef struct refdata {
  uint8_t *orig, *prog, *ari, *b12, *ppm;
  size_t orig_len, prog_len, ari_len, b12_len;
  uint32_t w, h;
} refdata;

static bool load_ref(refdata *r) {
  memset(r, 0, sizeof *r);
  const char *data = gf_test_data_dir();
  if (!data)
    return false;
  char p[1024];
  snprintf(p, sizeof p, "%s/jpeg/testorig.jpg", data);
  r->orig = gf_test_read_file(p, &r->orig_len);
  snprintf(p, sizeof p, "%s/jpeg/testimgint.jpg", data);
  r->prog = gf_test_read_file(p, &r->prog_len);
  snprintf(p, sizeof p, "%s/jpeg/testimgari.jpg", data);
  r->ari = gf_test_read_file(p, &r->ari_len);
  snprintf(p, sizeof p, "%s/jpeg/monkey12.jpg", data);
  r->b12 = gf_test_read_file(p, &r->b12_len);
  snprintf(p, sizeof p, "%s/jpeg/testorig.ppm", data);
  r->ppm = read_ppm(p, &r->w, &r->h);
  return r->orig && r->prog && r->ari && r->b12 && r->ppm;
}

/* testorig.jpg against libjpeg's decode; its twins. */
static void reference(gf_nvjpeg *h, const char *label, const refdata *r,
                      int tol_max, double tol_mean) {
  enum { N = 36 };
  job jobs[N];
  for (uint32_t i = 0; i < N; i++)
    jobs[i] = (job){r->orig, r->orig_len, 3, "testorig.jpg"};
  jobs[1] = (job){r->prog, r->prog_len, 3, "testimgint.jpg"};
  jobs[2] = (job){r->ari, r->ari_len, 3, "testimgari.jpg"};
  jobs[3] = (job){r->b12, r->b12_len, 3, "monkey12.jpg"};
  gf_nvjpeg_result res;
  CHECK_OK(run(h, jobs, N, &res));
  size_t bytes = (size_t)r->w * r->h * 3;
  diff worst = {0, 0};
  for (uint32_t i = 0; i < N; i++) {
    if (i >= 1 && i <= 3)
      continue;
    CHECK(imgs[i].status == 0 && imgs[i].width == r->w &&
          imgs[i].height == r->h);
    diff d = against(host_out + (size_t)i * SLOT, r->ppm, bytes);
    worst.max = d.max > worst.max ? d.max : worst.max;
    worst.mean = d.mean > worst.mean ? d.mean : worst.mean;
    CHECK(memcmp(host_out + (size_t)i * SLOT, host_out, bytes) == 0);
  }
  printf("%s: testorig.jpg against libjpeg's islow decode (testorig.ppm): "
         "max abs diff %d, mean %.3f (accepted: %d, %.2f)\n",
         label, worst.max, worst.mean, tol_max, tol_mean);
  CHECK(worst.max <= tol_max && worst.mean <= tol_mean);
  /* Progressive: decoded (nvJPEG 13's batched decoder takes it on both
   * backends) or left to the CPU, as the probe says. */
  printf("%s: testimgint.jpg (progressive): status %s%s%s\n", label,
         gf_err_name(imgs[1].status), imgs[1].why[0] ? ": " : "", imgs[1].why);
  gf_nvjpeg_info info;
  CHECK_OK(gf_nvjpeg_probe(h, r->prog, r->prog_len, &info));
  CHECK(info.width == r->w && info.height == r->h && info.components == 3);
  CHECK(imgs[1].status == (info.supported ? 0 : GF_EUNSUPPORTED));
  if (imgs[1].status == 0) {
    diff d = against(host_out + SLOT, r->ppm, bytes);
    printf("%s: testimgint.jpg against testorig.ppm: max %d, mean %.3f\n",
           label, d.max, d.mean);
    CHECK(d.max <= PROG_MAX && d.mean <= PROG_MEAN);
  }
  /* Arithmetic coding and 12-bit samples: the CPU decoder's (or, for
   * the 12-bit one, refused as what nvJPEG cannot read). */
  for (int i = 2; i <= 3; i++) {
    printf("%s: %s: status %s: %s\n", label, jobs[i].name,
           gf_err_name(imgs[i].status), imgs[i].why);
    CHECK(imgs[i].status == GF_EUNSUPPORTED ||
          (i == 3 && imgs[i].status == GF_EDECODE));
    CHECK(strstr(imgs[i].why, jobs[i].name) != NULL);
  }
  CHECK(res.decoded == N - 2 - (imgs[1].status != 0));
}

/* Bad input among good; then a whole batch. */
static void corrupt(gf_nvjpeg *h, const char *label) {
  static const uint8_t not_jpeg[] = "this file is not a JPEG at all, it is "
                                    "plain text that went astray";
  /* The scan starts at byte 623: cut 150 bytes before the end, or its
   * middle scrambled. */
  size_t cut = sizeof k_color_jpg - 150;
  static uint8_t scrambled[sizeof k_color_jpg];
  memcpy(scrambled, k_color_jpg, sizeof scrambled);
  uint64_t rs = 7;
  for (size_t k = 660; k < 860; k++)
    scrambled[k] = (uint8_t)(gf_test_rand(&rs) % 255); /* never 0xFF */
  enum { N = 10 };
  job jobs[N] = {
      {k_color_jpg, sizeof k_color_jpg, 3, "good0.jpg"},
      {k_color_jpg, 100, 3, "cut100.jpg"},
      {k_color_jpg, sizeof k_color_jpg, 3, "good2.jpg"},
      {not_jpeg, sizeof not_jpeg, 3, "text.jpg"},
      {k_color_jpg, cut, 3, "cutscan.jpg"},
      {k_color_jpg, sizeof k_color_jpg, 1, "good5.jpg"},
      {k_color_jpg, 0, 3, "empty.jpg"},
      {k_gray_jpg, sizeof k_gray_jpg, 3, "good7.jpg"},
      {k_color_jpg, sizeof k_color_jpg, 3, "good8.jpg"},
      {scrambled, sizeof scrambled, 3, "scrambled.jpg"},
  };
  gf_nvjpeg_result res;
  CHECK_OK(run(h, jobs, N, &res));
  for (uint32_t i = 0; i < N; i++)
    printf("%s: corrupt batch: %-13s %-16s %s\n", label, jobs[i].name,
           gf_err_name(imgs[i].status), imgs[i].why);
  static const uint32_t good[] = {0, 2, 5, 7, 8};
  for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
    uint32_t i = good[k];
    CHECK(imgs[i].status == 0);
    diff d = against_pattern(i, jobs[i].data == k_color_jpg, jobs[i].channels);
    CHECK(d.max <= EMB_MAX && d.mean <= EMB_MEAN);
  }
  CHECK(imgs[1].status == GF_EDECODE);
  CHECK(strstr(imgs[1].why, "sample 1001") &&
        strstr(imgs[1].why, "cut100.jpg"));
  CHECK(imgs[3].status == GF_EDECODE || imgs[3].status == GF_EUNSUPPORTED);
  CHECK(strstr(imgs[3].why, "text.jpg") != NULL);
  CHECK(imgs[6].status == GF_EDECODE && strstr(imgs[6].why, "empty.jpg"));
  /* Cut in its scan: decoded from what is there, or refused; either way
   * named when refused. */
  CHECK(imgs[4].status == 0 || strstr(imgs[4].why, "cutscan.jpg"));
  CHECK(imgs[9].status == 0 || strstr(imgs[9].why, "scrambled.jpg"));
  printf("%s: corrupt batch: %u decoded, %u failed, %u unsupported, %u "
         "batched calls, %u fallbacks\n",
         label, res.decoded, res.failed, res.unsupported, res.batch_calls,
         res.fallbacks);
  /* The next batch is whole. */
  job next[16];
  for (uint32_t i = 0; i < 16; i++)
    next[i] = (job){k_color_jpg, sizeof k_color_jpg, 3, "after.jpg"};
  CHECK_OK(run(h, next, 16, &res));
  CHECK(res.decoded == 16 && res.fallbacks == 0);
  for (uint32_t i = 0; i < 16; i++) {
    diff d = against_pattern(i, true, 3);
    CHECK(imgs[i].status == 0 && d.max <= EMB_MAX);
  }
}

/* A batched call failing as a whole. */
static void fallback(gf_nvjpeg *h, const char *label) {
  enum { N = 12 };
  job jobs[N];
  for (uint32_t i = 0; i < N; i++)
    jobs[i] = (job){i % 3 ? k_color_jpg : k_gray_jpg,
                    i % 3 ? sizeof k_color_jpg : sizeof k_gray_jpg, 3,
                    "fallback.jpg"};
  CHECK_OK(gf_fault_arm(GF_FAULT_NVJPEG_BATCH, 1, GF_ECUDA, 0));
  gf_nvjpeg_result res;
  CHECK_OK(run(h, jobs, N, &res));
  CHECK(gf_fault_fired(GF_FAULT_NVJPEG_BATCH) == 1);
  gf_fault_disarm(GF_FAULT_NVJPEG_BATCH);
  printf("%s: a batch failing as a whole: %u decoded one at a time, %u "
         "fallback\n",
         label, res.decoded, res.fallbacks);
  CHECK(res.decoded == N && res.fallbacks == 1 && res.batch_calls == 1);
  for (uint32_t i = 0; i < N; i++) {
    diff d = against_pattern(i, i % 3 != 0, 3);
    CHECK(imgs[i].status == 0 && d.max <= EMB_MAX && d.mean <= EMB_MEAN);
  }
}

/* Calls queued back to back, the stream waited for only at the end: a
 * decode state (or its arrays) reused before its last decode has finished
 * would mix the images up. */
static void back_to_back(gf_nvjpeg *h, const char *label) {
  enum { CALLS = 6, MOST = 40 };
  static const uint32_t count[CALLS] = {40, 33, 40, 40, 33, 40};
  static gf_nvjpeg_image im[CALLS][MOST];
  uint32_t slot = 0;
  bool color[MAXN];
  uint32_t chans[MAXN];
  CUDA_OK(cudaMemsetAsync(arena, 0xA5, (size_t)MAXN * SLOT, stream));
  for (uint32_t c = 0; c < CALLS; c++) {
    for (uint32_t i = 0; i < count[c]; i++, slot++) {
      color[slot] = (c + i) % 2 == 0;
      chans[slot] = c == 2 ? 1 : 3;
      im[c][i] = (gf_nvjpeg_image){
          .data = color[slot] ? k_color_jpg : k_gray_jpg,
          .len = color[slot] ? sizeof k_color_jpg : sizeof k_gray_jpg,
          .dst = arena + (size_t)slot * SLOT,
          .dst_cap = SLOT,
          .channels = chans[slot],
          .sample = slot,
          .name = "queued.jpg"};
    }
    gf_nvjpeg_result res;
    CHECK_OK(gf_nvjpeg_decode(h, im[c], count[c], &res));
    CHECK(res.decoded == count[c]);
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(host_out, arena, (size_t)slot * SLOT,
                     cudaMemcpyDeviceToHost));
  uint32_t bad = 0;
  for (uint32_t k = 0; k < slot; k++) {
    diff d = against_pattern(k, color[k], chans[k]);
    bad += d.max > EMB_MAX || d.mean > EMB_MEAN;
  }
  printf("%s: %u calls queued back to back: %u of %u images wrong\n", label,
         CALLS, bad, slot);
  CHECK(bad == 0);
}

/* A buffer too small: that image alone. */
static void too_small(gf_nvjpeg *h) {
  gf_nvjpeg_image im[3];
  memset(im, 0, sizeof im);
  for (int i = 0; i < 3; i++) {
    im[i].data = k_color_jpg;
    im[i].len = sizeof k_color_jpg;
    im[i].dst = arena + (size_t)i * SLOT;
    im[i].dst_cap = i == 1 ? CW * CH * 3 - 1 : SLOT;
    im[i].channels = 3;
    im[i].sample = GF_NO_INDEX;
  }
  gf_nvjpeg_result res;
  CHECK_OK(gf_nvjpeg_decode(h, im, 3, &res));
  CUDA_OK(cudaStreamSynchronize(stream));
  CHECK(im[0].status == 0 && im[2].status == 0);
  CHECK(im[1].status == GF_ESHAPE && strstr(im[1].why, "image 1"));
  CHECK(res.decoded == 2 && res.failed == 1);
  /* Refusals of the call itself. */
  im[0].channels = 2;
  CHECK_ERR(gf_nvjpeg_decode(h, im, 1, &res), -EINVAL);
  im[0].channels = 3;
  CHECK_ERR(gf_nvjpeg_decode(h, im, 0, &res), -EINVAL);
}

static void show_stats(gf_nvjpeg *h, const char *label, gf_nvjpeg_stats *st) {
  gf_nvjpeg_stats_get(h, st);
  printf("%s: nvJPEG %d.%d.%d, backend %s (%u engines x %u cores); device "
         "budget %llu: peak %llu, %llu allocs, %llu frees, %llu refused; "
         "pinned budget %llu: peak %llu, %llu allocs, %llu frees, %llu "
         "refused; %llu frees naming no stream; %llu images, %llu batched "
         "calls, %llu fallbacks, %llu state inits\n",
         label, st->version[0], st->version[1], st->version[2], st->backend,
         st->hw_engines, st->hw_cores, (unsigned long long)st->device_budget,
         (unsigned long long)st->device_peak,
         (unsigned long long)st->device_allocs,
         (unsigned long long)st->device_frees,
         (unsigned long long)st->device_alloc_failures,
         (unsigned long long)st->pinned_budget,
         (unsigned long long)st->pinned_peak,
         (unsigned long long)st->pinned_allocs,
         (unsigned long long)st->pinned_frees,
         (unsigned long long)st->pinned_alloc_failures,
         (unsigned long long)st->null_stream_frees,
         (unsigned long long)st->images,
         (unsigned long long)st->batch_calls,
         (unsigned long long)st->fallbacks, (unsigned long long)st->reinits);
}

static gf_nvjpeg_config config(uint32_t backend) {
  gf_nvjpeg_config c;
  memset(&c, 0, sizeof c);
  c.device = 0;
  c.backend = backend;
  c.stream = stream;
  c.max_batch = MAXN;
  return c;
}

/* Budgets too small: a clear GF_EDEVOOM, at open or at the decode. */
static void small_budget(uint32_t backend, const char *label, bool device) {
  gf_nvjpeg_config c = config(backend);
  if (device)
    c.device_budget = 64 << 10;
  else
    c.pinned_budget = 4 << 10;
  gf_nvjpeg *h = NULL;
  char why[512];
  int rc = gf_nvjpeg_open(&c, &h, why, sizeof why);
  const char *what = device ? "device budget" : "pinned host budget";
  if (rc == 0) {
    enum { N = 64 };
    job jobs[N];
    for (uint32_t i = 0; i < N; i++)
      jobs[i] = (job){k_color_jpg, sizeof k_color_jpg, 3, "budget.jpg"};
    gf_nvjpeg_result res;
    rc = run(h, jobs, N, &res);
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    if (rc == GF_EDEVOOM)
      CHECK(imgs[0].status == GF_EDEVOOM && strstr(imgs[0].why, "budget"));
    gf_nvjpeg_stats st;
    show_stats(h, label, &st);
    if (rc == GF_EDEVOOM)
      CHECK(st.device_alloc_failures + st.pinned_alloc_failures > 0);
    if (rc == 0) {
      /* Only a backend that takes nothing through the hooks (the
       * hardware one) decodes under such a budget, and decodes right. */
      CHECK(st.device_allocs + st.pinned_allocs == 0);
      for (uint32_t i = 0; i < N; i++)
        CHECK(imgs[i].status == 0 &&
              against_pattern(i, true, 3).max <= EMB_MAX);
    }
    gf_nvjpeg_close(h);
  }
  printf("%s: a %s of %u bytes: %s%s%s\n", label, what,
         device ? 64u << 10 : 4u << 10, gf_err_name(rc), rc ? ": " : "",
         rc ? why : " (nothing taken through the hooks)");
  if (rc != 0) {
    CHECK_ERR(rc, GF_EDEVOOM);
    CHECK(strstr(why, what) != NULL);
  }
}

/* The device budget reserved at open and given back at close. */
static void reservation(uint32_t backend, const char *label) {
  uint64_t f0, f1, f2, total;
  CHECK_OK(gf_test_gpu_mem_info(0, &f0, &total));
  gf_nvjpeg_config c = config(backend);
  gf_nvjpeg *h = NULL;
  CHECK_OK(gf_nvjpeg_open(&c, &h, NULL, 0));
  if (!h)
    return;
  job jobs[32];
  for (uint32_t i = 0; i < 32; i++)
    jobs[i] = (job){k_color_jpg, sizeof k_color_jpg, 3, "mem.jpg"};
  gf_nvjpeg_result res;
  CHECK_OK(run(h, jobs, 32, &res));
  CHECK_OK(gf_test_gpu_mem_info(0, &f1, &total));
  gf_nvjpeg_close(h);
  CHECK_OK(gf_test_gpu_mem_info(0, &f2, &total));
  uint64_t budget, pinned;
  gf_nvjpeg_plan(&c, &budget, &pinned);
  printf("%s: device memory: %lld bytes taken while open (budget %llu: "
         "%lld beyond it, nvJPEG's own), %lld given back at close\n",
         label, (long long)(f0 - f1), (unsigned long long)budget,
         (long long)(f0 - f1) - (long long)budget, (long long)(f2 - f1));
  CHECK(f0 >= f1 && f0 - f1 >= budget);
  CHECK(f2 >= f1 && f2 - f1 >= budget);
  /* Beyond the budget, for these small images: nvJPEG 13.0 held 4.8 MB
   * with the hardware backend, 3.5 MB with the GPU hybrid one. */
  CHECK(f0 - f1 - budget <= (64u << 20));
}

/* What the hardware backend holds beside its budgets as the loader opens
 * it (no pipeline, the 16 MiB budgets of gpu_decode auto), after full
 * batches of images as large as a slot takes: at most what the memory
 * plan prints for it, GF_NVJPEG_ENGINE_BYTES. */
static void engines_held(void) {
  enum { S = 280, N = 64 };
  uint8_t *px = malloc((size_t)S * S * 3);
  void *jpg[N];
  size_t len[N];
  gf_shape sh = {S - 7, S, 3, GF_DTYPE_U8};
  for (uint32_t i = 0; i < N; i++) {
    /* A different picture each, with detail everywhere (noise on
     * gradients), 4:2:0 as photos are. */
    uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
    for (size_t k = 0; k < (size_t)S * S * 3; k++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      px[k] = (uint8_t)((k / 3 % S) + (k / (3 * S)) * (i + 1) + (x >> 60));
    }
    gf_jpeg_enc_opts eo = {GF_JPEG_420, false, false, 0};
    CHECK_OK(gf_jpeg_encode_ex(px, &sh, 90, &eo, &jpg[i], &len[i]));
  }
  free(px);
  uint64_t f0, f1, total;
  CHECK_OK(gf_test_gpu_mem_info(0, &f0, &total));
  gf_nvjpeg_config c = config(GF_NVJPEG_HARDWARE);
  c.flags = GF_NVJPEG_NO_PIPELINE;
  c.device_budget = c.pinned_budget = 16u << 20;
  gf_nvjpeg *h = NULL;
  char why[512];
  if (gf_nvjpeg_open(&c, &h, why, sizeof why) != 0) {
    printf("engines: not opened: %s\n", why);
    for (uint32_t i = 0; i < N; i++)
      free(jpg[i]);
    return;
  }
  job jobs[MAXN];
  for (uint32_t i = 0; i < MAXN; i++)
    jobs[i] = (job){jpg[i % N], len[i % N], 3, "held.jpg"};
  gf_nvjpeg_result res;
  for (int round = 0; round < 3; round++) {
    CHECK_OK(run(h, jobs, MAXN, &res));
    CHECK(res.decoded == MAXN);
  }
  CHECK_OK(gf_test_gpu_mem_info(0, &f1, &total));
  gf_nvjpeg_stats st;
  gf_nvjpeg_stats_get(h, &st);
  int64_t held = (int64_t)(f0 - f1) - (int64_t)c.device_budget;
  printf("engines: %u x %u images, batches of %u, no pipeline: %.1f MiB "
         "held beside the budget (planned: %.1f MiB); %llu device bytes "
         "through the hooks at the peak\n",
         S - 7, S, MAXN, (double)held / 1048576.0,
         (double)GF_NVJPEG_ENGINE_BYTES / 1048576.0,
         (unsigned long long)st.device_peak);
  CHECK(f0 >= f1 && held <= (int64_t)GF_NVJPEG_ENGINE_BYTES);
  gf_nvjpeg_close(h);
  for (uint32_t i = 0; i < N; i++)
    free(jpg[i]);
}

static void one_backend(uint32_t backend, const refdata *r, bool have_ref) {
  const char *label = backend == GF_NVJPEG_HARDWARE ? "hardware" : "gpu_hybrid";
  gf_nvjpeg_config c = config(backend);
  gf_nvjpeg *h = NULL;
  char why[512];
  int rc = gf_nvjpeg_open(&c, &h, why, sizeof why);
  if (rc == GF_EUNSUPPORTED && backend == GF_NVJPEG_HARDWARE) {
    printf("%s: not on this GPU: %s\n", label, why);
    return;
  }
  CHECK_OK(rc);
  if (rc < 0)
    return;
  CHECK(strcmp(gf_nvjpeg_backend_name(h), label) == 0);
  embedded(h, label);
  if (have_ref)
    reference(h, label, r, TOL_MAX, TOL_MEAN);
  corrupt(h, label);
  fallback(h, label);
  back_to_back(h, label);
  too_small(h);
  gf_nvjpeg_stats st;
  show_stats(h, label, &st);
  /* The GPU hybrid backend's memory comes through the hooks; the hardware
   * backend's does not (reservation() bounds what it holds beside). */
  if (backend == GF_NVJPEG_GPU_HYBRID)
    CHECK(st.device_allocs > 0 && st.pinned_allocs > 0);
  CHECK(st.device_peak <= st.device_budget &&
        st.pinned_peak <= st.pinned_budget);
  CHECK(st.device_alloc_failures == 0 && st.pinned_alloc_failures == 0);
  CHECK(st.fallbacks >= 1);
  gf_nvjpeg_close(h);
  small_budget(backend, label, true);
  small_budget(backend, label, false);
  reservation(backend, label);
  if (backend == GF_NVJPEG_HARDWARE)
    engines_held();
  /* Chroma repeated, as nvJPEG does by default. */
  if (have_ref) {
    c.flags = GF_NVJPEG_REPEAT_CHROMA;
    CHECK_OK(gf_nvjpeg_open(&c, &h, why, sizeof why));
    if (h) {
      char l2[64];
      snprintf(l2, sizeof l2, "%s, chroma repeated", label);
      reference(h, l2, r, REP_MAX, REP_MEAN);
      gf_nvjpeg_close(h);
    }
  }
}

int main(void) {
  /* Before any device. The stream is never used on these paths. */
  gf_nvjpeg_config c;
  memset(&c, 0, sizeof c);
  c.stream = (void *)1;
  c.max_batch = 4;
  c.library = "libnvjpeg-gpufeed-absent.so.1";
  gf_nvjpeg *h = (gf_nvjpeg *)&c;
  char why[512];
  CHECK_ERR(gf_nvjpeg_open(&c, &h, why, sizeof why), GF_EUNSUPPORTED);
  CHECK(h == NULL);
  printf("without the library: %s\n", why);
  CHECK(strstr(why, "libnvjpeg-gpufeed-absent.so.1") != NULL);
  CHECK(strstr(why, "CPU") != NULL);
  CHECK(strcmp(why, gf_last_error()->message) == 0);
  c.library = NULL;
  c.stream = NULL;
  CHECK_ERR(gf_nvjpeg_open(&c, &h, why, sizeof why), -EINVAL);
  CHECK(strstr(why, "stream") != NULL);
  uint64_t d = 0, p = 0;
  gf_nvjpeg_plan(&c, &d, &p);
  CHECK(d == GF_NVJPEG_DEFAULT_DEVICE_BASE +
                  4 * GF_NVJPEG_DEFAULT_DEVICE_PER_IMAGE &&
        p == GF_NVJPEG_DEFAULT_PINNED_BUDGET);
  c.device_budget = 1000;
  c.pinned_budget = 2000;
  gf_nvjpeg_plan(&c, &d, &p);
  CHECK(d == 1000 && p == 2000);
  if (gf_test_failures)
    return gf_test_finish();

  gf_test_need_cuda_device();
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  c = config(GF_NVJPEG_AUTO);
  int rc = gf_nvjpeg_open(&c, &h, why, sizeof why);
  if (rc == GF_EUNSUPPORTED && strstr(why, "cannot load"))
    gf_test_skip(true, "%s", why);
  CHECK_OK(rc);
  if (rc == 0) {
    printf("auto: %s\n", gf_nvjpeg_backend_name(h));
    gf_nvjpeg_close(h);
  }
  CUDA_OK(cudaMalloc((void **)&arena, (size_t)MAXN * SLOT));
  host_out = malloc((size_t)MAXN * SLOT);
  refdata r;
  bool have_ref = load_ref(&r);
  if (!have_ref)
    printf("no ../shared/data/jpeg (GPUFEED_TEST_DATA): the comparison with "
           "libjpeg is left out\n");
  one_backend(GF_NVJPEG_HARDWARE, &r, have_ref);
  one_backend(GF_NVJPEG_GPU_HYBRID, &r, have_ref);
  free(r.orig);
  free(r.prog);
  free(r.ari);
  free(r.b12);
  free(r.ppm);
  free(host_out);
  CUDA_CHECK(cudaFree(arena));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return gf_test_finish();
}
