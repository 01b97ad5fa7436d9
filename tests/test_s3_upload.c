/* Uploads to S3 (lib/io/s3_upload.c) against moto's server checking every
 * signature, started by tests/s3_upload.sh (which then checks with boto3
 * that every object is byte for byte what was uploaded, that the deleted
 * and refused ones are absent, and that no multipart upload is left open):
 *  - a 1 KiB file (one PUT), an empty one, a 23 MiB file of random bytes
 *    in parts of 5 MiB on 4 threads (1 create + 5 parts + 1 complete),
 *    6 MiB from memory (one PUT, above part_size), two files of 3 parts
 *    uploaded at once from two threads on one uploader, a key with a space
 *    and a '~'; progress after each part, in order, ending at the size;
 *  - a delete, and a delete of what is not there;
 *  - cancel from another thread mid-way: -ECANCELED, the multipart upload
 *    aborted, and every later call on that uploader -ECANCELED at once;
 *  - a wrong secret: 403 SignatureDoesNotMatch said with the object, for a
 *    PUT and for a multipart upload's create, the secret in no message;
 *  - a bucket that does not exist, a missing file, a file of another size,
 *    part sizes and parallel out of range;
 *  - the counters of each: requests, parts, objects, bytes, aborted.
 * Usage: test_s3_upload MANIFEST (what the script checks: "+key path" for
 * an object and its bytes, "-key" for one that must not be there). Skips
 * (77) without AWS_ENDPOINT_URL_S3: run through the script. */
#include "testutil.h"

#include "io/s3_upload.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MiB (1ull << 20)
#define WRONG_SECRET "wrongSECRETq7Zk/Wp+3xLm"

static const char *dir;
static FILE *manifest;

