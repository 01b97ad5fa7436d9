/* gf_object_stream (io/storage.h): a byte range handed to a sink front to
 * back.
 *   Local files (read in GF_STREAM_CHUNK pieces): the whole object, a
 *   middle range, a range cut at the end and one past it, a sink that
 *   stops (its count returned, no call after), a sink's error returned
 *   with its context, a file cut short since it was opened.
 *   HTTP, from a private nginx through netproxy (tests/net/): the bytes
 *   of the file in ONE GET (the storage's counters and nginx's log), in
 *   many calls as they arrive; a body reset, cut or stalled inside ->
 *   resumed from the first byte not handed (the access log shows the
 *   range), no byte twice, the retry counted; the object replaced
 *   mid-stream (412 to If-Match) and a reply of another ETag ->
 *   GF_ECHANGED with no byte of it handed; a 200 of the whole object to a
 *   range -> GF_EREPLY, the sink never called; an object gone -> -ENOENT
 *   named; a sink that stops (one request, no retry, no failure counted,
 *   and a second stream from there completes the bytes); a sink's error;
 *   two threads streaming at once; no secret (user:password, query,
 *   bearer token) in any message or log line.
 * Skips (77) without nginx unless GPUFEED_REQUIRE_HTTP=1.
 *
 * With arguments `s3 URL` (tests/storage_stream_s3.sh, which starts moto
 * and the proxy): the same whole-object, cut-and-resumed and stop cases
 * against S3, each try signed anew. */
#include "http_fixture.h"

#include "io/storage.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* Larger than three chunks, and not a multiple of one. */
#define OBJ_SIZE ((3u << 20) + 4321u)

static uint8_t *want; /* obj.bin's bytes */

typedef struct sink_state {
  uint8_t *buf; /* what it took, in order */
  uint64_t cap, got;
  unsigned calls;
  size_t max_len;   /* the longest call */
  uint64_t stop_at; /* returns 1 once got reaches it (0: never) */
  uint64_t fail_at; /* fails (-EPROTO) once got reaches it (0: never) */
  bool ended;       /* it stopped or failed */
  bool after_end;   /* a call came after that */
  bool bad_call;    /* a call of 0 bytes, or beyond cap */
  /* Called once, when got first reaches hook_at (0: never). */
  void (*hook)(void);
  uint64_t hook_at;
} sink_state;

static int take(void *ctx, const uint8_t *data, size_t len) {
  sink_state *s = ctx;
  s->calls++;
  if (s->ended)
    s->after_end = true;
  if (!len || len > s->cap - s->got) {
    s->bad_call = true;
    return gf_fail(-EOVERFLOW, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "the test's sink got %zu bytes after %llu of %llu", len,
                   (unsigned long long)s->got, (unsigned long long)s->cap);
  }
  memcpy(s->buf + s->got, data, len);
  uint64_t before = s->got;
  s->got += len;
  if (len > s->max_len)
    s->max_len = len;
  if (s->hook && before < s->hook_at && s->got >= s->hook_at)
    s->hook();
  if (s->fail_at && s->got >= s->fail_at) {
    s->ended = true;
    return gf_fail(-EPROTO, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "the test's sink refused the bytes at %llu",
                   (unsigned long long)before);
  }
  if (s->stop_at && s->got >= s->stop_at) {
    s->ended = true;
    return 1;
  }
  return 0;
}

static sink_state sink_new(uint64_t cap) {
  return (sink_state){.buf = malloc(cap ? cap : 1), .cap = cap};
}

/* Whether what the sink took is exactly want[off, off + len). */
static bool same(const sink_state *s, uint64_t off, uint64_t len) {
  return s->got == len && memcmp(s->buf, want + off, len) == 0;
}

static bool has(const char *s, const char *sub) { return strstr(s, sub); }

static int64_t stream(gf_object *o, uint64_t off, uint64_t len, sink_state *s) {
  return gf_object_stream(o, off, len, take, s);
}

