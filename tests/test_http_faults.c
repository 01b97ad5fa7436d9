/* The HTTP storage against a failing server: netproxy (tests/net/) in
 * front of nginx injects each fault of the issue into the GETs of one
 * shard, and every case is read twice, by the synchronous call
 * (gf_object_read, a pooled easy handle) and by the reader's engine (the
 * multi handle), with the same outcome:
 *   5xx and 429 (Retry-After honoured) retried until they succeed, with
 *   the right bytes; retries exhausted (in count, and in time) giving one
 *   GF_EREMOTE naming the URL, the range, the status and the attempts;
 *   404 and 403 not retried; a stall before or inside the body, a reset
 *   before or inside it, a body cut short: retried, the rest of the range
 *   asked again (the access log shows the resumed range); a connection
 *   refused or a server that accepts and says nothing: retried, then
 *   GF_EREMOTE; a 200 with the whole object to a range (GF_EREPLY) and an
 *   ETag other than the one opened (GF_ECHANGED): not retried, and not a
 *   byte of them in the caller's buffer; a flipped byte, which HTTP cannot
 *   see, caught by the dataset's checksum. The engine destroyed with
 *   reads on the wire writes no buffer after. Credentials in the URL and
 *   the bearer token reach no message, why or log line. */
#include "http_fixture.h"

#include "format/format.h"
#include "io/io.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHARD "shard-000001.gfs"
#define OFF 1000u
#define LEN 2000u

static http_fixture f;
static uint8_t *want; /* the shard's bytes */
static size_t want_size;

typedef struct outcome {
  int rc;
  char why[1024];
  double secs;
  uint8_t buf[LEN];
} outcome;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads [off, off + len) of SHARD from st, by the synchronous call
 * (engine false) or through a reader's engine. */
static void read_range(gf_storage *st, bool engine, uint64_t off, uint64_t len,
                       outcome *out) {
  memset(out, 0, sizeof *out);
  memset(out->buf, 0xAA, sizeof out->buf);
  gf_object *o;
  int rc = gf_object_open(st, SHARD, 0, &o);
  if (rc < 0) {
    out->rc = rc;
    snprintf(out->why, sizeof out->why, "open: %.900s",
             gf_last_error()->message);
    return;
  }
  double t0 = now_s();
  if (!engine) {
    out->rc = gf_object_read(o, out->buf, off, len);
    if (out->rc < 0)
      snprintf(out->why, sizeof out->why, "%s", gf_last_error()->message);
  } else {
    gf_reader_opts ro = GF_READER_OPTS_INIT;
    ro.storage = st;
    ro.queue_depth = 2;
    gf_reader *r;
    out->rc = gf_reader_create(&ro, &r);
    if (out->rc == 0) {
      gf_read_req q = {o, 0, off, len, out->buf, 7};
      gf_read_done d;
      out->rc = gf_reader_submit(r, &q, 1);
      if (out->rc == 0 && gf_reader_wait(r, &d, 1, 1) == 1) {
        out->rc = d.result < 0 ? (int)d.result : 0;
        snprintf(out->why, sizeof out->why, "%s", d.why);
        if (d.result >= 0 && (uint64_t)d.result != len)
          out->rc = -EIO;
      }
      gf_reader_destroy(r);
    }
  }
  out->secs = now_s() - t0;
  gf_object_close(o);
}

/* The case: the rule added (several with ';'), the read by both paths,
 * each judged by check (which gets the outcome). */
static void run(gf_storage *st, const char *name, const char *rules,
                void (*check)(const outcome *, bool engine)) {
  for (int engine = 0; engine < 2; engine++) {
    http_ctl(&f, "clear");
    http_ctl(&f, "zero");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", rules);
    for (char *save = NULL, *r = strtok_r(buf, ";", &save); r;
         r = strtok_r(NULL, ";", &save))
      http_ctl(&f, "add %s", r);
    static outcome o;
    int before = gf_test_failures;
    read_range(st, engine, OFF, LEN, &o);
    check(&o, engine);
    if (gf_test_failures != before)
      fprintf(stderr, "  ^ case '%s' (%s): rc %d (%s) in %.2f s: %s\n", name,
              engine ? "engine" : "sync", o.rc, gf_err_name(o.rc), o.secs,
              o.why);
  }
}

