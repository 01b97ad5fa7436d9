/* The streaming stage (stream.h): lanes that stream shards front to back
 * and parse them as the bytes come, the merge of the lanes' samples, the
 * shuffle buffer, and the positions handed to the takers. */
#include "pipeline/stream.h"

#include "format/wds_stream.h"
#include "pipeline/sampler.h"
#include "pipeline/stream_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint32_t lanes_of(const gf_stream_config *c) {
  uint32_t k = c->lanes ? c->lanes : GF_STREAM_LANES;
  uint32_t per_rank = (c->nshards + c->world - 1) / (c->world ? c->world : 1);
  if (k > per_rank)
    k = per_rank ? per_rank : 1;
  return k;
}

/* The most pages one item takes: its key, its image, its fields. */
static uint64_t item_pages(const gf_stream_config *c) {
  uint64_t payload = c->max_sample + gf_stream__fields_max(c);
  if (payload < sizeof(gf_error_info))
    payload = sizeof(gf_error_info);
  return gf_stream__pages_for(payload + GF_TAR_NAME_MAX + 1) + 1;
}

static uint64_t shuffle_bytes_of(const gf_stream_config *c) {
  return c->shuffle_bytes ? c->shuffle_bytes : GF_STREAM_SHUFFLE_BYTES;
}

static uint32_t shuffle_of(const gf_stream_config *c) {
  return c->shuffle && !c->ordered ? c->shuffle : 1;
}

/* Items alive at once, at most: the buffer's, the lanes' queues and the
 * ones each lane builds, the positions handed out, and one in the merge's
 * hands. */
static uint64_t items_of(const gf_stream_config *c, uint32_t lanes) {
  return (uint64_t)shuffle_of(c) + 1 + (uint64_t)lanes * (QLEN + 1) +
         c->takers + 1;
}

/* A lane's queue's pages at most, and one item it builds. */
static uint64_t lane_pages(const gf_stream_config *c) {
  uint64_t ip = item_pages(c), ahead = gf_stream__pages_for(LANE_AHEAD);
  return (ahead > ip ? ahead : ip) + ip;
}

static uint32_t out_cap_of(const gf_stream_config *c) {
  uint32_t n = 16;
  while (n < 2u * c->takers + 16u)
    n *= 2;
  return n;
}

void gf_stream_sizes(const gf_stream_config *c, uint64_t *arena,
                     uint64_t *tables) {
  uint32_t k = lanes_of(c);
  uint64_t ip = item_pages(c);
  /* The buffer: full at shuffle_bytes (in pages), one item more while
   * full; then every item that can be elsewhere at its largest. */
  uint64_t pages = gf_stream__pages_for(shuffle_bytes_of(c)) + ip +
                   (uint64_t)k * lane_pages(c) + ((uint64_t)c->takers + 1) * ip;
  uint64_t cap = (uint64_t)shuffle_of(c) + 1;
  /* A buffered sample of a page or two wastes up to a page: counted. */
  if (pages < cap + ip)
    pages = cap + ip;
  *arena = pages * GF_STREAM_PAGE;
  *tables = pages * sizeof(uint32_t) + items_of(c, k) * sizeof(item) +
            cap * sizeof(uint32_t) + out_cap_of(c) * sizeof(out_slot) +
            (uint64_t)k * (GF_STREAM_PUMPS * GF_STREAM_RING +
                           gf_stream__scratch(c) + sizeof(lane));
}

/* ---- the merge and the shuffle (under mu) ------------------------------- */

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void begin_epoch(gf_stream *s, uint64_t e) {
  s->cur_epoch = e;
  s->adds = 0;
  s->emitted = 0;
  s->rr = 0;
  s->lanes_done = 0;
  for (uint32_t i = 0; i < s->nlanes; i++)
    s->lanes[i].done = false;
  s->rng = gf_order_sub(gf_order_sub(s->c.seed, e), 4 + (uint64_t)s->c.rank);
}

static void publish_length(gf_stream *s, uint64_t e, uint64_t n) {
  atomic_store_explicit(&s->len_val[e % 4], n, memory_order_relaxed);
  atomic_store_explicit(&s->len_tag[e % 4], e + 1, memory_order_release);
}

/* Hands item i out at the current epoch's next position (dropped when
 * before the replay's start). Returns false when its place in the table
 * is still held (a position not yet taken). */
