/* The loader's order: keyed Feistel permutations, block windows and the
 * DistributedSampler split. The algorithm is specified in sampler.h; this
 * file follows it step by step. */
#include "pipeline/sampler.h"

#include <stdarg.h>
#include <string.h>

#define GF_ORDER_G 0x9E3779B97F4A7C15ull

uint64_t gf_order_mix(uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

uint64_t gf_order_sub(uint64_t k, uint64_t t) {
  return gf_order_mix(k ^ gf_order_mix(t + GF_ORDER_G));
}

static inline uint64_t mask_bits(uint32_t w) {
  /* w <= 32 always (a and b are at most 32), so the shift is defined. */
  return (1ull << w) - 1;
}

void gf_perm_init(gf_perm *p, uint64_t key, uint64_t m) {
  p->m = m;
  uint32_t bits = m > 1 ? 64u - (uint32_t)__builtin_clzll(m - 1) : 0;
  if (bits < GF_PERM_MIN_BITS)
    bits = GF_PERM_MIN_BITS;
  p->b = bits / 2;
  p->a = bits - p->b;
  for (uint64_t i = 0; i < GF_PERM_ROUNDS; i++)
    p->key[i] = gf_order_sub(key, i);
}

static inline uint64_t feistel(const gf_perm *p, uint64_t x) {
  uint32_t wl = p->a, wr = p->b;
  uint64_t l = x >> wr, r = x & mask_bits(wr);
  for (int i = 0; i < GF_PERM_ROUNDS; i++) {
    uint64_t f = gf_order_mix(r ^ p->key[i]) & mask_bits(wl);
    uint64_t nl = r;
    r = l ^ f;
    l = nl;
    uint32_t t = wl;
    wl = wr;
    wr = t;
  }
  return (l << wr) | r;
}

static inline uint64_t feistel_inv(const gf_perm *p, uint64_t y) {
  uint32_t wl = p->a, wr = p->b;
  uint64_t l = y >> wr, r = y & mask_bits(wr);
  for (int i = GF_PERM_ROUNDS - 1; i >= 0; i--) {
    /* Undo (L, R) -> (R, L ^ f(R)): the old R is the current L, whose
     * width is wl; the old L had the current R's width wr. */
    uint64_t old_r = l;
    uint64_t old_l = r ^ (gf_order_mix(l ^ p->key[i]) & mask_bits(wr));
    l = old_l;
    r = old_r;
    uint32_t t = wl;
    wl = wr;
    wr = t;
  }
  return (l << wr) | r;
}

uint64_t gf_perm_apply(const gf_perm *p, uint64_t x) {
  /* Outside [0, m) the walk could circle a cycle that never re-enters the
   * domain: refuse rather than hang. */
  if (x >= p->m)
    return GF_NO_INDEX;
  if (p->m == 1)
    return 0;
  /* Cycle walking: F permutes [0, 2^bits) and x < m lies on a cycle that
   * returns to [0, m), so this ends (after 2^bits / m steps on average). */
  uint64_t y = feistel(p, x);
  while (y >= p->m)
    y = feistel(p, y);
  return y;
}

uint64_t gf_perm_inverse(const gf_perm *p, uint64_t y) {
  if (y >= p->m)
    return GF_NO_INDEX;
  if (p->m == 1)
    return 0;
  uint64_t x = feistel_inv(p, y);
  while (x >= p->m)
    x = feistel_inv(p, x);
  return x;
}

static int bad_config(const char *fmt, ...) GF_PRINTF(1, 2);
static int bad_config(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = gf_vfail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX, fmt, ap);
  va_end(ap);
  return rc;
}

