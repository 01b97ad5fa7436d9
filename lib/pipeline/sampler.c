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
  s->share = total / w;
  s->batches = c.drop_last
                   ? s->share / c.batch_size
                   : s->share / c.batch_size + (s->share % c.batch_size != 0);
  gf_sampler_set_epoch(s, 0);
  return 0;
}

void gf_sampler_set_epoch(gf_sampler *s, uint64_t epoch) {
  s->epoch = epoch;
  s->epoch_key = gf_order_sub(s->cfg.seed, epoch);
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

static uint64_t block_order(const gf_sampler *s, uint64_t q) {
  const uint64_t bs = s->cfg.block_size, W = s->cfg.window_blocks;
  const uint64_t wl = s->window_len, d = s->deficit;
  const uint64_t wst = s->short_pos / W;
  /* Windows after the one holding the short block start d positions
   * earlier than full windows would. */
  uint64_t w = q < (wst + 1) * wl - d ? q / wl : (q + d) / wl;
  uint64_t start = w * wl - (w > wst ? d : 0);
  uint64_t end_block = (w + 1) * W < s->nblocks ? (w + 1) * W : s->nblocks;
  uint64_t size = (end_block - w * W) * bs - (w == wst ? d : 0);
  gf_perm wp;
  gf_perm_init(&wp, gf_order_sub(s->epoch_key, 2 + w), size);
  uint64_t o = gf_perm_apply(&wp, q - start);
  uint64_t slot, off;
  uint64_t sslot = s->short_pos - wst * W;
  if (w != wst || o < sslot * bs) {
    slot = o / bs;
    off = o % bs;
  } else if (o < sslot * bs + s->last) {
    slot = sslot;
    off = o - sslot * bs;
  } else {
    slot = (o + d) / bs;
    off = (o + d) % bs;
  }
  return gf_perm_apply(&s->perm, w * W + slot) * bs + off;
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
  /* pos < share = total / world, so the global position is below total,
   * which fits in 64 bits; only padding positions reach n or more. */
  uint64_t q = s->cfg.rank + pos * s->cfg.world;
  if (q >= s->cfg.n)
    q %= s->cfg.n;
  return gf_sampler_order(s, q);
}

/* ---- resume state ------------------------------------------------------ */

uint64_t gf_sampler_state_check(const gf_sampler_state *st) {
  uint8_t buf[GF_SAMPLER_STATE_BYTES];
  gf_sampler_state_encode(st, buf);
  uint64_t h = GF_ORDER_G;
  for (int i = 0; i < 9; i++)
    h = gf_order_mix(h ^ gf_le64(buf + 8 * i));
  return h;
}

void gf_sampler_state_encode(const gf_sampler_state *st,
                             uint8_t out[GF_SAMPLER_STATE_BYTES]) {
  gf_put32(out + 0, st->version);
  gf_put32(out + 4, st->order);
  gf_put64(out + 8, st->seed);
  gf_put64(out + 16, st->epoch);
  gf_put64(out + 24, st->position);
  gf_put64(out + 32, st->n);
  gf_put64(out + 40, st->batch_size);
  gf_put64(out + 48, st->block_size);
  gf_put32(out + 56, st->window_blocks);
  gf_put32(out + 60, st->world);
  gf_put32(out + 64, st->partition);
  gf_put32(out + 68, st->drop_last);
  gf_put64(out + 72, st->check);
}

static int state_fail(const char *fmt, ...) GF_PRINTF(1, 2);
static int state_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = gf_vfail(GF_ESTATE, NULL, GF_NO_INDEX, GF_NO_INDEX, fmt, ap);
  va_end(ap);
  return rc;
}

static int state_verify(const gf_sampler_state *st) {
  if (st->version != GF_SAMPLER_STATE_VERSION)
    return state_fail("sampler state: version is %u, expected %u", st->version,
                      GF_SAMPLER_STATE_VERSION);
  uint64_t want = gf_sampler_state_check(st);
  if (st->check != want)
    return state_fail("sampler state: check is 0x%016llx, expected "
                      "0x%016llx from its fields (damaged or edited state)",
                      (unsigned long long)st->check, (unsigned long long)want);
  return 0;
}

