/* gpufeed index: writes the sidecar index (DALI's wds2idx v1.2) of every
 * WebDataset tar shard named. The arguments are expanded (brace patterns,
 * "::" lists, @FILE list files) into one list, each shard once; a list in
 * which two shards' indexes would land in one place, or a shard read over
 * HTTP(S) without --out, is refused before any work. Then a pool of
 * threads indexes the shards (index_write.c does one), failures are
 * reported as they come while the others go on, and a summary (or one
 * JSON object) ends the run. */
#include "cli.h"

#include "common/common.h"
#include "format/wds_braces.h"
#include "format/wds_index.h" /* gf_wds_sidecar_name */
#include "format/wds_spec.h"  /* GF_WDS_LIST_BYTES_MAX */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "index"
#define SHARDS_MAX 1000000u /* as the loader's */
#define REMOTE_THREADS 16u  /* the default when a shard is remote */

static atomic_int
    g_signal; /* lock-free: set in a signal handler, read by threads */

static void on_signal(int sig) { g_signal = sig; }

typedef struct shard_list {
  char **v;
  size_t n, cap;
} shard_list;

static void list_free(shard_list *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->v[i]);
  free(l->v);
}

/* Tells why pattern did not expand. gf_wds_expand's message quotes the
 * pattern as given: a URL's user:password or query would show, so such a
 * pattern gets a message of its own, naming its display form. where: the
 * list file's line, or NULL. */
static void expand_error(const char *pattern, const char *where, int rc,
                         const gf_remote_config *remote) {
  char shown[1024];
  gfc_shown(pattern, remote, shown, sizeof shown);
  const gf_error_info *e = gf_last_error();
  const char *why = rc == -ENOMEM   ? "out of memory"
                    : rc == -EINVAL ? "unbalanced braces, or a range end "
                                      "beyond 64 bits"
                                    : "too many names";
  if (strcmp(shown, pattern) == 0 && e->code == rc && e->message[0])
    gfc_error(CMD, "%s%s%s", where ? where : "", where ? ": " : "", e->message);
  else
    gfc_error(CMD, "%s%sthe shard pattern '%s': %s", where ? where : "",
              where ? ": " : "", shown, why);
}

/* Expands pattern onto l; base: the folder a relative local path is taken
 * from (a list file's), or NULL. Returns 0 or a negative code, reported. */
static int expand(shard_list *l, const char *pattern, const char *base,
                  const char *where, const gf_remote_config *remote) {
  char **v;
  uint64_t n;
  int rc = gf_wds_expand(pattern, true, SHARDS_MAX, &v, &n);
  if (rc < 0) {
    expand_error(pattern, where, rc, remote);
    return rc;
  }
  for (uint64_t i = 0; i < n && rc == 0; i++) {
    if (!v[i][0])
      continue; /* an empty part of a "::" list */
    if (l->n >= SHARDS_MAX) {
      gfc_error(CMD, "more than %u shards named: index them in parts",
                SHARDS_MAX);
      rc = GF_ELIMIT;
      break;
    }
    if (l->n == l->cap) {
      size_t c = l->cap ? l->cap * 2 : 64;
      char **q = realloc(l->v, c * sizeof *q);
      if (!q) {
        rc = -ENOMEM;
        gfc_error(CMD, "out of memory");
        break;
      }
      l->v = q;
      l->cap = c;
    }
    char *s = v[i];
    if (base && s[0] != '/' && !strstr(s, "://")) {
      s = gfc_path_join(base, v[i]);
      if (!s) {
        rc = -ENOMEM;
        gfc_error(CMD, "out of memory");
        break;
      }
    } else {
      v[i] = NULL; /* now the list's */
    }
    l->v[l->n++] = s;
  }
  gf_wds_strings_free(v, n);
  return rc;
}

typedef struct list_ctx {
  shard_list *l;
  const char *file;
  const gf_remote_config *remote;
} list_ctx;

static int list_line(void *ctx, const char *line, const char *base,
                     uint64_t lineno) {
  list_ctx *c = ctx;
  char where[1100];
  snprintf(where, sizeof where, "%s line %" PRIu64, c->file, lineno);
  return expand(c->l, line, base, where, c->remote);
}

/* A list file: one location or pattern a line, blank lines and lines
 * starting with '#' left out; relative paths from the file's folder (as
 * the loader reads "@FILE": gf_wds_list_file). Returns 0 or a negative
 * code, reported. */
