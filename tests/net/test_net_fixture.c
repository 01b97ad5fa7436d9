/* The C fixtures of the network tests (tests/net/nettest.h), used the way
 * a C test of the HTTP storage will: nginx serves a folder, netproxy sits
 * in front, a rule is added while it runs, the access log and the proxy's
 * counters are read, and both stop cleanly. The client here is a few
 * lines of sockets (the library has no HTTP client yet). Skips (77)
 * without nginx; GPUFEED_REQUIRE_HTTP=1 makes that a failure. */
#include "nettest.h"
#include "testutil.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define OBJ_SIZE (3 << 20)

struct reply {
  int status;
  char etag[128];
  size_t len;
  unsigned char *body;
};

static int conn_to(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* One GET on fd (kept open for the next); range "" for none. Returns 0, or
 * -1 when the connection broke. The body is malloc'd into r->body. */
static int get(int fd, const char *path, const char *range, struct reply *r) {
  char req[512];
  int n = snprintf(
      req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s\r\n", path,
      range[0] ? "Range: bytes=" : "", range, range[0] ? "\r\n" : "");
  memset(r, 0, sizeof *r);
  if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
    return -1;
  char head[8192];
  size_t hl = 0;
  char *end = NULL;
  /* Byte by byte up to the blank line: the body stays in the socket. */
  while (!end && hl < sizeof head - 1) {
    if (recv(fd, head + hl, 1, 0) != 1)
      return -1;
    hl++;
    head[hl] = '\0';
    if (hl >= 4 && memcmp(head + hl - 4, "\r\n\r\n", 4) == 0)
      end = head + hl;
  }
  if (!end)
    return -1;
  r->status = atoi(head + 9);
  const char *cl = strcasestr(head, "\r\nContent-Length:");
  const char *et = strcasestr(head, "\r\nETag:");
  if (et)
    sscanf(et + 7, " %127s", r->etag);
  r->len = cl ? strtoul(cl + 17, NULL, 10) : 0;
  r->body = malloc(r->len + 1);
  size_t got = 0;
  while (r->body && got < r->len) {
    ssize_t k = recv(fd, r->body + got, r->len - got, 0);
    if (k <= 0)
      return -1;
    got += (size_t)k;
  }
  return 0;
}

int main(void) {
  const char *tmp = gf_test_tmpdir();
  char root[1024], run_ng[1024], run_px[1024], obj[1100];
  snprintf(root, sizeof root, "%s/root", tmp);
  snprintf(run_ng, sizeof run_ng, "%s/nginx", tmp);
  snprintf(run_px, sizeof run_px, "%s/proxy", tmp);
  snprintf(obj, sizeof obj, "%s/obj.bin", root);
  CHECK(mkdir(root, 0755) == 0);
  unsigned char *data = malloc(OBJ_SIZE);
  uint64_t seed = 42;
  for (size_t i = 0; i < OBJ_SIZE; i += 8) {
    uint64_t v = gf_test_rand(&seed);
    memcpy(data + i, &v, 8);
  }
  CHECK(gf_test_write_file(obj, data, OBJ_SIZE) == 0);

  struct gf_net_nginx ng;
  struct gf_net_proxy px;
  if (gf_net_nginx_start(root, run_ng, 0, &ng) != 0) {
    fprintf(stderr, "nginx did not start\n");
    return 1;
  }
  const char *args[] = {"--rule", "status 503 retry-after=1 path=/obj nth=2",
                        NULL};
  if (gf_net_proxy_start(&ng, run_px, args, &px) != 0) {
    gf_net_nginx_stop(&ng);
    return 1;
  }
  printf("nginx %s, proxy %s (control port %d)\n", ng.url, px.url,
         px.control_port);

  /* Straight to nginx: a range is a 206 with exactly those bytes. */
  struct reply r;
  int fd = conn_to(ng.port);
  CHECK(fd >= 0);
  CHECK(get(fd, "/obj.bin", "1000-1999", &r) == 0);
  CHECK(r.status == 206 && r.len == 1000 &&
        memcmp(r.body, data + 1000, 1000) == 0);
  char etag[128];
  snprintf(etag, sizeof etag, "%s", r.etag);
  CHECK(etag[0] == '"');
  free(r.body);
  close(fd);

  /* Through the proxy, one keep-alive connection: the second request on
   * /obj gets the rule's 503, the third the object again. */
  fd = conn_to(px.port);
  CHECK(fd >= 0);
  CHECK(get(fd, "/obj.bin", "", &r) == 0);
  CHECK(r.status == 200 && r.len == OBJ_SIZE &&
        memcmp(r.body, data, OBJ_SIZE) == 0);
  CHECK(strcmp(r.etag, etag) == 0);
  free(r.body);
  CHECK(get(fd, "/obj.bin", "0-9", &r) == 0);
  CHECK(r.status == 503);
  free(r.body);
  CHECK(get(fd, "/obj.bin", "2097152-", &r) == 0);
  CHECK(r.status == 206 && r.len == OBJ_SIZE - 2097152 &&
        memcmp(r.body, data + 2097152, r.len) == 0);
  free(r.body);

  /* A rule added while it runs: the ETag of the next answer changes. */
  char reply[512];
  CHECK(gf_net_proxy_ctl(&px, "add etag path=/obj nth=1", reply,
                         sizeof reply) == 0);
  CHECK(strncmp(reply, "ok ", 3) == 0);
  CHECK(get(fd, "/obj.bin", "0-0", &r) == 0);
  CHECK(r.status == 206 && strcmp(r.etag, etag) != 0);
  free(r.body);
  CHECK(gf_net_proxy_ctl(&px, "bogus", reply, sizeof reply) == -1);
  CHECK(strncmp(reply, "err ", 4) == 0);
  close(fd);

  /* nginx saw 1 + 3 requests (the 503 never reached it); the proxy 4. */
  CHECK(gf_net_requests(&ng, "/obj.bin", 4) == 4);
  CHECK(gf_net_proxy_stat(&px, "requests") == 4);
  CHECK(gf_net_proxy_stat(&px, "forwarded") == 3);
  CHECK(gf_net_proxy_stat(&px, "status") == 1);
  CHECK(gf_net_proxy_stat(&px, "etag") == 1);
  CHECK(gf_net_proxy_stat(&px, "no_such_counter") == -1);

  CHECK(gf_net_proxy_stop(&px) == 0);
  gf_net_nginx_stop(&ng);
  /* Stopped means gone: nothing answers on either port. */
  CHECK(conn_to(ng.port) < 0);
  CHECK(conn_to(px.port) < 0);
  free(data);
  return gf_test_finish();
}
