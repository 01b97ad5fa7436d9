/* Error codes from the one table in gpufeed.h, the per-thread error
 * context behind gf_last_error(), and gf_say for the reasons internal calls
 * hand back in a buffer. */
#include "common/common.h"

#include <stdio.h>
#include <string.h>

static _Thread_local gf_error_info tls_err = {0, GF_NO_INDEX, GF_NO_INDEX, "", ""};

const char *gf_strerror(int err) {
  switch (err) {
#define GF_STRERROR_CASE_(name, value, msg) \
  case value:                               \
    return msg;
    GF_ERRNO_MAP(GF_STRERROR_CASE_)
#undef GF_STRERROR_CASE_
  case 0:
    return "success";
  default:
    break;
  }
  if (err < 0 && err > -4096) {
    /* glibc returns a constant string for every known errno. */
    const char *s = strerrordesc_np(-err);
    if (s)
      return s;
  }
  return "unknown error";
}

const char *gf_err_name(int err) {
  switch (err) {
#define GF_ERRNAME_CASE_(name, value, msg) \
  case value:                              \
    return "GF_E" #name;
    GF_ERRNO_MAP(GF_ERRNAME_CASE_)
#undef GF_ERRNAME_CASE_
  case 0:
    return "OK";
  default:
    break;
  }
  if (err < 0 && err > -4096) {
    const char *s = strerrorname_np(-err);
    if (s)
      return s;
  }
  return "UNKNOWN";
}

const gf_error_info *gf_last_error(void) { return &tls_err; }

void gf_error_restore(const gf_error_info *e) { tls_err = *e; }

void gf_error_clear(void) {
  tls_err.code = 0;
  tls_err.sample = GF_NO_INDEX;
  tls_err.offset = GF_NO_INDEX;
  tls_err.path[0] = '\0';
  tls_err.message[0] = '\0';
}

/* Appends s to dst (capacity cap, length *n), truncating; keeps dst
 * NUL-terminated. Plain copies instead of snprintf("%s%s"): messages are
 * cut at their buffer's end on purpose. */
static void append(char *dst, size_t cap, size_t *n, const char *s) {
  size_t len = strlen(s);
  if (*n + 1 >= cap)
    return;
  if (len > cap - 1 - *n)
    len = cap - 1 - *n;
  memcpy(dst + *n, s, len);
  *n += len;
  dst[*n] = '\0';
}

static void append_u64(char *dst, size_t cap, size_t *n, const char *label,
                       uint64_t v) {
  char num[48];
  snprintf(num, sizeof num, "%s %llu: ", label, (unsigned long long)v);
  append(dst, cap, n, num);
}

static void set_path(const char *path) {
  size_t n = 0;
  tls_err.path[0] = '\0';
  append(tls_err.path, sizeof tls_err.path, &n, path ? path : "");
}

int gf_vfail(int code, const char *path, uint64_t sample, uint64_t offset,
             const char *fmt, va_list ap) {
  char what[768];
  vsnprintf(what, sizeof what, fmt, ap);
  tls_err.code = code;
  tls_err.sample = sample;
  tls_err.offset = offset;
  set_path(path);
  /* The message names where: "FILE: sample N: offset O: what". */
  char *m = tls_err.message;
  size_t cap = sizeof tls_err.message, n = 0;
  m[0] = '\0';
  if (path && path[0]) {
    append(m, cap, &n, path);
    append(m, cap, &n, ": ");
  }
  if (sample != GF_NO_INDEX)
    append_u64(m, cap, &n, "sample", sample);
  if (offset != GF_NO_INDEX)
    append_u64(m, cap, &n, "offset", offset);
  append(m, cap, &n, what);
  return code;
}

int gf_fail(int code, const char *path, uint64_t sample, uint64_t offset,
            const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gf_vfail(code, path, sample, offset, fmt, ap);
  va_end(ap);
  return code;
}

int gf_fail_context(int code, const char *path, uint64_t sample,
                    const char *prefix) {
  if (tls_err.code != code) {
    /* The callee returned without recording (an errno from the OS): make a
     * message from the code itself. */
    return gf_fail(code, path, sample, GF_NO_INDEX, "%s%s%s",
                   prefix ? prefix : "", prefix ? ": " : "",
                   gf_strerror(code));
  }
  bool add_path = path && path[0] && !tls_err.path[0];
  bool add_sample = sample != GF_NO_INDEX && tls_err.sample == GF_NO_INDEX;
  if (!add_path && !add_sample && !prefix)
    return code;
  char old[sizeof tls_err.message];
  memcpy(old, tls_err.message, sizeof old);
  char *m = tls_err.message;
  size_t cap = sizeof tls_err.message, n = 0;
  m[0] = '\0';
  if (add_path) {
    set_path(path);
    append(m, cap, &n, path);
    append(m, cap, &n, ": ");
  }
  if (add_sample) {
    tls_err.sample = sample;
    append_u64(m, cap, &n, "sample", sample);
  }
  if (prefix) {
    append(m, cap, &n, prefix);
    append(m, cap, &n, ": ");
  }
  append(m, cap, &n, old);
  return code;
}

void gf_say(char *why, size_t cap, const char *fmt, ...) {
  if (!why || !cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, cap, fmt, ap);
  va_end(ap);
}