static bool has(const char *s, const char *sub) { return strstr(s, sub); }
static bool intact(const outcome *o) {
  return memcmp(o->buf, want + OFF, LEN) == 0;
}
static bool untouched(const outcome *o) {
  for (size_t i = 0; i < LEN; i++)
    if (o->buf[i] != 0xAA)
      return false;
  return true;
}
static long long stat_(const char *name) {
  return gf_net_proxy_stat(&f.px, name);
}
/* Whether nginx's access log shows a GET of SHARD with this range. */
static bool logged_range(uint64_t first, uint64_t last) {
  char range[64];
  snprintf(range, sizeof range, "\tbytes=%llu-%llu\t",
           (unsigned long long)first, (unsigned long long)last);
  for (int i = 0; i < 20; i++) {
    size_t n;
    char *log = gf_test_read_file(f.ng.access_log, &n);
    char *z = log ? realloc(log, n + 1) : NULL;
    bool found = false;
    if (z) {
      z[n] = '\0';
      found = strstr(z, range) != NULL;
      free(z);
    } else {
      free(log);
    }
    if (found)
      return true;
    usleep(50000);
  }
  return false;
}

/* ---- the cases ---------------------------------------------------------- */

static void ok_after_503s(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == 0 && intact(o));
  CHECK(stat_("status") == 2);
}
static void ok_after_429(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == 0 && intact(o));
  CHECK(stat_("status") == 1 && o->secs >= 0.95); /* Retry-After: 1 */
}
static void exhausted(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == GF_EREMOTE && untouched(o));
  CHECK(has(o->why, "/ds/" SHARD) && has(o->why, "bytes 1000-2999") &&
        has(o->why, "HTTP 503") && has(o->why, "4 attempts") &&
        has(o->why, "max_attempts reached"));
  CHECK(stat_("status") == 4);
}
static void out_of_time(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == GF_EREMOTE);
  CHECK(has(o->why, "HTTP 500") && has(o->why, "retry_ms spent"));
  CHECK(o->secs < 5.0 && stat_("status") >= 2);
}
static void not_found(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == -ENOENT && untouched(o));
  CHECK(has(o->why, "/ds/" SHARD) && has(o->why, "HTTP 404") &&
        has(o->why, "1 attempt, not retried"));
  CHECK(stat_("status") == 1);
}
static void forbidden(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == -EACCES && has(o->why, "HTTP 403") &&
        has(o->why, "not retried") && has(o->why, "bytes 1000-2999"));
  CHECK(stat_("status") == 1);
}
static void ok_after_stall(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == 0 && intact(o));
  CHECK(stat_("stall") == 1 && o->secs >= 0.9);
}
static void ok_resumed_100(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == 0 && intact(o));
  CHECK(stat_("stall") == 1 && logged_range(OFF + 100, OFF + LEN - 1));
}
static void ok_after_reset(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == 0 && intact(o) && stat_("reset") == 1);
}
static void ok_resumed_300(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == 0 && intact(o));
  CHECK(stat_("reset") + stat_("truncate") == 1 &&
        logged_range(OFF + 300, OFF + LEN - 1));
}
static void cut_every_time(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == GF_EREMOTE);
  CHECK(has(o->why, "the body ended after 300 of") &&
        has(o->why, "4 attempts") && has(o->why, "bytes 1000-2999"));
}
static void whole_to_range(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == GF_EREPLY && untouched(o));
  CHECK(has(o->why, "HTTP 200 with the whole object") &&
        has(o->why, "not retried") && has(o->why, "/ds/" SHARD));
  CHECK(stat_("strip") == 1);
}
static void etag_changed(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == GF_ECHANGED && untouched(o));
  CHECK(has(o->why, "changed") && has(o->why, "-changed") &&
        has(o->why, "not retried"));
  CHECK(stat_("etag") == 1);
}
static void refused(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == GF_EREMOTE);
  CHECK(has(o->why, "cannot connect") && has(o->why, "4 attempts"));
}
static void hung(const outcome *o, bool engine) {
  (void)engine;
  CHECK(o->rc == GF_EREMOTE);
  CHECK(has(o->why, "stalled") && has(o->why, "4 attempts"));
}

/* ---- secrets ------------------------------------------------------------ */

static const char *const secrets[] = {"PASSWORD", "TOKEN0", "BEARERSECRET",
                                      "agent007", NULL};
