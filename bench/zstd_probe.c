/* The zstd codec's own speed on a dataset's records, against which the
 * loader's gradzstd decode is held (issue: performance, second round,
 * item 1): how fast libzstd decompresses these very frames on this
 * machine's cores, with the conditions the loader decodes under varied one
 * at a time.
 *
 * Reads up to --samples records of a dataset made by `gpufeed build
 * --codec gradzstd` (or zstd) into memory, then for each setting runs
 * --threads threads that each decompress the records in turn for
 * --seconds, and reports the decompressed GB/s (1e9 bytes a second) a
 * thread and in all:
 *   - destination hot (one buffer a thread, in cache) or cold (a new place
 *     in a --cold-mib region a thread each time, as the loader's batch
 *     slots are);
 *   - zstd's content checksum checked (as the library does) or ignored
 *     (ZSTD_d_forceIgnoreChecksum: what skipping it would save where the
 *     record's CRC32C was checked already);
 *   - the library's own call (gf_zstd_decompress: its frame checks and its
 *     per-thread context) for the hot, checked case;
 *   - cold via a hot buffer: decompressed into a hot buffer, then copied
 *     (memcpy) to the cold place: whether a bounce beats writing the
 *     frame's output straight into cold memory.
 * The loader's figure to hold against these: `gpufeed bench DATASET
 * --json`'s decoded bytes over its decode-busy thread time (busy_pct
 * decode x threads x seconds).
 *
 *   zstd_probe DATASET [--threads N] [--samples N] [--seconds S]
 *              [--cold-mib M] [--json]
 *
 * Exit status: 0 measured, 1 failed, 2 usage error. */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_forceIgnoreChecksum */
#include "decode/decode.h"
#include "pipeline/source.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

typedef struct rec {
  uint8_t *src;
  size_t len, want;
} rec;

typedef struct setting {
  const char *name;
  bool cold, ignore_checksum, library;
  bool bounce; /* into a hot buffer, then memcpy'd to the (cold) place */
} setting;

typedef struct job {
  const rec *recs;
  uint32_t n;
  const setting *set;
  double seconds;
  size_t cold_bytes, max_want;
  double gbs; /* result */
  int err;
} job;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *run(void *arg) {
  job *j = arg;
  ZSTD_DCtx *d = ZSTD_createDCtx();
  size_t places = j->set->cold ? j->cold_bytes / j->max_want : 1;
  if (places < 1)
    places = 1;
  uint8_t *dst = malloc(places * j->max_want);
  uint8_t *hot = malloc(j->max_want);
  if (!d || !dst || !hot) {
    j->err = -ENOMEM;
    goto out;
  }
  memset(dst, 1, places * j->max_want); /* faulted in: cold, not unmapped */
  memset(hot, 1, j->max_want);
  if (j->set->ignore_checksum &&
      ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_forceIgnoreChecksum,
                                          ZSTD_d_ignoreChecksum))) {
    j->err = -ENOTSUP;
    goto out;
  }
  uint64_t bytes = 0, k = 0;
  double t0 = now_s(), t = t0;
  while (t - t0 < j->seconds) {
    for (uint32_t i = 0; i < j->n; i++, k++) {
      const rec *r = &j->recs[i];
      uint8_t *place = dst + (k % places) * j->max_want;
      uint8_t *o = j->set->bounce ? hot : place;
      if (j->set->library) {
        if (gf_zstd_decompress(r->src, r->len, o, r->want) < 0) {
          j->err = -EIO;
          goto out;
        }
      } else {
        size_t got = ZSTD_decompressDCtx(d, o, r->want, r->src, r->len);
        if (ZSTD_isError(got) || got != r->want) {
          j->err = -EIO;
          goto out;
        }
      }
      if (j->set->bounce)
        memcpy(place, hot, r->want);
      bytes += r->want;
    }
    t = now_s();
  }
  j->gbs = (double)bytes / (t - t0) / 1e9;
out:
  free(hot);
  free(dst);
  ZSTD_freeDCtx(d);
  return NULL;
}

static void usage(void) {
  fprintf(stderr, "usage: zstd_probe DATASET [--threads N] [--samples N] "
                  "[--seconds S] [--cold-mib M] [--json]\n");
}

