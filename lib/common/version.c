#include "common/common.h"

unsigned gf_version(void) { return GF_VERSION_NUMBER; }

#define GF_STR2_(x) #x
#define GF_STR_(x) GF_STR2_(x)
const char *gf_version_string(void) {
  return GF_STR_(GF_VERSION_MAJOR) "." GF_STR_(GF_VERSION_MINOR) "." GF_STR_(
      GF_VERSION_PATCH);
}
