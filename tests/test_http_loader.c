/* The loader over HTTP (host mode, gf_loader_config.source a URL): its
 * workers read through the storage's engine, and every batch of two
 * shuffled epochs is byte for byte the batch the local source gives
 * (indices, labels, shapes and pixels), with 1 and 3 workers (and as many
 * fetch lanes). Then,
 * through netproxy: 503s on every shard are retried and the batches stay
 * identical; a shard that keeps failing makes next() fail with the
 * shard's URL, the range, the status and the attempts in the message,
 * never with a batch holding wrong bytes. Threads: the workers' engines
 * and the synchronous opens share the storage's DNS and TLS caches
 * (labelled threaded: TSan runs it). */
#include "http_fixture.h"

#include <stdlib.h>
#include <string.h>

static http_fixture f;
/* A proxy rule added once the loader is made (its opens done): the
 * failures then meet next(), not create. */
static const char *rule_after_create;

typedef struct run {
  uint64_t batches;
  uint64_t *hash; /* one a batch */
} run;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Two epochs of the loader over source; each batch's hash into r. Returns
 * 0, or the error of create or next. */
static int epochs(const char *source, const gf_remote_config *remote,
                  uint32_t threads, run *r) {
  memset(r, 0, sizeof *r);
  r->hash = calloc(256, sizeof *r->hash);
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = source;
  cfg.remote = remote;
  cfg.device = GF_DEVICE_CPU;
  cfg.batch_size = 6;
  cfg.threads = threads;
  cfg.seed = 11;
  gf_loader *l;
  int rc = gf_loader_create(&cfg, &l);
  if (rc < 0)
    return rc;
  if (rule_after_create)
    http_ctl(&f, "add %s", rule_after_create);
  for (uint64_t e = 0; e < 2 && rc == 0; e++) {
    CHECK_OK(gf_loader_set_epoch(l, e));
    gf_batch *b;
    while ((rc = gf_loader_next(l, &b)) == 0) {
      uint64_t h = 0xcbf29ce484222325ull;
      h = fnv(h, &b->epoch, sizeof b->epoch);
      h = fnv(h, &b->count, sizeof b->count);
      CHECK(b->data != NULL && b->skipped == 0);
      for (uint32_t j = 0; j < b->count && b->data; j++) {
        h = fnv(h, &b->indices[j], sizeof b->indices[j]);
        h = fnv(h, &b->labels[j], sizeof b->labels[j]);
        h = fnv(h, &b->shapes[j], sizeof b->shapes[j]);
        h = fnv(h, (const uint8_t *)b->data + b->offsets[j],
                gf_shape_bytes(&b->shapes[j]));
      }
      if (r->batches < 256)
        r->hash[r->batches] = h;
      r->batches++;
      CHECK_OK(gf_loader_release(l, b));
    }
    if (rc == GF_EEPOCHEND)
      rc = 0;
  }
  gf_loader_destroy(l);
  return rc;
}

static void same_runs(const char *what, const run *a, const run *b) {
  bool same =
      a->batches == b->batches && a->batches > 0 &&
      memcmp(a->hash, b->hash,
             (a->batches < 256 ? a->batches : 256) * sizeof *a->hash) == 0;
  CHECK(same);
  if (!same)
    fprintf(stderr, "%s: %llu batches against %llu, or other bytes\n", what,
            (unsigned long long)b->batches, (unsigned long long)a->batches);
}

int main(void) {
  if (http_fixture_start(&f, 90, 24, HTTP_PROXY) < 0)
    return 1;
  gf_remote_config rc = http_test_remote();
  run local, remote;
  CHECK_OK(epochs(f.local, NULL, 2, &local));
  CHECK(local.batches == 30);
  /* 1 worker and 1 fetch lane; 3 workers and 3 lanes. */
  for (uint32_t threads = 1; threads <= 3; threads += 2) {
    rc.fetch_threads = threads;
    CHECK_OK(epochs(f.url, &rc, threads, &remote));
    same_runs(threads == 1 ? "http, 1 worker" : "http, 3 workers, 3 lanes",
              &local, &remote);
    free(remote.hash);
  }

  /* Through the proxy: every shard's GETs fail twice with 503 first (the
   * retries on two lanes). */
  rc.fetch_threads = 2;
  for (int s = 0; s < 4; s++)
    http_ctl(&f, "add status 503 method=GET path=/ds/shard-00000%d times=2", s);
  CHECK_OK(epochs(f.proxy_url, &rc, 2, &remote));
  same_runs("through 503s", &local, &remote);
  free(remote.hash);
  CHECK(gf_net_proxy_stat(&f.px, "status") == 8);

  /* A shard that always fails once the loader runs: next() fails,
   * naming it. */
  http_ctl(&f, "clear");
  rule_after_create = "status 502 method=GET path=/ds/shard-000002";
  rc.max_attempts = 2;
  int e = epochs(f.proxy_url, &rc, 2, &remote);
  CHECK(remote.batches < 30);
  free(remote.hash);
  const char *m = gf_last_error()->message;
  CHECK(e == GF_EREMOTE);
  CHECK(strstr(m, "/ds/shard-000002.gfs") && strstr(m, "bytes ") &&
        strstr(m, "HTTP 502") && strstr(m, "2 attempts"));
  if (e != GF_EREMOTE || !strstr(m, "HTTP 502"))
    fprintf(stderr, "next: %d (%s): %s\n", e, gf_err_name(e), m);

  free(local.hash);
  CHECK(http_fixture_stop(&f) == 0);
  return gf_test_finish();
}
