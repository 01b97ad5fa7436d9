/* The public device pool's configuration (gf_device_pool_config) checked
 * and settled without a device, so the CUDA and no-CUDA builds refuse the
 * same configs (see pool.h). */
#include "gpu/pool.h"

#include <stdio.h>
#include <string.h>

static int cfg_fail(const char *fmt, ...) GF_PRINTF(1, 2);
static int cfg_fail(const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "gf_device_pool_config: %s", what);
}

int gf_devpool_params_check(const gf_device_pool_config *cfg,
                            gf_devpool_params *out) {
  if (!out)
    return cfg_fail("no output");
  memset(out, 0, sizeof *out);
  if (!cfg)
    return cfg_fail("a pool needs a config: set bytes, fraction, or growth "
                    "with a limit");
  int rc = gf_check_struct_size(cfg->struct_size, sizeof *cfg,
                                "gf_device_pool_config");
  if (rc < 0)
    return rc;
  /* Fields past an older caller's struct_size read as zero. */
  gf_device_pool_config c;
  memset(&c, 0, sizeof c);
  memcpy(&c, cfg, cfg->struct_size);
  if (c.reserved0)
    return cfg_fail("reserved0 must be zero");
  for (size_t i = 0; i < sizeof c.reserved / sizeof c.reserved[0]; i++)
    if (c.reserved[i])
      return cfg_fail("reserved[%zu] must be zero", i);
  if (c.device < 0)
    return cfg_fail("device %d is not a CUDA device ordinal (>= 0)",
                    (int)c.device);
  uint64_t a = c.alignment ? c.alignment : GF_POOL_DEFAULT_ALIGNMENT;
  if (!gf_is_pow2(a))
    return cfg_fail("alignment %u is not a power of two", c.alignment);
  if (c.growth > 1)
    return cfg_fail("growth %u is neither 0 (fixed) nor 1 (grow)", c.growth);
  if (!(c.fraction >= 0.0f && c.fraction <= 1.0f)) /* NaN fails too */
    return cfg_fail("fraction %g is not in (0, 1]", (double)c.fraction);
  if (c.bytes && c.fraction > 0.0f)
    return cfg_fail("both bytes (%llu) and fraction (%g) are set: set one",
                    (unsigned long long)c.bytes, (double)c.fraction);
  if (!c.growth && !c.bytes && c.fraction == 0.0f)
    return cfg_fail("neither bytes nor fraction is set: the pool needs a "
                    "size");
  if (c.growth && !c.bytes && c.fraction == 0.0f && !c.limit)
    return cfg_fail("growth from nothing needs a limit");
  if (!c.growth && c.growth_chunk)
    return cfg_fail("growth_chunk %llu is set but growth is off",
                    (unsigned long long)c.growth_chunk);
  uint64_t bytes = 0;
  if (c.bytes && !gf_align_up(c.bytes, a, &bytes))
    return cfg_fail("bytes %llu overflows when aligned to %llu",
                    (unsigned long long)c.bytes, (unsigned long long)a);
  if (c.limit && bytes > c.limit)
    return cfg_fail("bytes %llu (aligned to %llu: %llu) is above the limit "
                    "%llu",
                    (unsigned long long)c.bytes, (unsigned long long)a,
                    (unsigned long long)bytes, (unsigned long long)c.limit);
  uint64_t chunk = 0;
  if (c.growth) {
    uint64_t want = c.growth_chunk ? c.growth_chunk : GF_POOL_DEFAULT_CHUNK;
    if (!gf_align_up(want, a, &chunk))
      return cfg_fail("growth_chunk %llu overflows when aligned",
                      (unsigned long long)want);
    /* A default chunk larger than a small limit is cut to the limit. */
    if (c.limit && chunk > c.limit) {
      if (c.growth_chunk)
        return cfg_fail("growth_chunk %llu is above the limit %llu",
                        (unsigned long long)c.growth_chunk,
                        (unsigned long long)c.limit);
      chunk = gf_align_down(c.limit, a);
      if (!chunk)
        return cfg_fail("limit %llu holds no %llu-byte aligned block",
                        (unsigned long long)c.limit, (unsigned long long)a);
    }
  }
  out->device = c.device;
  out->bytes = bytes;
  out->fraction = c.fraction;
  out->alignment = a;
  out->growth = c.growth != 0;
  out->growth_chunk = chunk;
  out->limit = c.limit;
  return 0;
}

int gf_devpool_params_settle(gf_devpool_params *pp, uint64_t device_free) {
  if (!pp->bytes && pp->fraction > 0.0) {
    /* long double holds a 64-bit count exactly (x86), so the same free
     * memory always gives the same reservation; fraction <= 1 keeps the
     * product within uint64_t, and the cast truncates (rounds down). */
    long double want = (long double)pp->fraction * (long double)device_free;
    uint64_t b = gf_align_down((uint64_t)want, pp->alignment);
    if (pp->limit && b > pp->limit)
      b = gf_align_down(pp->limit, pp->alignment);
    if (!b)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "gf_device_pool_config: fraction %g of %llu free bytes "
                     "holds no %llu-byte aligned block",
                     pp->fraction, (unsigned long long)device_free,
                     (unsigned long long)pp->alignment);
    pp->bytes = b;
  }
  if (!pp->limit)
    pp->limit = pp->bytes;
  if (pp->growth && pp->growth_chunk > pp->limit) {
    pp->growth_chunk = gf_align_down(pp->limit, pp->alignment);
  }
  return 0;
}
