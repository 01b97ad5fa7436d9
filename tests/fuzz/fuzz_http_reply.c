/* Fuzz target: the HTTP storage's parsing of what a server sends
 * (lib/io/storage_http_reply.c: status lines, Content-Length,
 * Content-Range, ETag, Last-Modified, Retry-After, Content-Encoding, and
 * the judgement of a reply against the range asked) and of the URLs it
 * is given (lib/io/storage_http_url.c).
 *
 * Input: byte 0 chooses.
 *   'U': the rest is a location: parsed; when accepted, its request URL
 *        and display forms are made, and a display form must hold neither
 *        the query, the fragment nor the user information (no '?' or '#',
 *        no '@' before the path); gf_location_redact's form likewise.
 *   else: bytes 1-24 are off, len and size (little-endian 64-bit), byte 25
 *        the kind of request (bit 0: HEAD; bits 1-2: the version opened:
 *        none, a strong ETag, a weak one, a date); the rest is a response
 *        head, its lines split at '\n', fed as curl's header callback
 *        gives them, then judged.
 * Promises: a reply judged good for a GET is exactly the range asked (a
 * 206 with that Content-Range, or a 200 to a request of the whole
 * object) of the size opened; a refused one has a known code, a reason,
 * and is retried only as GF_EREMOTE; parsed numbers stay in range. */
#include "fuzz.h"

#include "io/storage_http.h"

/* A display form's authority (after the first "://", up to the path)
 * holds no user information, and nothing after it a fragment. */
static void authority_clean(const char *shown) {
  const char *a = strstr(shown, "://");
  if (!a)
    return; /* cut before it */
  a += 3;
  const char *slash = strchr(a, '/');
  size_t n = slash ? (size_t)(slash - a) : strlen(a);
  FUZZ_ASSERT(!memchr(a, '@', n) && !strchr(a, '#'));
}

static void url_case(const uint8_t *data, size_t size) {
  char *loc = fuzz_alloc(size + 1);
  memcpy(loc, data, size);
  loc[size] = '\0';
  gf_http_url u;
  char why[160];
  int rc = gf_http_url_parse(loc, &u, why, sizeof why);
  FUZZ_ASSERT(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
  if (rc == -EINVAL)
    FUZZ_ASSERT(why[0] && memchr(why, 0, sizeof why));
  char red[512];
  gf_location_redact(loc, red, sizeof red);
  if (strstr(loc, "://"))
    authority_clean(red);
  if (rc == 0) {
    FUZZ_ASSERT(u.host && u.host[0] && u.path);
    char *req = gf_http_url_request(&u, "a b/c?d");
    FUZZ_ASSERT(req && strncmp(req, u.tls ? "https://" : "http://",
                               u.tls ? 8 : 7) == 0);
    FUZZ_ASSERT(strstr(req, "/a%20b/c%3Fd"));
    free(req);
    char disp[2048];
    for (int insecure = 0; insecure < 2; insecure++) {
      gf_http_url_display(&u, insecure ? "x@y?z" : "", insecure, disp,
                          sizeof disp);
      /* No query, no fragment, no user information. */
      FUZZ_ASSERT(!strchr(disp, '?') && !strchr(disp, '#'));
      authority_clean(disp);
    }
  }
  gf_http_url_free(&u);
  free(loc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= 1 && data[0] == 'U') {
    url_case(data + 1, size - 1);
    return 0;
  }
  if (size < 26)
    return 0;
  gf_http_ask a;
  memset(&a, 0, sizeof a);
  a.off = fuzz_le64(data + 1);
  a.len = fuzz_le64(data + 9);
  a.size = fuzz_le64(data + 17);
  a.head = data[25] & 1;
  static const char *const versions[] = {"", "\"v1\"", "W/\"v1\"",
                                         "lm:Tue, 14 Nov 2023 22:13:20 GMT"};
  a.version = versions[(data[25] >> 1) & 3];
  /* A GET asks at least a byte, inside the object (the callers' rule). */
  if (!a.head) {
    if (!a.size)
      a.size = 1;
    a.off %= a.size;
    a.len = a.len % (a.size - a.off) + 1;
  }

  gf_http_reply r;
  gf_http_reply_init(&r);
  const char *p = (const char *)data + 26, *end = (const char *)data + size;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
    /* An exact-size copy: ASan sees a read past the line. */
    char *line = fuzz_alloc(n);
    memcpy(line, p, n);
    gf_http_reply_line(&r, line, n, 1700000000);
    /* The same bytes as a bare header value. */
    uint64_t first, last;
    int64_t total, ms;
    if (gf_http_parse_content_range(line, n, &first, &last, &total) == 0)
      FUZZ_ASSERT(first <= last && (total < 0 || last < (uint64_t)total));
    if (gf_http_parse_retry_after(line, n, 1700000000, &ms) == 0)
      FUZZ_ASSERT(ms >= 0 && ms <= 86400000);
    free(line);
    p += n;
  }
  FUZZ_ASSERT(r.status == 0 || (r.status >= 100 && r.status <= 999));
  FUZZ_ASSERT(r.length >= -1 && r.total >= -1 && r.retry_after_ms >= -1);
  FUZZ_ASSERT(memchr(r.etag, 0, sizeof r.etag) &&
              memchr(r.modified, 0, sizeof r.modified));
  if (r.range == 1)
    FUZZ_ASSERT(r.first <= r.last);

  bool retry = true;
  char why[96];
  int rc = gf_http_judge(&r, &a, &retry, why, sizeof why);
  FUZZ_ASSERT(memchr(why, 0, sizeof why));
  if (rc == 0) {
    FUZZ_ASSERT(!retry);
    if (a.head) {
      FUZZ_ASSERT(r.status == 200 && r.length >= 0 && !r.encoded);
      uint64_t sz;
      char v[GF_VERSION_TAG_MAX];
      gf_http_head_result(&r, &sz, v, sizeof v);
      FUZZ_ASSERT(sz == (uint64_t)r.length && memchr(v, 0, sizeof v));
    } else if (r.status == 206) {
      FUZZ_ASSERT(r.range == 1 && r.first == a.off &&
                  r.last == a.off + a.len - 1);
      FUZZ_ASSERT(r.total < 0 || (uint64_t)r.total == a.size);
      FUZZ_ASSERT(r.length < 0 || (uint64_t)r.length == a.len);
    } else {
      FUZZ_ASSERT(r.status == 200 && a.off == 0 && a.len == a.size);
      FUZZ_ASSERT(r.length < 0 || (uint64_t)r.length == a.size);
    }
  } else {
    FUZZ_ASSERT(rc == -ENOENT || rc == -EACCES || rc == GF_EREMOTE ||
                rc == GF_EREPLY || rc == GF_ECHANGED);
    FUZZ_ASSERT(why[0]);
    FUZZ_ASSERT(!retry || rc == GF_EREMOTE);
  }
  return 0;
}
