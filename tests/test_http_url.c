/* The HTTP storage's URLs (lib/io/storage_http_url.c, location.c): the
 * parts of a root (scheme in any case, user:password, host names, IPv4
 * and IPv6 literals, ports, paths, queries), each object's request URL
 * (the name percent-encoded, the query kept), and display forms that
 * never hold the user information or the query, also where the URL is
 * refused and in the error that says so. No server needed. */
#include "testutil.h"

#include "io/storage_http.h"

#include <stdlib.h>
#include <string.h>

static char why[256];

static bool has(const char *s, const char *sub) { return strstr(s, sub); }

static void parses(const char *loc, bool tls, const char *host, unsigned port,
                   const char *path, const char *query, const char *user,
                   const char *password) {
  gf_http_url u;
  int rc = gf_http_url_parse(loc, &u, why, sizeof why);
  if (rc != 0) {
    fprintf(stderr, "%s: refused (%d): %s\n", loc, rc, why);
    gf_test_failures++;
    gf_http_url_free(&u);
    return;
  }
  CHECK(u.tls == tls);
  CHECK(strcmp(u.host, host) == 0);
  CHECK(u.port == port);
  CHECK(strcmp(u.path, path) == 0);
  CHECK(query ? u.query && strcmp(u.query, query) == 0 : !u.query);
  CHECK(user ? u.user && strcmp(u.user, user) == 0 : !u.user);
  CHECK(password ? u.password && strcmp(u.password, password) == 0
                 : !u.password);
  if (gf_test_failures)
    fprintf(stderr, "  (parsing %s)\n", loc);
  gf_http_url_free(&u);
}

static void refused(const char *loc, const char *reason) {
  gf_http_url u;
  int rc = gf_http_url_parse(loc, &u, why, sizeof why);
  CHECK(rc == -EINVAL);
  CHECK(has(why, reason));
  if (rc != -EINVAL || !has(why, reason))
    fprintf(stderr, "  %s: rc %d, why '%s', wanted '%s'\n", loc, rc, why,
            reason);
  gf_http_url_free(&u);
}

/* root's request URL for name, and its display form. */
static void object(const char *root, const char *name, const char *request,
                   const char *display) {
  gf_http_url u;
  CHECK_OK(gf_http_url_parse(root, &u, why, sizeof why));
  char *r = gf_http_url_request(&u, name);
  char d[512];
  gf_http_url_display(&u, name, false, d, sizeof d);
  CHECK(r && strcmp(r, request) == 0);
  CHECK(strcmp(d, display) == 0);
  if (!r || strcmp(r, request) || strcmp(d, display))
    fprintf(stderr,
            "  %s + %s: request %s (wanted %s), display %s (wanted "
            "%s)\n",
            root, name, r ? r : "(null)", request, d, display);
  free(r);
  gf_http_url_free(&u);
}