static int read_list(shard_list *l, const char *file,
                     const gf_remote_config *remote) {
  list_ctx c = {l, file, remote};
  gf_error_clear();
  int rc = gf_wds_list_file(file, list_line, &c);
  /* expand() reported its own failures; the file's are recorded. */
  if (rc < 0 && gf_last_error()->code == rc && gf_last_error()->path[0])
    gfc_error_last(CMD, rc);
  return rc;
}

/* A name and the position of its shard, to sort by. */
typedef struct keyed {
  const char *key;
  size_t i;
} keyed;

static int by_key(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  int c = strcmp(a->key, b->key);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

/* Drops the repeats of a shard (a list may name one twice: it is indexed
 * once), keeping the first one's place. Returns false when out of
 * memory. */
static bool drop_repeats(shard_list *l) {
  keyed *k = malloc((l->n ? l->n : 1) * sizeof *k);
  if (!k)
    return false;
  for (size_t i = 0; i < l->n; i++)
    k[i] = (keyed){l->v[i], i};
  qsort(k, l->n, sizeof *k, by_key);
  /* Marked first, freed after: the keys are the strings. */
  bool *dup = calloc(l->n ? l->n : 1, sizeof *dup);
  if (!dup) {
    free(k);
    return false;
  }
  for (size_t i = 1; i < l->n; i++)
    dup[k[i].i] = strcmp(k[i].key, k[i - 1].key) == 0;
  free(k);
  size_t m = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (dup[i])
      free(l->v[i]);
    else
      l->v[m++] = l->v[i];
  }
  free(dup);
  l->n = m;
  return true;
}

/* Refuses a list in which two shards' indexes would be one file ("a/x.tar"
 * and "b/x.tar" under --out; "x.tar" and "x" beside them). Returns true
 * when none do (or a name cannot be made: that shard fails by itself). */
static bool targets_distinct(const gfc_index_opts *o, const shard_list *l) {
  keyed *k = calloc(l->n ? l->n : 1, sizeof *k);
  bool ok = k != NULL;
  size_t m = 0;
  for (size_t i = 0; ok && i < l->n; i++) {
    char buf[1024];
    int rc = o->out ? gfc_index_out_name(l->v[i], buf, sizeof buf)
                    : gf_wds_sidecar_name(l->v[i], buf, sizeof buf);
    if (rc < 0)
      continue;
    if (!(k[m].key = strdup(buf)))
      ok = false;
    else
      k[m++].i = i;
  }
  if (!ok)
    gfc_error(CMD, "out of memory");
  if (ok)
    qsort(k, m, sizeof *k, by_key);
  for (size_t i = 1; ok && i < m; i++) {
    if (strcmp(k[i].key, k[i - 1].key) != 0)
      continue;
    char a[1024], b[1024], c[1024];
    gfc_error(CMD, "shards %s and %s would both have their index at %s%s%s",
              gfc_shown(l->v[k[i - 1].i], &o->remote, a, sizeof a),
              gfc_shown(l->v[k[i].i], &o->remote, b, sizeof b),
              o->out ? o->out : "", o->out ? "/" : "",
              gfc_shown(k[i].key, &o->remote, c, sizeof c));
    ok = false;
  }
  for (size_t i = 0; i < m; i++)
    free((char *)k[i].key);
  free(k);
  return ok;
}

/* What one shard came to. */
typedef struct result {
  int rc; /* GFC_INDEX_WRITTEN, GFC_INDEX_EXISTS or a negative code */
  gfc_index_counts c;
  gf_error_info *err; /* a failure's, malloc'd */
} result;

typedef struct job {
  gfc_index_io *io;
  char **shards;
  size_t n;
  atomic_size_t next;
  result *res;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a shard finished, or a thread ended */
  size_t *finished;  /* under mu: shard numbers, as they finished */
  size_t nfinished;  /* under mu */
  unsigned ended;    /* under mu: threads that returned */
  uint64_t bytes;    /* under mu: bytes of the shards scanned */
} job;

