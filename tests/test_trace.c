/* The loader's trace and autotune: a traced run over a fixture writes a
 * Chrome trace (Trace Event JSON) with the expected shape, one decode span
 * per decoded sample and exact counts; a tiny buffer drops and counts
 * exactly; tracing off records and writes nothing; threads/prefetch 0 are
 * chosen within the core budget and reported. On a machine with a GPU the
 * copy stream's spans are checked too. */
#include "loader_fixture.h"

#include "gpu/stage.h"
#include "pipeline/loader_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 64
#define B 16
#define THREADS 2

/* The file as a C string (gf_test_read_file's buffer is not
 * terminated); NULL when unreadable. The caller frees it. */
static char *read_text(const char *path) {
  size_t len;
  char *raw = gf_test_read_file(path, &len);
  if (!raw)
    return NULL;
  char *s = malloc(len + 1);
  if (s) {
    memcpy(s, raw, len);
    s[len] = '\0';
  }
  free(raw);
  return s;
}

/* Occurrences of needle in hay. */
static uint64_t count_of(const char *hay, const char *needle) {
  uint64_t n = 0;
  size_t len = strlen(needle);
  for (const char *p = strstr(hay, needle); p; p = strstr(p + len, needle))
    n++;
  return n;
}

/* JSON structure without a parser: brackets balance outside strings, the
 * text is one object, and strings are closed. Returns true when sound. */
static bool json_balanced(const char *s) {
  int depth = 0;
  bool in_str = false, esc = false;
  const char *last = NULL;
  for (const char *p = s; *p; p++) {
    if (in_str) {
      if (esc)
        esc = false;
      else if (*p == '\\')
        esc = true;
      else if (*p == '"')
        in_str = false;
      continue;
    }
    if (*p == '"')
      in_str = true;
    else if (*p == '{' || *p == '[')
      depth++;
    else if (*p == '}' || *p == ']') {
      if (--depth < 0)
        return false;
      if (depth == 0)
        last = p;
    }
  }
  if (in_str || depth != 0 || !last || *last != '}')
    return false;
  for (const char *p = last + 1; *p; p++)
    if (*p != '\n' && *p != ' ')
      return false;
  return true;
}

/* Every "X" event has ts and dur >= 0, pid and tid; returns the number of
 * X events, or -1 on a bad one (printed). */
static long check_spans(const char *s) {
  long n = 0;
  for (const char *p = strstr(s, "\"ph\":\"X\""); p;
       p = strstr(p + 1, "\"ph\":\"X\"")) {
    const char *end = strchr(p, '}');
    const char *ts = strstr(p, "\"ts\":"), *dur = strstr(p, "\"dur\":");
    const char *pid = strstr(p, "\"pid\":"), *tid = strstr(p, "\"tid\":");
    if (!end || !ts || !dur || !pid || !tid || ts > end || dur > end ||
        pid > end || tid > end) {
      fprintf(stderr, "event without ts/dur/pid/tid: %.120s\n", p);
      return -1;
    }
    double t = strtod(ts + 5, NULL), d = strtod(dur + 6, NULL);
    if (t < 0 || d < 0) {
      fprintf(stderr, "negative ts or dur: %.120s\n", p);
      return -1;
    }
    n++;
  }
  return n;
}

/* Decode spans name their sample: each of the N exactly once. */
static bool each_sample_once(const char *s) {
  uint32_t seen[N] = {0};
  const char *key = "\"name\":\"decode\"";
  for (const char *p = strstr(s, key); p; p = strstr(p + 1, key)) {
    const char *a = strstr(p, "\"sample\":");
    if (!a)
      return false;
    unsigned long v = strtoul(a + 9, NULL, 10);
    if (v >= N)
      return false;
    seen[v]++;
  }
  for (int i = 0; i < N; i++)
    if (seen[i] != 1) {
      fprintf(stderr, "sample %d decoded %u times in the trace\n", i, seen[i]);
      return false;
    }
  return true;
}

/* Runs the fixed scenario: 4 batches of 16; the first two released, the
 * last two held, so every slot is lent and the workers stop: the loader
 * is quiet and the trace's content is exact. Writes the trace to path
 * (unless NULL) and the stats. */
