/* A dataset built by the CLI and served by nginx on 127.0.0.1, read over
 * HTTP and HTTPS: gf_dataset_open of its URL gives the same records and
 * the same bytes as the local open; the reader's engine reads shard
 * ranges many at a time with the local reader's results (the object's
 * end included); a missing object is -ENOENT naming its URL; TLS is
 * verified against the CA given, refused against the system's, and with
 * verification off every display form and the log say so; an object
 * rewritten on the server after open is GF_ECHANGED (nginx's 412 to
 * If-Match), never its new bytes. Six threads read the remote dataset at
 * once (labelled threaded: TSan runs it). */
#include "http_fixture.h"

#include "format/format.h"
#include "io/io.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void same_dataset(gf_dataset *a, gf_dataset *b) {
  CHECK(gf_dataset_count(a) == gf_dataset_count(b));
  CHECK(gf_dataset_num_classes(a) == gf_dataset_num_classes(b));
  CHECK(gf_dataset_num_shards(a) == gf_dataset_num_shards(b));
  for (uint32_t c = 0; c < gf_dataset_num_classes(a); c++)
    CHECK(strcmp(gf_dataset_class_name(a, c), gf_dataset_class_name(b, c)) ==
          0);
  uint8_t *x = malloc(1 << 20), *y = malloc(1 << 20);
  int bad = 0;
  for (uint64_t i = 0; i < gf_dataset_count(a) && bad < 5; i++) {
    gf_sample_info p, q;
    CHECK_OK(gf_dataset_sample_info(a, i, &p));
    CHECK_OK(gf_dataset_sample_info(b, i, &q));
    bool same = p.shard == q.shard && p.offset == q.offset &&
                p.length == q.length && p.codec == q.codec &&
                p.label == q.label && p.checksum == q.checksum &&
                memcmp(&p.shape, &q.shape, sizeof p.shape) == 0;
    int64_t n = gf_dataset_read(a, i, x, 1 << 20);
    int64_t m = gf_dataset_read(b, i, y, 1 << 20);
    same = same && n > 0 && n == m && memcmp(x, y, (size_t)n) == 0;
    if (!same) {
      fprintf(stderr, "sample %llu differs (%lld/%lld bytes): %s\n",
              (unsigned long long)i, (long long)n, (long long)m,
              gf_last_error()->message);
      bad++;
    }
  }
  CHECK(bad == 0);
  free(x);
  free(y);
}

/* Reads through the reader's engine: every shard in pieces of 1000 bytes
 * and a few odd ranges, `depth` at a time on the wire (over the lanes the
 * storage's fetch_threads give), against pread. */
