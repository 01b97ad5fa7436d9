/* The loader's trace (see trace.h). */
#include "pipeline/trace.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct trace_event {
  uint64_t start_ns; /* relative to the trace's origin */
  uint64_t dur_ns;
  uint64_t arg;
  uint32_t tid;
  uint16_t kind;
  _Atomic uint16_t done; /* set last, so the writer skips half-written ones */
} trace_event;

struct gf_trace {
  trace_event *ev;
  uint64_t cap;
  uint64_t origin_ns;
  uint32_t workers;
  bool gpu_track;
  _Atomic uint64_t next;    /* claimed slots, may pass cap */
  _Atomic uint64_t dropped;
};

/* Bounds the array (32 bytes an event): 2 GiB. */
#define TRACE_MAX_EVENTS (1ull << 26)

static const char *const kind_name[GF_TR_KIND_COUNT_] = {
    "read", "decode",  "cache copy",      "finalize", "next",
    "step", "release", "H2D + transform", "fetch"};
static const char *const kind_cat[GF_TR_KIND_COUNT_] = {
    "io",       "decode",   "cache", "batch", "consumer",
    "consumer", "consumer", "gpu",   "io"};

uint64_t gf_trace_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int gf_trace_create(uint64_t capacity, uint32_t workers, uint64_t origin_ns,
                    bool gpu_track, gf_trace **out) {
  *out = NULL;
  if (capacity == 0 || capacity > TRACE_MAX_EVENTS)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "loader config: trace_events %llu must be from 1 to %llu",
                   (unsigned long long)capacity,
                   (unsigned long long)TRACE_MAX_EVENTS);
  gf_trace *t = calloc(1, sizeof *t);
  if (t)
    t->ev = calloc((size_t)capacity, sizeof *t->ev);
  if (!t || !t->ev) {
    free(t);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate a trace buffer of %llu events",
                   (unsigned long long)capacity);
  }
  t->cap = capacity;
  t->origin_ns = origin_ns;
  t->workers = workers;
  t->gpu_track = gpu_track;
  *out = t;
  return 0;
}

void gf_trace_destroy(gf_trace *t) {
  if (!t)
    return;
  free(t->ev);
  free(t);
}

void gf_trace_span(gf_trace *t, gf_trace_kind kind, uint32_t tid,
                   uint64_t start_ns, uint64_t end_ns, uint64_t arg) {
  if (!t)
    return;
  uint64_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
  if (i >= t->cap) {
    atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
    return;
  }
  trace_event *e = &t->ev[i];
  e->start_ns = start_ns > t->origin_ns ? start_ns - t->origin_ns : 0;
  e->dur_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  e->arg = arg;
  e->tid = tid;
  e->kind = (uint16_t)kind;
  atomic_store_explicit(&e->done, 1, memory_order_release);
}

void gf_trace_counts(const gf_trace *t, uint64_t *recorded,
                     uint64_t *dropped) {
  *recorded = *dropped = 0;
  if (!t)
    return;
  uint64_t n = atomic_load_explicit(&t->next, memory_order_relaxed);
  uint64_t d = atomic_load_explicit(&t->dropped, memory_order_relaxed);
  /* A claim past the end is counted as dropped a moment after `next`
   * moved: take the recorded count from the array's side. */
  *recorded = n < t->cap ? n : t->cap;
  *dropped = d;
}

static const char *arg_name(gf_trace_kind k) {
  switch (k) {
  case GF_TR_DECODE:
  case GF_TR_CACHE:
    return "sample";
  case GF_TR_READ:
    return "first_sample";
  default:
    return "batch";
  }
}

int gf_trace_write(const gf_trace *t, const char *path) {
  if (!t || !path)
    return gf_fail(-EINVAL, path, GF_NO_INDEX, GF_NO_INDEX,
                   "trace_write: the loader was created without trace_events "
                   "(or no path was given)");
  FILE *f = fopen(path, "w");
  if (!f) {
    int e = errno;
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot create the trace file: %s", strerror(e));
  }
  uint64_t rec, dropped;
  gf_trace_counts(t, &rec, &dropped);
  fprintf(f, "{\"traceEvents\":[\n");
  fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
             "\"args\":{\"name\":\"gpufeed loader\"}}");
  fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
             "\"args\":{\"name\":\"consumer\"}}",
          GF_TRACE_TID_CONSUMER);
  for (uint32_t i = 0; i < t->workers; i++)
    fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
               "\"args\":{\"name\":\"worker %u\"}}",
            GF_TRACE_TID_WORKER(i), i);
  if (t->gpu_track)
    fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
               "\"args\":{\"name\":\"GPU copy stream\"}}",
            GF_TRACE_TID_COPY_STREAM);
  /* The fetch stage's track where it read anything (a remote source). */
  for (uint64_t i = 0; i < rec; i++)
    if (atomic_load_explicit(&t->ev[i].done, memory_order_acquire) &&
        t->ev[i].kind == GF_TR_FETCH) {
      fprintf(f,
              ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
              "\"args\":{\"name\":\"fetch (remote reads)\"}}",
              GF_TRACE_TID_FETCH);
      break;
    }
  for (uint64_t i = 0; i < rec; i++) {
    const trace_event *e = &t->ev[i];
    if (!atomic_load_explicit(&e->done, memory_order_acquire))
      continue;
    gf_trace_kind k = (gf_trace_kind)e->kind;
    fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,"
               "\"dur\":%.3f,\"pid\":1,\"tid\":%u",
            kind_name[k], kind_cat[k], (double)e->start_ns / 1e3,
            (double)e->dur_ns / 1e3, e->tid);
    if (k == GF_TR_FETCH)
      fprintf(f, ",\"args\":{\"samples\":%llu,\"epoch\":%llu}",
              (unsigned long long)(e->arg & 0xffffffffu),
              (unsigned long long)(e->arg >> 32));
    else if (e->arg != GF_NO_INDEX)
      fprintf(f, ",\"args\":{\"%s\":%llu}", arg_name(k),
              (unsigned long long)e->arg);
    fputc('}', f);
  }
  fprintf(f, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"recorded\":%llu,"
             "\"dropped\":%llu}}\n",
          (unsigned long long)rec, (unsigned long long)dropped);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    int e = errno ? errno : EIO;
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot write the trace file: %s", strerror(e));
  }
  return 0;
}