static bool emit(gf_stream *s, uint32_t i) {
  uint64_t pos = s->emitted;
  if (s->cur_epoch == s->skip_epoch && pos < s->skip_to) {
    gf_stream__free_item(s, i);
    s->emitted++;
    return true;
  }
  out_slot *o = &s->out[pos % s->out_cap];
  if (o->used) {
    s->emit_blocked = true;
    return false;
  }
  *o = (out_slot){.used = true, .epoch = s->cur_epoch, .pos = pos, .item = i};
  s->emitted++;
  return true;
}

/* One step of the merge. Returns 1 when it moved, 0 when it must wait
 * (a lane has nothing yet, or a position's place is held), and sets
 * *published when an epoch's length became known. */
static int step(gf_stream *s, bool *published) {
  if (s->lanes_done == s->nlanes && s->buf_count == 0) {
    publish_length(s, s->cur_epoch, s->emitted);
    *published = true;
    begin_epoch(s, s->cur_epoch + 1);
    return 1;
  }
  /* webdataset's shuffle(bufsize, initial): nothing leaves before the
   * buffer holds `initial` samples; then, while it is below its size, two
   * come in for each that leaves; full, one for one. */
  uint32_t size = shuffle_of(&s->c);
  uint32_t initial = size < GF_STREAM_INITIAL ? size : GF_STREAM_INITIAL;
  bool leave = s->buf_count > 0 &&
               (s->lanes_done == s->nlanes || s->buf_count >= size ||
                s->buf_pages >= s->shuffle_pages ||
                (s->buf_count >= initial && s->adds >= 2));
  if (leave) {
    uint32_t k = (uint32_t)(splitmix(&s->rng) % s->buf_count);
    uint32_t i = s->buf[k];
    if (!emit(s, i)) {
      s->rng -= 0x9E3779B97F4A7C15ull; /* not drawn after all */
      return 0;
    }
    s->buf[k] = s->buf[--s->buf_count];
    s->buf_pages -= s->items[i].npages;
    s->adds = 0;
    return 1;
  }
  lane *ln = &s->lanes[s->rr];
  while (ln->done) {
    s->rr = (s->rr + 1) % s->nlanes;
    ln = &s->lanes[s->rr];
  }
  if (!ln->qlen)
    return 0;
  uint32_t i = ln->q[ln->qhead];
  ln->qhead = (ln->qhead + 1) % QLEN;
  ln->qlen--;
  item *it = &s->items[i];
  ln->qpages -= it->npages;
  if (s->lane_waiting) /* the lane's queue has room */
    pthread_cond_broadcast(&s->lane_cv);
  s->rr = (s->rr + 1) % s->nlanes;
  if (it->kind == IT_END) {
    ln->done = true;
    s->lanes_done++;
    gf_stream__free_item(s, i);
    return 1;
  }
  if (it->kind == IT_BAD && s->c.skip_bad) {
    gf_error_info e;
    gf_stream__item_io(s, it, it->keylen, (uint8_t *)&e, sizeof e, false);
    gf_strlcpy(s->last_skip, e.message, sizeof s->last_skip);
    /* A replay meets again the ones dropped before its start. */
    if (s->cur_epoch != s->skip_epoch || s->emitted >= s->skip_to) {
      atomic_fetch_add_explicit(&s->skipped, 1, memory_order_relaxed);
      uint32_t r = (uint32_t)(s->cur_epoch % 8);
      if (s->skip_tag[r] != s->cur_epoch + 1) {
        s->skip_tag[r] = s->cur_epoch + 1;
        s->skip_count[r] = 0;
      }
      s->skip_count[r]++;
    }
    gf_stream__free_item(s, i);
    return 1;
  }
  s->buf[s->buf_count++] = i;
  s->buf_pages += it->npages;
  s->adds++;
  return 1;
}

/* ---- lanes started and stopped ------------------------------------------ */

static void stop_lanes(gf_stream *s) {
  pthread_mutex_lock(&s->mu);
  s->stopping = true;
  pthread_cond_broadcast(&s->lane_cv);
  pthread_cond_broadcast(&s->take_cv);
  pthread_mutex_unlock(&s->mu);
  for (uint32_t i = 0; i < s->nlanes; i++)
    gf_stream__lane_stop(&s->lanes[i]);
}

