/* Fuzz target: the credential document of the container endpoint and the
 * EC2 instance metadata service (lib/io/s3_creds_doc.c's gf_aws_creds_parse),
 * bytes a server or whoever stands in its place sent.
 *
 * Input: the whole input is the document.
 * Promises: the result is 0 or -EPROTO; a refusal leaves a reason (printable
 * ASCII, never a '"': no string of the document is quoted) and *out wiped;
 * a success holds an access key and a secret key (not empty, printable
 * ASCII without spaces, within their fields), a token the same or "", no
 * source, an expiry that is 0 or after 1970; the same document with blanks
 * after it reads the same, and with a byte after it is refused; and what
 * was read, written back as a plain document (the expiry as
 * "YYYY-MM-DDTHH:MM:SSZ"), reads back the same. */
#include "fuzz.h"

#include "io/s3_creds.h"

#include <time.h>

static void check_text(const char *s, size_t cap, bool empty_ok) {
  size_t n = strnlen(s, cap);
  FUZZ_ASSERT(n < cap);
  FUZZ_ASSERT(empty_ok || n > 0);
  for (size_t i = 0; i < n; i++)
    FUZZ_ASSERT(s[i] > 0x20 && s[i] < 0x7f);
}

static void check_why(const char *why, size_t cap) {
  size_t n = strnlen(why, cap);
  FUZZ_ASSERT(n > 0 && n < cap);
  for (size_t i = 0; i < n; i++)
    FUZZ_ASSERT(why[i] >= 0x20 && why[i] < 0x7f && why[i] != '"');
}

static bool wiped(const gf_aws_fetched *f) {
  const uint8_t *p = (const uint8_t *)f;
  for (size_t i = 0; i < sizeof *f; i++)
    if (p[i])
      return false;
  return true;
}

static bool same(const gf_aws_fetched *a, const gf_aws_fetched *b) {
  return strcmp(a->access_key, b->access_key) == 0 &&
         strcmp(a->secret_key, b->secret_key) == 0 &&
         strcmp(a->session_token, b->session_token) == 0 &&
         a->expires == b->expires;
}

/* s as a JSON string's content ('"' and '\\' escaped; the rest is
 * printable ASCII). */
static size_t put_string(char *dst, const char *s) {
  size_t n = 0;
  dst[n++] = '"';
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      dst[n++] = '\\';
    dst[n++] = *s;
  }
  dst[n++] = '"';
  return n;
}

static int parse(const uint8_t *doc, size_t len, gf_aws_fetched *out) {
  char why[256];
  memset(out, 0xa5, sizeof *out);
  memset(why, 0xa5, sizeof why);
  int rc = gf_aws_creds_parse((const char *)doc, len, out, why, sizeof why);
  FUZZ_ASSERT(rc == 0 || rc == -EPROTO);
  if (rc < 0) {
    check_why(why, sizeof why);
    FUZZ_ASSERT(wiped(out));
    return rc;
  }
  check_text(out->access_key, sizeof out->access_key, false);
  check_text(out->secret_key, sizeof out->secret_key, false);
  check_text(out->session_token, sizeof out->session_token, true);
  FUZZ_ASSERT(out->source[0] == '\0' && out->expires >= 0);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gf_aws_fetched *a = fuzz_alloc(sizeof *a), *b = fuzz_alloc(sizeof *b);
  int rc = parse(data, size, a);
  /* Blanks after: the same; another byte after: refused. */
  uint8_t *more = fuzz_alloc(size + 3);
  memcpy(more, data, size);
  memcpy(more + size, " \r\n", 3);
  FUZZ_ASSERT(parse(more, size + 3, b) == rc);
  FUZZ_ASSERT(rc < 0 || same(a, b));
  more[size] = 'x';
  if (rc == 0)
    FUZZ_ASSERT(parse(more, size + 1, b) == -EPROTO);
  free(more);
  struct tm tm;
  /* An offset can move the last moment of 9999 into a year of five
   * digits, which no document can write. */
  if (rc == 0 && a->expires &&
      (!gmtime_r(&a->expires, &tm) || tm.tm_year + 1900 > 9999))
    rc = 1;
  if (rc == 0) {
    /* Written back plainly, read back the same. */
    char *doc = fuzz_alloc(2 * sizeof *a + 256);
    size_t n = 0;
    n += (size_t)sprintf(doc + n, "{\"AccessKeyId\":");
    n += put_string(doc + n, a->access_key);
    n += (size_t)sprintf(doc + n, ",\"SecretAccessKey\":");
    n += put_string(doc + n, a->secret_key);
    n += (size_t)sprintf(doc + n, ",\"Token\":");
    n += put_string(doc + n, a->session_token);
    if (a->expires) {
      char iso[64];
      FUZZ_ASSERT(strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0);
      n += (size_t)sprintf(doc + n, ",\"Expiration\":\"%s\"", iso);
    }
    n += (size_t)sprintf(doc + n, ",\"Code\":\"Success\"}");
    FUZZ_ASSERT(parse((const uint8_t *)doc, n, b) == 0 && same(a, b));
    free(doc);
  }
  gf_aws_fetched_clear(a);
  FUZZ_ASSERT(wiped(a));
  free(a);
  free(b);
  return 0;
}
