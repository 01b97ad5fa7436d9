/* The loader's order: which dataset sample comes at each position of an
 * epoch, for one rank of `world` training processes. Pure arithmetic: no
 * threads, no allocation, O(1) memory whatever the sample count, so the
 * first batch of a billion-sample epoch comes at once.
 *
 * The sequence depends only on (n, seed, epoch, order, block_size,
 * window_blocks, partition, rank, world, batch_size, drop_last): never on
 * thread count or timing. The algorithm below is exact so that another
 * implementation (Python, for checking or for a reference loader) can
 * reproduce it bit for bit. All arithmetic is on unsigned 64-bit integers
 * modulo 2^64; ">>" and "<<" are logical shifts; "^" is XOR.
 *
 * 1. Hashing.
 *      G = 0x9E3779B97F4A7C15
 *      mix(z):  z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
 *               z ^= z >> 27; z *= 0x94D049BB133111EB;
 *               z ^= z >> 31; return z          (splitmix64's finalizer)
 *      sub(k, t) = mix(k ^ mix(t + G))           (a key derived from k)
 *      epoch key   E = sub(seed, epoch)
 *
 * 2. Keyed permutation P(key, m) of [0, m), m >= 1 (an 8-round Feistel
 *    network over a power of two, with cycle walking):
 *      if m == 1: P(x) = 0.
 *      bits = max(8, number of bits of (m - 1))      (8 .. 64)
 *      a = bits - bits / 2 (high part), b = bits / 2 (low part)
 *      round keys K[i] = sub(key, i) for i = 0 .. 7
 *      mask(w) = 2^w - 1
 *      F(x): L = x >> b; R = x & mask(b); wl = a; wr = b
 *            for i in 0..7:
 *              f = mix(R ^ K[i]) & mask(wl)
 *              (L, R) = (R, L ^ f); swap(wl, wr)
 *            return (L << wr) | R        (after 8 rounds wl = a, wr = b)
 *      P(x) = y where y = F(x); while y >= m: y = F(y)
 *    F is a bijection of [0, 2^bits); walking its cycle from x < m until
 *    it re-enters [0, m) makes P a bijection of [0, m), in fewer than 2
 *    steps on average for m >= 128 and at most 256 / m on average below.
 *    Why 8 rounds and at least 8 bits: with 4 rounds over a few bits the
 *    walked permutation is measurably biased (where a sample lands over
 *    many epochs fails a chi-square test for m < 40); 8 rounds over >= 8
 *    bits pass it at every size tested.
 *
 * 3. Epoch order O(q), q in [0, n): the dataset sample at global position
 *    q of the epoch, before the split between ranks.
 *    GF_ORDER_SEQUENTIAL: O(q) = q (same every epoch).
 *    GF_ORDER_SHUFFLE:    O(q) = P(sub(E, 0), n)(q).
 *    GF_ORDER_BLOCK: for datasets larger than memory. The dataset in
 *      storage order is cut into nb = ceil(n / bs) blocks of bs =
 *      block_size consecutive samples (the last one holds last = n -
 *      (nb - 1) * bs samples, d = bs - last fewer than a full one).
 *      Blocks are taken in the order B(j) = P(sub(E, 1), nb)(j), and that
 *      order is cut into windows of W = window_blocks consecutive entries:
 *      window w holds blocks B(w*W) .. B(min((w+1)*W, nb) - 1). The
 *      samples of each window are shuffled among themselves, so a window's
 *      reads touch only W extents of storage while every batch mixes W
 *      blocks from anywhere in the dataset.
 *      Let j* = the position of the short block in the block order (the j
 *      with B(j) = nb - 1: the same cycle walk with F's inverse, which
 *      undoes the rounds from K[7] down to K[0]) and w* = j* / W.
 *      Window w spans positions [start(w), start(w+1)) with
 *        start(w) = w*W*bs - (w > w* ? d : 0)
 *      and size S(w) = (min((w+1)*W, nb) - w*W) * bs - (w == w* ? d : 0).
 *      For q: w = q / (W*bs) if q < start(w* + 1), else (q + d) / (W*bs);
 *        o = P(sub(E, 2 + w), S(w))(q - start(w))   (shuffled within)
 *        s* = j* - w*W (the short block's slot when w == w*)
 *        if w != w* or o < s**bs:        slot = o / bs, off = o % bs
 *        elif o < s**bs + last:          slot = s*, off = o - s**bs
 *        else:                            slot = (o + d) / bs,
 *                                         off = (o + d) % bs
 *        O(q) = B(w*W + slot) * bs + off.
 *      Consecutive positions still jump between the window's W extents
 *      (the mean |step| is about n/3 * (1 - 1/W)); sequential I/O comes
 *      from reading a window's blocks whole, W * bs samples at a time.
 *
 * 4. Split between ranks (PyTorch DistributedSampler semantics). Every
 *    rank computes the same O. With GF_PARTITION_PAD (default, like
 *    DistributedSampler(drop_last=False)) the epoch is padded to total =
 *    ceil(n / world) * world positions by repeating its first elements:
 *    global position q holds O(q mod n). With GF_PARTITION_DROP it is
 *    truncated to total = floor(n / world) * world. Rank r takes global
 *    positions r, r + world, r + 2*world, ...: its share has total / world
 *    samples and its position i holds O((r + i*world) mod n).
 *
 * 5. Batches: batch k is positions [k*B, min((k+1)*B, share)) of the
 *    rank's share, B = batch_size. With drop_last the final incomplete
 *    batch is dropped: batches = floor(share / B), else ceil(share / B).
 *    Every rank has the same share, so all ranks deliver the same number
 *    of batches and stay in step.
 *
 * Threads: after gf_sampler_init / set_epoch / import, every const call may
 * run concurrently from any thread. set_epoch and import must not run
 * concurrently with anything else on the same sampler. */