static void *worker(void *arg) {
  job *j = arg;
  for (;;) {
    size_t i = g_signal ? j->n : atomic_fetch_add(&j->next, 1);
    if (i >= j->n)
      break;
    result r = {0};
    r.rc = gfc_index_shard(j->io, j->shards[i], &r.c);
    if (r.rc < 0 && r.rc != -ECANCELED && (r.err = malloc(sizeof *r.err)))
      *r.err = *gf_last_error();
    pthread_mutex_lock(&j->mu);
    j->res[i] = r;
    j->finished[j->nfinished++] = i;
    j->bytes += r.c.bytes;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
  }
  pthread_mutex_lock(&j->mu);
  j->ended++;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

/* A failed shard's error on stderr, the progress line cleared first. */
static void report(const gfc_progress *p, const result *r) {
  if (p->enabled)
    fputs("\r\033[K", stderr);
  /* The message alone: gfc_error_last's kind of error ("not a gpufeed
   * dataset" for GF_EFORMAT) would mislead about a tar shard. */
  if (r->err && r->err->message[0])
    gfc_error(CMD, "%s", r->err->message);
  else
    gfc_error(CMD, "%s", gf_strerror(r->rc));
}

/* Waits for the threads, reporting each failure as it comes and drawing
 * the progress; SIGINT cuts the uploads in flight. */
static void follow(job *j, unsigned nt, gfc_progress *prog) {
  size_t seen = 0;
  bool cancelled = false;
  for (;;) {
    pthread_mutex_lock(&j->mu);
    if (seen == j->nfinished && j->ended < nt && !g_signal) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      ts.tv_nsec += 100000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&j->cv, &j->mu, &ts);
    }
    size_t upto = j->nfinished;
    bool done = j->ended == nt;
    uint64_t bytes = j->bytes;
    pthread_mutex_unlock(&j->mu);
    /* res[i] was set before i was listed, and is not written again. */
    for (; seen < upto; seen++) {
      const result *r = &j->res[j->finished[seen]];
      if (r->rc < 0 && r->rc != -ECANCELED)
        report(prog, r);
    }
    if (g_signal && !cancelled) {
      gfc_index_io_cancel(j->io);
      cancelled = true;
    }
    char b[32];
    snprintf(prog->note, sizeof prog->note, "%" PRIu64 " members, %s scanned",
             gfc_index_io_members(j->io), gfc_fmt_bytes(bytes, b, sizeof b));
    gfc_progress_update(prog, upto);
    if (done)
      break;
  }
}

typedef struct totals {
  uint64_t indexed, existing, failed, samples, members, bytes;
  uint64_t verified, unverified;
} totals;

static void print_json(const gfc_index_opts *o, const job *j, const totals *t,
                       double secs) {
  printf("{\"shards\":%zu,\"indexed\":%" PRIu64 ",\"skipped_existing\":%" PRIu64
         ",\"failed\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"members\":%" PRIu64
         ",\"bytes\":%" PRIu64 ",\"verified\":%" PRIu64
         ",\"unverified\":%" PRIu64 ",\"seconds\":%.4f,\"failures\":[",
         j->n, t->indexed, t->existing, t->failed, t->samples, t->members,
         t->bytes, t->verified, t->unverified, secs);
  bool first = true;
  for (size_t i = 0; i < j->n; i++) {
    const result *r = &j->res[i];
    if (r->rc >= 0 || r->rc == -ECANCELED)
      continue;
    char shown[1024];
    gfc_shown(j->shards[i], &o->remote, shown, sizeof shown);
    printf("%s{\"shard\":\"", first ? "" : ",");
    gfc_json_str(stdout, shown, strlen(shown));
    printf("\",\"error\":\"");
    const char *m = r->err ? r->err->message : gf_strerror(r->rc);
    gfc_json_str(stdout, m, strlen(m));
    printf("\"}");
    first = false;
  }
  printf("]}\n");
}

static void print_summary(const job *j, const totals *t, double secs,
                          unsigned nt, bool verify) {
  char b[32];
  printf("index: %zu shard%s: %" PRIu64 " indexed, %" PRIu64
         " already indexed, %" PRIu64 " failed\n",
         j->n, j->n == 1 ? "" : "s", t->indexed, t->existing, t->failed);
  printf("  samples       %" PRIu64 " in the indexes written (%" PRIu64
         " members)\n",
         t->samples, t->members);
  printf("  scanned       %s of shards in %.2f s, %u thread%s\n",
         gfc_fmt_bytes(t->bytes, b, sizeof b), secs, nt, nt == 1 ? "" : "s");
  if (verify)
    printf("  verified      %" PRIu64 " images decoded and summed, %" PRIu64
           " did not decode (named above; the loader decodes them on the "
           "CPU)\n",
           t->verified, t->unverified);
}

