/* The loader's dataset metadata: epoch size, class names, source paths
 * (gpufeed.h). Reads only what create fixed, so any thread may call. */
#include "pipeline/loader_impl.h"

#include <stdio.h>

int gf_loader_epoch_size(gf_loader *l, uint64_t *samples, uint64_t *batches) {
  if (!l)
    return gf_loader__cfg_fail("epoch_size", "needs a loader");
  if (l->stream) {
    /* Known only once an epoch's stream has ended (stream.h). */
    if (samples)
      *samples = 0;
    if (batches)
      *batches = 0;
    return 0;
  }
  /* l->share is this rank's share of a full epoch (sampler.h section 4),
   * fixed at create; section 5 makes the batches of it. */
  uint64_t b = l->cfg.batch_size;
  uint64_t nb = l->cfg.drop_last ? l->share / b : (l->share + b - 1) / b;
  if (samples)
    *samples = l->cfg.drop_last ? nb * b : l->share;
  if (batches)
    *batches = nb;
  return 0;
}

uint32_t gf_loader_class_count(gf_loader *l) {
  return l ? gf_source_class_count(l->src) : 0;
}

/* Copies len bytes of name into buf as a NUL-terminated string; -ENOBUFS
 * (buf holds what fits) when it does not fit. */
static int put_name(const char *what, const char *name, size_t len, char *buf,
                    size_t cap) {
  if (len > (size_t)INT32_MAX)
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s is %zu bytes long", what, len);
  if (cap > 0) {
    size_t n = len < cap - 1 ? len : cap - 1;
    memcpy(buf, name, n);
    buf[n] = '\0';
  }
  if (len >= cap)
    return gf_fail(-ENOBUFS, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s needs a buffer of %zu bytes, got %zu", what, len + 1,
                   cap);
  return (int)len;
}

int gf_loader_class_name(gf_loader *l, uint32_t label, char *buf, size_t cap) {
  if (!l || !buf)
    return gf_loader__cfg_fail("class_name", "needs a loader and a buffer");
  char what[64];
  snprintf(what, sizeof what, "class %u's name", label);
  uint32_t n = gf_source_class_count(l->src);
  if (n == 0) {
    char dec[16];
    int len = snprintf(dec, sizeof dec, "%u", label);
    return put_name(what, dec, (size_t)len, buf, cap);
  }
  const char *name = gf_source_class_name(l->src, label);
  if (label >= n || !name)
    return gf_fail(-ERANGE, gf_storage_display(gf_source_storage(l->src)),
                   GF_NO_INDEX, GF_NO_INDEX,
                   "label %u is not a class: the source has %u classes", label,
                   n);
  return put_name(what, name, strlen(name), buf, cap);
}

int gf_loader_sample_path(gf_loader *l, uint64_t index, char *buf,
                          size_t cap) {
  if (!l || !buf)
    return gf_loader__cfg_fail("sample_path", "needs a loader and a buffer");
  const char *name;
  size_t len;
  int rc = gf_source_sample_path(l->src, index, &name, &len);
  if (rc == -ERANGE)
    return gf_fail(
        -ERANGE, gf_storage_display(gf_source_storage(l->src)), index,
        GF_NO_INDEX, "sample %llu is beyond the source's %llu samples",
        (unsigned long long)index, (unsigned long long)gf_source_count(l->src));
  if (rc < 0)
    return rc;
  char what[64];
  snprintf(what, sizeof what, "sample %llu's path", (unsigned long long)index);
  return put_name(what, name, len, buf, cap);
}
