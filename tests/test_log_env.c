/* GPUFEED_LOG: an unknown value is an error (as GPUFEED_IO's is), named
 * with the accepted values by gf_log_env_check; the known ones and unset
 * pass, and logging keeps working (default warn) whatever the value. */
#include "testutil.h"
#include "common/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void check_bad(const char *value) {
  setenv("GPUFEED_LOG", value, 1);
  gf_error_clear();
  CHECK_ERR(gf_log_env_check(), -EINVAL);
  const char *m = gf_last_error()->message;
  CHECK(strstr(m, "GPUFEED_LOG") != NULL);
  CHECK(strstr(m, value) != NULL);
  CHECK(strstr(m, "error, warn, info or debug") != NULL);
}

int main(void) {
  unsetenv("GPUFEED_LOG");
  CHECK_OK(gf_log_env_check());
  static const char *const good[] = {"error", "warn", "info", "debug", ""};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    setenv("GPUFEED_LOG", good[i], 1);
    CHECK_OK(gf_log_env_check());
  }
  check_bad("bogus");
  check_bad("DEBUG"); /* names are lower case, as documented */
  check_bad("warning");
  check_bad("3");
  /* Read at each call: fixing the variable clears the error. */
  setenv("GPUFEED_LOG", "info", 1);
  CHECK_OK(gf_log_env_check());
  /* Logging with a bad value keeps the default level (warn). */
  setenv("GPUFEED_LOG", "bogus", 1);
  CHECK(gf_log_enabled(GF_LOG_WARN));
  CHECK(!gf_log_enabled(GF_LOG_INFO));
  return gf_test_finish();
}