#ifndef GF_PIPELINE_SAMPLER_H
#define GF_PIPELINE_SAMPLER_H

#include "common/common.h"

/* gf_order and gf_partition come from gpufeed.h (the loader's config);
 * the counts bound the values a config may hold. */
#define GF_SAMPLER_ORDER_COUNT 3     /* GF_ORDER_SHUFFLE .. GF_ORDER_BLOCK */
#define GF_SAMPLER_PARTITION_COUNT 2 /* GF_PARTITION_PAD, _DROP */

#define GF_SAMPLER_DEFAULT_BLOCK_SIZE 256u
#define GF_SAMPLER_DEFAULT_WINDOW_BLOCKS 8u

/* Zero fields take defaults: world 1, block_size and window_blocks the
 * GF_SAMPLER_DEFAULT_* values (used by GF_ORDER_BLOCK only). n and
 * batch_size must be at least 1. */
typedef struct gf_sampler_config {
  uint64_t n;             /* samples in the dataset */
  uint64_t seed;
  uint32_t order;         /* gf_order */
  uint32_t partition;     /* gf_partition */
  uint32_t rank;          /* 0 .. world - 1 */
  uint32_t world;         /* number of training processes */
  uint64_t batch_size;
  uint32_t drop_last;     /* drop the final incomplete batch */
  uint32_t window_blocks; /* GF_ORDER_BLOCK: blocks shuffled together */
  uint64_t block_size;    /* GF_ORDER_BLOCK: consecutive samples a block */
} gf_sampler_config;
#define GF_SAMPLER_CONFIG_INIT \
  {0, 0, GF_ORDER_SHUFFLE, GF_PARTITION_PAD, 0, 1, 1, 0, 0, 0}

/* Keyed permutation of [0, m) (section 2 above). */
#define GF_PERM_ROUNDS 8
#define GF_PERM_MIN_BITS 8
typedef struct gf_perm {
  uint64_t m;
  uint64_t key[GF_PERM_ROUNDS];
  uint32_t a, b; /* high and low bit counts */
} gf_perm;

/* A sampler. Plain data, no resources: embed it, copy it, no destroy. The
 * fields are private to sampler.c. */
typedef struct gf_sampler {
  gf_sampler_config cfg; /* resolved (no zero defaults left) */
  uint64_t total;        /* global positions after padding / truncation */
  uint64_t share;        /* positions of this rank: total / world */
  uint64_t batches;
  uint64_t epoch;
  uint64_t epoch_key;    /* E */
  gf_perm perm;          /* SHUFFLE: the order; BLOCK: the block order */
  /* GF_ORDER_BLOCK only (section 3). */
  uint64_t nblocks, last, deficit;
  uint64_t short_pos;    /* j* */
  uint64_t window_len;   /* W * bs */
} gf_sampler;

/* Checks cfg and fills *s for epoch 0. Returns 0, or -EINVAL naming the
 * bad field (n or batch_size 0, rank >= world, unknown order/partition,
 * sizes whose products overflow). */
int gf_sampler_init(gf_sampler *s, const gf_sampler_config *cfg);

/* Moves to `epoch`: O(1) (BLOCK mode walks one cycle of the inverse block
 * permutation). */
void gf_sampler_set_epoch(gf_sampler *s, uint64_t epoch);
uint64_t gf_sampler_epoch(const gf_sampler *s);

/* This rank's share of an epoch (section 4): the positions get() accepts.
 * The same on every rank. */