int main(int argc, char **argv) {
  const char *path = NULL;
  uint32_t threads = 1, want_n = 64;
  double seconds = 2;
  size_t cold_mib = 20;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    bool more = i + 1 < argc;
    if (!strcmp(a, "--threads") && more)
      threads = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--samples") && more)
      want_n = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(a, "--seconds") && more)
      seconds = strtod(argv[++i], NULL);
    else if (!strcmp(a, "--cold-mib") && more)
      cold_mib = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(a, "--json"))
      json = true;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage();
      return 0;
    } else if (a[0] != '-' && !path)
      path = a;
    else {
      usage();
      return 2;
    }
  }
  if (!path || threads < 1 || threads > 1024 || want_n < 1 || seconds <= 0 ||
      cold_mib < 1) {
    usage();
    return 2;
  }
  gf_source *src = NULL;
  if (gf_source_open(path, NULL, NULL, NULL, &src) < 0 ||
      !(gf_source_caps(src) & GF_SOURCE_RECORDS)) {
    fprintf(stderr, "zstd_probe: %s: %s\n", path,
            src ? "not a built dataset" : gf_last_error()->message);
    gf_source_close(src);
    return 1;
  }
  uint64_t count = gf_source_count(src);
  uint32_t n = count < want_n ? (uint32_t)count : want_n;
  rec *recs = calloc(n ? n : 1, sizeof *recs);
  size_t max_want = 1, stored = 0, decoded = 0;
  int status = 0;
  for (uint32_t i = 0; recs && i < n && !status; i++) {
    gf_src_sample s;
    if (gf_source_sample(src, i, &s) < 0 ||
        (s.codec != GF_CODEC_GRADZSTD && s.codec != GF_CODEC_ZSTD)) {
      fprintf(stderr, "zstd_probe: %s: sample %u is not a zstd or gradzstd "
                      "record\n",
              path, i);
      status = 1;
      break;
    }
    recs[i].len = s.length;
    recs[i].want = (size_t)gf_shape_bytes(&s.stored);
    recs[i].src = malloc(s.length ? s.length : 1);
    if (!recs[i].src ||
        gf_object_read(s.obj, recs[i].src, s.offset, s.length) != 0) {
      fprintf(stderr, "zstd_probe: %s: reading sample %u failed\n", path, i);
      status = 1;
      break;
    }
    max_want = recs[i].want > max_want ? recs[i].want : max_want;
    stored += s.length;
    decoded += recs[i].want;
  }
  static const setting sets[] = {
      {"hot, checksum checked", false, false, false, false},
      {"hot, checksum ignored", false, true, false, false},
      {"cold, checksum checked", true, false, false, false},
      {"cold, checksum ignored", true, true, false, false},
      {"hot, gf_zstd_decompress", false, false, true, false},
      {"cold via a hot buffer, checksum checked", true, false, false, true},
      {"cold via a hot buffer, checksum ignored", true, true, false, true},
  };
  if (!status && !json)
    printf("%u records of %s: %.1f KB stored, %.1f KB decoded on average "
           "(ratio %.3f); %u threads, cold region %zu MiB a thread\n",
           n, path, (double)stored / n / 1e3, (double)decoded / n / 1e3,
           (double)stored / (double)decoded, threads, cold_mib);
  job *jobs = calloc(threads, sizeof *jobs);
  pthread_t *th = calloc(threads, sizeof *th);
  for (size_t si = 0; !status && jobs && th && si < sizeof sets / sizeof sets[0];
       si++) {
    for (uint32_t t = 0; t < threads; t++) {
      jobs[t] = (job){recs, n, &sets[si], seconds, cold_mib << 20, max_want,
                      0, 0};
      if (pthread_create(&th[t], NULL, run, &jobs[t]) != 0) {
        fprintf(stderr, "zstd_probe: cannot start thread %u\n", t);
        return 1;
      }
    }
    double sum = 0;
    for (uint32_t t = 0; t < threads; t++) {
      pthread_join(th[t], NULL);
      if (jobs[t].err) {
        fprintf(stderr, "zstd_probe: %s: %s\n", sets[si].name,
                jobs[t].err == -ENOTSUP ? "this libzstd refuses "
                                          "ZSTD_d_forceIgnoreChecksum"
                                        : "decompression failed");
        status = 1;
      }
      sum += jobs[t].gbs;
    }
    if (status)
      break;
    if (json)
      printf("{\"setting\":\"%s\",\"threads\":%u,\"gb_per_s_a_thread\":%.4f,"
             "\"gb_per_s\":%.4f}\n",
             sets[si].name, threads, sum / threads, sum);
    else
      printf("  %-40s %.3f GB/s a thread, %.2f GB/s in all\n", sets[si].name,
             sum / threads, sum);
  }
  free(th);
  free(jobs);
  for (uint32_t i = 0; recs && i < n; i++)
    free(recs[i].src);
  free(recs);
  gf_source_close(src);
  return status;
}