static char secret_url[512];
static outcome secret_out[2];
static void secret_reads(void *arg) {
  (void)arg;
  gf_remote_config rc = http_test_remote();
  rc.max_attempts = 2;
  gf_storage *st;
  CHECK_OK(gf_storage_open(secret_url, &rc, &st));
  if (!st)
    return;
  CHECK(!has(gf_storage_display(st), "PASSWORD") &&
        !has(gf_storage_display(st), "TOKEN0"));
  for (int engine = 0; engine < 2; engine++) {
    read_range(st, engine, OFF, LEN, &secret_out[engine]);
    CHECK(secret_out[engine].rc == GF_EREMOTE);
    CHECK(
        !http_leaks("a failed read's error", secret_out[engine].why, secrets));
    CHECK(!http_leaks("gf_last_error's path", gf_last_error()->path, secrets));
  }
  gf_object *o;
  CHECK_ERR(gf_object_open(st, "missing.gfs", 0, &o), -ENOENT);
  CHECK(
      !http_leaks("a failed open's error", gf_last_error()->message, secrets));
  gf_storage_close(st);
}

int main(void) {
  if (http_fixture_start(&f, 40, 16, HTTP_PROXY) < 0)
    return 1;
  char path[4400];
  snprintf(path, sizeof path, "%s/" SHARD, f.local);
  want = gf_test_read_file(path, &want_size);
  CHECK(want && want_size >= OFF + LEN);
  if (!want || want_size < OFF + LEN)
    return gf_test_finish();

  gf_remote_config rc = http_test_remote();
  gf_storage *st;
  CHECK_OK(gf_storage_open(f.proxy_url, &rc, &st));
  if (!st)
    return gf_test_finish();
  const char *get = "method=GET path=/ds/" SHARD;
  char r[512];
#define RULE(...) (snprintf(r, sizeof r, __VA_ARGS__), r)
  run(st, "503 twice", RULE("status 503 %s times=2", get), ok_after_503s);
  run(st, "429, Retry-After 1",
      RULE("status 429 retry-after=1 %s times=1", get), ok_after_429);
  run(st, "503 always", RULE("status 503 %s", get), exhausted);
  run(st, "404", RULE("status 404 %s", get), not_found);
  run(st, "403", RULE("status 403 %s", get), forbidden);
  run(st, "stall before the body", RULE("stall %s times=1", get),
      ok_after_stall);
  run(st, "stall inside the body", RULE("stall after=100 %s times=1", get),
      ok_resumed_100);
  run(st, "reset before the body", RULE("reset %s times=1", get),
      ok_after_reset);
  run(st, "reset inside the body", RULE("reset after=300 %s times=1", get),
      ok_resumed_300);
  run(st, "body cut short", RULE("truncate after=300 %s times=1", get),
      ok_resumed_300);
  run(st, "body cut every time", RULE("truncate after=300 %s", get),
      cut_every_time);
  run(st, "200 to a range", RULE("strip-range %s", get), whole_to_range);
  run(st, "ETag changed", RULE("etag %s", get), etag_changed);

  /* Retries bounded in time rather than count. */
  gf_remote_config quick = http_test_remote();
  quick.max_attempts = 100;
  quick.retry_ms = 400;
  gf_storage *st_quick;
  CHECK_OK(gf_storage_open(f.proxy_url, &quick, &st_quick));
  if (st_quick)
    run(st_quick, "500 always, 400 ms", RULE("status 500 %s", get),
        out_of_time);
  gf_storage_close(st_quick);

  /* The server gone (connections refused), and hung (accepted by the
   * kernel, never answered): the object is opened first. */
  for (int engine = 0; engine < 2; engine++) {
    for (int hang = 0; hang < 2; hang++) {
      http_ctl(&f, "clear");
      gf_object *o;
      CHECK_OK(gf_object_open(st, SHARD, 0, &o));
      if (!o)
        continue;
      http_ctl(&f, hang ? "kill hang" : "kill");
      static outcome out;
      memset(&out, 0, sizeof out);
      if (!engine) {
        out.rc = gf_object_read(o, out.buf, OFF, LEN);
        snprintf(out.why, sizeof out.why, "%s", gf_last_error()->message);
      } else {
        gf_reader_opts ro = GF_READER_OPTS_INIT;
        ro.storage = st;
        gf_reader *rd;
        CHECK_OK(gf_reader_create(&ro, &rd));
        gf_read_req q = {o, 0, OFF, LEN, out.buf, 1};
        gf_read_done d;
        CHECK_OK(gf_reader_submit(rd, &q, 1));
        CHECK(gf_reader_wait(rd, &d, 1, 1) == 1);
        out.rc = (int)d.result;
        snprintf(out.why, sizeof out.why, "%s", d.why);
        gf_reader_destroy(rd);
      }
      int before = gf_test_failures;
      (hang ? hung : refused)(&out, engine);
      if (gf_test_failures != before)
        fprintf(stderr, "  ^ server %s (%s): rc %d: %s\n",
                hang ? "hung" : "gone", engine ? "engine" : "sync", out.rc,
                out.why);
      http_ctl(&f, "resume");
      gf_object_close(o);
    }
  }

  /* The engine destroyed with reads on the wire, some bytes of them in
   * their buffers and the rest still coming: nothing is written into a
   * buffer after destroy returns. */
  {
    http_ctl(&f, "clear");
    http_ctl(&f, "add stall after=100 ms=3000 %s", get);
    gf_object *o;
    CHECK_OK(gf_object_open(st, SHARD, 0, &o));
    gf_reader_opts ro = GF_READER_OPTS_INIT;
    ro.storage = st;
    gf_reader *rd = NULL;
    CHECK_OK(gf_reader_create(&ro, &rd));
    static uint8_t bufs[4][LEN], snap[4][LEN];
    memset(bufs, 0xAA, sizeof bufs);
    bool some = false;
    if (o && rd) {
      gf_read_req q[4];
      for (int i = 0; i < 4; i++)
        q[i] = (gf_read_req){o, 0, OFF, LEN, bufs[i], (uint64_t)i};
      CHECK_OK(gf_reader_submit(rd, q, 4));
      /* Until the bytes before the stall are in (well within stall_ms,
       * after which a try would be abandoned and made again). */
      for (int t = 0; t < 80 && !some; t++) {
        gf_read_done d[4];
        CHECK(gf_reader_wait(rd, d, 4, 0) == 0); /* all still stalled */
        for (int i = 0; i < 4; i++)
          some = some || memcmp(bufs[i], want + OFF, 100) == 0;
        usleep(10000);
      }
    }
    CHECK(some); /* the bytes before the stall did arrive */
    gf_reader_destroy(rd);
    memcpy(snap, bufs, sizeof bufs);
    usleep(1500000); /* past stall_ms: a live transfer would have moved */
    CHECK(memcmp(snap, bufs, sizeof bufs) == 0);
    gf_object_close(o);
  }

  /* A flipped byte: HTTP has no way to see it; the dataset's checksum
   * does, and the sample is an error, not data. */
  http_ctl(&f, "clear");
  gf_dataset *ds;
  CHECK_OK(gf_dataset_open(f.proxy_url, &ds));
  if (ds) {
    gf_sample_info info;
    uint64_t i = 0;
    for (; i < gf_dataset_count(ds); i++)
      if (gf_dataset_sample_info(ds, i, &info) == 0 && info.shard == 1)
        break;
    uint8_t *buf = malloc(info.length);
    /* Read once first: the shard is opened (its header read and checked)
     * on first use, and the flip is meant for the sample's bytes. */
    CHECK(gf_dataset_read(ds, i, buf, info.length) == (int64_t)info.length);
    http_ctl(&f, "add flip at=3 method=GET path=/ds/" SHARD " times=1");
    CHECK_ERR(gf_dataset_read(ds, i, buf, info.length), GF_ECORRUPT);
    CHECK(gf_net_proxy_stat(&f.px, "flip") == 1);
    CHECK(gf_dataset_read(ds, i, buf, info.length) == (int64_t)info.length);
    free(buf);
    gf_dataset_close(ds);
  }

  /* Secrets in the URL and in GPUFEED_HTTP_BEARER_TOKEN: a failing run
   * prints none of them, in any message, why or log line. */
  http_ctl(&f, "clear");
  http_ctl(&f, "add status 503 method=GET");
  snprintf(secret_url, sizeof secret_url,
           "http://agent007:PASSWORD@127.0.0.1:%d/ds?token=TOKEN0", f.px.port);
  setenv("GPUFEED_LOG", "debug", 1);
  char *log = http_capture_stderr(secret_reads, NULL);
  CHECK(log && !http_leaks("stderr", log, secrets));
  free(log);
  snprintf(secret_url, sizeof secret_url, "http://127.0.0.1:%d/ds", f.px.port);
  setenv("GPUFEED_HTTP_BEARER_TOKEN", "BEARERSECRET", 1);
  log = http_capture_stderr(secret_reads, NULL);
  CHECK(log && !http_leaks("stderr", log, secrets));
  free(log);
  unsetenv("GPUFEED_HTTP_BEARER_TOKEN");
  unsetenv("GPUFEED_LOG");

  gf_storage_close(st);
  free(want);
  CHECK(http_fixture_stop(&f) == 0);
  return gf_test_finish();
}
