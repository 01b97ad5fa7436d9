/* Internal helpers shared by every part of the library: error context,
 * logging, checked arithmetic, allocation. Not installed. */
#ifndef GF_COMMON_H
#define GF_COMMON_H

#include "gpufeed.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define GF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define GF_LIKELY(x) __builtin_expect(!!(x), 1)
#define GF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GF_PRINTF(a, b)
#define GF_LIKELY(x) (x)
#define GF_UNLIKELY(x) (x)
#endif

/* Records an error for the calling thread (see gf_last_error()) and returns
 * `code`, so a failure site reads `return gf_fail(GF_ECORRUPT, path, idx,
 * off, "...", ...);`. path may be NULL; idx/off may be GF_NO_INDEX. The
 * message should be a full sentence naming what was expected. */
int gf_fail(int code, const char *path, uint64_t sample, uint64_t offset,
            const char *fmt, ...) GF_PRINTF(5, 6);
/* Same with a va_list. */
int gf_vfail(int code, const char *path, uint64_t sample, uint64_t offset,
             const char *fmt, va_list ap) GF_PRINTF(5, 0);
/* Adds context to an error already recorded by a callee (fills path/sample
 * when the callee did not know them, and prefixes the message with
 * `prefix: `). Returns `code` unchanged. */
int gf_fail_context(int code, const char *path, uint64_t sample,
                    const char *prefix);

/* Makes *e the calling thread's last error (hands an error recorded on a
 * worker thread to the caller's thread). Returns nothing. */
void gf_error_restore(const gf_error_info *e);

/* Logging to stderr, filtered by GPUFEED_LOG=error|warn|info|debug (default
 * warn). Any thread. */
enum { GF_LOG_ERROR = 0, GF_LOG_WARN = 1, GF_LOG_INFO = 2, GF_LOG_DEBUG = 3 };
void gf_log(int level, const char *fmt, ...) GF_PRINTF(2, 3);
bool gf_log_enabled(int level);
/* Checks GPUFEED_LOG: 0 when unset, empty or one of error|warn|info|debug;
 * else -EINVAL with gf_last_error() naming the variable, its value and the
 * accepted values (logging itself then keeps the default, warn). Reads the
 * environment at each call. Any thread. */
int gf_log_env_check(void);

/* Overflow-checked arithmetic: return false on overflow. */
static inline bool gf_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline bool gf_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
static inline bool gf_is_pow2(uint64_t x) { return x && !(x & (x - 1)); }
/* Rounds x up to a multiple of the power of two a; false on overflow. */
static inline bool gf_align_up(uint64_t x, uint64_t a, uint64_t *out) {
  uint64_t r;
  if (!gf_add_u64(x, a - 1, &r))
    return false;
  *out = r & ~(a - 1);
  return true;
}
/* Rounds x down to a multiple of the power of two a. */
static inline uint64_t gf_align_down(uint64_t x, uint64_t a) {
  return x & ~(a - 1);
}

/* Applies defaults to zero fields of a limits struct. */
gf_limits gf_limits_resolve(const gf_limits *in);
/* Checks a shape against limits (dims, pixels, bytes). Returns 0 or
 * GF_ELIMIT / GF_ESHAPE with context (path/sample may be NULL/GF_NO_INDEX). */
int gf_limits_check(const gf_limits *lim, const gf_shape *s, const char *path,
                    uint64_t sample);

/* Copies src into dst (capacity cap > 0), cut to fit, always terminated.
 * Returns dst. */
static inline char *gf_strlcpy(char *dst, const char *src, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap && src[n]) {
    dst[n] = src[n];
    n++;
  }
  dst[n] = '\0';
  return dst;
}

/* Formats into why (capacity cap), cut to fit, always terminated; nothing
 * when why is NULL or cap 0. For the reasons (why, cap) that internal
 * calls hand back; cutting is meant (through vsnprintf, which gcc's
 * -Wformat-truncation leaves alone). Any thread. */
void gf_say(char *why, size_t cap, const char *fmt, ...) GF_PRINTF(3, 4);

/* Little-endian loads and stores for the on-disk formats. */
static inline uint16_t gf_le16(const void *p) {
  const uint8_t *b = (const uint8_t *)p;
  return (uint16_t)(b[0] | (b[1] << 8));
}
static inline uint32_t gf_le32(const void *p) {
  const uint8_t *b = (const uint8_t *)p;
  return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
         ((uint32_t)b[3] << 24);
}
static inline uint64_t gf_le64(const void *p) {
  const uint8_t *b = (const uint8_t *)p;
  return (uint64_t)gf_le32(b) | ((uint64_t)gf_le32(b + 4) << 32);
}
static inline void gf_put16(void *p, uint16_t v) {
  uint8_t *b = (uint8_t *)p;
  b[0] = (uint8_t)v;
  b[1] = (uint8_t)(v >> 8);
}
static inline void gf_put32(void *p, uint32_t v) {
  uint8_t *b = (uint8_t *)p;
  b[0] = (uint8_t)v;
  b[1] = (uint8_t)(v >> 8);
  b[2] = (uint8_t)(v >> 16);
  b[3] = (uint8_t)(v >> 24);
}
static inline void gf_put64(void *p, uint64_t v) {
  gf_put32(p, (uint32_t)v);
  gf_put32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* Checks a versioned struct's struct_size (lib/common/struct_size.c). A
 * struct of the API (what: its type name, e.g. "gf_loader_config") is
 * accepted only at a size a header has published for it; an internal one
 * at any size from the size field up to `known` (this build's sizeof).
 * Returns 0, or -EINVAL naming the struct and the sizes accepted. The
 * caller then reads no byte past struct_size. Any thread. */
int gf_check_struct_size(uint32_t given, size_t known, const char *what);

/* This process's resident memory now (/proc/self/statm), in bytes; 0 when
 * it cannot be read. For the bench's report and the soak's leak check. */
uint64_t gf_proc_rss_bytes(void);

/* This process's CPU time so far, all its threads, in ns (0 when the
 * clock is refused). */
uint64_t gf_proc_cpu_ns(void);

/* The CPUs this thread may run on (its affinity mask; the online CPUs
 * where that is refused); at least 1. */
uint32_t gf_proc_cpus(void);

#endif /* GF_COMMON_H */