/* ---- local files -------------------------------------------------------- */

static void local_cases(const char *root) {
  gf_storage *st;
  CHECK_OK(gf_storage_open(root, NULL, &st));
  if (!st)
    return;
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj.bin", 0, &o));
  if (!o) {
    gf_storage_close(st);
    return;
  }

  /* The whole object, in chunks of at most GF_STREAM_CHUNK. */
  sink_state s = sink_new(OBJ_SIZE);
  CHECK(stream(o, 0, OBJ_SIZE, &s) == OBJ_SIZE);
  CHECK(same(&s, 0, OBJ_SIZE));
  CHECK(s.calls == 4 && s.max_len == GF_STREAM_CHUNK && !s.bad_call);
  free(s.buf);

  /* A middle range. */
  s = sink_new(OBJ_SIZE);
  CHECK(stream(o, 1000, 1500000, &s) == 1500000);
  CHECK(same(&s, 1000, 1500000) && s.calls == 2);
  free(s.buf);

  /* Cut at the end; past the end nothing (the sink is not called). */
  s = sink_new(OBJ_SIZE);
  CHECK(stream(o, OBJ_SIZE - 100, 1000, &s) == 100);
  CHECK(same(&s, OBJ_SIZE - 100, 100) && s.calls == 1);
  CHECK(stream(o, OBJ_SIZE, 10, &s) == 0 && s.calls == 1);
  CHECK(stream(o, 5, 0, &s) == 0 && s.calls == 1);
  free(s.buf);

  /* Stopped in its second chunk: the two chunks it took are the count;
   * no call after. */
  s = sink_new(OBJ_SIZE);
  s.stop_at = (3u << 20) / 2;
  CHECK(stream(o, 0, OBJ_SIZE, &s) == 2 * GF_STREAM_CHUNK);
  CHECK(s.calls == 2 && !s.after_end && same(&s, 0, 2 * GF_STREAM_CHUNK));
  free(s.buf);

  /* The sink's error, with its own words. */
  s = sink_new(OBJ_SIZE);
  s.fail_at = 1;
  CHECK_ERR(stream(o, 0, OBJ_SIZE, &s), -EPROTO);
  CHECK(s.calls == 1 && !s.after_end);
  CHECK(has(gf_last_error()->message, "the test's sink refused"));
  free(s.buf);
  gf_object_close(o);

  /* A file cut since it was opened: an error, not a short count that
   * would read as a sink that stopped. */
  char path[4300];
  snprintf(path, sizeof path, "%s/cut.bin", root);
  CHECK(gf_test_write_file(path, want, OBJ_SIZE) == 0);
  CHECK_OK(gf_object_open(st, "cut.bin", 0, &o));
  if (o) {
    CHECK(truncate(path, 1500000) == 0);
    s = sink_new(OBJ_SIZE);
    CHECK_ERR(stream(o, 0, OBJ_SIZE, &s), GF_ETRUNCATED);
    CHECK(s.got == GF_STREAM_CHUNK);
    CHECK(has(gf_last_error()->message, "cut.bin") &&
          has(gf_last_error()->message, "ended after 1500000"));
    free(s.buf);
    gf_object_close(o);
  }
  gf_storage_close(st);
}

/* ---- HTTP --------------------------------------------------------------- */

static struct gf_net_nginx ng;
static struct gf_net_proxy px;
static char root[4200];

