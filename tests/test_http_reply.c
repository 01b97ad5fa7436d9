/* Response heads of the HTTP storage (lib/io/storage_http_reply.c): the
 * status line and headers as curl hands them over, Content-Range and
 * Retry-After, and the judgement of a reply against what was asked: a
 * body is taken only when it is exactly the bytes asked of the version
 * opened; every other reply gets its code, its reason and whether to
 * retry. No server needed. */
#include "testutil.h"

#include "io/storage_http.h"

#include <stdlib.h>
#include <string.h>

/* A reply from lines separated by '|'. */
static gf_http_reply reply(const char *lines) {
  gf_http_reply r;
  gf_http_reply_init(&r);
  char buf[2048];
  snprintf(buf, sizeof buf, "%s", lines);
  for (char *save = NULL, *l = strtok_r(buf, "|", &save); l;
       l = strtok_r(NULL, "|", &save)) {
    char line[512];
    snprintf(line, sizeof line, "%s\r\n", l);
    gf_http_reply_line(&r, line, strlen(line), 1700000000);
  }
  gf_http_reply_line(&r, "\r\n", 2, 1700000000);
  return r;
}

static const char *const V = "\"5f3e-1a2b\"";

/* Judges `lines` for a GET of [off, off + len) of a 1000-byte object of
 * version V: want the code, the retry flag and a word of the reason. */
static void get(const char *lines, uint64_t off, uint64_t len, int want,
                bool want_retry, const char *word) {
  gf_http_reply r = reply(lines);
  gf_http_ask a = {false, off, len, 1000, V, false};
  bool retry = !want_retry;
  char why[256];
  int rc = gf_http_judge(&r, &a, &retry, why, sizeof why);
  bool ok = rc == want && retry == want_retry && (!word || strstr(why, word));
  CHECK(ok);
  if (!ok)
    fprintf(stderr,
            "  [%s] %llu+%llu: %d (%s) retry %d: '%s'; wanted %s "
            "retry %d '%s'\n",
            lines, (unsigned long long)off, (unsigned long long)len, rc,
            gf_err_name(rc), retry, why, gf_err_name(want), want_retry,
            word ? word : "");
}