/* Drops every item and starts the lanes at position pos of epoch. */
static int start_lanes(gf_stream *s, uint64_t epoch, uint64_t pos) {
  s->stopping = false;
  s->free_page = NO_PAGE;
  s->free_pages = 0;
  for (uint32_t p = s->npages; p-- > 0;) {
    s->next[p] = s->free_page;
    s->free_page = p;
    s->free_pages++;
  }
  s->free_item = UINT32_MAX;
  for (uint32_t i = s->nitems; i-- > 0;) {
    s->items[i] = (item){.kind = IT_FREE, .page = NO_PAGE};
    s->items[i].next_free = s->free_item;
    s->free_item = i;
  }
  memset(s->out, 0, s->out_cap * sizeof *s->out);
  s->buf_count = 0;
  s->buf_pages = 0;
  s->adds = 0;
  s->start_epoch = epoch;
  s->skip_epoch = epoch;
  s->skip_to = pos;
  begin_epoch(s, epoch);
  for (uint32_t i = 0; i < s->nlanes; i++) {
    int rc = gf_stream__lane_start(&s->lanes[i]);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* ---- the calls ---------------------------------------------------------- */

int gf_stream_create(const gf_stream_config *c, uint64_t epoch, uint64_t pos,
                     gf_stream **out) {
  *out = NULL;
  uint32_t world = c->world ? c->world : 1;
  if (c->nshards < world)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "streaming mode deals shards to ranks whole: %u shards "
                   "cannot feed %u ranks (give at least one shard a rank, "
                   "or index the shards: `gpufeed index`)",
                   c->nshards, world);
  if (!c->max_sample || !c->rules || !c->st)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "streaming stage: max_sample, rules and st are required");
  gf_stream *s = calloc(1, sizeof *s);
  if (!s)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  s->c = *c;
  s->c.world = world;
  s->nlanes = lanes_of(&s->c);
  uint64_t tables;
  gf_stream_sizes(&s->c, &s->arena_bytes, &tables);
  s->npages = (uint32_t)(s->arena_bytes / GF_STREAM_PAGE);
  s->nitems = (uint32_t)items_of(&s->c, s->nlanes);
  s->buf_cap = shuffle_of(&s->c) + 1;
  s->out_cap = out_cap_of(&s->c);
  s->shuffle_pages = gf_stream__pages_for(shuffle_bytes_of(&s->c));
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->lane_cv, NULL);
  pthread_cond_init(&s->take_cv, NULL);
  s->arena = mmap(NULL, s->arena_bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s->arena == MAP_FAILED)
    s->arena = NULL;
  s->next = malloc((size_t)s->npages * sizeof *s->next);
  s->items = calloc(s->nitems, sizeof *s->items);
  s->buf = malloc((size_t)s->buf_cap * sizeof *s->buf);
  s->out = calloc(s->out_cap, sizeof *s->out);
  s->lanes = calloc(s->nlanes, sizeof *s->lanes);
  bool ok = s->arena && s->next && s->items && s->buf && s->out && s->lanes;
  for (uint32_t i = 0; ok && i < s->nlanes; i++) {
    ok = gf_stream__lane_init(s, &s->lanes[i], i) == 0;
  }
  if (!ok) {
    gf_stream_destroy(s);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for the streaming stage (%llu bytes of "
                   "arena)",
                   (unsigned long long)s->arena_bytes);
  }
  int rc = start_lanes(s, epoch, pos);
  if (rc < 0) {
    gf_stream_destroy(s);
    return rc;
  }
  *out = s;
  return 0;
}

void gf_stream_shutdown(gf_stream *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  s->shut = true;
  pthread_mutex_unlock(&s->mu);
  stop_lanes(s);
}

void gf_stream_destroy(gf_stream *s) {
  if (!s)
    return;
  gf_stream_shutdown(s);
  for (uint32_t i = 0; s->lanes && i < s->nlanes; i++)
    gf_stream__lane_free(&s->lanes[i]);
  free(s->lanes);
  if (s->arena)
    munmap(s->arena, s->arena_bytes);
  free(s->next);
  free(s->items);
  free(s->buf);
  free(s->out);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->lane_cv);
  pthread_cond_destroy(&s->take_cv);
  free(s);
}