static void ctl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ctl(const char *fmt, ...) {
  char cmd[512], reply[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  if (gf_net_proxy_ctl(&px, cmd, reply, sizeof reply) != 0) {
    fprintf(stderr, "ctl: '%s' answered '%s'\n", cmd, reply);
    gf_test_failures++;
  }
}

/* How many GETs in nginx's access log asked for this range (waiting a
 * little for at least want: nginx logs after it answers). */
static int logged_range(uint64_t first, uint64_t last, int want_n) {
  char range[64];
  snprintf(range, sizeof range, "\tbytes=%llu-%llu\t",
           (unsigned long long)first, (unsigned long long)last);
  int n = 0;
  for (int i = 0; i < 20; i++) {
    size_t len;
    char *log = gf_test_read_file(ng.access_log, &len);
    char *z = log ? realloc(log, len + 1) : NULL;
    n = 0;
    if (z) {
      z[len] = '\0';
      for (char *p = z; (p = strstr(p, range)); p++)
        n++;
      free(z);
    } else {
      free(log);
    }
    if (n >= want_n)
      break;
    usleep(50000);
  }
  return n;
}

static gf_storage_counters counters(gf_storage *st) {
  gf_storage_counters k;
  gf_storage_counters_get(st, &k);
  return k;
}

/* What a stream did to the storage's counters. */
typedef struct delta {
  uint64_t requests, retries, failures, bytes;
} delta;
static delta since(gf_storage *st, const gf_storage_counters *b) {
  gf_storage_counters a = counters(st);
  return (delta){.requests = a.requests - b->requests,
                 .retries = a.retries - b->retries,
                 .failures = a.failures - b->failures,
                 .bytes = a.bytes - b->bytes};
}

/* One case: rules added (';' between), obj opened, then streamed by the
 * sink set up in *s; the result, the counters' change and the time. */
typedef struct outcome {
  int64_t rc;
  delta d;
  double secs;
  char why[1024];
} outcome;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static outcome run(gf_storage *st, const char *name, const char *rules,
                   uint64_t off, uint64_t len, sink_state *s) {
  outcome out;
  memset(&out, 0, sizeof out);
  ctl("clear");
  gf_object *o;
  out.rc = gf_object_open(st, name, 0, &o);
  if (out.rc < 0) {
    snprintf(out.why, sizeof out.why, "open: %.1000s",
             gf_last_error()->message);
    return out;
  }
  char buf[512];
  snprintf(buf, sizeof buf, "%s", rules);
  for (char *save = NULL, *r = strtok_r(buf, ";", &save); r;
       r = strtok_r(NULL, ";", &save))
    ctl("add %s", r);
  ctl("zero");
  gf_storage_counters b = counters(st);
  gf_error_clear();
  double t0 = now_s();
  out.rc = stream(o, off, len, s);
  out.secs = now_s() - t0;
  snprintf(out.why, sizeof out.why, "%s", gf_last_error()->message);
  out.d = since(st, &b);
  gf_object_close(o);
  return out;
}

static void report(const char *name, int before, const outcome *o,
                   const sink_state *s) {
  if (gf_test_failures != before)
    fprintf(stderr,
            "  ^ case '%s': rc %lld in %.2f s, sink %llu bytes in %u calls; "
            "requests %llu retries %llu failures %llu bytes %llu: %s\n",
            name, (long long)o->rc, o->secs, (unsigned long long)s->got,
            s->calls, (unsigned long long)o->d.requests,
            (unsigned long long)o->d.retries, (unsigned long long)o->d.failures,
            (unsigned long long)o->d.bytes, o->why);
}

/* The file behind swap.bin replaced by another version (other bytes,
 * another mtime: another ETag), as an upload would. */
static void replace_swap(void) {
  char path[4300], tmp[4300];
  snprintf(path, sizeof path, "%s/swap.bin", root);
  snprintf(tmp, sizeof tmp, "%s/swap.new", root);
  uint8_t *other = malloc(OBJ_SIZE);
  if (!other) {
    gf_test_failures++;
    return;
  }
  for (size_t i = 0; i < OBJ_SIZE; i++)
    other[i] = (uint8_t)~want[i];
  CHECK(gf_test_write_file(tmp, other, OBJ_SIZE) == 0);
  free(other);
  struct timeval tv[2];
  gettimeofday(&tv[0], NULL);
  tv[0].tv_sec += 100;
  tv[1] = tv[0];
  CHECK(utimes(tmp, tv) == 0);
  CHECK(rename(tmp, path) == 0);
}

typedef struct thread_arg {
  gf_storage *st;
  sink_state s;
  int64_t rc;
} thread_arg;

static void *stream_thread(void *p) {
  thread_arg *a = p;
  gf_object *o;
  a->rc = gf_object_open(a->st, "obj.bin", 0, &o);
  if (a->rc == 0) {
    a->rc = stream(o, 0, OBJ_SIZE, &a->s);
    gf_object_close(o);
  }
  return NULL;
}

static void http_cases(gf_storage *st) {
  const char *get = "method=GET path=/pub/obj.bin";
  char r[512];
#define RULE(...) (snprintf(r, sizeof r, __VA_ARGS__), r)
  const uint64_t end = OBJ_SIZE - 1;
  int before;
  outcome o;
  sink_state s;

  /* The whole object: one GET, its body in many calls as it came. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", "", 0, OBJ_SIZE, &s);
  CHECK(o.rc == OBJ_SIZE && same(&s, 0, OBJ_SIZE) && !s.bad_call);
  CHECK(o.d.requests == 1 && o.d.retries == 0 && o.d.failures == 0 &&
        o.d.bytes == OBJ_SIZE);
  CHECK(gf_net_proxy_stat(&px, "requests") == 1);
  CHECK(logged_range(0, end, 1) == 1);
  CHECK(s.calls > 10);
  report("whole", before, &o, &s);
  free(s.buf);

  /* A middle range, and one cut at the object's end. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", "", 12345, 1u << 20, &s);
  CHECK(o.rc == 1 << 20 && same(&s, 12345, 1u << 20));
  CHECK(o.d.requests == 1 && logged_range(12345, 12345 + (1u << 20) - 1, 1));
  report("middle", before, &o, &s);
  free(s.buf);
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", "", OBJ_SIZE - 1000, 5000, &s);
  CHECK(o.rc == 1000 && same(&s, OBJ_SIZE - 1000, 1000));
  CHECK(logged_range(OBJ_SIZE - 1000, end, 1) == 1);
  report("cut at the end", before, &o, &s);
  free(s.buf);

  /* A clean close after 300000 body bytes: the rest asked from exactly
   * there, each byte handed once. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", RULE("truncate after=300000 %s times=1", get), 0,
          OBJ_SIZE, &s);
  CHECK(o.rc == OBJ_SIZE && same(&s, 0, OBJ_SIZE) && !s.bad_call);
  CHECK(o.d.requests == 2 && o.d.retries == 1 && o.d.failures == 0);
  CHECK(o.d.bytes == OBJ_SIZE);
  CHECK(gf_net_proxy_stat(&px, "truncate") == 1);
  CHECK(logged_range(300000, end, 1) == 1);
  report("cut mid-body", before, &o, &s);
  free(s.buf);

  /* A reset inside the body (what was in flight may be lost: the resumed
   * range is wherever the sink got to). */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", RULE("reset after=1000000 %s times=1", get), 0,
          OBJ_SIZE, &s);
  CHECK(o.rc == OBJ_SIZE && same(&s, 0, OBJ_SIZE) && !s.bad_call);
  CHECK(o.d.requests == 2 && o.d.retries == 1 && o.d.failures == 0);
  CHECK(gf_net_proxy_stat(&px, "reset") == 1);
  report("reset mid-body", before, &o, &s);
  free(s.buf);

  /* A server that stops sending inside the body: the stall rule
   * (stall_ms) still abandons the try, and the rest comes from a retry. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", RULE("stall after=200000 %s times=1", get), 0,
          OBJ_SIZE, &s);
  CHECK(o.rc == OBJ_SIZE && same(&s, 0, OBJ_SIZE) && !s.bad_call);
  CHECK(o.d.requests == 2 && o.d.retries == 1 && o.secs >= 0.9);
  CHECK(gf_net_proxy_stat(&px, "stall") == 1);
  CHECK(logged_range(200000, end, 1) == 1);
  report("stall mid-body", before, &o, &s);
  free(s.buf);

  /* The object replaced while it streams: the first try is cut, the
   * retry's If-Match fails (412): GF_ECHANGED, and the sink holds the old
   * version's bytes only. */
  char path[4300];
  snprintf(path, sizeof path, "%s/swap.bin", root);
  CHECK(gf_test_write_file(path, want, OBJ_SIZE) == 0);
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  s.hook = replace_swap;
  s.hook_at = 1;
  o = run(st, "swap.bin",
          "truncate after=100000 method=GET path=/pub/swap.bin times=1", 0,
          OBJ_SIZE, &s);
  CHECK(o.rc == GF_ECHANGED && same(&s, 0, 100000));
  CHECK(has(o.why, "/pub/swap.bin") && has(o.why, "HTTP 412") &&
        has(o.why, "not retried") && has(o.why, "bytes 0-"));
  CHECK(o.d.requests == 2 && o.d.retries == 1 && o.d.failures == 1);
  report("replaced mid-stream", before, &o, &s);
  free(s.buf);

  /* A retry answered with another ETag (a server without If-Match). */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin",
          RULE("truncate after=100000 %s nth=1;etag %s nth=2", get, get), 0,
          OBJ_SIZE, &s);
  CHECK(o.rc == GF_ECHANGED && same(&s, 0, 100000));
  CHECK(has(o.why, "-changed") && has(o.why, "not retried"));
  report("another ETag", before, &o, &s);
  free(s.buf);

  /* The whole object to a range: refused before a byte reaches the sink. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", RULE("strip-range %s", get), 1000, 5000, &s);
  CHECK(o.rc == GF_EREPLY && s.calls == 0);
  CHECK(has(o.why, "HTTP 200") && has(o.why, "not retried"));
  report("200 to a range", before, &o, &s);
  free(s.buf);

  /* A 404, named. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", RULE("status 404 %s", get), 0, OBJ_SIZE, &s);
  CHECK(o.rc == -ENOENT && s.calls == 0);
  CHECK(has(o.why, "/pub/obj.bin") && has(o.why, "HTTP 404") &&
        has(o.why, "bytes 0-3150048") && has(o.why, "1 attempt, not retried"));
  CHECK(o.d.requests == 1 && o.d.failures == 1);
  report("404", before, &o, &s);
  free(s.buf);

  /* The sink stops: its count returned, one request, nothing retried or
   * failed; a second stream from there brings the rest. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  s.stop_at = 500000;
  o = run(st, "obj.bin", "", 0, OBJ_SIZE, &s);
  CHECK(o.rc > 0 && (uint64_t)o.rc == s.got && s.got >= 500000 &&
        s.got < OBJ_SIZE && !s.after_end);
  CHECK(o.d.requests == 1 && o.d.retries == 0 && o.d.failures == 0 &&
        o.d.bytes == s.got);
  report("sink stops", before, &o, &s);
  if (o.rc > 0) {
    before = gf_test_failures;
    uint64_t at = (uint64_t)o.rc;
    s.stop_at = 0;
    s.ended = false;
    o = run(st, "obj.bin", "", at, OBJ_SIZE, &s);
    CHECK(o.rc == (int64_t)(OBJ_SIZE - at) && same(&s, 0, OBJ_SIZE));
    CHECK(logged_range(at, end, 1) == 1);
    report("sink goes on", before, &o, &s);
  }
  free(s.buf);

  /* The sink fails: its code and words, not retried, not the server's
   * failure. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  s.fail_at = 200000;
  o = run(st, "obj.bin", "", 0, OBJ_SIZE, &s);
  CHECK(o.rc == -EPROTO && !s.after_end);
  CHECK(has(o.why, "the test's sink refused"));
  CHECK(o.d.requests == 1 && o.d.retries == 0 && o.d.failures == 0);
  report("sink fails", before, &o, &s);
  free(s.buf);

  /* Two threads streaming at once (two pooled handles). */
  before = gf_test_failures;
  ctl("clear");
  thread_arg ta[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    ta[i] = (thread_arg){.st = st, .s = sink_new(OBJ_SIZE)};
    CHECK(pthread_create(&th[i], NULL, stream_thread, &ta[i]) == 0);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    CHECK(ta[i].rc == OBJ_SIZE && same(&ta[i].s, 0, OBJ_SIZE));
    free(ta[i].s.buf);
  }