int main(void) {
  /* Content-Range. */
  uint64_t a, b;
  int64_t t;
  CHECK_OK(gf_http_parse_content_range("bytes 0-99/1000", 15, &a, &b, &t));
  CHECK(a == 0 && b == 99 && t == 1000);
  CHECK_OK(gf_http_parse_content_range(" Bytes 5-5/* ", 13, &a, &b, &t));
  CHECK(a == 5 && b == 5 && t == -1);
  const char *big = "bytes 9223372036854775806-9223372036854775806/"
                    "9223372036854775807";
  CHECK_OK(gf_http_parse_content_range(big, strlen(big), &a, &b, &t));
  CHECK(t == INT64_MAX);
  static const char *const bad_ranges[] = {
      "bytes */1000",
      "bytes 10-5/1000",
      "bytes 0-1000/1000",
      "bytes 0-99",
      "bytes=0-99/1000",
      "items 0-99/1000",
      "bytes -1-99/1000",
      "bytes 0-99/1000x",
      "bytes 0-99/",
      "bytes 0 -99/1000",
      "bytes 0-99/ 1000",
      "",
      "bytes 0-99/99999999999999999999",
      "bytes 99999999999999999999-1/2",
  };
  for (size_t i = 0; i < sizeof bad_ranges / sizeof bad_ranges[0]; i++) {
    int rc = gf_http_parse_content_range(bad_ranges[i], strlen(bad_ranges[i]),
                                         &a, &b, &t);
    CHECK(rc == -EINVAL);
    if (rc != -EINVAL)
      fprintf(stderr, "  '%s' parsed\n", bad_ranges[i]);
  }

  /* Retry-After: seconds, or a date (counted from now). */
  int64_t ms;
  CHECK_OK(gf_http_parse_retry_after("3", 1, 0, &ms));
  CHECK(ms == 3000);
  CHECK_OK(gf_http_parse_retry_after(" 0 ", 3, 0, &ms));
  CHECK(ms == 0);
  CHECK_OK(gf_http_parse_retry_after("99999999", 8, 0, &ms));
  CHECK(ms == 86400000); /* a day at most */
  /* 1700000000 is Tue, 14 Nov 2023 22:13:20 GMT. */
  CHECK_OK(gf_http_parse_retry_after("Tue, 14 Nov 2023 22:13:25 GMT", 29,
                                     1700000000, &ms));
  CHECK(ms == 5000);
  CHECK_OK(gf_http_parse_retry_after("Tue, 14 Nov 2023 22:13:00 GMT", 29,
                                     1700000000, &ms));
  CHECK(ms == 0); /* past */
  CHECK_OK(gf_http_parse_retry_after("Thu, 29 Feb 2024 00:00:00 GMT", 29,
                                     1709164800 - 2, &ms));
  CHECK(ms == 2000);
  CHECK(gf_http_parse_retry_after("-1", 2, 0, &ms) == -EINVAL);
  CHECK(gf_http_parse_retry_after("1.5", 3, 0, &ms) == -EINVAL);
  CHECK(gf_http_parse_retry_after("Tue, 14 Nov 2023 22:13:25 UTC", 29, 0,
                                  &ms) == -EINVAL);
  CHECK(gf_http_parse_retry_after("Tue, 14 Foo 2023 22:13:25 GMT", 29, 0,
                                  &ms) == -EINVAL);
  CHECK(gf_http_parse_retry_after("", 0, 0, &ms) == -EINVAL);

  /* Lines: a status line starts a new head; names in any case; the last
   * value wins; what is not a header is ignored. */
  gf_http_reply r = reply("HTTP/1.1 100 Continue|X-A: 1|HTTP/1.1 206 Partial "
                          "Content|content-LENGTH:  10 |Content-Range: bytes "
                          "0-9/1000|ETag: \"x\"|ETag: \"5f3e-1a2b\"|junk "
                          "line|Last-Modified: Tue, 14 Nov 2023 22:13:20 GMT|"
                          "Retry-After: 2");
  CHECK(r.status == 206 && r.length == 10 && r.range == 1 && r.first == 0 &&
        r.last == 9 && r.total == 1000);
  CHECK(strcmp(r.etag, V) == 0 && !r.etag_long);
  CHECK(strcmp(r.modified, "Tue, 14 Nov 2023 22:13:20 GMT") == 0);
  CHECK(r.retry_after_ms == 2000 && !r.encoded);
  r = reply("HTTP/2 200|content-length: 12x|content-range: bytes */5|"
            "content-encoding: gzip");
  CHECK(r.status == 200 && r.length == -1 && r.range == -1 && r.encoded);
  r = reply("HTTP/1.1 20x OK");
  CHECK(r.status == 0);
  r = reply("HTTP/1.0 503");
  CHECK(r.status == 503);
  char longtag[300];
  memset(longtag, 'a', sizeof longtag);
  memcpy(longtag, "ETag: ", 6);
  longtag[sizeof longtag - 1] = '\0';
  r = reply(longtag);
  CHECK(r.etag_long && r.etag[0] == '\0');
  r = reply("HTTP/1.1 200 OK|Content-Encoding: identity");
  CHECK(!r.encoded);

  /* Judging GETs of bytes 100-199 of the 1000-byte object V. */
  const int E_REP = GF_EREPLY, E_CHG = GF_ECHANGED, E_REM = GF_EREMOTE;
  get("HTTP/1.1 206|Content-Range: bytes 100-199/1000|Content-Length: 100|"
      "ETag: \"5f3e-1a2b\"",
      100, 100, 0, false, NULL);
  get("HTTP/1.1 206|Content-Range: bytes 100-199/1000|ETag: W/\"5f3e-1a2b\"",
      100, 100, 0, false, NULL); /* the same tag, weak */
  get("HTTP/1.1 206|Content-Range: bytes 100-199/*", 100, 100, 0, false, NULL);
  get("HTTP/1.1 206|Content-Range: bytes 100-198/1000", 100, 100, E_REP, false,
      "bytes 100-198 for bytes 100-199");
  get("HTTP/1.1 206|Content-Range: bytes 101-200/1000", 100, 100, E_REP, false,
      "101-200");
  get("HTTP/1.1 206|Content-Range: bytes 100-199/1001", 100, 100, E_CHG, false,
      "1001");
  get("HTTP/1.1 206|Content-Range: bytes 100-199/1000|Content-Length: 99", 100,
      100, E_REP, false, "Content-Length of 99");
  get("HTTP/1.1 206", 100, 100, E_REP, false, "without a Content-Range");
  get("HTTP/1.1 206|Content-Range: bytes */1000", 100, 100, E_REP, false,
      "not one range");
  get("HTTP/1.1 206|Content-Range: bytes 100-199/1000|ETag: \"other\"", 100,
      100, E_CHG, false, "changed");
  get("HTTP/1.1 206|Content-Range: bytes 100-199/1000|Content-Encoding: gzip",
      100, 100, E_REP, false, "Content-Encoding");
  /* A 200: the whole object only when the whole object was asked. */
  get("HTTP/1.1 200|Content-Length: 1000", 100, 100, E_REP, false,
      "ignores Range");
  get("HTTP/1.1 200|Content-Length: 1000|ETag: \"5f3e-1a2b\"", 0, 1000, 0,
      false, NULL);
  get("HTTP/1.1 200", 0, 1000, 0, false, NULL);
  get("HTTP/1.1 200|Content-Length: 999", 0, 1000, E_CHG, false, "999");
  get("HTTP/1.1 200|Content-Length: 1000|ETag: \"v2\"", 0, 1000, E_CHG, false,
      "changed");
  /* Statuses. */
  get("HTTP/1.1 404 Not Found", 100, 100, -ENOENT, false, "404");
  get("HTTP/1.1 410 Gone", 100, 100, -ENOENT, false, "410");
  get("HTTP/1.1 403 Forbidden", 100, 100, -EACCES, false, "403");
  get("HTTP/1.1 401", 100, 100, -EACCES, false, "credentials");
  get("HTTP/1.1 412", 100, 100, E_CHG, false, "412");
  get("HTTP/1.1 416", 100, 100, E_CHG, false, "416");
  get("HTTP/1.1 400", 100, 100, E_REM, false, "HTTP 400");
  get("HTTP/1.1 301|Location: /x", 100, 100, E_REM, false, "not followed");
  get("HTTP/1.1 501", 100, 100, E_REM, false, "HTTP 501");
  static const int again[] = {408, 429, 500, 502, 503, 504};
  for (size_t i = 0; i < sizeof again / sizeof again[0]; i++) {
    char l[32];
    snprintf(l, sizeof l, "HTTP/1.1 %d", again[i]);
    get(l, 100, 100, E_REM, true, l + 9);
  }
  get("", 100, 100, E_REP, false, "no HTTP status");

  /* A version by Last-Modified. */
  r = reply("HTTP/1.1 206|Content-Range: bytes 0-9/1000|Last-Modified: Tue, "
            "14 Nov 2023 22:13:21 GMT");
  gf_http_ask lm = {false, 0, 10, 1000, "lm:Tue, 14 Nov 2023 22:13:20 GMT",
                    false};
  bool retry;
  char why[256];
  CHECK(gf_http_judge(&r, &lm, &retry, why, sizeof why) == GF_ECHANGED);
  lm.version = "lm:Tue, 14 Nov 2023 22:13:21 GMT";
  CHECK_OK(gf_http_judge(&r, &lm, &retry, why, sizeof why));

  /* HEAD: a 200 with a Content-Length; the version is the ETag, else
   * the Last-Modified date, else none. */
  gf_http_ask head = {true, 0, 0, 0, NULL, false};
  r = reply("HTTP/1.1 200|Content-Length: 1234|ETag: \"e\"|Last-Modified: X");
  CHECK_OK(gf_http_judge(&r, &head, &retry, why, sizeof why));
  uint64_t size;
  char version[GF_VERSION_TAG_MAX];
  gf_http_head_result(&r, &size, version, sizeof version);
  CHECK(size == 1234 && strcmp(version, "\"e\"") == 0);
  r = reply("HTTP/1.1 200|Content-Length: 0|Last-Modified: X");
  CHECK_OK(gf_http_judge(&r, &head, &retry, why, sizeof why));
  gf_http_head_result(&r, &size, version, sizeof version);
  CHECK(size == 0 && strcmp(version, "lm:X") == 0);
  r = reply("HTTP/1.1 200|Content-Length: 5");
  gf_http_head_result(&r, &size, version, sizeof version);
  CHECK(size == 5 && version[0] == '\0');
  r = reply("HTTP/1.1 200");
  CHECK(gf_http_judge(&r, &head, &retry, why, sizeof why) == GF_EREPLY &&
        strstr(why, "Content-Length"));
  r = reply("HTTP/1.1 404");
  CHECK(gf_http_judge(&r, &head, &retry, why, sizeof why) == -ENOENT && !retry);
  r = reply("HTTP/1.1 503|Retry-After: 7");
  CHECK(gf_http_judge(&r, &head, &retry, why, sizeof why) == GF_EREMOTE &&
        retry && r.retry_after_ms == 7000);
  return gf_test_finish();
}
