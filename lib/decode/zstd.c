/* zstd compression and decompression (the only file that includes zstd.h).
 *
 * Contexts are per thread, as zstd asks ("one context per thread"): created
 * on a thread's first call and freed by a pthread key destructor when the
 * thread exits, so a decode worker pays for its context once. */
#include "decode/decode.h"

#include <pthread.h>
#include <stdlib.h>
#include <zstd.h>

typedef struct zstd_tls {
  ZSTD_DCtx *dctx;
  ZSTD_CCtx *cctx;
} zstd_tls;

static pthread_key_t zstd_key;
static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;
static int zstd_key_err;

static void zstd_tls_free(void *p) {
  zstd_tls *t = p;
  ZSTD_freeDCtx(t->dctx);
  ZSTD_freeCCtx(t->cctx);
  free(t);
}

static void zstd_key_init(void) {
  zstd_key_err = pthread_key_create(&zstd_key, zstd_tls_free);
}

static zstd_tls *zstd_tls_get(void) {
  if (pthread_once(&zstd_once, zstd_key_init) != 0 || zstd_key_err)
    return NULL;
  zstd_tls *t = pthread_getspecific(zstd_key);
  if (t)
    return t;
  t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  if (pthread_setspecific(zstd_key, t) != 0) {
    free(t);
    return NULL;
  }
  return t;
}

static ZSTD_DCtx *dctx_get(void) {
  zstd_tls *t = zstd_tls_get();
  if (t && !t->dctx)
    t->dctx = ZSTD_createDCtx();
  return t ? t->dctx : NULL;
}

static ZSTD_CCtx *cctx_get(void) {
  zstd_tls *t = zstd_tls_get();
  if (t && !t->cctx)
    t->cctx = ZSTD_createCCtx();
  return t ? t->cctx : NULL;
}

int gf_zstd_compress(const void *src, size_t len, int level, void **dst,
                     size_t *dst_len) {
  if (!dst || !dst_len || (!src && len))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_zstd_compress: NULL argument");
  *dst = NULL;
  *dst_len = 0;
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "zstd level %d is out of range (expected %d to %d)", level,
                   ZSTD_minCLevel(), ZSTD_maxCLevel());
  size_t bound = ZSTD_compressBound(len);
  if (ZSTD_isError(bound))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%zu bytes are too many for one zstd frame", len);
  ZSTD_CCtx *cctx = cctx_get();
  void *buf = malloc(bound ? bound : 1);
  if (!cctx || !buf) {
    free(buf);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a zstd context or %zu output bytes",
                   bound);
  }
  /* Reset so a level or parameter left by an earlier call never leaks into
   * this frame. The content size goes into the header (the decoder checks
   * it before decompressing) and a content checksum at the end (4 bytes, so
   * damaged data is an error, not wrong pixels). */
  size_t r = ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  if (!ZSTD_isError(r))
    r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  if (!ZSTD_isError(r))
    r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
  if (!ZSTD_isError(r))
    r = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  if (!ZSTD_isError(r))
    r = ZSTD_compress2(cctx, buf, bound, src, len);
  if (ZSTD_isError(r)) {
    free(buf);
    return gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "zstd compression failed: %s", ZSTD_getErrorName(r));
  }
  /* Give back the slack of the worst-case bound. */
  void *shrunk = realloc(buf, r ? r : 1);
  *dst = shrunk ? shrunk : buf;
  *dst_len = r;
  return 0;
}

int gf_zstd_check_frame(const void *src, size_t len, size_t want) {
  if (!src || !len)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "empty zstd sample (expected a frame of %zu bytes)", want);
  unsigned long long csize = ZSTD_getFrameContentSize(src, len);
  if (csize == ZSTD_CONTENTSIZE_ERROR)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "not a zstd frame (bad magic or frame header, %zu bytes)",
                   len);
  if (csize != ZSTD_CONTENTSIZE_UNKNOWN && csize != want)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "zstd frame holds %llu bytes, expected %zu for the "
                   "sample's shape",
                   csize, want);
  size_t fsize = ZSTD_findFrameCompressedSize(src, len);
  if (ZSTD_isError(fsize))
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "zstd frame of %zu bytes is damaged or truncated: %s", len,
                   ZSTD_getErrorName(fsize));
  if (fsize != len)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%zu bytes of trailing data after the zstd frame (%zu "
                   "bytes); expected exactly one frame",
                   len - fsize, fsize);
  return 0;
}

int gf_zstd_decompress(const void *src, size_t len, void *dst, size_t want) {
  if (!dst && want)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_zstd_decompress: NULL destination");
  int rc = gf_zstd_check_frame(src, len, want);
  if (rc < 0)
    return rc;
  ZSTD_DCtx *dctx = dctx_get();
  if (!dctx)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a zstd decompression context");
  /* The one-shot API decodes straight into dst and refuses to write past
   * `want`, so a frame of unknown size that is larger fails here. */
  size_t r = ZSTD_decompressDCtx(dctx, dst, want, src, len);
  if (ZSTD_isError(r))
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "zstd decompression failed: %s (expected %zu bytes)",
                   ZSTD_getErrorName(r), want);
  if (r != want)
    return gf_fail(GF_EDECODE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "zstd frame decoded to %zu bytes, expected %zu", r, want);
  return 0;
}

/* The zstd codec: the decoded pixels zstd-compressed. */
static int zstd_check(const void *src, size_t len, const gf_shape *stored) {
  return gf_zstd_check_frame(src, len, (size_t)gf_shape_bytes(stored));
}

static int zstd_unpack(const void *src, size_t len, const gf_shape *stored,
                       uint8_t *dst, size_t n) {
  (void)stored;
  return gf_zstd_decompress(src, len, dst, n);
}

static int zstd_encode(const void *pixels, const gf_shape *shape, int level,
                       void **dst, size_t *dst_len) {
  return gf_zstd_compress(pixels, (size_t)gf_shape_bytes(shape),
                          level ? level : 3, dst, dst_len);
}

const gf_codec_ops gf_codec_zstd = {
    .id = GF_CODEC_ZSTD,
    .name = "zstd",
    .caps = 0,
    .check = zstd_check,
    .unpack = zstd_unpack,
    .encode = zstd_encode,
};