static void engine_reads(gf_storage *st, const char *local, unsigned depth) {
  gf_reader_opts ro = GF_READER_OPTS_INIT;
  ro.storage = st;
  ro.queue_depth = depth;
  ro.max_pending = 16;
  gf_reader *r;
  CHECK_OK(gf_reader_create(&ro, &r));
  if (!r)
    return;
  CHECK(strcmp(gf_reader_backend(r), "http") == 0);
  for (uint32_t s = 0; s < 3; s++) {
    char name[64], path[4400];
    snprintf(name, sizeof name, "shard-%06u.gfs", s);
    snprintf(path, sizeof path, "%s/%s", local, name);
    size_t size;
    uint8_t *want = gf_test_read_file(path, &size);
    gf_object *o;
    CHECK_OK(gf_object_open(st, name, 0, &o));
    if (!want || !o)
      break;
    CHECK(o->size == size && o->fd == -1 && o->version[0]);
    uint8_t *got = calloc(1, size + 4096);
    uint64_t next = 0, done = 0, pieces = (size + 999) / 1000;
    while (done < pieces) {
      while (next < pieces && gf_reader_inflight(r) < 16) {
        gf_read_req q = {o, 0, next * 1000, 1000, got + next * 1000, next};
        /* The last piece passes the end: EOF_OK gives what there is. */
        if ((next + 1) * 1000 > size)
          q.flags = GF_READ_EOF_OK;
        CHECK_OK(gf_reader_submit(r, &q, 1));
        next++;
      }
      gf_read_done d[16];
      int k = gf_reader_wait(r, d, 16, 1);
      CHECK(k > 0);
      if (k <= 0)
        break;
      for (int i = 0; i < k; i++) {
        uint64_t want_n = d[i].user_data * 1000 + 1000 > size
                              ? size - d[i].user_data * 1000
                              : 1000;
        CHECK(d[i].result == (int64_t)want_n);
        if (d[i].result != (int64_t)want_n)
          fprintf(stderr, "piece %llu: %lld: %s\n",
                  (unsigned long long)d[i].user_data, (long long)d[i].result,
                  d[i].why);
      }
      done += (uint64_t)k;
    }
    CHECK(memcmp(got, want, size) == 0);
    /* Past the end without EOF_OK: truncated, with what there was. */
    gf_read_req q[3] = {{o, 0, size - 10, 20, got, 1},
                        {o, 0, size + 5, 10, got, 2},
                        {o, 0, 5, 0, got, 3}};
    CHECK_OK(gf_reader_submit(r, q, 3));
    gf_read_done d[3];
    int k = 0;
    while (k < 3) {
      int m = gf_reader_wait(r, d + k, (unsigned)(3 - k), 1);
      CHECK(m > 0);
      if (m <= 0)
        break;
      k += m;
    }
    for (int i = 0; i < k; i++) {
      if (d[i].user_data == 1) {
        CHECK(d[i].result == GF_ETRUNCATED && d[i].stop_offset == size);
        CHECK(strstr(d[i].why, name) && strstr(d[i].why, "ends at byte"));
      } else if (d[i].user_data == 2) {
        CHECK(d[i].result == GF_ETRUNCATED);
      } else {
        CHECK(d[i].result == 0);
      }
    }
    free(got);
    free(want);
    gf_object_close(o);
  }
  gf_reader_stats rs;
  gf_reader_get_stats(r, &rs);
  /* One request a read, but for the empty ones and those past the end
   * (two a shard). */
  CHECK(rs.failed == 6 && rs.ops == rs.completed - 6 && rs.retried == 0);
  if (rs.ops != rs.completed - 6)
    fprintf(stderr, "reader: %llu ops for %llu reads\n",
            (unsigned long long)rs.ops, (unsigned long long)rs.completed);
  gf_reader_destroy(r);
}

/* Threads reading one remote dataset at once (its objects' synchronous
 * reads take easy handles from the storage's pool and share its DNS and
 * TLS caches): every sample against the local copy. */
typedef struct par {
  gf_dataset *local, *remote;
  unsigned id, n;
  int bad;
} par;

static void *par_reads(void *arg) {
  par *p = arg;
  uint8_t *x = malloc(1 << 16), *y = malloc(1 << 16);
  for (uint64_t i = p->id; i < gf_dataset_count(p->local); i += p->n) {
    int64_t a = gf_dataset_read(p->local, i, x, 1 << 16);
    int64_t b = gf_dataset_read(p->remote, i, y, 1 << 16);
    if (a <= 0 || a != b || memcmp(x, y, (size_t)a) != 0)
      p->bad++;
  }
  free(x);
  free(y);
  return NULL;
}

static void parallel_reads(gf_dataset *local, gf_dataset *remote) {
  enum { N = 6 };
  pthread_t t[N];
  par p[N];
  for (unsigned i = 0; i < N; i++) {
    p[i] = (par){local, remote, i, N, 0};
    CHECK(pthread_create(&t[i], NULL, par_reads, &p[i]) == 0);
  }
  int bad = 0;
  for (unsigned i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    bad += p[i].bad;
  }
  CHECK(bad == 0);
}

static gf_storage *insecure_st;
static void open_insecure(void *url) {
  gf_remote_config rc = http_test_remote();
  rc.tls_no_verify = 1;
  CHECK_OK(gf_storage_open(url, &rc, &insecure_st));
}