int gf_sampler_init(gf_sampler *s, const gf_sampler_config *cfg) {
  if (!s || !cfg)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "sampler: NULL sampler or config");
  gf_sampler_config c = *cfg;
  if (!c.world)
    c.world = 1;
  if (c.n == 0)
    return bad_config("sampler: n is %llu; a dataset needs at least one "
                      "sample",
                      (unsigned long long)c.n);
  if (c.batch_size == 0)
    return bad_config("sampler: batch_size is %llu; expected at least 1",
                      (unsigned long long)c.batch_size);
  if (c.rank >= c.world)
    return bad_config("sampler: rank %u is not below world %u", c.rank,
                      c.world);
  if (c.order >= GF_SAMPLER_ORDER_COUNT)
    return bad_config("sampler: order %llu is unknown (expected 0 "
                      "shuffle, 1 sequential or 2 block)",
                      (unsigned long long)c.order);
  if (c.partition >= GF_SAMPLER_PARTITION_COUNT)
    return bad_config("sampler: partition %llu is unknown (expected 0 pad "
                      "or 1 drop)",
                      (unsigned long long)c.partition);
  if (c.drop_last > 1)
    return bad_config("sampler: drop_last %llu; expected 0 or 1",
                      (unsigned long long)c.drop_last);
  if (c.order == GF_ORDER_BLOCK) {
    if (!c.block_size)
      c.block_size = GF_SAMPLER_DEFAULT_BLOCK_SIZE;
    if (!c.window_blocks)
      c.window_blocks = GF_SAMPLER_DEFAULT_WINDOW_BLOCKS;
  } else {
    /* Unused: kept zero so a resume state does not depend on them. */
    c.block_size = 0;
    c.window_blocks = 0;
  }

  uint64_t w = c.world;
  if (c.partition == GF_PARTITION_PAD && c.n > UINT64_MAX - (w - 1))
    return bad_config("sampler: n %llu is too large to pad to a multiple "
                      "of world",
                      (unsigned long long)c.n);
  uint64_t total =
      c.partition == GF_PARTITION_DROP ? c.n / w * w : (c.n + w - 1) / w * w;
  memset(s, 0, sizeof *s);
  if (c.order == GF_ORDER_BLOCK) {
    uint64_t nb = (c.n - 1) / c.block_size + 1;
    uint64_t span, wl;
    /* Every window boundary, (nb + W) * bs, must be representable. */
    if (!gf_add_u64(nb, c.window_blocks, &span) ||
        !gf_mul_u64(span, c.block_size, &span) ||
        !gf_mul_u64(c.window_blocks, c.block_size, &wl))
      return bad_config("sampler: block_size %llu times window_blocks and "
                        "the block count overflow 64 bits",
                        (unsigned long long)c.block_size);
    s->nblocks = nb;
    s->last = c.n - (nb - 1) * c.block_size;
    s->deficit = c.block_size - s->last;
    s->window_len = wl;
  }
  s->cfg = c;
  s->total = total;
  gf_sampler_set_epoch(s, 0);
  return 0;
}

/* Rank `rank`'s share of an epoch that starts at global position start
 * (section 4). */
static uint64_t share_from(const gf_sampler_config *c, uint64_t total,
                           uint64_t start, uint32_t rank) {
  if (start == 0)
    return total / c->world;
  uint64_t rest = c->n - start;
  if (c->partition == GF_PARTITION_DROP)
    return rest / c->world;
  return rest > rank ? (rest - rank - 1) / c->world + 1 : 0;
}

static uint64_t batches_of(const gf_sampler_config *c, uint64_t share) {
  uint64_t b = c->batch_size;
  return c->drop_last ? share / b : share / b + (share % b != 0);
}

uint64_t gf_sampler_epoch_start(const gf_sampler *s, uint64_t epoch) {
  return s->resume_start && epoch == s->resume_epoch ? s->resume_start : 0;
}

void gf_sampler_set_resume_world(gf_sampler *s, uint64_t epoch, uint64_t start,
                                 uint32_t world) {
  s->resume_epoch = epoch;
  s->resume_start = start < s->cfg.n ? start : s->cfg.n;
  s->resume_world = world ? world : s->cfg.world;
  gf_sampler_set_epoch(s, epoch);
}

void gf_sampler_set_resume(gf_sampler *s, uint64_t epoch, uint64_t start) {
  gf_sampler_set_resume_world(s, epoch, start, s->cfg.world);
}