uint64_t gf_sampler_samples_per_epoch(const gf_sampler *s);
/* Batches this rank delivers per epoch (section 5). */
uint64_t gf_sampler_batches_per_epoch(const gf_sampler *s);
/* Batch k's positions in the share: [*first, *first + *count). Returns 0,
 * or -ERANGE when k >= batches_per_epoch. */
int gf_sampler_batch(const gf_sampler *s, uint64_t k, uint64_t *first,
                     uint64_t *count);

/* The dataset sample at position `pos` of this rank's share in the current
 * epoch, or GF_NO_INDEX when pos >= samples_per_epoch. O(1) on average. */
uint64_t gf_sampler_get(const gf_sampler *s, uint64_t pos);
/* The epoch order O(q) before the split between ranks (section 3), or
 * GF_NO_INDEX when q >= n. */
uint64_t gf_sampler_order(const gf_sampler *s, uint64_t q);

/* The keyed permutation of section 2, for other users of a seeded order.
 * gf_perm_init needs m >= 1; inverse undoes apply. Both return
 * GF_NO_INDEX for an argument outside [0, m). */
void gf_perm_init(gf_perm *p, uint64_t key, uint64_t m);
uint64_t gf_perm_apply(const gf_perm *p, uint64_t x);
uint64_t gf_perm_inverse(const gf_perm *p, uint64_t y);
/* The hash functions of section 1. */
uint64_t gf_order_mix(uint64_t z);
uint64_t gf_order_sub(uint64_t k, uint64_t t);

/* Resume state: where a rank stands, plus every config field the order
 * depends on, so that a state is never silently applied to a different
 * order. It is the same on every rank (all ranks have the same share and
 * move in step), so one rank's checkpoint resumes them all; rank is
 * therefore not part of it. `position` counts samples of the share already
 * delivered (a batch boundary normally); position == share means the epoch
 * is complete. Since ranks move in step, every rank's first `position`
 * samples are the epoch order's global positions [0, position * world):
 * what a later re-split for another world size would start from. `check`
 * is a hash of the other fields (below) that catches a damaged or
 * hand-edited state. */
#define GF_SAMPLER_STATE_VERSION 1u
#define GF_SAMPLER_STATE_BYTES 80
typedef struct gf_sampler_state {
  uint32_t version;
  uint32_t order;
  uint64_t seed;
  uint64_t epoch;
  uint64_t position;
  uint64_t n;
  uint64_t batch_size;
  uint64_t block_size;    /* 0 unless order is GF_ORDER_BLOCK */
  uint32_t window_blocks; /* 0 unless order is GF_ORDER_BLOCK */
  uint32_t world;
  uint32_t partition;
  uint32_t drop_last;
  uint64_t check;
} gf_sampler_state;

/* Fills *out for the current epoch at `position` of the share. Returns 0 or
 * -EINVAL when position > samples_per_epoch. */
int gf_sampler_export(const gf_sampler *s, uint64_t position,
                      gf_sampler_state *out);
/* Checks st against the sampler's config and, when it matches, moves the
 * sampler to st->epoch and stores st->position in *position. Returns 0, or
 * GF_ESTATE with a message naming the first mismatching field (version,
 * check, seed, n, order, block_size, window_blocks, world, partition,
 * batch_size, drop_last, position); the sampler is unchanged then. */
int gf_sampler_import(gf_sampler *s, const gf_sampler_state *st,
                      uint64_t *position);

/* The state as GF_SAMPLER_STATE_BYTES little-endian bytes, fields in the
 * struct's order without padding (u32 version, u32 order, u64 seed, epoch,
 * position, n, batch_size, block_size, u32 window_blocks, world,
 * partition, drop_last, u64 check); order holds gpufeed.h's gf_order
 * value. check = h after: h = G; for each of the nine 8-byte little-endian
 * words of bytes [0, 72): h = mix(h ^ word). gf_sampler_state_check
 * computes it for a state. */
uint64_t gf_sampler_state_check(const gf_sampler_state *st);
/* A hash of every config field the order depends on (seed, n, order,
 * block_size, window_blocks, world, partition, batch_size, drop_last; not
 * rank): the check of the state exported at epoch 0, position 0. For a
 * resume record that carries only a hash (gf_loader_state.config_check). */
uint64_t gf_sampler_config_check(const gf_sampler *s);
void gf_sampler_state_encode(const gf_sampler_state *st,
                             uint8_t out[GF_SAMPLER_STATE_BYTES]);
/* Decodes len bytes. Returns 0, or GF_ESTATE (wrong length, version or
 * check), without touching *st on failure. */
int gf_sampler_state_decode(const void *buf, size_t len,
                            gf_sampler_state *st);

#endif /* GF_PIPELINE_SAMPLER_H */
