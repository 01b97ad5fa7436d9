/* The disk cache tier as a storage (io/storage.h: gf_storage_cache_wrap):
 * it wraps a remote storage, passes its calls through, and serves reads
 * from the entries in cache_dir (io/dcache.h has the design). This file
 * holds the storage's calls and the synchronous read; dcache_engine.c the
 * engine. Nothing here calls storage.c: the inner storage is reached
 * through its ops table. */
#include "io/dcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cached_close(gf_storage *st) {
  gf_dcache_store *cs = (gf_dcache_store *)st;
  cs->inner->ops->close(cs->inner);
  for (gf_dcache_obj *co = cs->objs, *next; co; co = next) {
    next = co->next;
    gf_dcache_index_free(&co->index);
    pthread_mutex_destroy(&co->index.mu);
    free((char *)co->key.display);
    free((char *)co->key.version);
    free(co);
  }
  gf_dcache_dir_close(cs->dir);
  pthread_mutex_destroy(&cs->mu);
  free(cs->base.display);
  free(cs);
}

static gf_storage *inner_of(gf_storage *st) {
  return ((gf_dcache_store *)st)->inner;
}

static int cached_stat(gf_storage *st, const char *name, bool follow,
                       gf_stat *out) {
  gf_storage *in = inner_of(st);
  return in->ops->stat(in, name, follow, out);
}

static int cached_list(gf_storage *st, const char *dir, gf_list_fn fn,
                       void *ctx) {
  gf_storage *in = inner_of(st);
  return in->ops->list(in, dir, fn, ctx);
}

static int cached_resolve(gf_storage *st, const char *name, gf_stat *out,
                          bool *inside, char *target, size_t cap) {
  gf_storage *in = inner_of(st);
  return in->ops->resolve(in, name, out, inside, target, cap);
}

/* The inner storage's counters (its requests, retries and failures), and
 * the tier's own. */
static void cached_counters(gf_storage *st, gf_storage_counters *out) {
  gf_storage *in = inner_of(st);
  if (in->ops->counters)
    in->ops->counters(in, out);
  gf_storage_cache_info ci;
  gf_storage_cache_info_get(st, &ci);
  out->cache_hits = ci.hits;
  out->cache_misses = ci.misses;
  out->cache_bytes_read = ci.hit_bytes;
  out->cache_bytes_written = ci.written_bytes;
  out->cache_evictions = ci.evictions;
}

/* The inner storage's description, and that a disk cache stands before
 * it. */
static void cached_describe(gf_storage *st, char *buf, size_t cap) {
  gf_storage *in = inner_of(st);
  char inner[512];
  if (in->ops->describe)
    in->ops->describe(in, inner, sizeof inner);
  else
    snprintf(inner, sizeof inner, "%s", in->ops->name);
  gf_dcache_store *cs = (gf_dcache_store *)st;
  snprintf(buf, cap, "%s, disk cache %s", inner, gf_dcache_dir_root(cs->dir));
}

/* The state of an object version, shared by its opens (made at the
 * first). NULL when out of memory: that open is then not cached. */
static gf_dcache_obj *object_state(gf_dcache_store *cs,
                                   const gf_dcache_key *k) {
  pthread_mutex_lock(&cs->mu);
  gf_dcache_obj *co = cs->objs;
  while (co && !(co->key.hash == k->hash && co->key.size == k->size &&
                 !strcmp(co->key.display, k->display) &&
                 !strcmp(co->key.version, k->version)))
    co = co->next;
  if (!co && (co = calloc(1, sizeof *co))) {
    co->key = *k;
    co->key.display = strdup(k->display);
    co->key.version = strdup(k->version);
    if (!co->key.display || !co->key.version) {
      free((char *)co->key.display);
      free((char *)co->key.version);
      free(co);
      co = NULL;
    } else {
      pthread_mutex_init(&co->index.mu, NULL);
      gf_dcache_dir_object(cs->dir, k->hash, co->index.dir,
                           sizeof co->index.dir);
      co->next = cs->objs;
      cs->objs = co;
    }
  }
  pthread_mutex_unlock(&cs->mu);
  return co;
}

static void cached_list_done(gf_storage *st) {
  gf_storage *in = inner_of(st);
  if (in->ops->list_done)
    in->ops->list_done(in);
}

static int wrap_object(gf_storage *st, gf_object *in, gf_object **out);