static void put_file(const char *dir, const char *name, size_t n) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *fp = fopen(path, "wb");
  CHECK(fp != NULL);
  for (size_t i = 0; fp && i < n; i++)
    fputc((int)(i * 7 % 251), fp);
  if (fp)
    fclose(fp);
}

static bool is_pattern(const char *b, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if ((uint8_t)b[i] != (uint8_t)(i * 7 % 251))
      return false;
  return true;
}

/* gf_object_slurp over HTTP (an index, a sums file): a small object in
 * one GET, no HEAD; one over the storage's one-request bound opened and
 * read (its first GET cut); an empty one; one over max refused, named; a
 * missing one -ENOENT naming its URL. */
static void slurps(http_fixture *f, gf_storage *st) {
  static const size_t big = (1u << 20) + 5;
  put_file(f->local, "small.idx", 1000);
  put_file(f->local, "big.idx", big);
  put_file(f->local, "empty.idx", 0);
  char *b = NULL;
  uint64_t n = 0;
  CHECK_OK(gf_object_slurp(st, "small.idx", 1 << 20, &b, &n));
  CHECK(b && n == 1000 && is_pattern(b, n) && b[n] == '\0');
  free(b);
  CHECK(gf_net_requests(&f->ng, "GET /ds/small.idx", 1) == 1);
  CHECK(gf_net_requests(&f->ng, "HEAD /ds/small.idx", 0) == 0);
  CHECK_OK(gf_object_slurp(st, "big.idx", 4 << 20, &b, &n));
  CHECK(b && n == big && is_pattern(b, n));
  free(b);
  CHECK(gf_net_requests(&f->ng, "HEAD /ds/big.idx", 1) == 1);
  CHECK_OK(gf_object_slurp(st, "empty.idx", 1 << 20, &b, &n));
  CHECK(b && n == 0);
  free(b);
  CHECK_ERR(gf_object_slurp(st, "small.idx", 999, &b, &n), GF_ELIMIT);
  CHECK(b == NULL && strstr(gf_last_error()->message, "small.idx"));
  CHECK_ERR(gf_object_slurp(st, "nothere.idx", 1 << 20, &b, &n), -ENOENT);
  char want[512];
  snprintf(want, sizeof want, "%s/nothere.idx", f->url);
  CHECK(b == NULL && strstr(gf_last_error()->message, want));
}