void gf_sampler_set_epoch(gf_sampler *s, uint64_t epoch) {
  s->epoch = epoch;
  s->start = gf_sampler_epoch_start(s, epoch);
  s->share = share_from(&s->cfg, s->total, s->start, s->cfg.rank);
  s->batches = batches_of(&s->cfg, s->share);
  s->epoch_key = gf_order_sub(s->cfg.seed, epoch);
  s->o_world = s->start && s->resume_world ? s->resume_world : s->cfg.world;
  switch (s->cfg.order) {
  case GF_ORDER_SHUFFLE:
    gf_perm_init(&s->perm, gf_order_sub(s->epoch_key, 0), s->cfg.n);
    break;
  case GF_ORDER_BLOCK:
    gf_perm_init(&s->perm, gf_order_sub(s->epoch_key, 1), s->nblocks);
    s->short_pos = gf_perm_inverse(&s->perm, s->nblocks - 1);
    break;
  default:
    break;
  }
}

uint64_t gf_sampler_epoch(const gf_sampler *s) { return s->epoch; }

uint64_t gf_sampler_samples_per_epoch(const gf_sampler *s) { return s->share; }

uint64_t gf_sampler_batches_per_epoch(const gf_sampler *s) {
  return s->batches;
}

int gf_sampler_batch(const gf_sampler *s, uint64_t k, uint64_t *first,
                     uint64_t *count) {
  if (k >= s->batches)
    return gf_fail(-ERANGE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "sampler: batch %llu of epoch %llu does not exist (the "
                   "epoch has %llu batches)",
                   (unsigned long long)k, (unsigned long long)s->epoch,
                   (unsigned long long)s->batches);
  uint64_t b = s->cfg.batch_size;
  uint64_t start = k * b;
  uint64_t left = s->share - start;
  *first = start;
  *count = left < b ? left : b;
  return 0;
}

/* GF_ORDER_BLOCK's windows (section 3): their count, window w's length
 * S(w), and rank r's windows dealt among V ranks: r, r + V, r + 2V, ...,
 * their count K and total length L. */
typedef struct windows {
  uint64_t bs, W, wl, d, nwin, nlast, wst, V;
} windows;

static windows windows_of(const gf_sampler *s) {
  windows x;
  x.bs = s->cfg.block_size;
  x.W = s->cfg.window_blocks;
  x.wl = s->window_len;
  x.d = s->deficit;
  x.nwin = (s->nblocks + x.W - 1) / x.W;
  x.nlast = s->nblocks - (x.nwin - 1) * x.W;
  x.wst = s->short_pos / x.W;
  x.V = s->o_world ? s->o_world : 1;
  return x;
}

static uint64_t win_len(const windows *x, uint64_t w) {
  return (w == x->nwin - 1 ? x->nlast : x->W) * x->bs -
         (w == x->wst ? x->d : 0);
}

/* Rank r's windows among V and the samples they hold. */
static uint64_t rank_windows(const windows *x, uint64_t r) {
  return r < x->nwin ? (x->nwin - r + x->V - 1) / x->V : 0;
}

static uint64_t rank_len(const windows *x, uint64_t r) {
  uint64_t k = rank_windows(x, r);
  if (!k)
    return 0;
  uint64_t len = k * x->wl;
  if ((x->nwin - 1) % x->V == r)
    len -= (x->W - x->nlast) * x->bs;
  if (x->wst % x->V == r)
    len -= x->d;
  return len;
}

/* Rank r's i-th sample (i < its length): its window w and its place o in
 * that window. The short window (one d shorter) shifts the later ones. */
static void rank_locate(const windows *x, uint64_t r, uint64_t i, uint64_t *w,
                        uint64_t *o) {
  uint64_t k;
  if (x->wst % x->V == r) {
    uint64_t ks = (x->wst - r) / x->V;
    if (i < ks * x->wl) {
      k = i / x->wl;
      *o = i % x->wl;
    } else if (i < ks * x->wl + win_len(x, x->wst)) {
      k = ks;
      *o = i - ks * x->wl;
    } else {
      k = (i + x->d) / x->wl;
      *o = (i + x->d) % x->wl;
    }
  } else {
    k = i / x->wl;
    *o = i % x->wl;
  }
  *w = r + k * x->V;
}

