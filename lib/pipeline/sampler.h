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
 *      undoes the rounds from K[7] down to K[0]) and w* = j* / W. There
 *      are nw = ceil(nb / W) windows; window w has size
 *        S(w) = (min((w+1)*W, nb) - w*W) * bs - (w == w* ? d : 0),
 *      wl = W*bs being a full window's.
 *      Windows are dealt whole to the V ranks the order is made for (V =
 *      world; in an epoch resumed with another world size, the world of
 *      the job that began it: gf_loader_state.order_world), so that no two
 *      ranks read the same blocks: rank r gets windows r, r+V, r+2V, ...
 *      (those below nw), its stream being their samples one window after
 *      another: its length L(r) is the sum of their S(w). Rank r's
 *      stream place i (i < L(r)) is window w = r + k*V at o' with, when r
 *      holds w* (w* mod V == r, k* = (w* - r) / V):
 *        i < k**wl:                 k = i / wl, o' = i mod wl
 *        i < k**wl + S(w*):         k = k*, o' = i - k**wl
 *        else:                      k = (i + d) / wl, o' = (i + d) mod wl
 *      and otherwise k = i / wl, o' = i mod wl.
 *      Global position q (q < n): with Lmin = min over r of L(r),
 *        q < V*Lmin:  rank r = q mod V, place i = q / V;
 *        else:        t = q - V*Lmin; the ranks' rests taken in rank
 *                     order: the first r with t < L(r) - Lmin (t reduced
 *                     by each earlier rank's L(r) - Lmin), place
 *                     i = Lmin + t.
 *      (With V = 1 this is window w = q / wl before w*'s end, (q + d) / wl
 *      after it: the windows in order.) Then, within window w at o':
 *        o = P(sub(E, 2 + w), S(w))(o')            (shuffled within)
 *        s* = j* - w*W (the short block's slot when w == w*)
 *        if w != w* or o < s**bs:        slot = o / bs, off = o % bs
 *        elif o < s**bs + last:          slot = s*, off = o - s**bs
 *        else:                            slot = (o + d) / bs,
 *                                         off = (o + d) % bs
 *        O(q) = B(w*W + slot) * bs + off.
 *      Section 4 deals position q to rank q mod world, so in a full epoch
 *      rank r's share is its own windows' samples (its stream), and
 *      after them, in the last positions only, samples of the other
 *      ranks' rests. Consecutive positions still jump between the window's
 *      W extents (the mean |step| is about n/3 * (1 - 1/W)); sequential
 *      I/O comes from reading a window's blocks whole, W * bs samples at a
 *      time, each block by one rank only.
 *
 * 4. Split between ranks (PyTorch DistributedSampler semantics). Every
 *    rank computes the same O. With GF_PARTITION_PAD (default, like
 *    DistributedSampler(drop_last=False)) the epoch is padded to total =
 *    ceil(n / world) * world positions by repeating its first elements:
 *    global position q holds O(q mod n). With GF_PARTITION_DROP it is
 *    truncated to total = floor(n / world) * world. Rank r takes global
 *    positions r, r + world, r + 2*world, ...: its share has total / world
 *    samples and its position i holds O((r + i*world) mod n).
 *    A resumed epoch (gf_sampler_set_resume, docs/RESUME.md) starts at a
 *    global position S > 0 instead: what an earlier job of any world size
 *    already delivered is [0, S), and the rest, R = n - S positions (never
 *    padded), is split the same way from S: rank r takes S + r + i*world.
 *    With GF_PARTITION_PAD every one of the R positions is taken exactly
 *    once, so the shares are ceil((R - r) / world) (0 when R <= r): ranks
 *    differ by at most one sample. With GF_PARTITION_DROP the rest is
 *    truncated to floor(R / world) * world positions, equal shares.
 *
 * 5. Batches: batch k is positions [k*B, min((k+1)*B, share)) of the
 *    rank's share, B = batch_size. With drop_last the final incomplete
 *    batch is dropped: batches = floor(share / B), else ceil(share / B).
 *    In a full epoch every rank has the same share, so all ranks deliver
 *    the same number of batches and stay in step; in a resumed epoch with
 *    GF_PARTITION_PAD their batch counts may differ by one.
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
  uint64_t total;        /* global positions of a full epoch (section 4) */
  uint64_t share;        /* positions of this rank in the current epoch */
  uint64_t batches;      /* its batches in the current epoch */
  uint64_t start;        /* the current epoch's first global position S */
  uint64_t resume_epoch; /* the epoch that starts at resume_start ... */
  uint64_t resume_start; /* ... (0: none, every epoch is full) */
  uint32_t resume_world; /* ... and whose order deals windows to this
                            many ranks (GF_ORDER_BLOCK, section 3) */
  uint32_t o_world;      /* the current epoch's: cfg.world, or
                            resume_world in the resumed epoch */
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
 * permutation). The epoch is full unless it is the resumed one (below). */
void gf_sampler_set_epoch(gf_sampler *s, uint64_t epoch);
uint64_t gf_sampler_epoch(const gf_sampler *s);

/* Makes `epoch` a resumed epoch that starts at global position `start`
 * (section 4; start is clamped to n, so start == n leaves nothing of the
 * epoch) and moves to it; start 0 removes the resume point, making every
 * epoch full again. Other epochs are always full. */
void gf_sampler_set_resume(gf_sampler *s, uint64_t epoch, uint64_t start);
/* The same for an epoch whose order was dealt to `world` ranks (an elastic
 * resume: the exporting job's world; GF_ORDER_BLOCK only, section 3). */
void gf_sampler_set_resume_world(gf_sampler *s, uint64_t epoch, uint64_t start,
                                 uint32_t world);
/* The global position at which `epoch` starts: 0 unless it is the resumed
 * epoch. */
uint64_t gf_sampler_epoch_start(const gf_sampler *s, uint64_t epoch);

/* This rank's share of the current epoch (section 4): the positions get()
 * accepts. The same on every rank in a full epoch. */
uint64_t gf_sampler_samples_per_epoch(const gf_sampler *s);
/* Batches this rank delivers in the current epoch (section 5). */
uint64_t gf_sampler_batches_per_epoch(const gf_sampler *s);
/* Batch k's positions in the share: [*first, *first + *count). Returns 0,
 * or -ERANGE when k >= batches_per_epoch. */
int gf_sampler_batch(const gf_sampler *s, uint64_t k, uint64_t *first,
                     uint64_t *count);

/* The dataset sample at position `pos` of this rank's share in the current
 * epoch, or GF_NO_INDEX when pos >= samples_per_epoch. O(1) on average. */
uint64_t gf_sampler_get(const gf_sampler *s, uint64_t pos);
/* GF_ORDER_BLOCK: the positions [*first, *end) of this rank's share in
 * the current epoch whose samples lie in the same window as position
 * pos's (section 3: a window's samples are shuffled among themselves, so
 * reading its blocks whole serves them all); other orders, and padding
 * positions: [pos, pos + 1). Returns 0 when pos >= samples_per_epoch,
 * else a positive value. */
int gf_sampler_window(const gf_sampler *s, uint64_t pos, uint64_t *first,
                      uint64_t *end);
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

/* Resume state: the one format is gpufeed.h's gf_loader_state (its fields
 * are documented there, the semantics in docs/RESUME.md). These two calls
 * hold its logic so that the loader only adds its cursors and the
 * dataset's fingerprint. */

/* Fills *st for a rank of this sampler's config that stands in `epoch`
 * after `batch` batches, `position` samples of its share consumed (skipped
 * ones included), over a dataset with `fingerprint`. The sampler is not
 * moved (a copy is). Returns 0, or -EINVAL when position or batch lie
 * outside that epoch's share. */
int gf_sampler_state_export(const gf_sampler *s, uint64_t fingerprint,
                            uint64_t epoch, uint64_t position, uint64_t batch,
                            gf_loader_state *st);
/* Checks an untrusted *st against this sampler's config and `fingerprint`
 * and, when it matches, moves the sampler to the state's epoch with the
 * resume point the state asks for (same world size: the state's own;
 * another world size: its global position, docs/RESUME.md) and stores this
 * rank's cursor in *position and *batch. Returns 0, or GF_ESTATE with a
 * message naming the first field that differs with the state's value and
 * the sampler's, in this order: struct_size, version, samples,
 * fingerprint, seed, order, block_size, window_blocks, partition,
 * batch_size, drop_last (so another dataset or config is named even in an
 * edited state), then check, then the cursor (world and rank, start,
 * batch, rank_position, position); the sampler and the outputs are
 * unchanged then. */
int gf_sampler_state_import(gf_sampler *s, uint64_t fingerprint,
                            const gf_loader_state *st, uint64_t *position,
                            uint64_t *batch);
/* The check hash of a state (gpufeed.h says how it is computed). */
uint64_t gf_sampler_state_check(const gf_loader_state *st);

#endif /* GF_PIPELINE_SAMPLER_H */