void gf_stream_restart(gf_stream *s, uint64_t epoch, uint64_t pos) {
  stop_lanes(s);
  atomic_fetch_add_explicit(&s->restarts, 1, memory_order_relaxed);
  pthread_mutex_lock(&s->mu);
  for (uint32_t e = 0; e < 4; e++)
    atomic_store(&s->len_tag[e], 0);
  int rc = start_lanes(s, epoch, pos);
  if (rc < 0)
    s->fatal = *gf_last_error();
  pthread_mutex_unlock(&s->mu);
}

void gf_stream_seek(gf_stream *s, uint64_t epoch, uint64_t pos) {
  pthread_mutex_lock(&s->mu);
  uint64_t n;
  bool ahead = false;
  if (s->cur_epoch == epoch && s->emitted <= pos) {
    ahead = true;
  } else if (s->cur_epoch == epoch + 1 && s->emitted == 0 &&
             gf_stream_epoch_length(s, epoch, &n) && pos >= n) {
    /* At the end of epoch: the merge has begun the next. */
    ahead = true;
    epoch = s->cur_epoch;
    pos = 0;
  }
  if (ahead && !s->fatal.code) {
    /* Positions handed out and not taken are dropped; the merge drops
     * the ones up to pos as they come. */
    for (uint32_t i = 0; i < s->out_cap; i++)
      if (s->out[i].used) {
        s->out[i].used = false;
        gf_stream__free_item(s, s->out[i].item);
      }
    s->skip_epoch = epoch;
    s->skip_to = pos;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  pthread_mutex_unlock(&s->mu);
  gf_stream_restart(s, epoch, pos);
}

int gf_stream_epoch_length(gf_stream *s, uint64_t epoch, uint64_t *n) {
  uint64_t tag =
      atomic_load_explicit(&s->len_tag[epoch % 4], memory_order_acquire);
  if (tag != epoch + 1)
    return 0;
  *n = atomic_load_explicit(&s->len_val[epoch % 4], memory_order_relaxed);
  return atomic_load_explicit(&s->len_tag[epoch % 4], memory_order_acquire) ==
         epoch + 1;
}

/* Takes position pos of epoch out of the table, if there: its item (now
 * the caller's until freed), else UINT32_MAX. Under mu. */
static uint32_t take_out(gf_stream *s, uint64_t epoch, uint64_t pos) {
  out_slot *o = &s->out[pos % s->out_cap];
  if (!o->used || o->epoch != epoch || o->pos != pos)
    return UINT32_MAX;
  o->used = false;
  return o->item;
}

/* Copies taken item i out (outside mu: its pages are the caller's until
 * freed; the copies of many takers run at once). Returns 1, or the
 * sample's error. */
static int copy_out(gf_stream *s, uint32_t i, uint8_t *dst, uint64_t cap,
                    const gf_stream_fields_out *fo, gf_stream_sample *out,
                    char *key, size_t keycap) {
  const item *it = &s->items[i];
  uint64_t kl = it->keylen < keycap ? it->keylen : keycap;
  gf_stream__item_io(s, it, 0, (uint8_t *)key, kl, false);
  if (kl)
    key[kl - 1] = '\0';
  *out = (gf_stream_sample){.len = it->len,
                            .label = it->label,
                            .codec = it->codec,
                            .shard = it->shard,
                            .ordinal = it->ordinal,
                            .id = ((uint64_t)it->shard << 40) |
                                  (it->ordinal & ((1ull << 40) - 1))};
  if (it->kind == IT_BAD) {
    gf_error_info e;
    gf_stream__item_io(s, it, it->keylen, (uint8_t *)&e, sizeof e, false);
    gf_error_restore(&e);
    return e.code < 0 ? e.code : GF_EINTERNAL;
  }
  if (it->len > cap) {
    char where[1100];
    gf_storage_name_display(s->c.st, s->c.shards[it->shard], where,
                            sizeof where);
    return gf_fail(GF_ELIMIT, where, GF_NO_INDEX, GF_NO_INDEX,
                   "sample '%s' (sample %llu of the shard): its image of %llu "
                   "bytes is larger than the %llu bytes of its place (raise "
                   "max_sample_bytes)",
                   key, (unsigned long long)it->ordinal,
                   (unsigned long long)it->len, (unsigned long long)cap);
  }
  gf_stream__item_io(s, it, it->keylen, dst, it->len, false);
  uint64_t at = it->keylen + it->len, fb = s->c.fields ? s->c.fields->bytes : 0;
  for (uint32_t f = 0; fo && f < gf_stream__nfields(&s->c); f++) {
    uint8_t w[8];
    gf_stream__item_io(s, it, at, w, 8, false);
    at += 8;
    uint64_t n = gf_le64(w);
    fo->len[f] = n;
    if (n != GF_NO_INDEX) {
      gf_stream__item_io(s, it, at, fo->data + (uint64_t)f * fb, n, false);
      at += n;
    }
  }
  atomic_fetch_add_explicit(&s->samples, 1, memory_order_relaxed);
  return 1;
}

int gf_stream_take(gf_stream *s, uint64_t epoch, uint64_t pos, uint8_t *dst,
                   uint64_t cap, const gf_stream_fields_out *fo,
                   gf_stream_sample *out) {
  char key[256] = "";
  uint64_t waited = 0;
  bool published = false;
  uint32_t got = UINT32_MAX;
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  for (;;) {
    if (s->shut) {
      rc = gf_fail(-ECANCELED, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "the streaming stage was shut down");
      break;
    }
    if (s->fatal.code) {
      gf_error_restore(&s->fatal);
      rc = s->fatal.code;
      break;
    }
    if ((got = take_out(s, epoch, pos)) != UINT32_MAX)
      break;
    uint64_t n;
    if (gf_stream_epoch_length(s, epoch, &n) && pos >= n) {
      rc = 0;
      break;
    }
    if (epoch < s->cur_epoch || (epoch == s->cur_epoch && pos < s->emitted)) {
      rc = gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "streaming stage: position %llu of epoch %llu was taken "
                   "already or never handed out",
                   (unsigned long long)pos, (unsigned long long)epoch);
      break;
    }
    if (!step(s, &published)) {
      uint64_t w0 = now_ns();
      gf_stream__wait_on(s, &s->take_cv, &s->take_waiting);
      waited += now_ns() - w0;
    }
  }
  /* Positions this taker handed out on its way may be others'. */
  if (s->take_waiting)
    pthread_cond_broadcast(&s->take_cv);
  pthread_mutex_unlock(&s->mu);
  if (got != UINT32_MAX) {
    rc = copy_out(s, got, dst, cap, fo, out, key, sizeof key);
    pthread_mutex_lock(&s->mu);
    gf_stream__free_item(s, got);
    pthread_mutex_unlock(&s->mu);
  }
  if (rc < 0 && out && rc != -ECANCELED) {
    /* Name the sample's key where the error does not. */
    const gf_error_info *e = gf_last_error();
    if (!strstr(e->message, "sample '") && key[0] && rc != GF_EINTERNAL) {
      char what[300];
      snprintf(what, sizeof what, "sample '%.250s'", key);
      gf_fail_context(rc, NULL, GF_NO_INDEX, what);
    }
  }
  atomic_fetch_add_explicit(&s->wait_ns, waited, memory_order_relaxed);
  if (published && s->c.notify)
    s->c.notify(s->c.notify_ctx);
  return rc;
}

void gf_stream_counters_get(gf_stream *s, gf_stream_counters *out) {
  *out = (gf_stream_counters){.shards = atomic_load(&s->shards_done),
                              .samples = atomic_load(&s->samples),
                              .bytes = atomic_load(&s->bytes),
                              .skipped = atomic_load(&s->skipped),
                              .lost = atomic_load(&s->lost),
                              .restarts = atomic_load(&s->restarts),
                              .wait_ns = atomic_load(&s->wait_ns)};
}

uint64_t gf_stream_skipped(gf_stream *s, uint64_t epoch) {
  pthread_mutex_lock(&s->mu);
  uint64_t n = atomic_load(&s->skipped);
  for (uint32_t r = 0; r < 8; r++)
    if (s->skip_tag[r] > epoch) /* tag e + 1 > epoch: e >= epoch */
      n -= s->skip_count[r];
  pthread_mutex_unlock(&s->mu);
  return n;
}

void gf_stream_last_skip(gf_stream *s, char *buf, size_t cap) {
  pthread_mutex_lock(&s->mu);
  snprintf(buf, cap, "%s", s->last_skip);
  pthread_mutex_unlock(&s->mu);
}