/* The shortest rank's length, in O(1) whatever V: ranks [0, b) hold
 * a + 1 windows and ranks [b, V) hold a (nwin = a*V + b), and at most two
 * ranks are shortened: the one dealt the last window (by W - nlast blocks)
 * and the one dealt the short window (by d < bs). A shortening is less than
 * a window, so the shortest is a rank of a windows: V - 1 or a shortened
 * one. */
static uint64_t shortest_len(const windows *x) {
  uint64_t L = rank_len(x, x->V - 1);
  uint64_t r1 = (x->nwin - 1) % x->V, r2 = x->wst % x->V;
  uint64_t l1 = rank_len(x, r1), l2 = rank_len(x, r2);
  if (l1 < L)
    L = l1;
  return l2 < L ? l2 : L;
}

/* Global position q of the epoch order (q < n): the window and the place
 * in it (section 3's dealing: q = r + i*V for i below the shortest rank's
 * length L, then the longer ranks' rests in rank order). A rank's rest is
 * the same over runs of ranks, cut only where the window count changes
 * (b) and around the two shortened ranks, so the rests are walked a run
 * at a time: O(1) in V. */
static void block_locate(const windows *x, uint64_t q, uint64_t *w,
                         uint64_t *o) {
  uint64_t L = shortest_len(x);
  if (q < x->V * L) {
    rank_locate(x, q % x->V, q / x->V, w, o);
    return;
  }
  uint64_t t = q - x->V * L;
  uint64_t r1 = (x->nwin - 1) % x->V, r2 = x->wst % x->V;
  uint64_t b = x->nwin % x->V;
  /* Run boundaries, sorted: 0 and V and the cuts between. */
  uint64_t cut[7] = {0, b, r1, r1 + 1, r2, r2 + 1, x->V};
  for (int i = 1; i < 7; i++)
    for (int j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
      uint64_t tmp = cut[j];
      cut[j] = cut[j - 1];
      cut[j - 1] = tmp;
    }
  for (int i = 0; i + 1 < 7; i++) {
    uint64_t lo = cut[i], hi = cut[i + 1] < x->V ? cut[i + 1] : x->V;
    if (lo >= hi)
      continue;
    uint64_t extra = rank_len(x, lo) - L; /* every rank of [lo, hi)'s */
    if (!extra)
      continue;
    /* (hi - lo) * extra samples, all of them within the n of the epoch. */
    if (t / extra < hi - lo) {
      rank_locate(x, lo + t / extra, L + t % extra, w, o);
      return;
    }
    t -= (hi - lo) * extra;
  }
  *w = *o = 0; /* q >= n: never asked */
}

/* The sample at place o of window w. */
static uint64_t window_sample(const gf_sampler *s, const windows *x, uint64_t w,
                              uint64_t o) {
  gf_perm wp;
  gf_perm_init(&wp, gf_order_sub(s->epoch_key, 2 + w), win_len(x, w));
  uint64_t p = gf_perm_apply(&wp, o);
  uint64_t slot, off;
  uint64_t sslot = s->short_pos - x->wst * x->W;
  if (w != x->wst || p < sslot * x->bs) {
    slot = p / x->bs;
    off = p % x->bs;
  } else if (p < sslot * x->bs + s->last) {
    slot = sslot;
    off = p - sslot * x->bs;
  } else {
    slot = (p + x->d) / x->bs;
    off = (p + x->d) % x->bs;
  }
  return gf_perm_apply(&s->perm, w * x->W + slot) * x->bs + off;
}

static uint64_t block_order(const gf_sampler *s, uint64_t q) {
  windows x = windows_of(s);
  uint64_t w, o;
  block_locate(&x, q, &w, &o);
  return window_sample(s, &x, w, o);
}

