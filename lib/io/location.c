/* Locations as messages may show them: a URL without what may be a
 * secret in it (its user:password, its query, its fragment), for any
 * scheme, whether or not a storage serves it. A storage that parses its
 * URLs builds its own display form (storage_http_url.c); this is the
 * form of what no parser has accepted. */
#include "io/storage.h"

#include <string.h>

/* Appends n bytes of s to buf (length *len, capacity cap > 0), control
 * characters and DEL as '?', cut to fit. */
static void put(char *buf, size_t cap, size_t *len, const char *s, size_t n) {
  for (size_t i = 0; i < n && *len + 1 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[(*len)++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  buf[*len] = '\0';
}

char *gf_location_redact(const char *location, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  const char *sep = strstr(location, "://");
  if (!sep) /* a path: as it is (the CLI's --json escapes what needs it) */
    return gf_strlcpy(buf, location, cap);
  put(buf, cap, &len, location, (size_t)(sep - location) + 3);
  const char *auth = sep + 3;
  size_t alen = strcspn(auth, "/?#");
  /* The host is what follows the authority's last '@' (RFC 3986: the
   * user information cannot hold an unencoded '@'; a careless one still
   * leaves nothing of itself after the last). */
  const char *host = auth;
  for (size_t i = 0; i < alen; i++)
    if (auth[i] == '@')
      host = auth + i + 1;
  put(buf, cap, &len, host, alen - (size_t)(host - auth));
  const char *path = auth + alen;
  put(buf, cap, &len, path, strcspn(path, "?#"));
  return buf;
}