static int scenario(const fixture *f, int32_t device, uint64_t trace_events,
                    const char *path, gf_loader_stats *st, int *write_rc) {
  gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
  cfg.source = f->ds_dir;
  cfg.batch_size = B;
  cfg.threads = THREADS;
  cfg.prefetch = 2;
  cfg.device = device;
  cfg.trace_events = trace_events;
  gf_loader *l;
  int rc = gf_loader_create(&cfg, &l);
  if (rc < 0)
    return rc;
  gf_batch *b[4];
  for (int k = 0; k < 4; k++) {
    CHECK_OK(gf_loader_next(l, &b[k]));
    CHECK(fixture_check_batch(f, b[k]) == 0);
    if (k < 2)
      CHECK_OK(gf_loader_release(l, b[k]));
  }
  *write_rc = path ? gf_loader_trace_write(l, path) : 0;
  st->struct_size = sizeof *st;
  CHECK_OK(gf_loader_stats_get(l, st));
  gf_loader_destroy(l);
  return 0;
}

/* Spans the scenario records: per batch 16 / (2 * THREADS) = 4 chunks,
 * one read span each; 64 decodes; 4 finalize; 4 next, 2 step, 2
 * release. */
#define CHUNKS_PER_BATCH (B / (2 * THREADS))
#define EXPECTED_EVENTS (4 * CHUNKS_PER_BATCH + N + 4 + 4 + 2 + 2)

static void check_trace_file(const char *path, const gf_loader_stats *st,
                             bool gpu) {
  char *s = read_text(path);
  CHECK(s != NULL);
  if (!s)
    return;
  CHECK(strncmp(s, "{\"traceEvents\":[", 16) == 0);
  CHECK(json_balanced(s));
  CHECK(strstr(s, "\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
                  "\"args\":{\"name\":\"consumer\"}") != NULL);
  for (int i = 0; i < THREADS; i++) {
    char want[128];
    snprintf(want, sizeof want,
             "\"tid\":%d,\"args\":{\"name\":\"worker %d\"}", i + 1, i);
    CHECK(strstr(s, want) != NULL);
  }
  CHECK(count_of(s, "\"name\":\"thread_name\"") == THREADS + 1u + (gpu ? 1 : 0));
  long spans = check_spans(s);
  CHECK(spans >= 0 && (uint64_t)spans == st->trace_recorded);
  CHECK(count_of(s, "\"name\":\"decode\"") == N);
  CHECK(st->decode.samples == N);
  CHECK(each_sample_once(s));
  CHECK(count_of(s, "\"name\":\"read\"") == 4 * CHUNKS_PER_BATCH);
  CHECK(count_of(s, "\"name\":\"finalize\"") == 4);
  CHECK(count_of(s, "\"name\":\"next\"") == 4);
  CHECK(count_of(s, "\"name\":\"step\"") == 2);
  CHECK(count_of(s, "\"name\":\"release\"") == 2);
  if (gpu) {
    uint64_t g = count_of(s, "\"name\":\"H2D + transform\"");
    CHECK(g >= 2 && g <= 4); /* the released two at least */
    CHECK(strstr(s, "\"args\":{\"name\":\"GPU copy stream\"}") != NULL);
  } else {
    CHECK(st->trace_recorded == EXPECTED_EVENTS);
    CHECK(count_of(s, "H2D") == 0);
  }
  free(s);
}