int gfc_index(const gfc_index_opts *o) {
  int status = GFC_EXIT_FAIL;
  shard_list l = {0};
  gfc_index_io *io = NULL;
  pthread_t *tids = NULL;
  unsigned nt = 0, started = 0;
  job j = {0};
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&j.mu, NULL);
  pthread_cond_init(&j.cv, &ca);
  pthread_condattr_destroy(&ca);

  signal(SIGXFSZ, SIG_IGN); /* a file-size limit fails a write instead */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | SA_RESETHAND; /* a second ^C kills at once */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  for (size_t a = 0; a < o->nshards; a++) {
    const char *s = o->shards[a];
    if ((s[0] == '@' ? read_list(&l, s + 1, &o->remote)
                     : expand(&l, s, NULL, NULL, &o->remote)) < 0)
      goto out;
  }
  if (!drop_repeats(&l)) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  if (l.n == 0) {
    gfc_error(CMD, "the arguments name no shard");
    goto out;
  }
  size_t nhttp = 0, nremote = 0;
  const char *http = NULL;
  for (size_t i = 0; i < l.n; i++) {
    if (gfc_is_http(l.v[i]) && !nhttp++)
      http = l.v[i];
    nremote += strstr(l.v[i], "://") != NULL;
  }
  if (nhttp && !o->out) {
    char shown[1024];
    gfc_error(CMD,
              "%s: an index cannot be written beside a shard read over "
              "HTTP(S) (%zu of the %zu shards are); use --out DIR to write "
              "the indexes into a local folder",
              gfc_shown(http, &o->remote, shown, sizeof shown), nhttp, l.n);
    goto out;
  }
  if (!targets_distinct(o, &l) || gfc_index_io_open(o, &g_signal, &io) < 0)
    goto out;

  nt = o->threads ? o->threads : nremote ? REMOTE_THREADS : gfc_cores();
  if (nt > l.n)
    nt = (unsigned)l.n;
  j.io = io;
  j.shards = l.v;
  j.n = l.n;
  j.res = calloc(l.n, sizeof *j.res);
  j.finished = calloc(l.n, sizeof *j.finished);
  tids = calloc(nt, sizeof *tids);
  if (!j.res || !j.finished || !tids) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  gfc_progress prog;
  gfc_progress_start(&prog, CMD, "shards", l.n, o->quiet);
  double t0 = gfc_now();
  for (; started < nt; started++) {
    int e = pthread_create(&tids[started], NULL, worker, &j);
    if (e) {
      gfc_error(CMD, "cannot start a thread: %s", strerror(e));
      break;
    }
  }
  if (!started) /* else fewer threads do the work */
    goto out;
  follow(&j, started, &prog);
  for (unsigned i = 0; i < started; i++)
    pthread_join(tids[i], NULL);
  gfc_progress_end(&prog);
  double secs = gfc_now() - t0;

  totals t = {0};
  for (size_t i = 0; i < l.n; i++) {
    const result *r = &j.res[i];
    if (r->rc == GFC_INDEX_WRITTEN) {
      t.indexed++;
      t.samples += r->c.samples;
      t.members += r->c.members;
      t.bytes += r->c.bytes;
      t.verified += r->c.verified;
      t.unverified += r->c.unverified;
    } else if (r->rc == GFC_INDEX_EXISTS) {
      t.existing++;
    } else if (r->rc != -ECANCELED) {
      t.failed++;
    }
  }
  if (g_signal) {
    gfc_error(CMD,
              "interrupted by %s: %" PRIu64 " of %zu shards indexed, no "
              "temporary file left",
              g_signal == SIGINT ? "SIGINT" : "SIGTERM", t.indexed, l.n);
    status = g_signal == SIGINT ? GFC_EXIT_INTERRUPTED : GFC_EXIT_FAIL;
    goto out;
  }
  if (o->json)
    print_json(o, &j, &t, secs);
  else if (!o->quiet)
    print_summary(&j, &t, secs, started, o->verify);
  if (t.failed)
    gfc_error(CMD, "%" PRIu64 " of %zu shards failed", t.failed, l.n);
  status = t.failed ? GFC_EXIT_FAIL : GFC_EXIT_OK;

out:
  for (size_t i = 0; j.res && i < l.n; i++)
    free(j.res[i].err);
  free(j.res);
  free(j.finished);
  free(tids);
  gfc_index_io_close(io);
  list_free(&l);
  pthread_cond_destroy(&j.cv);
  pthread_mutex_destroy(&j.mu);
  if (status == GFC_EXIT_FAIL && g_signal && !started)
    status = g_signal == SIGINT ? GFC_EXIT_INTERRUPTED : GFC_EXIT_FAIL;
  return status;
}