int gf_sampler_window(const gf_sampler *s, uint64_t pos, uint64_t *first,
                      uint64_t *end) {
  *first = pos;
  *end = pos + 1;
  if (pos >= s->share)
    return 0;
  const uint64_t q = s->start + s->cfg.rank + pos * s->cfg.world;
  /* Positions stand alone outside block order, in the padding, and where
   * the ranks do not follow the order's dealing (an epoch resumed with
   * another world size). */
  if (s->cfg.order != GF_ORDER_BLOCK || q >= s->cfg.n ||
      s->o_world != s->cfg.world || s->start)
    return 1;
  windows x = windows_of(s);
  uint64_t L = shortest_len(&x);
  const uint64_t r = s->cfg.rank;
  if (pos >= L)
    return 1; /* the rests: alone */
  /* This rank's stream is its windows one after another: the window of
   * pos spans [a, b) of it. */
  uint64_t w, o;
  rank_locate(&x, r, pos, &w, &o);
  uint64_t a = pos - o, b = a + win_len(&x, w);
  if (b > L)
    b = L;
  if (b > s->share)
    b = s->share;
  *first = a;
  *end = b;
  return 1;
}

uint64_t gf_sampler_order(const gf_sampler *s, uint64_t q) {
  if (q >= s->cfg.n)
    return GF_NO_INDEX;
  switch (s->cfg.order) {
  case GF_ORDER_SHUFFLE:
    return gf_perm_apply(&s->perm, q);
  case GF_ORDER_BLOCK:
    return block_order(s, q);
  default:
    return q;
  }
}

uint64_t gf_sampler_get(const gf_sampler *s, uint64_t pos) {
  if (pos >= s->share)
    return GF_NO_INDEX;
  /* pos < share, so the global position is below total (a full epoch)
   * or n (a resumed one): it fits in 64 bits, and only a full epoch's
   * padding positions reach n or more. */
  uint64_t q = s->start + s->cfg.rank + pos * s->cfg.world;
  if (q >= s->cfg.n) /* padding: only in a full epoch (start 0) */
    q %= s->cfg.n;
  return gf_sampler_order(s, q);
}

/* ---- resume state (gpufeed.h's gf_loader_state, docs/RESUME.md) ------- */

/* The struct is hashed as its bytes: no padding may hide in it. */
_Static_assert(sizeof(gf_loader_state) == 128,
               "gf_loader_state: 16 8-byte words without padding");
_Static_assert(offsetof(gf_loader_state, check) == 120,
               "gf_loader_state: check is the last word");
_Static_assert(offsetof(gf_loader_state, order_world) == 112,
               "gf_loader_state: version 2's fields come first");
/* Version 2 (120 bytes): the fields up to rank, then check. */
#define STATE_V2_SIZE 120u
#define STATE_V2_CHECK 112u

/* The check over the first `len` bytes (a multiple of 8) of b. */
static uint64_t check_bytes(const uint8_t *b, size_t len) {
  uint64_t h = GF_ORDER_G;
  for (size_t i = 0; i < len; i += 8)
    h = gf_order_mix(h ^ gf_le64(b + i));
  return h;
}

uint64_t gf_sampler_state_check(const gf_loader_state *st) {
  uint8_t b[sizeof *st];
  memcpy(b, st, sizeof b);
  return check_bytes(b, offsetof(gf_loader_state, check));
}

static int state_fail(const char *fmt, ...) GF_PRINTF(1, 2);
static int state_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = gf_vfail(GF_ESTATE, NULL, GF_NO_INDEX, GF_NO_INDEX, fmt, ap);
  va_end(ap);
  return rc;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return gf_mul_u64(a, b, &r) ? r : UINT64_MAX;
}

/* The global position every rank of a job of `w`'s world size has passed
 * after `batch` batches of the epoch `w` stands in (w is moved to it):
 * each rank r consumed min(batch * B, share_r) positions of its share, so
 * together they consumed [S, min(S + batch*B*world, end)); when no rank
 * has a batch left the epoch is complete: n. Lockstep (all ranks after
 * the same number of batches) is what makes one rank's count global. */
static uint64_t global_position(const gf_sampler *w, uint64_t batch) {
  const gf_sampler_config *c = &w->cfg;
  uint64_t S = w->start, world = c->world, B = c->batch_size;
  uint64_t most = share_from(c, w->total, S, 0); /* rank 0's is the largest */
  uint64_t done = sat_mul(batch, B);
  if (most <= done || (c->drop_last && most - done < B))
    return c->n;
  /* done < most <= n / world + 1, so done * world does not overflow. */
  uint64_t end = S == 0 ? w->total : S + most * world;
  uint64_t p = S + done * world;
  if (p > end)
    p = end;
  return p < c->n ? p : c->n;
}