#undef RULE
}

/* ---- secrets ------------------------------------------------------------ */

static const char *const secrets[] = {"PASSWORD", "TOKEN0", "BEARERSECRET",
                                      "agent007", NULL};
static char secret_url[512];

/* Streams that fail (cut every time; gone) and one the sink fails, from a
 * storage whose URL or token holds secrets. */
static void secret_streams(void *arg) {
  (void)arg;
  gf_remote_config rc = http_test_remote();
  rc.max_attempts = 2;
  gf_storage *st;
  CHECK_OK(gf_storage_open(secret_url, &rc, &st));
  if (!st)
    return;
  const char *rules[] = {"truncate after=1000 method=GET",
                         "status 404 method=GET", ""};
  for (int i = 0; i < 3; i++) {
    sink_state s = sink_new(OBJ_SIZE);
    s.fail_at = i == 2 ? 1 : 0;
    outcome o = run(st, "obj.bin", rules[i], 0, OBJ_SIZE, &s);
    CHECK(o.rc < 0);
    CHECK(!http_leaks("a failed stream's error", o.why, secrets));
    CHECK(!http_leaks("gf_last_error's path", gf_last_error()->path, secrets));
    free(s.buf);
  }
  gf_storage_close(st);
}

static void secret_cases(void) {
  setenv("GPUFEED_LOG", "debug", 1);
  snprintf(secret_url, sizeof secret_url,
           "http://agent007:PASSWORD@127.0.0.1:%d/pub?token=TOKEN0", px.port);
  char *log = http_capture_stderr(secret_streams, NULL);
  CHECK(log && !http_leaks("stderr", log, secrets));
  free(log);
  snprintf(secret_url, sizeof secret_url, "http://127.0.0.1:%d/pub", px.port);
  setenv("GPUFEED_HTTP_BEARER_TOKEN", "BEARERSECRET", 1);
  log = http_capture_stderr(secret_streams, NULL);
  CHECK(log && !http_leaks("stderr", log, secrets));
  free(log);
  unsetenv("GPUFEED_HTTP_BEARER_TOKEN");
  unsetenv("GPUFEED_LOG");
}

