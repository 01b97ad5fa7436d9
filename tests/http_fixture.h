/* What the HTTP storage's network tests share: a dataset built by the CLI
 * (`gpufeed synth` then `gpufeed build`, as a user would) in a folder that
 * a private nginx serves on 127.0.0.1 (tests/net/nettest.h), optionally
 * with netproxy in front of it for faults, and a few checks. Skips (77)
 * without nginx unless GPUFEED_REQUIRE_HTTP=1. */
#ifndef GF_HTTP_FIXTURE_H
#define GF_HTTP_FIXTURE_H

#include "nettest.h"
#include "testutil.h"

#include "io/storage.h"

typedef struct http_fixture {
  char root[4096];     /* the folder nginx serves */
  char local[4200];    /* root/ds: the dataset, read locally */
  char url[256];       /* nginx's URL of it */
  char tls_url[256];   /* its https URL (HTTP_TLS), else "" */
  char proxy_url[256]; /* through netproxy (HTTP_PROXY), else "" */
  struct gf_net_nginx ng;
  struct gf_net_proxy px;
  bool proxied;
} http_fixture;

enum { HTTP_TLS = 1, HTTP_PROXY = 2 };

/* Builds a dataset of `count` images of 8x8 to 40x40 pixels in shards of
 * about shard_kib KiB under the test's scratch folder, and starts nginx
 * (and netproxy). Returns 0 or -1 (with a message). */
int http_fixture_start(http_fixture *f, unsigned count, unsigned shard_kib,
                       unsigned flags);
/* Stops what started; returns 0, or -1 when the proxy did not exit clean. */
int http_fixture_stop(http_fixture *f);

/* A proxy control command that must succeed (a failure is counted). */
void http_ctl(http_fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A remote config for tests: few attempts, short waits. */
gf_remote_config http_test_remote(void);

/* Runs fn with stderr going to a file; returns what it wrote there
 * (malloc'd, NUL-terminated; the caller frees it). */
char *http_capture_stderr(void (*fn)(void *), void *arg);

/* Whether text holds any of the NULL-terminated secrets (each printed). */
bool http_leaks(const char *what, const char *text, const char *const *secrets);

#endif
