/* The HTTP storage against a scripted server on 127.0.0.1 (a thread of
 * this test that answers each request with the next canned reply and
 * keeps what was asked): what gpufeed sends (HEAD, then a GET with
 * Range, If-Match for a strong ETag, If-Unmodified-Since for a date only,
 * nothing for a weak ETag; basic auth from the URL's user:password, the
 * query kept, a bearer token from GPUFEED_HTTP_BEARER_TOKEN; no
 * credentials in the request line), and the replies no real server here
 * sends: a chunked body longer than asked (GF_EREPLY, not a byte past
 * the buffer), a body cut without a Content-Length (retried), a
 * Content-Range for other bytes, a gzip-encoded body, a redirect, an
 * HTTP/1.0 close-delimited 200 to a whole-object request. Needs no
 * nginx. */
#include "testutil.h"

#include "io/io.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NREQ 32

static struct server {
  int lfd, port;
  pthread_t thread;
  pthread_mutex_t mu;
  const char *const *script; /* replies, NULL-terminated */
  int next;
  char reqs[NREQ][2048]; /* request heads, in order */
  int nreq;
  atomic_bool stop;
} srv;

static void *serve(void *arg) {
  (void)arg;
  while (!atomic_load(&srv.stop)) {
    struct pollfd p = {srv.lfd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0)
      continue;
    int fd = accept(srv.lfd, NULL, NULL);
    if (fd < 0)
      continue;
    char head[2048];
    size_t n = 0;
    while (n < sizeof head - 1) {
      ssize_t k = recv(fd, head + n, 1, 0);
      if (k <= 0)
        break;
      n++;
      if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
        break;
    }
    head[n] = '\0';
    pthread_mutex_lock(&srv.mu);
    if (srv.nreq < NREQ)
      memcpy(srv.reqs[srv.nreq++], head, n + 1);
    const char *reply = srv.script && srv.script[srv.next]
                            ? srv.script[srv.next++]
                            : "HTTP/1.1 500 Out Of Script\r\nContent-Length: "
                              "0\r\nConnection: close\r\n\r\n";
    pthread_mutex_unlock(&srv.mu);
    send(fd, reply, strlen(reply), MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    /* Until the client closes: it has read everything. */
    char sink[256];
    while (recv(fd, sink, sizeof sink, 0) > 0)
      ;
    close(fd);
  }
  return NULL;
}

static void script(const char *const *replies) {
  pthread_mutex_lock(&srv.mu);
  srv.script = replies;
  srv.next = 0;
  srv.nreq = 0;
  pthread_mutex_unlock(&srv.mu);
}

/* Request i's head (after the case ran). */
static const char *req(int i) { return i < srv.nreq ? srv.reqs[i] : ""; }

static gf_storage *open_at(const char *userinfo, const char *path_query) {
  char url[256];
  snprintf(url, sizeof url, "http://%s127.0.0.1:%d%s", userinfo, srv.port,
           path_query);
  gf_remote_config rc = GF_REMOTE_CONFIG_INIT;
  rc.max_attempts = 3;
  rc.retry_ms = 5000;
  rc.stall_ms = 1000;
  gf_storage *st = NULL;
  CHECK_OK(gf_storage_open(url, &rc, &st));
  return st;
}

#define HEAD_OK(etag_line)                                                     \
  "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n" etag_line                       \
  "Connection: close\r\n\r\n"

static char object[101];

int main(void) {
  for (int i = 0; i < 100; i++)
    object[i] = (char)('a' + i % 26);
  srv.lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (srv.lfd < 0 || bind(srv.lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(srv.lfd, 16) != 0 ||
      getsockname(srv.lfd, (struct sockaddr *)&a, &al) != 0) {
    perror("test server");
    return 1;
  }
  srv.port = ntohs(a.sin_port);
  pthread_mutex_init(&srv.mu, NULL);
  pthread_create(&srv.thread, NULL, serve, NULL);

  /* What is sent: HEAD, then a ranged GET with If-Match; basic auth; the
   * query; no credentials in the request line. */
  static char get_ok[512];
  snprintf(get_ok, sizeof get_ok,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "10-19/100\r\nContent-Length: 10\r\nETag: \"abc\"\r\n"
           "Connection: close\r\n\r\n%.10s",
           object + 10);
  const char *const s1[] = {HEAD_OK("ETag: \"abc\"\r\n"), get_ok, NULL};
  script(s1);
  gf_storage *st = open_at("alice:pw%21@", "/p/?sig=Q1");
  gf_object *o = NULL;
  uint8_t buf[128];
  CHECK_OK(gf_object_open(st, "dir/obj 1.bin", 0, &o));
  CHECK(o && o->size == 100 && strcmp(o->version, "\"abc\"") == 0);
  CHECK_OK(gf_object_read(o, buf, 10, 10));
  CHECK(memcmp(buf, object + 10, 10) == 0);
  CHECK(strncmp(req(0), "HEAD /p/dir/obj%201.bin?sig=Q1 HTTP/1.1\r\n", 41) ==
        0);
  CHECK(strncmp(req(1), "GET /p/dir/obj%201.bin?sig=Q1 HTTP/1.1\r\n", 40) == 0);
  /* base64("alice:pw!") */
  CHECK(strstr(req(0), "\r\nAuthorization: Basic YWxpY2U6cHch\r\n"));
  CHECK(strstr(req(1), "\r\nRange: bytes=10-19\r\n"));
  CHECK(strstr(req(1), "\r\nIf-Match: \"abc\"\r\n"));
  CHECK(!strstr(req(1), "Accept-Encoding"));
  if (gf_test_failures)
    fprintf(stderr, "requests:\n%s\n%s\n", req(0), req(1));
  gf_object_close(o);
  gf_storage_close(st);

  /* A weak ETag: no If-Match (it could never match); a date only:
   * If-Unmodified-Since. A bearer token from the environment. */
  static char get_weak[512];
  snprintf(get_weak, sizeof get_weak,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "0-9/100\r\nETag: W/\"w1\"\r\nConnection: close\r\n\r\n%.10s",
           object);
  static char get_lm[512];
  snprintf(get_lm, sizeof get_lm,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "0-9/100\r\nConnection: close\r\n\r\n%.10s",
           object);
  const char *const s2[] = {HEAD_OK("ETag: W/\"w1\"\r\n"), get_weak,
                            HEAD_OK("Last-Modified: Tue, 14 Nov 2023 "
                                    "22:13:20 GMT\r\n"),
                            get_lm, NULL};
  script(s2);
  setenv("GPUFEED_HTTP_BEARER_TOKEN", "tok-123", 1);
  st = open_at("", "/p");
  unsetenv("GPUFEED_HTTP_BEARER_TOKEN");
  CHECK_OK(gf_object_open(st, "w.bin", 0, &o));
  CHECK_OK(gf_object_read(o, buf, 0, 10));
  gf_object_close(o);
  CHECK_OK(gf_object_open(st, "lm.bin", 0, &o));
  CHECK(o && strcmp(o->version, "lm:Tue, 14 Nov 2023 22:13:20 GMT") == 0);
  CHECK_OK(gf_object_read(o, buf, 0, 10));
  gf_object_close(o);
  CHECK(!strstr(req(1), "If-Match") && !strstr(req(1), "If-Unmodified"));
  CHECK(strstr(req(3), "\r\nIf-Unmodified-Since: Tue, 14 Nov 2023 22:13:20 "
                       "GMT\r\n"));
  for (int i = 0; i < 4; i++)
    CHECK(strstr(req(i), "\r\nAuthorization: Bearer tok-123\r\n"));
  gf_storage_close(st);

  /* Replies no real server here gives. Each: HEAD, then what the GET of
   * bytes 10-19 gets. */
  static char longer[512], cut[512], cut_rest[512], other[512], gz[512];
  snprintf(longer, sizeof longer,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "10-19/100\r\nTransfer-Encoding: chunked\r\nConnection: "
           "close\r\n\r\n14\r\n%.20s\r\n0\r\n\r\n",
           object + 10);
  snprintf(cut, sizeof cut,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "10-19/100\r\nConnection: close\r\n\r\n%.4s",
           object + 10);
  snprintf(cut_rest, sizeof cut_rest,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "14-19/100\r\nConnection: close\r\n\r\n%.6s",
           object + 14);
  snprintf(other, sizeof other,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "20-29/100\r\nConnection: close\r\n\r\n%.10s",
           object + 20);
  snprintf(gz, sizeof gz,
           "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes "
           "10-19/100\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n"
           "%.10s",
           object + 10);
  struct {
    const char *name;
    const char *replies[4];
    int engine;
    int want;
    const char *word;
    int requests;
  } cases[] = {
      {"a chunked body longer than asked",
       {longer},
       0,
       GF_EREPLY,
       "more than the 10 bytes asked",
       2},
      {"the same through the engine",
       {longer},
       1,
       GF_EREPLY,
       "more than the 10 bytes asked",
       2},
      {"a body cut, no Content-Length", {cut, cut_rest}, 0, 0, NULL, 3},
      {"the same through the engine", {cut, cut_rest}, 1, 0, NULL, 3},
      {"other bytes", {other}, 0, GF_EREPLY, "bytes 20-29 for bytes 10-19", 2},
      {"gzip", {gz}, 1, GF_EREPLY, "Content-Encoding", 2},
      {"a redirect",
       {"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\n"
        "Content-Length: 0\r\nConnection: close\r\n\r\n"},
       0,
       GF_EREMOTE,
       "not followed",
       2},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *s[6] = {HEAD_OK(""), cases[c].replies[0], cases[c].replies[1],
                        NULL};
    script(s);
    st = open_at("", "/p");
    memset(buf, 0x55, sizeof buf);
    int rc = gf_object_open(st, "o.bin", 0, &o);
    const char *why = "";
    if (rc == 0 && !cases[c].engine) {
      rc = gf_object_read(o, buf, 10, 10);
      why = gf_last_error()->message;
    } else if (rc == 0) {
      gf_reader_opts ro = GF_READER_OPTS_INIT;
      ro.storage = st;
      gf_reader *r;
      CHECK_OK(gf_reader_create(&ro, &r));
      gf_read_req q = {o, 0, 10, 10, buf, 0};
      gf_read_done d = {0};
      CHECK_OK(gf_reader_submit(r, &q, 1));
      CHECK(gf_reader_wait(r, &d, 1, 1) == 1);
      static char w[256];
      snprintf(w, sizeof w, "%s", d.why ? d.why : "");
      why = w;
      rc = d.result < 0 ? (int)d.result : 0;
      gf_reader_destroy(r);
    }
    bool ok = rc == cases[c].want &&
              (!cases[c].word || strstr(why, cases[c].word)) &&
              srv.nreq == cases[c].requests;
    if (rc == 0)
      ok = ok && memcmp(buf, object + 10, 10) == 0;
    /* Nothing past the 10 bytes asked, whatever came. */
    for (size_t i = 10; i < sizeof buf; i++)
      ok = ok && buf[i] == 0x55;
    CHECK(ok);
    if (!ok)
      fprintf(stderr, "  %s: rc %d (%s), %d requests: %s\n", cases[c].name, rc,
              gf_err_name(rc), srv.nreq, why);
    gf_object_close(o);
    gf_storage_close(st);
  }

  /* HTTP/1.0, a 200 delimited by the close, to a request of the whole
   * object: taken. */
  static char whole[512];
  snprintf(whole, sizeof whole, "HTTP/1.0 200 OK\r\n\r\n%.100s", object);
  const char *const s3[] = {HEAD_OK(""), whole, NULL};
  script(s3);
  st = open_at("", "/p");
  CHECK_OK(gf_object_open(st, "o.bin", 0, &o));
  CHECK_OK(gf_object_read(o, buf, 0, 100));
  CHECK(memcmp(buf, object, 100) == 0);
  gf_object_close(o);
  gf_storage_close(st);

  atomic_store(&srv.stop, true);
  pthread_join(srv.thread, NULL);
  close(srv.lfd);
  return gf_test_finish();
}
