/* Fuzz target: shard URL brace expansion (lib/format/wds_braces.c).
 *
 * Input: a pattern (up to its first NUL); the last byte, when odd, turns
 * on "::" URL splitting.
 * Promises: a failure records its code and a message; success gives at
 * least one and at most the limit's results (a small limit, 64, tried
 * too: it succeeds exactly when the full expansion has at most 64, with
 * the same first results), each a NUL-terminated string, within the byte
 * limit in all. */
#include "fuzz.h"

#include "format/wds_braces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096)
    return 0;
  char *pat = fuzz_alloc(size + 1);
  memcpy(pat, data, size);
  pat[size] = '\0';
  bool urls = size && (data[size - 1] & 1);
  char **v = NULL, **w = NULL;
  uint64_t n = 0, m = 0;
  int rc = gf_wds_expand(pat, urls, 4096, &v, &n);
  if (rc) {
    FUZZ_CHECK_FAILURE(rc, "gf_wds_expand");
    FUZZ_ASSERT(v == NULL && n == 0);
  } else {
    FUZZ_ASSERT(n >= 1 && n <= 4096);
    uint64_t bytes = 0;
    for (uint64_t i = 0; i < n; i++)
      bytes += strlen(v[i]);
    FUZZ_ASSERT(bytes <= GF_WDS_EXPAND_BYTES_MAX);
  }
  int rc2 = gf_wds_expand(pat, urls, 64, &w, &m);
  if (!rc && n <= 64) {
    FUZZ_ASSERT(rc2 == 0 && m == n);
    for (uint64_t i = 0; i < n; i++)
      FUZZ_ASSERT(!strcmp(v[i], w[i]));
  } else if (!rc) {
    FUZZ_ASSERT(rc2 == GF_ELIMIT);
  }
  if (rc2)
    FUZZ_CHECK_FAILURE(rc2, "gf_wds_expand");
  gf_wds_strings_free(v, n);
  gf_wds_strings_free(w, m);
  free(pat);
  return 0;
}