/* ---- S3 ----------------------------------------------------------------- */

/* obj.bin under root (an s3:// location; moto behind the proxy, whose
 * control port is GF_PROXY_CONTROL_PORT), holding the bytes of file. */
static int s3_main(const char *file, const char *s3root) {
  size_t size;
  want = gf_test_read_file(file, &size);
  const char *cport = getenv("GF_PROXY_CONTROL_PORT");
  CHECK(want && size == OBJ_SIZE && cport);
  if (!want || size != OBJ_SIZE || !cport)
    return gf_test_finish();
  px.control_port = atoi(cport);
  gf_remote_config rc = http_test_remote();
  gf_storage *st;
  CHECK_OK(gf_storage_open(s3root, &rc, &st));
  if (!st)
    return gf_test_finish();
  int before;
  outcome o;
  sink_state s;

  /* One signed GET for the whole object. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", "", 0, OBJ_SIZE, &s);
  CHECK(o.rc == OBJ_SIZE && same(&s, 0, OBJ_SIZE));
  CHECK(o.d.requests == 1 && o.d.retries == 0 && o.d.bytes == OBJ_SIZE);
  CHECK(gf_net_proxy_stat(&px, "requests") == 1);
  report("s3 whole", before, &o, &s);
  free(s.buf);

  /* Cut inside the body: the rest asked by a try signed anew (moto
   * refuses a request whose signature does not cover its Range). */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin",
          "truncate after=300000 method=GET path=/obj.bin times=1", 0, OBJ_SIZE,
          &s);
  CHECK(o.rc == OBJ_SIZE && same(&s, 0, OBJ_SIZE) && !s.bad_call);
  CHECK(o.d.requests == 2 && o.d.retries == 1 && o.d.failures == 0);
  CHECK(gf_net_proxy_stat(&px, "truncate") == 1 &&
        gf_net_proxy_stat(&px, "requests") == 2);
  report("s3 cut mid-body", before, &o, &s);
  free(s.buf);

  /* A sink that stops, then goes on from there. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  s.stop_at = 500000;
  o = run(st, "obj.bin", "", 0, OBJ_SIZE, &s);
  CHECK(o.rc > 0 && (uint64_t)o.rc == s.got && s.got < OBJ_SIZE &&
        o.d.requests == 1 && !s.after_end);
  report("s3 sink stops", before, &o, &s);
  if (o.rc > 0) {
    uint64_t at = (uint64_t)o.rc;
    s.stop_at = 0;
    s.ended = false;
    o = run(st, "obj.bin", "", at, OBJ_SIZE, &s);
    CHECK(o.rc == (int64_t)(OBJ_SIZE - at) && same(&s, 0, OBJ_SIZE));
    report("s3 sink goes on", before, &o, &s);
  }
  free(s.buf);

  /* Gone: named by its s3:// location. */
  before = gf_test_failures;
  s = sink_new(OBJ_SIZE);
  o = run(st, "obj.bin", "status 404 s3code=NoSuchKey method=GET", 0, OBJ_SIZE,
          &s);
  CHECK(o.rc == -ENOENT && s.calls == 0);
  CHECK(has(o.why, "s3://") && has(o.why, "/obj.bin") &&
        has(o.why, "NoSuchKey"));
  report("s3 404", before, &o, &s);
  free(s.buf);

  gf_storage_close(st);
  free(want);
  return gf_test_finish();
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "s3") == 0)
    return s3_main(argv[2], argv[3]);
  const char *tmp = gf_test_tmpdir();
  want = malloc(OBJ_SIZE);
  if (!want)
    return 1;
  uint64_t seed = 42;
  for (size_t i = 0; i < OBJ_SIZE; i++)
    want[i] = (uint8_t)gf_test_rand(&seed);
  snprintf(root, sizeof root, "%s/pub", tmp);
  char path[4300];
  snprintf(path, sizeof path, "%s/obj.bin", root);
  CHECK(mkdir(root, 0755) == 0 &&
        gf_test_write_file(path, want, OBJ_SIZE) == 0);

  local_cases(root);

  char rundir[4200];
  snprintf(rundir, sizeof rundir, "%s/nginx", tmp);
  if (gf_net_nginx_start(tmp, rundir, 0, &ng) < 0)
    return 1;
  snprintf(rundir, sizeof rundir, "%s/proxy", tmp);
  if (gf_net_proxy_start(&ng, rundir, NULL, &px) < 0) {
    gf_net_nginx_stop(&ng);
    return 1;
  }
  char url[256];
  snprintf(url, sizeof url, "%s/pub", px.url);
  gf_remote_config rc = http_test_remote();
  gf_storage *st;
  CHECK_OK(gf_storage_open(url, &rc, &st));
  if (st)
    http_cases(st);
  gf_storage_close(st);
  secret_cases();

  CHECK(gf_net_proxy_stop(&px) == 0);
  gf_net_nginx_stop(&ng);
  free(want);
  return gf_test_finish();
}