/* A file of n pseudo-random bytes (seed); its path into path. */
static uint8_t *make_file(const char *name, uint64_t n, uint64_t seed,
                          char *path, size_t cap) {
  uint8_t *b = malloc(n ? n : 1);
  for (uint64_t i = 0; i < n; i += 8) {
    uint64_t r = gf_test_rand(&seed);
    memcpy(b + i, &r, n - i < 8 ? n - i : 8);
  }
  snprintf(path, cap, "%s/%s", dir, name);
  if (gf_test_write_file(path, b, n) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  return b;
}

static void expect(const char *key, const char *path) {
  if (path)
    fprintf(manifest, "+%s\t%s\n", key, path);
  else
    fprintf(manifest, "-%s\n", key);
}

static gf_s3_upload_counters counters(gf_s3_uploader *u) {
  gf_s3_upload_counters k;
  gf_s3_uploader_counters(u, &k);
  return k;
}

static void print_counters(const char *what, gf_s3_uploader *u) {
  gf_s3_upload_counters k = counters(u);
  printf("%s: requests %llu, retries %llu, bytes %llu, retried_bytes %llu, "
         "parts %llu, objects %llu, aborted %llu\n",
         what, (unsigned long long)k.requests, (unsigned long long)k.retries,
         (unsigned long long)k.bytes, (unsigned long long)k.retried_bytes,
         (unsigned long long)k.parts, (unsigned long long)k.objects,
         (unsigned long long)k.aborted);
}

/* The last error names the object and says `needle` (NULL: anything). */
static void check_error(const char *object, const char *needle) {
  const gf_error_info *e = gf_last_error();
  printf("  error: %s: %s\n", e->path, e->message);
  CHECK(strcmp(e->path, object) == 0);
  if (needle)
    CHECK(strstr(e->message, needle) != NULL);
  CHECK(strstr(e->message, WRONG_SECRET) == NULL);
  const char *secret = getenv("AWS_SECRET_ACCESS_KEY");
  CHECK(!secret || strstr(e->message, secret) == NULL);
}

/* progress: every call's bytes, in order. */
typedef struct seen {
  uint64_t done[64];
  unsigned n;
  bool bad_order;
} seen;

static void on_progress(void *ctx, uint64_t done) {
  seen *s = ctx;
  if (s->n && done <= s->done[s->n - 1])
    s->bad_order = true;
  if (s->n < 64)
    s->done[s->n++] = done;
}

/* ---- two uploads at once on one uploader -------------------------------- */

typedef struct job {
  gf_s3_uploader *u;
  char path[1024], name[64];
  uint64_t size;
  int rc;
  seen s;
} job;

static void *job_main(void *arg) {
  job *j = arg;
  j->rc =
      gf_s3_upload_file(j->u, j->path, j->size, j->name, on_progress, &j->s);
  if (j->rc < 0)
    fprintf(stderr, "%s: %s\n", j->name, gf_last_error()->message);
  return NULL;
}

/* ---- cancel from another thread ----------------------------------------- */

typedef struct canceller {
  gf_s3_uploader *u;
  sem_t go, done;
  unsigned calls;
} canceller;

static void *cancel_main(void *arg) {
  canceller *k = arg;
  sem_wait(&k->go);
  gf_s3_uploader_cancel(k->u);
  sem_post(&k->done);
  return NULL;
}

/* Cancels u after half a second (a request retried meanwhile). */
static void *cancel_later(void *arg) {
  struct timespec half = {0, 500 * 1000 * 1000};
  nanosleep(&half, NULL);
  gf_s3_uploader_cancel(arg);
  return NULL;
}

/* After the first part: cancelled from the other thread before this
 * returns, so the upload is mid-way whatever the speed of the server. */
static void cancel_progress(void *ctx, uint64_t done) {
  canceller *k = ctx;
  (void)done;
  if (k->calls++ == 0) {
    sem_post(&k->go);
    sem_wait(&k->done);
  }
}

int main(int argc, char **argv) {
  if (!getenv("AWS_ENDPOINT_URL_S3") || argc < 2)
    gf_test_skip(false, "needs moto: run through tests/s3_upload.sh");
  dir = gf_test_tmpdir();
  if (!(manifest = fopen(argv[1], "w"))) {
    perror(argv[1]);
    return 1;
  }
  const char *root = "s3://train/up";
  gf_s3_client *c = NULL;
  CHECK_OK(gf_s3_client_open(root, NULL, &c));
  if (!c)
    return gf_test_finish();

  char why[600];
  gf_s3_uploader *u = NULL;
  /* Out of range. */
  CHECK_ERR(gf_s3_uploader_create(c, NULL, 5 * MiB - 1, 4, &u, why, sizeof why),
            -EINVAL);
  CHECK(strstr(why, "part_size") != NULL);
  CHECK_ERR(
      gf_s3_uploader_create(c, NULL, (5ull << 30) + 1, 4, &u, why, sizeof why),
      -EINVAL);
  CHECK_ERR(gf_s3_uploader_create(c, NULL, 5 * MiB, 0, &u, why, sizeof why),
            -EINVAL);
  CHECK_ERR(gf_s3_uploader_create(c, NULL, 5 * MiB, 65, &u, why, sizeof why),
            -EINVAL);
  CHECK(u == NULL);
  CHECK_OK(gf_s3_uploader_create(c, NULL, 5 * MiB, 4, &u, why, sizeof why));
  if (!u) {
    fprintf(stderr, "create: %s\n", why);
    return gf_test_finish();
  }
  gf_s3_upload_counters k0, k1;

  /* 1 KiB: one PUT, under a name to encode; progress once, at the size. */
  char small[1024];
  free(make_file("small.bin", 1024, 1, small, sizeof small));
  seen s = {0};
  k0 = counters(u);
  CHECK_OK(gf_s3_upload_file(u, small, 1024, "sub dir/small~1.bin", on_progress,
                             &s));
  k1 = counters(u);
  CHECK(s.n == 1 && s.done[0] == 1024);
  CHECK(k1.requests - k1.retries - (k0.requests - k0.retries) == 1);
  CHECK(k1.objects - k0.objects == 1 && k1.parts == k0.parts);
  CHECK(k1.bytes - k0.bytes == 1024);
  expect("up/sub dir/small~1.bin", small);
  print_counters("1 KiB, one PUT", u);

  /* An empty file: one PUT of nothing. */
  char empty[1024];
  free(make_file("empty.bin", 0, 2, empty, sizeof empty));
  CHECK_OK(gf_s3_upload_file(u, empty, 0, "empty.bin", NULL, NULL));
  expect("up/empty.bin", empty);

  /* 23 MiB: 5 parts (4 of 5 MiB, 3 MiB), multipart. */
  char big[1024];
  uint64_t big_size = 23 * MiB;
  free(make_file("big.bin", big_size, 3, big, sizeof big));
  memset(&s, 0, sizeof s);
  k0 = counters(u);
  CHECK_OK(gf_s3_upload_file(u, big, big_size, "big.bin", on_progress, &s));
  k1 = counters(u);
  CHECK(s.n == 5 && !s.bad_order && s.done[s.n ? s.n - 1 : 0] == big_size);
  /* 1 create + 5 parts + 1 complete, retries aside. */
  CHECK(k1.requests - k1.retries - (k0.requests - k0.retries) == 7);
  CHECK(k1.parts - k0.parts == 5);
  CHECK(k1.objects - k0.objects == 1);
  CHECK(k1.bytes - k0.bytes == big_size);
  CHECK(k1.aborted == k0.aborted);
  expect("up/big.bin", big);
  print_counters("23 MiB, 5 parts", u);

  /* 6 MiB from memory: one PUT, above part_size. */
  char mem_path[1024];
  uint64_t mem_size = 6 * MiB + 3;
  uint8_t *mem = make_file("mem.bin", mem_size, 4, mem_path, sizeof mem_path);
  k0 = counters(u);
  CHECK_OK(gf_s3_upload_bytes(u, mem, mem_size, "mem.bin"));
  k1 = counters(u);
  CHECK(k1.requests - k1.retries - (k0.requests - k0.retries) == 1);
  CHECK(k1.bytes - k0.bytes == mem_size && k1.parts == k0.parts);
  expect("up/mem.bin", mem_path);
  free(mem);

  /* Two files of 3 parts at once, from two threads. */
  job jobs[2];
  pthread_t t[2];
  k0 = counters(u);
  for (int i = 0; i < 2; i++) {
    memset(&jobs[i], 0, sizeof jobs[i]);
    jobs[i].u = u;
    jobs[i].size = 12 * MiB + 7 + (uint64_t)i;
    snprintf(jobs[i].name, sizeof jobs[i].name, "two/c%d.bin", i);
    char local[32];
    snprintf(local, sizeof local, "c%d.bin", i);
    free(make_file(local, jobs[i].size, 10 + (uint64_t)i, jobs[i].path,
                   sizeof jobs[i].path));
    pthread_create(&t[i], NULL, job_main, &jobs[i]);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    CHECK(jobs[i].rc == 0);
    CHECK(jobs[i].s.n == 3 && !jobs[i].s.bad_order &&
          jobs[i].s.done[2] == jobs[i].size);
    char key[80];
    snprintf(key, sizeof key, "up/%s", jobs[i].name);
    expect(key, jobs[i].path);
  }
  k1 = counters(u);
  CHECK(k1.requests - k1.retries - (k0.requests - k0.retries) == 2 * 5);
  CHECK(k1.parts - k0.parts == 6 && k1.objects - k0.objects == 2);

  /* Delete: what is there, then what is not. */
  CHECK_OK(gf_s3_upload_bytes(u, "bye", 3, "gone.bin"));
  CHECK_OK(gf_s3_delete(u, "gone.bin"));
  CHECK_OK(gf_s3_delete(u, "gone.bin"));
  CHECK_OK(gf_s3_delete(u, "never-was.bin"));
  expect("up/gone.bin", NULL);

  /* Local failures, named. */
  char missing[1100];
  snprintf(missing, sizeof missing, "%s/missing.bin", dir);
  CHECK_ERR(gf_s3_upload_file(u, missing, 10, "missing.bin", NULL, NULL),
            -ENOENT);
  check_error("s3://train/up/missing.bin", "missing.bin");
  CHECK_ERR(gf_s3_upload_file(u, small, 1000, "short.bin", NULL, NULL),
            GF_ECHANGED);
  check_error("s3://train/up/short.bin", "1024 bytes");
  CHECK_ERR(gf_s3_upload_file(u, small, 1024, "", NULL, NULL), -EINVAL);
  expect("up/missing.bin", NULL);
  expect("up/short.bin", NULL);
  print_counters("all", u);
  gf_s3_uploader_destroy(u);

  /* Cancelled mid-way from another thread: -ECANCELED, aborted. */
  gf_s3_uploader *u2 = NULL;
  CHECK_OK(gf_s3_uploader_create(c, NULL, 5 * MiB, 4, &u2, why, sizeof why));
  if (u2) {
    canceller cn = {.u = u2};
    sem_init(&cn.go, 0, 0);
    sem_init(&cn.done, 0, 0);
    pthread_t ct;
    pthread_create(&ct, NULL, cancel_main, &cn);
    CHECK_ERR(gf_s3_upload_file(u2, big, big_size, "cancelled.bin",
                                cancel_progress, &cn),
              -ECANCELED);
    check_error("s3://train/up/cancelled.bin", "cancelled");
    pthread_join(ct, NULL);
    CHECK(cn.calls >= 1);
    gf_s3_upload_counters kc = counters(u2);
    CHECK(kc.aborted == 1 && kc.objects == 0);
    print_counters("cancelled", u2);
    /* Sticky: nothing more starts. */
    k0 = counters(u2);
    CHECK_ERR(gf_s3_upload_bytes(u2, "x", 1, "after-cancel.bin"), -ECANCELED);
    CHECK_ERR(gf_s3_delete(u2, "big.bin"), -ECANCELED);
    CHECK(counters(u2).requests == k0.requests);
    expect("up/cancelled.bin", NULL);
    expect("up/after-cancel.bin", NULL);
    sem_destroy(&cn.go);
    sem_destroy(&cn.done);
    gf_s3_uploader_destroy(u2);
  }

  /* A wrong secret: refused by the store, said without the secret. */
  gf_s3_config s3 = GF_S3_CONFIG_INIT;
  s3.access_key_id = getenv("AWS_ACCESS_KEY_ID");
  s3.secret_access_key = WRONG_SECRET;
  gf_remote_config rc = GF_REMOTE_CONFIG_INIT;
  rc.s3 = &s3;
  gf_s3_client *bad = NULL;
  CHECK_OK(gf_s3_client_open(root, &rc, &bad));
  gf_s3_uploader *u3 = NULL;
  if (bad)
    CHECK_OK(gf_s3_uploader_create(bad, &rc, 5 * MiB, 2, &u3, why, sizeof why));
  if (u3) {
    CHECK_ERR(gf_s3_upload_file(u3, small, 1024, "denied.bin", NULL, NULL),
              -EACCES);
    check_error("s3://train/up/denied.bin", "SignatureDoesNotMatch");
    check_error("s3://train/up/denied.bin", "HTTP 403");
    CHECK_ERR(
        gf_s3_upload_file(u3, big, big_size, "denied-big.bin", NULL, NULL),
        -EACCES);
    check_error("s3://train/up/denied-big.bin", "CreateMultipartUpload");
    check_error("s3://train/up/denied-big.bin", "SignatureDoesNotMatch");
    CHECK_ERR(gf_s3_delete(u3, "big.bin"), -EACCES);
    check_error("s3://train/up/big.bin", "SignatureDoesNotMatch");
    gf_s3_upload_counters kb = counters(u3);
    CHECK(kb.requests == 3 && kb.retries == 0 && kb.objects == 0);
    print_counters("wrong secret", u3);
    expect("up/denied.bin", NULL);
    expect("up/denied-big.bin", NULL);
  }
  gf_s3_uploader_destroy(u3);
  gf_s3_client_free(bad);

  /* Nobody listening: tried max_attempts times, each try's bytes counted
   * again; then cancelled during the waits between tries. */
  gf_s3_config s3off = GF_S3_CONFIG_INIT;
  s3off.endpoint_url = "http://127.0.0.1:1";
  gf_remote_config rcoff = GF_REMOTE_CONFIG_INIT;
  rcoff.s3 = &s3off;
  rcoff.max_attempts = 3;
  rcoff.retry_ms = 10000;
  gf_s3_client *off = NULL;
  gf_s3_uploader *u5 = NULL;
  CHECK_OK(gf_s3_client_open(root, &rcoff, &off));
  if (off)
    CHECK_OK(
        gf_s3_uploader_create(off, &rcoff, 5 * MiB, 1, &u5, why, sizeof why));
  if (u5) {
    CHECK_ERR(gf_s3_upload_file(u5, small, 1024, "off.bin", NULL, NULL),
              GF_EREMOTE);
    check_error("s3://train/up/off.bin", "cannot connect");
    check_error("s3://train/up/off.bin", "3 attempts");
    gf_s3_upload_counters ko = counters(u5);
    CHECK(ko.requests == 3 && ko.retries == 2 && ko.bytes == 0 &&
          ko.retried_bytes == 2 * 1024);
    print_counters("refused, 3 attempts", u5);
  }
  gf_s3_uploader_destroy(u5);
  u5 = NULL;
  rcoff.max_attempts = 100;
  rcoff.retry_ms = 120000;
  if (off)
    CHECK_OK(
        gf_s3_uploader_create(off, &rcoff, 5 * MiB, 1, &u5, why, sizeof why));
  if (u5) {
    pthread_t ct;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_create(&ct, NULL, cancel_later, u5);
    CHECK_ERR(gf_s3_upload_file(u5, small, 1024, "off.bin", NULL, NULL),
              -ECANCELED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("cancelled while retrying after %.2f s\n", secs);
    CHECK(secs >= 0.4 && secs < 5);
    pthread_join(ct, NULL);
    CHECK(counters(u5).requests >= 2);
    print_counters("refused, cancelled while retrying", u5);
  }
  gf_s3_uploader_destroy(u5);
  gf_s3_client_free(off);

  /* A bucket that is not there. */
  gf_s3_client *nob = NULL;
  gf_s3_uploader *u4 = NULL;
  CHECK_OK(gf_s3_client_open("s3://no-such-bucket/x", NULL, &nob));
  if (nob)
    CHECK_OK(
        gf_s3_uploader_create(nob, NULL, 5 * MiB, 1, &u4, why, sizeof why));
  if (u4) {
    CHECK_ERR(gf_s3_upload_file(u4, small, 1024, "a.bin", NULL, NULL), -ENOENT);
    check_error("s3://no-such-bucket/x/a.bin", "NoSuchBucket");
  }
  gf_s3_uploader_destroy(u4);
  gf_s3_client_free(nob);

  gf_s3_client_free(c);
  fclose(manifest);
  return gf_test_finish();
}