static int cached_obj_open(gf_storage *st, const char *name, uint32_t flags,
                           gf_object **out) {
  gf_dcache_store *cs = (gf_dcache_store *)st;
  gf_object *in = NULL;
  int rc = cs->inner->ops->obj_open(cs->inner, name, flags, &in);
  return rc < 0 ? rc : wrap_object(st, in, out);
}

static int cached_obj_open_known(gf_storage *st, const char *name,
                                 const gf_stat *known, uint32_t flags,
                                 gf_object **out) {
  gf_dcache_store *cs = (gf_dcache_store *)st;
  gf_object *in = NULL;
  int rc =
      cs->inner->ops->obj_open_known
          ? cs->inner->ops->obj_open_known(cs->inner, name, known, flags, &in)
          : cs->inner->ops->obj_open(cs->inner, name, flags, &in);
  return rc < 0 ? rc : wrap_object(st, in, out);
}

/* The tier's object over the inner storage's `in` (owned from here). */
static int wrap_object(gf_storage *st, gf_object *in, gf_object **out) {
  gf_dcache_store *cs = (gf_dcache_store *)st;
  gf_cached_object *o = calloc(1, sizeof *o);
  char *display = strdup(in->display);
  if (!o || !display) {
    free(o);
    free(display);
    in->st->ops->obj_close(in);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory opening an object");
  }
  o->base.st = st;
  o->base.fd = -1;
  o->base.size = in->size;
  memcpy(o->base.version, in->version, sizeof o->base.version);
  o->base.display = display;
  o->inner = in;
  /* The key: what the inner storage said at open. An object without a
   * version tag is not cached: nothing would tell a changed one. */
  gf_dcache_key k = {in->display, in->version, in->size, 0};
  if (gf_dcache_key_ok(&k)) {
    k.hash = gf_dcache_key_hash(k.display, k.version, k.size);
    o->co = object_state(cs, &k);
  }
  *out = &o->base;
  return 0;
}

static void cached_obj_close(gf_object *ob) {
  gf_cached_object *o = (gf_cached_object *)ob;
  o->inner->st->ops->obj_close(o->inner);
  free(o->base.display);
  free(o);
}

static void nap_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull),
                        (long)(ns % 1000000000ull)};
  nanosleep(&ts, NULL);
}

/* A streamed range (a WebDataset shard in streaming mode, read once an
 * epoch front to back) goes to the inner storage's one request, not
 * through the tier: its entries are ranges a reader by index asks for
 * again, which a stream never is. */
static int64_t cached_obj_stream(gf_object *ob, uint64_t off, uint64_t len,
                                 gf_stream_sink sink, void *ctx) {
  gf_object *in = ((gf_cached_object *)ob)->inner;
  return in->st->ops->obj_stream(in, off, len, sink, ctx);
}

/* The synchronous read: entries, then a claim and the inner storage's
 * obj_read for the rest (waiting, within the bound, for another reader's
 * claim), and what came back kept. */
static int64_t cached_obj_read(gf_object *ob, void *buf, uint64_t off,
                               uint64_t len) {
  gf_cached_object *o = (gf_cached_object *)ob;
  gf_dcache_store *cs = (gf_dcache_store *)ob->st;
  gf_object *in = o->inner;
  uint64_t n = off < ob->size ? ob->size - off : 0;
  if (n > len)
    n = len;
  if (!gf_dcache_cacheable(o, off, n)) {
    if (n)
      cs->c.uncached++;
    return in->st->ops->obj_read(in, buf, off, len);
  }
  uint8_t *dst = buf;
  uint64_t deadline = 0;
  for (int round = 0; round < 8; round++) {
    uint64_t go, gl;
    gf_dcache_serve(cs, o->co, off, n, dst, &go, &gl);
    if (!gl) {
      cs->c.hits++;
      return (int64_t)n;
    }
    bool covered, expired = false;
    int c = gf_dcache_claim(cs, o->co, go, gl, &covered);
    if (covered)
      continue;
    if (c == GF_CLAIM_HELD) {
      if (!deadline) {
        deadline = gf_dcache_now_ns() + cs->claim_wait_ns;
        cs->c.claim_waits++;
      }
      while (!gf_dcache_wait_over(cs, o->co, go, gl, deadline, &expired))
        nap_ns(GF_DCACHE_WAIT_POLL_NS);
      if (!expired)
        continue;
      cs->c.claim_timeouts++;
    }
    bool claimed = c == GF_CLAIM_MINE;
    cs->c.misses++;
    int64_t got = in->st->ops->obj_read(in, dst + (go - off), go, gl);
    if (got < 0 || (uint64_t)got < gl) {
      /* Shorter than the object's size: it changed; not kept. */
      if (claimed)
        gf_dcache_unclaim(cs, o->co, go, gl);
      return got < 0 ? got : (int64_t)(go - off) + got;
    }
    gf_dcache_store_entry(cs, o->co, go, gl, dst + (go - off), claimed);
    return (int64_t)n;
  }
  cs->c.misses++; /* entries that keep vanishing: read it all */
  return in->st->ops->obj_read(in, buf, off, len);
}

