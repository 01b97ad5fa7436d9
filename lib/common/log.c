/* Logging to stderr, filtered by the GPUFEED_LOG environment variable. */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_level(void) {
  /* Read once; a race between first callers writes the same value. */
  static volatile int level = -1;
  int l = level;
  if (l < 0) {
    const char *e = getenv("GPUFEED_LOG");
    l = GF_LOG_WARN;
    if (e) {
      if (!strcmp(e, "error")) l = GF_LOG_ERROR;
      else if (!strcmp(e, "info")) l = GF_LOG_INFO;
      else if (!strcmp(e, "debug")) l = GF_LOG_DEBUG;
    }
    level = l;
  }
  return l;
}

bool gf_log_enabled(int level) { return level <= log_level(); }

void gf_log(int level, const char *fmt, ...) {
  if (!gf_log_enabled(level))
    return;
  static const char *const names[] = {"error", "warn", "info", "debug"};
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "gpufeed %s: %s\n", names[level & 3], line);
}