int gf_sampler_state_export(const gf_sampler *s, uint64_t fingerprint,
                            uint64_t epoch, uint64_t position, uint64_t batch,
                            gf_loader_state *st) {
  gf_sampler w = *s;
  gf_sampler_set_epoch(&w, epoch);
  if (position > w.share || batch > w.batches)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "sampler: position %llu or batch %llu lies past epoch "
                   "%llu's share (%llu samples, %llu batches)",
                   (unsigned long long)position, (unsigned long long)batch,
                   (unsigned long long)epoch, (unsigned long long)w.share,
                   (unsigned long long)w.batches);
  gf_loader_state t;
  memset(&t, 0, sizeof t);
  t.struct_size = (uint32_t)sizeof t;
  t.version = GF_LOADER_STATE_VERSION;
  t.epoch = epoch;
  t.start = w.start;
  t.batch = batch;
  t.rank_position = position;
  t.position = global_position(&w, batch);
  t.samples = w.cfg.n;
  t.fingerprint = fingerprint;
  t.seed = w.cfg.seed;
  t.batch_size = w.cfg.batch_size;
  t.block_size = w.cfg.block_size;
  t.window_blocks = w.cfg.window_blocks;
  t.order = w.cfg.order;
  t.partition = w.cfg.partition;
  t.drop_last = w.cfg.drop_last;
  t.world = w.cfg.world;
  t.rank = w.cfg.rank;
  t.order_world = w.o_world;
  t.check = gf_sampler_state_check(&t);
  *st = t;
  return 0;
}

/* A config field of the order: the state's value against the sampler's. */
#define SAME(field, have, fmt_name)                                            \
  do {                                                                         \
    if ((uint64_t)st->field != (uint64_t)(have))                               \
      return state_fail("resume state does not match this loader: " fmt_name \
                        " is %llu in the state, %llu in this loader",          \
                        (unsigned long long)st->field,                         \
                        (unsigned long long)(have));                           \
  } while (0)

