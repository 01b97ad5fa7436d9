/* Fuzz target: shard lists (lib/format/wds_spec.c): "::" parts, brace
 * patterns, compressed shards refused, the root every shard lies under.
 *
 * Input: a source string (up to its first NUL; inputs holding '@', which
 * would name a list file to open, are left out).
 * Promises: a failure records its code and a message; success gives a
 * non-empty root and at least one name, each non-empty, and root "/" name
 * (the name alone where the root is ".", "/" name where it is "/") is the
 * location itself, runs of '/' aside, for a source without patterns or
 * lists: nothing is lost or made up. */
#include "fuzz.h"

#include "format/wds_spec.h"

/* Runs of '/' made one (after a scheme's "//") and a leading "./" taken
 * off: "a//b" and "a/b", "./a" and "a" name one file, and a root may end
 * in the '/' of such a run or be the "." of "./". */
static void squeeze(char *s) {
  char *w = s, *scheme = strstr(s, "://");
  const char *keep = scheme ? scheme + 3 : s;
  for (const char *r = s; *r; r++)
    if (!(r > keep && *r == '/' && w > s && w[-1] == '/'))
      *w++ = *r;
  *w = '\0';
  while (s[0] == '.' && s[1] == '/' && s[2])
    memmove(s, s + 2, strlen(s + 2) + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2048 || memchr(data, '@', size))
    return 0;
  char *src = fuzz_alloc(size + 1);
  memcpy(src, data, size);
  src[size] = '\0';
  char *root = NULL, **names = NULL;
  uint32_t n = 0;
  (void)gf_wds_spec_claims(src);
  int rc = gf_wds_spec_parse(src, 256, &root, &names, &n);
  if (rc) {
    FUZZ_CHECK_FAILURE(rc, "gf_wds_spec_parse");
    FUZZ_ASSERT(!root && !names && n == 0);
  } else {
    FUZZ_ASSERT(root && root[0] && n >= 1 && n <= 256);
    size_t rl = strlen(root);
    for (uint32_t i = 0; i < n; i++) {
      FUZZ_ASSERT(names[i][0]);
      /* Joined back, the location lies in the source's text (a pattern
       * expands to it: only a plain source is compared whole). */
      if (!strpbrk(src, "{}\\?") && !strstr(src, "::")) {
        char *loc = fuzz_alloc(rl + 1 + strlen(names[i]) + 1);
        if (!strcmp(root, "."))
          strcpy(loc, names[i]);
        else if (!strcmp(root, "/"))
          sprintf(loc, "/%s", names[i]);
        else
          sprintf(loc, "%s/%s", root, names[i]);
        char *want = fuzz_alloc(strlen(src) + 1);
        strcpy(want, src);
        squeeze(want);
        squeeze(loc);
        FUZZ_ASSERT(!strcmp(loc, want));
        free(want);
        free(loc);
      }
    }
    gf_wds_spec_free(root, names, n);
  }
  free(src);
  return 0;
}
