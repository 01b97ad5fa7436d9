/* Logging to stderr, filtered by the GPUFEED_LOG environment variable. */
#include "common/common.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* The level GPUFEED_LOG=value names, or -1 when it names none. Unset or
 * empty: the default, warn. */
static int parse_level(const char *e) {
  if (!e || !e[0])
    return GF_LOG_WARN;
  for (int l = GF_LOG_ERROR; l <= GF_LOG_DEBUG; l++)
    if (!strcmp(e, level_names[l]))
      return l;
  return -1;
}

static int log_level(void) {
  /* Read once; first callers racing (threads logging at once) each write
   * the same value: atomic, so that the race is a benign one. */
  static _Atomic int level = -1;
  int l = atomic_load_explicit(&level, memory_order_relaxed);
  if (l < 0) {
    l = parse_level(getenv("GPUFEED_LOG"));
    if (l < 0)
      l = GF_LOG_WARN; /* gf_log_env_check reports it; logging goes on */
    atomic_store_explicit(&level, l, memory_order_relaxed);
  }
  return l;
}

int gf_log_env_check(void) {
  const char *e = getenv("GPUFEED_LOG");
  if (parse_level(e) >= 0)
    return 0;
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "GPUFEED_LOG=%.100s: expected error, warn, info or debug "
                 "(or unset: warn)",
                 e);
}

bool gf_log_enabled(int level) { return level <= log_level(); }

void gf_log(int level, const char *fmt, ...) {
  if (!gf_log_enabled(level))
    return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "gpufeed %s: %s\n", level_names[level & 3], line);
}