int gf_sampler_state_import(gf_sampler *s, uint64_t fingerprint,
                            const gf_loader_state *in, uint64_t *position,
                            uint64_t *batch) {
  if (!s || !in)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "sampler: NULL sampler or state");
  const gf_sampler_config *c = &s->cfg;
  /* Version 3, or version 2 (120 bytes: its check where order_world now
   * is), read into a version 3 struct: its order is version 3's but where
   * windows are now dealt to ranks (block order, world > 1). */
  gf_loader_state v;
  const gf_loader_state *st = &v;
  uint64_t want;
  if (in->struct_size == sizeof v && in->version == GF_LOADER_STATE_VERSION) {
    v = *in;
    want = gf_sampler_state_check(&v);
    if (v.reserved0)
      return state_fail("resume state: reserved0 is %u, expected 0",
                        v.reserved0);
  } else if (in->struct_size == STATE_V2_SIZE && in->version == 2) {
    uint8_t b[sizeof v];
    memset(b, 0, sizeof b);
    memcpy(b, in, STATE_V2_SIZE);
    memcpy(&v, b, sizeof v);
    v.check = gf_le64(b + STATE_V2_CHECK);
    v.order_world = v.world;
    v.reserved0 = 0;
    want = check_bytes(b, STATE_V2_CHECK);
    if (v.order == GF_ORDER_BLOCK && v.world > 1)
      return state_fail("resume state: version 2 of a block-order epoch of "
                        "%u ranks; since version 3 the block order deals "
                        "its windows to ranks whole, so that epoch's order "
                        "cannot be followed: resume at an epoch's start "
                        "(set_epoch) instead",
                        v.world);
  } else if (in->struct_size != sizeof v) {
    return state_fail("resume state: struct_size is %u, expected %zu (not a "
                      "gf_loader_state of this version, or not exported)",
                      in->struct_size, sizeof v);
  } else {
    return state_fail("resume state: version is %u, expected %u", in->version,
                      GF_LOADER_STATE_VERSION);
  }
  SAME(samples, c->n, "samples (the dataset's sample count)");
  if (st->fingerprint != fingerprint)
    return state_fail("resume state does not match this loader: the "
                      "dataset's fingerprint is 0x%016llx in the state, "
                      "0x%016llx in this loader (another dataset of the same "
                      "%llu samples, or its samples, labels or file names "
                      "changed)",
                      (unsigned long long)st->fingerprint,
                      (unsigned long long)fingerprint,
                      (unsigned long long)c->n);
  SAME(seed, c->seed, "seed");
  SAME(order, c->order, "order");
  SAME(block_size, c->block_size, "block_size");
  SAME(window_blocks, c->window_blocks, "window_blocks");
  SAME(partition, c->partition, "partition");
  SAME(batch_size, c->batch_size, "batch_size");
  SAME(drop_last, c->drop_last, "drop_last");
  /* The identity first, so that a state from another dataset or config
   * names what differs; then the hash, before trusting the cursor. */
  if (st->check != want)
    return state_fail("resume state: check is 0x%016llx, but its fields hash "
                      "to 0x%016llx (a damaged or edited state)",
                      (unsigned long long)st->check, (unsigned long long)want);
  if (st->world == 0 || st->rank >= st->world)
    return state_fail("resume state: rank %u of world %u is not a rank",
                      st->rank, st->world);
  if (st->order_world == 0 || (st->start == 0 && st->order_world != st->world))
    return state_fail("resume state: order_world is %u with world %u and "
                      "start %llu (a full epoch's order is its own world's)",
                      st->order_world, st->world,
                      (unsigned long long)st->start);
  if (st->start > c->n)
    return state_fail("resume state: start is %llu, past the %llu samples",
                      (unsigned long long)st->start,
                      (unsigned long long)c->n);

  /* The exporting rank's epoch, to check its cursor and global position. */
  gf_sampler_config ec = *c;
  ec.world = st->world;
  ec.rank = st->rank;
  gf_sampler ex;
  if (gf_sampler_init(&ex, &ec) < 0)
    return state_fail("resume state: world %u does not fit this dataset: %s",
                      st->world, gf_last_error()->message);
  gf_sampler_set_resume_world(&ex, st->epoch, st->start, st->order_world);
  uint64_t done = sat_mul(st->batch, c->batch_size);
  if (st->batch > ex.batches)
    return state_fail("resume state: batch is %llu, but rank %u of world %u "
                      "has %llu batches in epoch %llu",
                      (unsigned long long)st->batch, st->rank, st->world,
                      (unsigned long long)ex.batches,
                      (unsigned long long)st->epoch);
  /* Each delivered batch took at least its samples' positions (more with
   * skipped samples), and the share bounds them. */
  uint64_t least = done < ex.share ? done : ex.share;
  if (st->rank_position > ex.share || st->rank_position < least)
    return state_fail("resume state: rank_position is %llu, but after %llu "
                      "batches rank %u of world %u stands between %llu and "
                      "%llu",
                      (unsigned long long)st->rank_position,
                      (unsigned long long)st->batch, st->rank, st->world,
                      (unsigned long long)least,
                      (unsigned long long)ex.share);
  uint64_t global = global_position(&ex, st->batch);
  if (st->position != global)
    return state_fail("resume state: position is %llu, but %llu batches of "
                      "world %u from start %llu make it %llu",
                      (unsigned long long)st->position,
                      (unsigned long long)st->batch, st->world,
                      (unsigned long long)st->start,
                      (unsigned long long)global);

  gf_sampler t = *s;
  uint64_t pos, k;
  if (st->world == c->world) {
    /* Exact: the same shares, so this rank stands where the exporting
     * one stood (a rank whose share in a resumed epoch is one shorter
     * stops at its end, after its own batches). */
    gf_sampler_set_resume_world(&t, st->epoch, st->start, st->order_world);
    pos = st->rank_position < t.share ? st->rank_position : t.share;
    k = st->batch < t.batches ? st->batch : t.batches;
  } else {
    /* Elastic: the rest of the epoch restarts at the global position. */
    gf_sampler_set_resume_world(&t, st->epoch, global, st->order_world);
    pos = 0;
    k = 0;
  }
  *s = t;
  *position = pos;
  *batch = k;
  return 0;
}