int main(void) {
  http_fixture f;
  if (http_fixture_start(&f, 60, 16, HTTP_TLS) < 0)
    return 1;

  /* Over http: the same dataset as the local open. */
  gf_dataset *local, *remote;
  CHECK_OK(gf_dataset_open(f.local, &local));
  CHECK_OK(gf_dataset_open(f.url, &remote));
  if (local && remote) {
    CHECK(gf_dataset_num_shards(local) >= 3);
    same_dataset(local, remote);
    char want[512];
    snprintf(want, sizeof want, "%s/shard-000000.gfs", f.url);
    CHECK(strcmp(gf_dataset_shard_path(remote, 0), want) == 0);
    parallel_reads(local, remote);
  }
  gf_dataset_close(remote);

  /* The reader's engine: one lane, then three lanes (threads with their
   * own connections) sharing the reads. */
  gf_remote_config rc = http_test_remote();
  gf_storage *st;
  for (uint32_t lanes = 1; lanes <= 3; lanes += 2) {
    rc.fetch_threads = lanes;
    CHECK_OK(gf_storage_open(f.url, &rc, &st));
    if (st)
      engine_reads(st, f.local, 3 * lanes);
    gf_storage_close(st);
  }
  rc.fetch_threads = 0;
  CHECK_OK(gf_storage_open(f.url, &rc, &st));

  /* A missing object: -ENOENT naming its URL, not retried. */
  gf_object *o = NULL;
  CHECK_ERR(gf_object_open(st, "nothere.gfs", 0, &o), -ENOENT);
  char want[512];
  snprintf(want, sizeof want, "%s/nothere.gfs", f.url);
  CHECK(strstr(gf_last_error()->message, want) &&
        strstr(gf_last_error()->message, "HTTP 404") &&
        strstr(gf_last_error()->message, "1 attempt, not retried"));
  CHECK(gf_net_requests(&f.ng, "/nothere.gfs", 1) == 1);
  slurps(&f, st);
  gf_storage_close(st);

  /* Over https with the CA given. */
  rc.ca_file = f.ng.ca;
  CHECK_OK(gf_storage_open(f.tls_url, &rc, &st));
  gf_dataset *tls = NULL;
  if (st) {
    CHECK(!gf_storage_insecure(st));
    CHECK(strncmp(gf_storage_display(st), "https://", 8) == 0);
    CHECK_OK(gf_dataset_open_in(st, true, &tls));
  }
  if (tls && local)
    same_dataset(local, tls);
  gf_dataset_close(tls);

  /* Against the system's CA store: refused, not retried. */
  gf_dataset *d = NULL;
  int e = gf_dataset_open(f.tls_url, &d);
  CHECK(e == GF_EREMOTE);
  CHECK(strstr(gf_last_error()->message, "certificate") &&
        strstr(gf_last_error()->message, "not retried"));
  gf_dataset_close(d);

  /* Verification off: it works, and every display form and the log say
   * that it is off. */
  char *log = http_capture_stderr(open_insecure, f.tls_url);
  CHECK(log && strstr(log, "TLS verification is OFF for https://127.0.0.1"));
  free(log);
  if (insecure_st) {
    CHECK(gf_storage_insecure(insecure_st));
    CHECK(strncmp(gf_storage_display(insecure_st), GF_TLS_UNVERIFIED_MARK,
                  strlen(GF_TLS_UNVERIFIED_MARK)) == 0);
    CHECK_ERR(gf_object_open(insecure_st, "nothere.gfs", 0, &o), -ENOENT);
    CHECK(strncmp(gf_last_error()->message, GF_TLS_UNVERIFIED_MARK,
                  strlen(GF_TLS_UNVERIFIED_MARK)) == 0);
    CHECK_OK(gf_dataset_open_in(insecure_st, true, &tls));
    if (tls) {
      CHECK(strncmp(gf_dataset_shard_path(tls, 0), GF_TLS_UNVERIFIED_MARK,
                    strlen(GF_TLS_UNVERIFIED_MARK)) == 0);
      if (local)
        same_dataset(local, tls);
      gf_dataset_close(tls);
    }
  }
  gf_remote_config off = GF_REMOTE_CONFIG_INIT;
  off.tls_no_verify = 1;
  char shown[512];
  gf_location_display(f.tls_url, &off, shown, sizeof shown);
  CHECK(strncmp(shown, GF_TLS_UNVERIFIED_MARK,
                strlen(GF_TLS_UNVERIFIED_MARK)) == 0);

  /* An object rewritten on the server after it was opened: the next read
   * is refused (If-Match: nginx answers 412), its new bytes never taken. */
  rc.ca_file = NULL;
  CHECK_OK(gf_storage_open(f.url, &rc, &st));
  CHECK_OK(gf_object_open(st, "shard-000001.gfs", 0, &o));
  if (o) {
    uint8_t buf[64];
    CHECK_OK(gf_object_read(o, buf, 0, sizeof buf));
    char path[4400];
    snprintf(path, sizeof path, "%s/shard-000001.gfs", f.local);
    struct timespec ts[2] = {{0, UTIME_OMIT}, {time(NULL) + 100, 0}};
    CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0); /* a new ETag */
    memset(buf, 0, sizeof buf);
    CHECK_ERR(gf_object_read(o, buf, 0, sizeof buf), GF_ECHANGED);
    CHECK(strstr(gf_last_error()->message, "HTTP 412") &&
          strstr(gf_last_error()->message, "shard-000001.gfs") &&
          strstr(gf_last_error()->message, "bytes 0-63"));
    gf_object_close(o);
  }
  gf_storage_close(st);

  gf_dataset_close(local);
  CHECK(http_fixture_stop(&f) == 0);
  return gf_test_finish();
}