int gf_storage_cache_wrap(gf_storage **st, const gf_remote_config *remote) {
  gf_storage *inner = *st;
  if (!remote || !remote->cache_dir || !remote->cache_dir[0] ||
      !(gf_storage_caps(inner) & GF_STORAGE_REMOTE))
    return 0;
  char why[512];
  gf_dcache_dir *dir;
  int rc = gf_dcache_dir_open(remote->cache_dir, remote->cache_dir_bytes, &dir,
                              why, sizeof why);
  if (rc < 0) {
    static atomic_flag logged = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&logged))
      gf_log(GF_LOG_WARN,
             "disk cache: off (%s): reads go to the server (logged once)", why);
    return 0;
  }
  gf_dcache_store *cs = calloc(1, sizeof *cs);
  char *display = strdup(inner->display);
  if (!cs || !display) {
    free(cs);
    free(display);
    gf_dcache_dir_close(dir);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the disk cache tier");
  }
  cs->ops = (gf_storage_ops){
      .name = inner->ops->name,
      .caps = inner->ops->caps,
      .claims = inner->ops->claims,
      .open = NULL, /* made by gf_storage_cache_wrap only */
      .close = cached_close,
      .stat = cached_stat,
      .list = cached_list,
      .resolve = cached_resolve,
      .obj_open = cached_obj_open,
      .obj_open_known = cached_obj_open_known,
      .list_done = cached_list_done,
      .obj_close = cached_obj_close,
      .obj_read = cached_obj_read,
      .obj_stream = inner->ops->obj_stream ? cached_obj_stream : NULL,
      .engine = inner->ops->engine ? &gf_dcache_engine : NULL,
      .counters = cached_counters,
      .describe = cached_describe,
  };
  cs->base.ops = &cs->ops;
  cs->base.display = display;
  cs->inner = inner;
  cs->dir = dir;
  /* The longest another reader's fetch of one range may take: its tries
   * (retry_ms) and a stalled transfer's wait (stall_ms). */
  cs->claim_wait_ns =
      ((uint64_t)remote->retry_ms + remote->stall_ms) * 1000000ull;
  if (!cs->claim_wait_ns)
    cs->claim_wait_ns = 75000000000ull;
  pthread_mutex_init(&cs->mu, NULL);
  gf_log(GF_LOG_INFO, "disk cache: %s, %llu bytes at most, for %s",
         gf_dcache_dir_root(dir), (unsigned long long)gf_dcache_dir_limit(dir),
         display);
  *st = &cs->base;
  return 0;
}

bool gf_storage_cache_info_get(const gf_storage *s,
                               gf_storage_cache_info *out) {
  memset(out, 0, sizeof *out);
  if (!s || s->ops->close != cached_close)
    return false;
  gf_dcache_store *cs = (gf_dcache_store *)s;
  gf_strlcpy(out->dir, gf_dcache_dir_root(cs->dir), sizeof out->dir);
  out->limit = gf_dcache_dir_limit(cs->dir);
  out->writing = gf_dcache_now_ns() >= cs->write_off_until;
  if (!out->writing)
    gf_strlcpy(out->why_not, gf_strerror(-cs->write_off_errno),
               sizeof out->why_not);
  out->hits = cs->c.hits;
  out->misses = cs->c.misses;
  out->hit_bytes = cs->c.hit_bytes;
  out->fetched_bytes = cs->c.fetched_bytes;
  out->writes = cs->c.writes;
  out->written_bytes = cs->c.written_bytes;
  gf_dcache_dir_evictions(cs->dir, &out->evictions, &out->evicted_bytes);
  out->claim_waits = cs->c.claim_waits;
  out->claim_timeouts = cs->c.claim_timeouts;
  out->corrupt = cs->c.corrupt;
  out->write_errors = cs->c.write_errors;
  out->uncached = cs->c.uncached;
  return true;
}