int main(void) {
  const char *dir = gf_test_tmpdir();
  fixture f;
  CHECK_OK(fixture_make(&f, dir, N, 4, false, 1, 0));
  if (gf_test_failures)
    return gf_test_finish();
  char path[4200], missing[4200];
  snprintf(path, sizeof path, "%s/trace.json", dir);
  snprintf(missing, sizeof missing, "%s/no/such/dir/trace.json", dir);
  gf_loader_stats st;
  int wrc;

  /* A roomy buffer: everything recorded, nothing dropped. */
  unlink(path);
  CHECK_OK(scenario(&f, GF_DEVICE_CPU, 100000, path, &st, &wrc));
  CHECK_OK(wrc);
  CHECK(st.trace_dropped == 0);
  check_trace_file(path, &st, false);

  /* A tiny buffer: exactly its capacity kept, the rest counted. */
  unlink(path);
  CHECK_OK(scenario(&f, GF_DEVICE_CPU, 5, path, &st, &wrc));
  CHECK_OK(wrc);
  CHECK(st.trace_recorded == 5);
  CHECK(st.trace_dropped == EXPECTED_EVENTS - 5);
  {
    char *s = read_text(path);
    CHECK(s && check_spans(s) == 5 && json_balanced(s));
    char want[64];
    snprintf(want, sizeof want, "\"dropped\":%d", EXPECTED_EVENTS - 5);
    CHECK(s && strstr(s, want) != NULL);
    free(s);
  }

  /* Off: nothing recorded, nothing written, a clear error. */
  unlink(path);
  CHECK_OK(scenario(&f, GF_DEVICE_CPU, 0, path, &st, &wrc));
  CHECK(wrc == -EINVAL);
  CHECK(strstr(gf_last_error()->message, "trace_events") != NULL);
  CHECK(access(path, F_OK) != 0);
  CHECK(st.trace_recorded == 0 && st.trace_dropped == 0);

  /* An unwritable path: the errno, the path named. */
  CHECK_OK(scenario(&f, GF_DEVICE_CPU, 1000, missing, &st, &wrc));
  CHECK(wrc == -ENOENT);
  CHECK(strcmp(gf_last_error()->path, missing) == 0);

  /* A capacity beyond the bound is refused at create. */
  {
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.device = GF_DEVICE_CPU;
    cfg.trace_events = (1ull << 26) + 1;
    gf_loader *l = NULL;
    CHECK_ERR(gf_loader_create(&cfg, &l), -EINVAL);
    CHECK(l == NULL);
    CHECK(strstr(gf_last_error()->message, "trace_events") != NULL);
  }

  /* Autotune: threads and prefetch 0 are chosen within the budgets and
   * reported; given values are kept and said to be. */
  {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    gf_loader_config cfg = GF_LOADER_CONFIG_INIT;
    cfg.source = f.ds_dir;
    cfg.batch_size = B;
    cfg.device = GF_DEVICE_CPU;
    cfg.threads = 0;
    cfg.prefetch = 0;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&cfg, &l));
    gf_loader_stats a = {.struct_size = sizeof a};
    CHECK_OK(gf_loader_stats_get(l, &a));
    CHECK(a.threads >= 1 && (long)a.threads <= (cores > 0 ? cores : 1));
    if (cores > 2)
      CHECK((long)a.threads <= cores - 1);
    CHECK(a.slots >= 2 && a.slots <= 4);
    if (a.threads < 8)
      CHECK(a.slots == 2);
    char want[64];
    snprintf(want, sizeof want, "%u threads (", a.threads);
    CHECK(strstr(a.tuning, want) != NULL);
    snprintf(want, sizeof want, "prefetch %llu", (unsigned long long)a.slots);
    CHECK(strstr(a.tuning, want) != NULL);
    CHECK(strstr(a.tuning, "RAM budget") != NULL);
    printf("autotune: %s\n", a.tuning);
    gf_batch *b;
    CHECK_OK(gf_loader_next(l, &b));
    CHECK(fixture_check_batch(&f, b) == 0);
    CHECK_OK(gf_loader_release(l, b));
    gf_loader_destroy(l);

    cfg.threads = 3;
    cfg.prefetch = 0;
    CHECK_OK(gf_loader_create(&cfg, &l));
    CHECK_OK(gf_loader_stats_get(l, &a));
    CHECK(a.threads == 3 && a.slots == 2);
    CHECK(strstr(a.tuning, "3 threads (as configured)") != NULL);
    gf_loader_destroy(l);

    cfg.threads = 3;
    cfg.prefetch = 5;
    CHECK_OK(gf_loader_create(&cfg, &l));
    CHECK_OK(gf_loader_stats_get(l, &a));
    CHECK(a.threads == 3 && a.slots == 5);
    CHECK(strstr(a.tuning, "as configured") != NULL);
    gf_loader_destroy(l);

    /* GPU mode (the plan's, with or without a device here): 3 slots, so a
     * batch's device work is over before next asks for it; 2 when set. */
    cfg.device = 0;
    cfg.threads = 0;
    cfg.prefetch = 0;
    gf_memory_plan mp;
    gf_loader_sizes z;
    memset(&z, 0, sizeof z);
    CHECK_OK(gf_loader_plan_get(&cfg, &mp, &z));
    printf("autotune (GPU mode): %s\n", z.tuning);
    CHECK(z.prefetch == 3 && strstr(z.tuning, "prefetch 3 (GPU mode"));
    cfg.prefetch = 2;
    memset(&z, 0, sizeof z);
    CHECK_OK(gf_loader_plan_get(&cfg, &mp, &z));
    CHECK(z.prefetch == 2 && strstr(z.tuning, "prefetch 2 (as configured)"));
  }

  /* GPU mode, when a device is there: the copy stream's track. */
  char why[256];
  if (gf_stage_probe(0, why, sizeof why)) {
    unlink(path);
    CHECK_OK(scenario(&f, 0, 100000, path, &st, &wrc));
    CHECK_OK(wrc);
    check_trace_file(path, &st, true);
  } else {
    printf("GPU part not run: %s\n", why);
    if (getenv("GPUFEED_REQUIRE_GPU") &&
        strcmp(getenv("GPUFEED_REQUIRE_GPU"), "1") == 0) {
      fprintf(stderr, "GPUFEED_REQUIRE_GPU=1 but no GPU: %s\n", why);
      gf_test_failures++;
    }
  }
  fixture_free(&f);
  return gf_test_finish();
}
