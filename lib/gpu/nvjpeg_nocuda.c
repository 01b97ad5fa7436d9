/* The GPU JPEG decoder in a build without CUDA: it never opens, and says
 * why. The other calls cannot be reached without a handle. */
#include "gpu/nvjpeg.h"

#ifndef GPUFEED_HAVE_CUDA
int gf_nvjpeg_open(const gf_nvjpeg_config *cfg, gf_nvjpeg **out, char *why,
                   size_t cap) {
  (void)cfg;
  if (out)
    *out = NULL;
  int rc = gf_fail(GF_ENODEVICE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "nvJPEG is not available, JPEG is decoded on the CPU: "
                   "this gpufeed was built without CUDA");
  if (why && cap)
    gf_strlcpy(why, gf_last_error()->message, cap);
  return rc;
}

void gf_nvjpeg_close(gf_nvjpeg *h) { (void)h; }

const char *gf_nvjpeg_backend_name(const gf_nvjpeg *h) {
  (void)h;
  return "none";
}

int gf_nvjpeg_probe(gf_nvjpeg *h, const uint8_t *data, size_t len,
                    gf_nvjpeg_info *info) {
  (void)h, (void)data, (void)len, (void)info;
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "gf_nvjpeg_probe: no decoder can exist without CUDA");
}

int gf_nvjpeg_decode(gf_nvjpeg *h, gf_nvjpeg_image *imgs, uint32_t n,
                     gf_nvjpeg_result *res) {
  (void)h, (void)imgs, (void)n, (void)res;
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "gf_nvjpeg_decode: no decoder can exist without CUDA");
}

void gf_nvjpeg_stats_get(gf_nvjpeg *h, gf_nvjpeg_stats *st) {
  (void)h;
  *st = (gf_nvjpeg_stats){.backend = "none"};
}
#endif /* !GPUFEED_HAVE_CUDA */