int main(void) {
  /* The parts. */
  parses("http://example.com/data/ds", false, "example.com", 0, "/data/ds",
         NULL, NULL, NULL);
  parses("HTTPS://Example.COM:8443/ds/", true, "example.com", 8443, "/ds", NULL,
         NULL, NULL);
  parses("hTtP://127.0.0.1:80", false, "127.0.0.1", 80, "", NULL, NULL, NULL);
  parses("https://alice:s3cr%40t:x@h/p?sig=abc&exp=1#frag", true, "h", 0, "/p",
         "sig=abc&exp=1", "alice", "s3cr@t:x");
  parses("https://tok@h/p", true, "h", 0, "/p", NULL, "tok", NULL);
  parses("http://u:p@w@h:9/p", false, "h", 9, "/p", NULL, "u", "p@w");
  parses("http://[::1]:8080/ds", false, "[::1]", 8080, "/ds", NULL, NULL, NULL);
  parses("http://[2001:db8::7]/", false, "[2001:db8::7]", 0, "", NULL, NULL,
         NULL);
  parses("http://h/a%20b/c", false, "h", 0, "/a%20b/c", NULL, NULL, NULL);
  parses("http://h/caf\xc3\xa9/x", false, "h", 0, "/caf%C3%A9/x", NULL, NULL,
         NULL);
  parses("http://h?only=query", false, "h", 0, "", "only=query", NULL, NULL);
  parses("http://h/p?", false, "h", 0, "/p", NULL, NULL, NULL);

  /* Refused, with the reason and never the secret. */
  refused("ftp://h/x", "not an http");
  refused("http:///x", "no host");
  refused("http://h:0/x", "port");
  refused("http://h:65536/x", "port");
  refused("http://h:8x/x", "port");
  refused("http://[::1/x", "']'");
  refused("http://[::1]x/x", "after ']'");
  refused("http://[zz]/x", "no host");
  refused("http://h/a b", "spaces");
  refused("http://h/a\nb", "control");
  refused("http://h/%zz", "%-escape");
  refused("http://u:%4@h/x", "%-escape");
  refused("http://u:a%00b@h/x", "%-escape");

  /* Objects: names encoded (not '/'), the query kept for the request
   * and left out of the display; the user information in neither. */
  object("http://h:81/data/ds", "index.gfi", "http://h:81/data/ds/index.gfi",
         "http://h:81/data/ds/index.gfi");
  object("https://u:pw@h/ds/?token=SECRET", "shard-000000.gfs",
         "https://h/ds/shard-000000.gfs?token=SECRET",
         "https://h/ds/shard-000000.gfs");
  object("http://h/ds", "cat/a b+c%.jpg", "http://h/ds/cat/a%20b%2Bc%25.jpg",
         "http://h/ds/cat/a%20b%2Bc%25.jpg");
  object("http://[::1]:9/ds", "x~y_z-1.2", "http://[::1]:9/ds/x~y_z-1.2",
         "http://[::1]:9/ds/x~y_z-1.2");
  object("http://h", "", "http://h/", "http://h");
  object("http://h/ds?q=1", "", "http://h/ds?q=1", "http://h/ds");

  char buf[64];
  CHECK(gf_http_encode_name("a b/\xff", buf, sizeof buf) == 9);
  CHECK(strcmp(buf, "a%20b/%FF") == 0);
  CHECK(gf_http_encode_name("abcdef", buf, 4) == 6 && strcmp(buf, "abc") == 0);

  /* The insecure mark leads every display form. */
  gf_http_url u;
  CHECK_OK(gf_http_url_parse("https://h/ds", &u, why, sizeof why));
  char d[256];
  gf_http_url_display(&u, "index.gfi", true, d, sizeof d);
  CHECK(strcmp(d, GF_TLS_UNVERIFIED_MARK "https://h/ds/index.gfi") == 0);
  gf_http_url_free(&u);

  /* Any location, parsed or not, any scheme. */
  static const char *const redact[][2] = {
      {"/data/ds", "/data/ds"},
      {"https://u:p@h:1/ds?t=1#f", "https://h:1/ds"},
      {"s3://KEY:SECRET@bucket/ds?x-amz-signature=S", "s3://bucket/ds"},
      {"http://a@b@c/ds", "http://c/ds"},
      {"http://h/a\tb?k", "http://h/a?b"},
      {"weird://u:p@", "weird://"},
  };
  for (size_t i = 0; i < sizeof redact / sizeof redact[0]; i++) {
    char out[128];
    gf_location_redact(redact[i][0], out, sizeof out);
    CHECK(strcmp(out, redact[i][1]) == 0);
    if (strcmp(out, redact[i][1]))
      fprintf(stderr, "  redact %s: %s (wanted %s)\n", redact[i][0], out,
              redact[i][1]);
  }
  char small[8];
  gf_location_redact("http://u:p@host/long/path", small, sizeof small);
  CHECK(strcmp(small, "http://") == 0);

  /* The public call: what the CLI and the Python layer print. */
  gf_remote_config insecure = GF_REMOTE_CONFIG_INIT;
  insecure.tls_no_verify = 1;
  char out[256];
  CHECK_OK(gf_location_display("HTTPS://u:pw@H:8443/ds/?sig=x", NULL, out,
                               sizeof out));
  CHECK(strcmp(out, "https://h:8443/ds") == 0);
  CHECK_OK(gf_location_display("https://u:pw@h/ds?sig=x", &insecure, out,
                               sizeof out));
  CHECK(strcmp(out, "(TLS unverified) https://h/ds") == 0);
  CHECK_OK(gf_location_display("http://h/ds", &insecure, out, sizeof out));
  CHECK(strcmp(out, "http://h/ds") == 0); /* no TLS, nothing to verify */
  CHECK_OK(
      gf_location_display("http://u:pw@h:0/bad?sig=x", NULL, out, sizeof out));
  CHECK(strcmp(out, "http://h:0/bad") == 0);
  CHECK_OK(gf_location_display("/local/ds", &insecure, out, sizeof out));
  CHECK(strcmp(out, "/local/ds") == 0);
  CHECK_ERR(gf_location_display("/x", NULL, NULL, 0), -EINVAL);

  /* A URL the storage refuses: the error names it without its secrets. */
  gf_storage *st = NULL;
  CHECK_ERR(
      gf_storage_open("http://user:PASSWORD@h:99999/ds?token=TOKEN", NULL, &st),
      -EINVAL);
  const gf_error_info *e = gf_last_error();
  CHECK(has(e->message, "http://h:99999/ds") && has(e->message, "port"));
  CHECK(!has(e->message, "PASSWORD") && !has(e->message, "TOKEN") &&
        !has(e->message, "user"));
  CHECK(!has(e->path, "PASSWORD") && !has(e->path, "TOKEN"));
  CHECK_ERR(gf_storage_open("gopher://u:PASSWORD@h/x", NULL, &st), -EINVAL);
  CHECK(!has(gf_last_error()->message, "PASSWORD"));

  /* A CA file that cannot be read: said at open. */
  gf_remote_config ca = GF_REMOTE_CONFIG_INIT;
  ca.ca_file = "/nonexistent/ca.pem";
  CHECK_ERR(gf_storage_open("https://h/ds", &ca, &st), -ENOENT);
  CHECK(has(gf_last_error()->message, "ca_file /nonexistent/ca.pem"));

  /* Opening makes no request: an unreachable host opens, and its display
   * form is the root's without secrets. */
  CHECK_OK(gf_storage_open("HTTP://u:PASSWORD@127.0.0.1:9/ds/?token=TOKEN",
                           NULL, &st));
  CHECK(st && strcmp(gf_storage_display(st), "http://127.0.0.1:9/ds") == 0);
  CHECK(st && !gf_storage_insecure(st));
  CHECK(st && (gf_storage_caps(st) & GF_STORAGE_REMOTE) &&
        !(gf_storage_caps(st) &
          (GF_STORAGE_FD | GF_STORAGE_LIST | GF_STORAGE_LINKS)));
  char nd[256];
  CHECK(st && strcmp(gf_storage_name_display(st, "index.gfi", nd, sizeof nd),
                     "http://127.0.0.1:9/ds/index.gfi") == 0);
  gf_storage_close(st);

  /* What libcurl says passes through a filter taking every secret out. */
  setenv("GPUFEED_HTTP_BEARER_TOKEN", "tok-SECRET-1", 1);
  CHECK_OK(gf_storage_open("http://127.0.0.1:9/ds?sig=QUERYSECRET", NULL, &st));
  unsetenv("GPUFEED_HTTP_BEARER_TOKEN");
  char text[80] = "GET /ds/x?sig=QUERYSECRET: tok-SECRET-1 refused";
  if (st)
    gf_http_scrub((gf_http_storage *)st, text, sizeof text);
  CHECK(strcmp(text, "GET /ds/x?<redacted>: <redacted> refused") == 0);
  gf_storage_close(st);
  CHECK_OK(gf_storage_open("http://alice:PW-SECRET@h/ds", NULL, &st));
  char tiny[24] = "alice:PW-SECRET@h";
  if (st)
    gf_http_scrub((gf_http_storage *)st, tiny, sizeof tiny);
  CHECK(strcmp(tiny, "<redacted>:<redacted>@h") == 0);
  char cut[10] = "PW-SECRET";
  if (st)
    gf_http_scrub((gf_http_storage *)st, cut, sizeof cut);
  CHECK(strcmp(cut, "") == 0); /* no room for the mark: cut there */
  gf_storage_close(st);
  return gf_test_finish();
}