int gf_sampler_state_decode(const void *buf, size_t len, gf_sampler_state *st) {
  if (!buf || len != GF_SAMPLER_STATE_BYTES)
    return state_fail("sampler state: %zu bytes, expected %d", buf ? len : 0,
                      GF_SAMPLER_STATE_BYTES);
  const uint8_t *b = buf;
  gf_sampler_state t;
  memset(&t, 0, sizeof t);
  t.version = gf_le32(b + 0);
  t.order = gf_le32(b + 4);
  t.seed = gf_le64(b + 8);
  t.epoch = gf_le64(b + 16);
  t.position = gf_le64(b + 24);
  t.n = gf_le64(b + 32);
  t.batch_size = gf_le64(b + 40);
  t.block_size = gf_le64(b + 48);
  t.window_blocks = gf_le32(b + 56);
  t.world = gf_le32(b + 60);
  t.partition = gf_le32(b + 64);
  t.drop_last = gf_le32(b + 68);
  t.check = gf_le64(b + 72);
  int rc = state_verify(&t);
  if (rc < 0)
    return rc;
  *st = t;
  return 0;
}

int gf_sampler_export(const gf_sampler *s, uint64_t position,
                      gf_sampler_state *out) {
  if (position > s->share)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "sampler: position %llu is past the end of the rank's "
                   "share (%llu samples)",
                   (unsigned long long)position, (unsigned long long)s->share);
  gf_sampler_state st;
  memset(&st, 0, sizeof st);
  st.version = GF_SAMPLER_STATE_VERSION;
  st.order = s->cfg.order;
  st.seed = s->cfg.seed;
  st.epoch = s->epoch;
  st.position = position;
  st.n = s->cfg.n;
  st.batch_size = s->cfg.batch_size;
  st.block_size = s->cfg.block_size;
  st.window_blocks = s->cfg.window_blocks;
  st.world = s->cfg.world;
  st.partition = s->cfg.partition;
  st.drop_last = s->cfg.drop_last;
  st.check = gf_sampler_state_check(&st);
  *out = st;
  return 0;
}

uint64_t gf_sampler_config_check(const gf_sampler *s) {
  gf_sampler_state st;
  gf_sampler_export(s, 0, &st);
  st.epoch = 0;
  return gf_sampler_state_check(&st);
}

#define STATE_FIELD(field, name)                                               \
  do {                                                                         \
    if ((uint64_t)st->field != (uint64_t)want.field)                           \
      return state_fail("sampler state: " name " is %llu, but this loader "    \
                        "has " name " %llu",                                   \
                        (unsigned long long)st->field,                         \
                        (unsigned long long)want.field);                       \
  } while (0)

int gf_sampler_import(gf_sampler *s, const gf_sampler_state *st,
                      uint64_t *position) {
  if (!s || !st)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "sampler: NULL sampler or state");
  int rc = state_verify(st);
  if (rc < 0)
    return rc;
  gf_sampler_state want;
  gf_sampler_export(s, 0, &want);
  STATE_FIELD(seed, "seed");
  STATE_FIELD(n, "n (sample count)");
  STATE_FIELD(order, "order");
  STATE_FIELD(block_size, "block_size");
  STATE_FIELD(window_blocks, "window_blocks");
  STATE_FIELD(world, "world");
  STATE_FIELD(partition, "partition");
  STATE_FIELD(batch_size, "batch_size");
  STATE_FIELD(drop_last, "drop_last");
  if (st->position > s->share)
    return state_fail("sampler state: position %llu is past the end of the "
                      "rank's share (%llu samples)",
                      (unsigned long long)st->position,
                      (unsigned long long)s->share);
  gf_sampler_set_epoch(s, st->epoch);
  if (position)
    *position = st->position;
  return 0;
}
