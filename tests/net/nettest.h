/* Network fixtures for C tests: a private nginx on the loopback
 * (tests/net/nginx.sh) and netproxy in front of it (docs/TESTING.md).
 * Link gpufeed_nettest (tests/net.cmake). One thread; the calls start and
 * wait for child processes.
 *
 *   struct gf_net_nginx ng;
 *   struct gf_net_proxy px;
 *   gf_net_nginx_start(root, rundir, 0, &ng);  // skips the test without nginx
 *   gf_net_proxy_start(&ng, rundir, NULL, &px);
 *   gf_net_proxy_ctl(&px, "add status 503 path=/a nth=1", reply, sizeof reply);
 *   ... requests to px.url or ng.url ...
 *   CHECK(gf_net_proxy_stop(&px) == 0);
 *   gf_net_nginx_stop(&ng);
 */
#ifndef GF_NETTEST_H
#define GF_NETTEST_H

#include <stddef.h>
#include <sys/types.h>

#define GF_NET_PATH 512

struct gf_net_nginx {
  char url[64]; /* http://127.0.0.1:PORT */
  int port;
  char tls_url[64]; /* with GF_NET_TLS, else "" */
  int tls_port;
  char ca[GF_NET_PATH];         /* the CA that signed the TLS certificate */
  char h2c_url[64];             /* with GF_NET_H2C, else "" */
  char sock[GF_NET_PATH];       /* nginx's unix socket */
  char access_log[GF_NET_PATH]; /* fields: tests/net/nginx.sh */
  char rundir[GF_NET_PATH];
  long pid;
};

enum { GF_NET_TLS = 1, GF_NET_H2C = 2 };

/* Starts nginx serving root (read-only) with its files in rundir (made if
 * missing). Without nginx the test is skipped (exit 77 with a message), or
 * failed (exit 1) when GPUFEED_REQUIRE_HTTP=1. A watchdog stops nginx if
 * this process dies first. Returns 0, or -1 (with a message) when nginx
 * did not start. */
int gf_net_nginx_start(const char *root, const char *rundir, unsigned flags,
                       struct gf_net_nginx *ng);
/* Stops it and everything it started; NULL or a stopped one is a no-op. */
void gf_net_nginx_stop(struct gf_net_nginx *ng);
/* Access-log lines whose request line contains text, waiting up to a
 * second for at least want (nginx logs just after it has answered). */
int gf_net_requests(const struct gf_net_nginx *ng, const char *text, int want);

struct gf_net_proxy {
  char url[64]; /* http://127.0.0.1:PORT */
  int port;
  int control_port;
  pid_t pid;
  char err_path[GF_NET_PATH]; /* its stderr */
};

/* Starts netproxy in front of ng (through its unix socket), its files in
 * rundir; args: more netproxy options, NULL-terminated (NULL for none),
 * e.g. {"--latency", "50", "--rule", "reset after=0 nth=3", NULL}.
 * The proxy exits with this process. Returns 0 or -1. */
int gf_net_proxy_start(const struct gf_net_nginx *ng, const char *rundir,
                       const char *const *args, struct gf_net_proxy *px);
/* Sends one control command (docs/TESTING.md); the reply line, without
 * its newline, in reply. Returns 0 when the reply is "ok...", else -1. */
int gf_net_proxy_ctl(const struct gf_net_proxy *px, const char *cmd,
                     char *reply, size_t cap);
/* One counter of `stats` (requests, bytes_down, reset, ...); -1 when
 * absent or the proxy does not answer. */
long long gf_net_proxy_stat(const struct gf_net_proxy *px, const char *name);
/* Stops the proxy (SIGTERM) and reaps it. Returns 0 when it exited 0 with
 * no sanitizer report on its stderr, else -1 (its stderr printed). */
int gf_net_proxy_stop(struct gf_net_proxy *px);

#endif
