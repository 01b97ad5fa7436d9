/* Fuzz target: the label at a key of a sample's json field
 * (lib/format/wds_json.c).
 *
 * Input: a JSON text; looked up for "label" and for "a".
 * Promises: one of the four results, never a read outside the input; a
 * value is given only when found. */
#include "fuzz.h"

#include "format/wds_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A copy of exactly size bytes: a read past it is a sanitizer report. */
  uint8_t *p = fuzz_alloc(size ? size : 1);
  memcpy(p, data, size);
  static const char *const keys[] = {"label", "a"};
  for (int k = 0; k < 2; k++) {
    int64_t v = 12345;
    int rc = gf_wds_json_int(p, size, keys[k], &v);
    FUZZ_ASSERT(rc == GF_WDS_JSON_FOUND || rc == GF_WDS_JSON_ABSENT ||
                rc == GF_WDS_JSON_BAD || rc == GF_WDS_JSON_NOT_INT);
    if (rc != GF_WDS_JSON_FOUND)
      FUZZ_ASSERT(v == 12345);
  }
  free(p);
  return 0;
}
