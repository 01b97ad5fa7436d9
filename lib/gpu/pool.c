/* The device pool's allocator (see pool.h): best fit over AVL trees of
 * nodes kept in one array and linked by index, so the array can grow with
 * realloc without invalidating anything. */
#include "gpu/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
/* Node indices stay below this so NIL never collides and doubling never
 * overflows. */
#define MAX_NODES (1u << 30)

enum { NODE_SPARE = 0, NODE_FREE = 1, NODE_USED = 2 };
enum { TREE_FREE = 0, TREE_USED = 1 };

typedef struct node {
  uint64_t addr;
  uint64_t size;
  uint32_t prev, next;   /* address neighbours within the region; for a
                            spare node, next links the spare list */
  uint32_t left, right;  /* links in the tree its state puts it in */
  uint32_t region;
  uint32_t tag;
  uint8_t height;        /* AVL height, 1 for a leaf */
  uint8_t state;
} node;

typedef struct region {
  uint64_t raw_base, raw_size; /* as handed over (released as such) */
  uint64_t base, size;         /* usable, trimmed to the alignment */
  uint32_t first;              /* lowest-addressed block */
} region;

struct gf_pool {
  gf_pool_config cfg;
  char name[64];
  node *nodes;
  uint32_t ncap;
  uint32_t spare;
  uint32_t root[2];     /* TREE_FREE keyed (size, addr); TREE_USED (addr) */
  region *regions;
  size_t nregions, rcap;
  uint64_t reserved, usable, in_use, peak, free_bytes;
  uint64_t live, free_blocks, allocs, frees;
};

/* ---- nodes --------------------------------------------------------------- */

/* Makes sure one spare node exists, so the operation that follows cannot
 * fail halfway through. */
static int reserve_node(gf_pool *p) {
  if (p->spare != NIL)
    return 0;
  uint32_t ncap = p->ncap ? p->ncap * 2 : 64;
  if (ncap > MAX_NODES || ncap <= p->ncap)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: more than %u blocks", p->name, MAX_NODES);
  node *n = realloc(p->nodes, (size_t)ncap * sizeof *n);
  if (!n)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: out of host memory for %u block records", p->name,
                   ncap);
  for (uint32_t i = p->ncap; i < ncap; i++) {
    memset(&n[i], 0, sizeof n[i]);
    n[i].state = NODE_SPARE;
    n[i].next = i + 1 < ncap ? i + 1 : NIL;
  }
  p->nodes = n;
  p->spare = p->ncap;
  p->ncap = ncap;
  return 0;
}

static uint32_t take_node(gf_pool *p) {
  uint32_t i = p->spare;
  p->spare = p->nodes[i].next;
  node *n = &p->nodes[i];
  memset(n, 0, sizeof *n);
  n->prev = n->next = n->left = n->right = NIL;
  n->height = 1;
  return i;
}

static void put_node(gf_pool *p, uint32_t i) {
  p->nodes[i].state = NODE_SPARE;
  p->nodes[i].next = p->spare;
  p->spare = i;
}

/* ---- AVL trees over node indices ----------------------------------------- */

static int height(const gf_pool *p, uint32_t i) {
  return i == NIL ? 0 : p->nodes[i].height;
}

/* Orders a before b: by (size, addr) in the free tree, by addr in the
 * used one. Addresses are unique, so no two nodes compare equal. */
static bool less(const gf_pool *p, int tree, uint32_t a, uint32_t b) {
  const node *x = &p->nodes[a], *y = &p->nodes[b];
  if (tree == TREE_FREE && x->size != y->size)
    return x->size < y->size;
  return x->addr < y->addr;
}

static void fix_height(gf_pool *p, uint32_t i) {
  int l = height(p, p->nodes[i].left), r = height(p, p->nodes[i].right);
  p->nodes[i].height = (uint8_t)((l > r ? l : r) + 1);
}

static uint32_t rotate_right(gf_pool *p, uint32_t i) {
  uint32_t l = p->nodes[i].left;
  p->nodes[i].left = p->nodes[l].right;
  p->nodes[l].right = i;
  fix_height(p, i);
  fix_height(p, l);
  return l;
}

static uint32_t rotate_left(gf_pool *p, uint32_t i) {
  uint32_t r = p->nodes[i].right;
  p->nodes[i].right = p->nodes[r].left;
  p->nodes[r].left = i;
  fix_height(p, i);
  fix_height(p, r);
  return r;
}

static uint32_t rebalance(gf_pool *p, uint32_t i) {
  fix_height(p, i);
  node *n = &p->nodes[i];
  int bal = height(p, n->left) - height(p, n->right);
  if (bal > 1) {
    uint32_t l = n->left;
    if (height(p, p->nodes[l].left) < height(p, p->nodes[l].right))
      p->nodes[i].left = rotate_left(p, l);
    return rotate_right(p, i);
  }
  if (bal < -1) {
    uint32_t r = n->right;
    if (height(p, p->nodes[r].right) < height(p, p->nodes[r].left))
      p->nodes[i].right = rotate_right(p, r);
    return rotate_left(p, i);
  }
  return i;
}

/* Recursion depth is the tree height: at most ~1.44 log2(2^30) = 44. */
static uint32_t tree_insert(gf_pool *p, int tree, uint32_t root, uint32_t i) {
  if (root == NIL) {
    p->nodes[i].left = p->nodes[i].right = NIL;
    p->nodes[i].height = 1;
    return i;
  }
  if (less(p, tree, i, root))
    p->nodes[root].left = tree_insert(p, tree, p->nodes[root].left, i);
  else
    p->nodes[root].right = tree_insert(p, tree, p->nodes[root].right, i);
  return rebalance(p, root);
}

/* Detaches the leftmost node of the subtree into *min. */
static uint32_t tree_remove_min(gf_pool *p, uint32_t root, uint32_t *min) {
  if (p->nodes[root].left == NIL) {
    *min = root;
    return p->nodes[root].right;
  }
  p->nodes[root].left = tree_remove_min(p, p->nodes[root].left, min);
  return rebalance(p, root);
}

/* Removes node i, which must be in the tree. */
static uint32_t tree_remove(gf_pool *p, int tree, uint32_t root, uint32_t i) {
  if (root == i) {
    uint32_t l = p->nodes[i].left, r = p->nodes[i].right;
    if (l == NIL)
      return r;
    if (r == NIL)
      return l;
    uint32_t m;
    r = tree_remove_min(p, r, &m);
    p->nodes[m].left = l;
    p->nodes[m].right = r;
    return rebalance(p, m);
  }
  if (less(p, tree, i, root))
    p->nodes[root].left = tree_remove(p, tree, p->nodes[root].left, i);
  else
    p->nodes[root].right = tree_remove(p, tree, p->nodes[root].right, i);
  return rebalance(p, root);
}

static void free_insert(gf_pool *p, uint32_t i) {
  p->nodes[i].state = NODE_FREE;
  p->root[TREE_FREE] = tree_insert(p, TREE_FREE, p->root[TREE_FREE], i);
  p->free_blocks++;
}

static void free_remove(gf_pool *p, uint32_t i) {
  p->root[TREE_FREE] = tree_remove(p, TREE_FREE, p->root[TREE_FREE], i);
  p->free_blocks--;
}

/* The first free block in (size, addr) order with size >= want: the
 * smallest that fits, the lowest address among equals. */
static uint32_t best_fit(const gf_pool *p, uint64_t want) {
  uint32_t best = NIL, cur = p->root[TREE_FREE];
  while (cur != NIL) {
    if (p->nodes[cur].size >= want) {
      best = cur;
      cur = p->nodes[cur].left;
    } else {
      cur = p->nodes[cur].right;
    }
  }
  return best;
}

static uint64_t largest_free(const gf_pool *p) {
  uint32_t cur = p->root[TREE_FREE];
  if (cur == NIL)
    return 0;
  while (p->nodes[cur].right != NIL)
    cur = p->nodes[cur].right;
  return p->nodes[cur].size;
}

static uint32_t find_used(const gf_pool *p, uint64_t addr) {
  uint32_t cur = p->root[TREE_USED];
  while (cur != NIL) {
    const node *n = &p->nodes[cur];
    if (addr == n->addr)
      return cur;
    cur = addr < n->addr ? n->left : n->right;
  }
  return NIL;
}

/* ---- create / destroy / regions ------------------------------------------ */

int gf_pool_create(const gf_pool_config *cfg, gf_pool **out) {
  if (!cfg || !out)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_create needs a config and an output pointer");
  *out = NULL;
  const char *name = cfg->name ? cfg->name : "pool";
  uint64_t align = cfg->alignment ? cfg->alignment : GF_POOL_DEFAULT_ALIGNMENT;
  if (!gf_is_pow2(align))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: alignment %llu is not a power of two", name,
                   (unsigned long long)align);
  uint64_t chunk = 0;
  if (cfg->growth_chunk) {
    if (!cfg->grow)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "%s: growth needs a grow callback", name);
    if (!gf_align_up(cfg->growth_chunk, align, &chunk) ||
        (cfg->limit && chunk > cfg->limit))
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "%s: growth chunk %llu bytes (aligned to %llu) is "
                     "larger than the limit %llu",
                     name, (unsigned long long)cfg->growth_chunk,
                     (unsigned long long)align,
                     (unsigned long long)cfg->limit);
  }
  gf_pool *p = calloc(1, sizeof *p);
  if (!p)
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: out of host memory", name);
  p->cfg = *cfg;
  p->cfg.alignment = align;
  p->cfg.growth_chunk = chunk;
  gf_strlcpy(p->name, name, sizeof p->name);
  p->cfg.name = p->name;
  p->spare = NIL;
  p->root[TREE_FREE] = p->root[TREE_USED] = NIL;
  *out = p;
  return 0;
}

void gf_pool_destroy(gf_pool *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->nregions; i++)
    if (p->cfg.release)
      p->cfg.release(p->cfg.ctx, p->regions[i].raw_base,
                     p->regions[i].raw_size);
  free(p->regions);
  free(p->nodes);
  free(p);
}

int gf_pool_add_region(gf_pool *p, uint64_t base, uint64_t bytes) {
  if (!p)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_add_region needs a pool");
  uint64_t a = p->cfg.alignment, end, ubase;
  if (!gf_add_u64(base, bytes, &end) || !gf_align_up(base, a, &ubase))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: region at %#llx of %llu bytes overflows the address "
                   "space",
                   p->name, (unsigned long long)base,
                   (unsigned long long)bytes);
  uint64_t uend = gf_align_down(end, a);
  if (uend <= ubase)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: region at %#llx of %llu bytes holds no %llu-byte "
                   "aligned block",
                   p->name, (unsigned long long)base,
                   (unsigned long long)bytes, (unsigned long long)a);
  uint64_t total;
  if (!gf_add_u64(p->reserved, bytes, &total) ||
      (p->cfg.limit && total > p->cfg.limit))
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: a region of %llu bytes would bring the reserved "
                   "bytes to more than the limit %llu (reserved %llu)",
                   p->name, (unsigned long long)bytes,
                   (unsigned long long)p->cfg.limit,
                   (unsigned long long)p->reserved);
  for (size_t i = 0; i < p->nregions; i++) {
    const region *r = &p->regions[i];
    if (base < r->raw_base + r->raw_size && r->raw_base < end)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "%s: region [%#llx, %#llx) overlaps region %zu "
                     "[%#llx, %#llx)",
                     p->name, (unsigned long long)base,
                     (unsigned long long)end, i,
                     (unsigned long long)r->raw_base,
                     (unsigned long long)(r->raw_base + r->raw_size));
  }
  if (p->nregions == p->rcap) {
    size_t rcap = p->rcap ? p->rcap * 2 : 4;
    region *r = realloc(p->regions, rcap * sizeof *r);
    if (!r)
      return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "%s: out of host memory for region records", p->name);
    p->regions = r;
    p->rcap = rcap;
  }
  int rc = reserve_node(p);
  if (rc < 0)
    return rc;
  uint32_t i = take_node(p);
  node *n = &p->nodes[i];
  n->addr = ubase;
  n->size = uend - ubase;
  n->region = (uint32_t)p->nregions;
  region *r = &p->regions[p->nregions++];
  r->raw_base = base;
  r->raw_size = bytes;
  r->base = ubase;
  r->size = uend - ubase;
  r->first = i;
  free_insert(p, i);
  p->reserved += bytes;
  p->usable += r->size;
  p->free_bytes += r->size;
  return 0;
}

int gf_pool_region(const gf_pool *p, size_t i, uint64_t *base, uint64_t *bytes,
                   uint64_t *usable_base, uint64_t *usable_bytes) {
  if (!p || i >= p->nregions)
    return gf_fail(-ERANGE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_region: no region %zu (the pool has %zu)", i,
                   p ? p->nregions : 0);
  const region *r = &p->regions[i];
  if (base)
    *base = r->raw_base;
  if (bytes)
    *bytes = r->raw_size;
  if (usable_base)
    *usable_base = r->base;
  if (usable_bytes)
    *usable_bytes = r->size;
  return 0;
}

/* ---- alloc --------------------------------------------------------------- */

/* Records the out-of-memory error with everything needed to act on it. */
static int oom(const gf_pool *p, uint64_t bytes, uint64_t want, bool aligned,
               const char *why_more) {
  uint64_t largest = largest_free(p);
  char want_s[96];
  if (aligned)
    snprintf(want_s, sizeof want_s, "%llu bytes (%llu asked, aligned to %llu)",
             (unsigned long long)want, (unsigned long long)bytes,
             (unsigned long long)p->cfg.alignment);
  else
    snprintf(want_s, sizeof want_s, "%llu bytes (too large to align)",
             (unsigned long long)bytes);
  char limit_s[48];
  if (p->cfg.limit)
    snprintf(limit_s, sizeof limit_s, "%llu", (unsigned long long)p->cfg.limit);
  else
    snprintf(limit_s, sizeof limit_s, "none");
  const char *blame;
  if (aligned && p->free_bytes >= want)
    blame = "fragmentation is to blame: enough bytes are free in total, but "
            "no single free block fits";
  else if (p->cfg.growth_chunk)
    blame = "the limit is to blame: not enough is free in total, and growth "
            "cannot add a chunk that fits below the limit";
  else
    blame = "the limit is to blame: not enough is free in total, and the "
            "pool does not grow past its reservation";
  return gf_fail(GF_EDEVOOM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "%s: cannot allocate %s: %llu bytes free in total, largest "
                 "free block %llu bytes, %llu bytes in use in %llu blocks, "
                 "reserved %llu bytes, limit %s; %s%s",
                 p->name, want_s, (unsigned long long)p->free_bytes,
                 (unsigned long long)largest, (unsigned long long)p->in_use,
                 (unsigned long long)p->live, (unsigned long long)p->reserved,
                 limit_s, blame, why_more);
}

/* The size of region to ask for so that `want` fits: a multiple of the
 * chunk, or what is left below the limit when that still fits. 0 when
 * nothing can be added. */
static uint64_t grow_size(const gf_pool *p, uint64_t want) {
  uint64_t chunk = p->cfg.growth_chunk, size;
  if (!chunk)
    return 0;
  uint64_t room = p->cfg.limit
                      ? (p->cfg.limit > p->reserved ? p->cfg.limit - p->reserved
                                                    : 0)
                      : UINT64_MAX - p->reserved;
  /* The chunk is a multiple of the alignment, not always a power of two. */
  uint64_t n = want / chunk + (want % chunk != 0);
  if (!gf_mul_u64(n, chunk, &size))
    size = UINT64_MAX;
  if (size > room)
    size = gf_align_down(room, p->cfg.alignment);
  return size >= want ? size : 0;
}

/* Hands out the low `want` bytes of free block i. A spare node must be
 * reserved. */
static void take_block(gf_pool *p, uint32_t i, uint64_t want) {
  free_remove(p, i);
  node *n = &p->nodes[i];
  if (n->size > want) {
    uint32_t j = take_node(p);
    node *m = &p->nodes[j];
    m->addr = n->addr + want;
    m->size = n->size - want;
    m->region = n->region;
    m->prev = i;
    m->next = n->next;
    if (n->next != NIL)
      p->nodes[n->next].prev = j;
    n->next = j;
    n->size = want;
    free_insert(p, j);
  }
  n->state = NODE_USED;
  n->tag = 0;
  p->root[TREE_USED] = tree_insert(p, TREE_USED, p->root[TREE_USED], i);
  p->in_use += want;
  p->free_bytes -= want;
  if (p->in_use > p->peak)
    p->peak = p->in_use;
  p->live++;
  p->allocs++;
}

int gf_pool_alloc(gf_pool *p, uint64_t bytes, unsigned flags, uint64_t *addr) {
  if (!p || !addr)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_alloc needs a pool and an output pointer");
  if (bytes == 0)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: cannot allocate 0 bytes", p->name);
  uint64_t want;
  if (!gf_align_up(bytes, p->cfg.alignment, &want))
    return oom(p, bytes, 0, false, "");
  int rc = reserve_node(p);
  if (rc < 0)
    return rc;
  uint32_t i = best_fit(p, want);
  if (i == NIL && p->cfg.growth_chunk && !(flags & GF_POOL_NO_GROW)) {
    uint64_t size = grow_size(p, want), base = 0;
    if (size) {
      rc = p->cfg.grow(p->cfg.ctx, size, &base);
      if (rc < 0) {
        char pre[160];
        snprintf(pre, sizeof pre,
                 "%s: growing by %llu bytes for a request of %llu bytes "
                 "(reserved %llu)",
                 p->name, (unsigned long long)size, (unsigned long long)want,
                 (unsigned long long)p->reserved);
        return gf_fail_context(rc, NULL, GF_NO_INDEX, pre);
      }
      rc = gf_pool_add_region(p, base, size);
      if (rc < 0) {
        /* The memory came from the callback: hand it straight back. */
        if (p->cfg.release)
          p->cfg.release(p->cfg.ctx, base, size);
        return rc;
      }
      rc = reserve_node(p);
      if (rc < 0)
        return rc;
      i = best_fit(p, want);
      if (i == NIL)
        return oom(p, bytes, want, true,
                   " (a new chunk lost bytes to alignment)");
    }
  }
  if (i == NIL)
    return oom(p, bytes, want, true, "");
  take_block(p, i, want);
  *addr = p->nodes[i].addr;
  return 0;
}

bool gf_pool_fits(const gf_pool *p, uint64_t bytes) {
  uint64_t want;
  if (!p || !bytes || !gf_align_up(bytes, p->cfg.alignment, &want))
    return false;
  return largest_free(p) >= want;
}

/* ---- free ---------------------------------------------------------------- */

/* Explains why addr is not the start of a live block. O(n) in the blocks
 * of its region: only on the error path. */
static int bad_addr(const gf_pool *p, uint64_t addr, const char *op) {
  for (size_t r = 0; r < p->nregions; r++) {
    const region *g = &p->regions[r];
    if (addr < g->raw_base || addr - g->raw_base >= g->raw_size)
      continue;
    for (uint32_t i = g->first; i != NIL; i = p->nodes[i].next) {
      const node *n = &p->nodes[i];
      if (addr < n->addr || addr - n->addr >= n->size)
        continue;
      if (n->state == NODE_FREE)
        return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                       "%s: %s of %#llx: double free: that address lies in "
                       "free memory (free block [%#llx, +%llu))",
                       p->name, op, (unsigned long long)addr,
                       (unsigned long long)n->addr,
                       (unsigned long long)n->size);
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "%s: %s of %#llx: not the start of an allocation: it "
                     "lies inside the live block [%#llx, +%llu)",
                     p->name, op, (unsigned long long)addr,
                     (unsigned long long)n->addr, (unsigned long long)n->size);
    }
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s: %s of %#llx: inside region %zu but in its alignment "
                   "margin, never handed out",
                   p->name, op, (unsigned long long)addr, r);
  }
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "%s: %s of %#llx: not an address of this pool (%zu "
                 "regions, none holds it)",
                 p->name, op, (unsigned long long)addr, p->nregions);
}

int gf_pool_free(gf_pool *p, uint64_t addr) {
  if (!p)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_free needs a pool");
  uint32_t i = find_used(p, addr);
  if (i == NIL)
    return bad_addr(p, addr, "free");
  p->root[TREE_USED] = tree_remove(p, TREE_USED, p->root[TREE_USED], i);
  node *n = &p->nodes[i];
  p->in_use -= n->size;
  p->free_bytes += n->size;
  p->live--;
  p->frees++;
  uint32_t prev = n->prev, next = n->next;
  if (prev != NIL && p->nodes[prev].state == NODE_FREE) {
    /* The lower neighbour absorbs this block. */
    free_remove(p, prev);
    p->nodes[prev].size += n->size;
    p->nodes[prev].next = next;
    if (next != NIL)
      p->nodes[next].prev = prev;
    put_node(p, i);
    i = prev;
    n = &p->nodes[i];
  }
  if (next != NIL && p->nodes[next].state == NODE_FREE) {
    free_remove(p, next);
    n->size += p->nodes[next].size;
    n->next = p->nodes[next].next;
    if (n->next != NIL)
      p->nodes[n->next].prev = i;
    put_node(p, next);
  }
  free_insert(p, i);
  return 0;
}

int gf_pool_lookup(const gf_pool *p, uint64_t addr, uint64_t *size,
                   uint32_t *tag) {
  if (!p)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_lookup needs a pool");
  uint32_t i = find_used(p, addr);
  if (i == NIL)
    return bad_addr(p, addr, "lookup");
  if (size)
    *size = p->nodes[i].size;
  if (tag)
    *tag = p->nodes[i].tag;
  return 0;
}

int gf_pool_set_tag(gf_pool *p, uint64_t addr, uint32_t tag) {
  if (!p)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_set_tag needs a pool");
  uint32_t i = find_used(p, addr);
  if (i == NIL)
    return bad_addr(p, addr, "tag");
  p->nodes[i].tag = tag;
  return 0;
}

/* ---- stats --------------------------------------------------------------- */

void gf_pool_get_stats(const gf_pool *p, gf_pool_stats *st) {
  memset(st, 0, sizeof *st);
  if (!p)
    return;
  st->in_use = p->in_use;
  st->peak_in_use = p->peak;
  st->reserved = p->reserved;
  st->usable = p->usable;
  st->limit = p->cfg.limit;
  st->free_bytes = p->free_bytes;
  st->largest_free = largest_free(p);
  st->fragmentation =
      p->free_bytes ? 1.0 - (double)st->largest_free / (double)p->free_bytes
                    : 0.0;
  st->live = p->live;
  st->free_blocks = p->free_blocks;
  st->regions = p->nregions;
  st->total_allocs = p->allocs;
  st->total_frees = p->frees;
  st->alignment = p->cfg.alignment;
}

void gf_pool_reset_peak(gf_pool *p) {
  if (p)
    p->peak = p->in_use;
}

/* ---- invariant check ----------------------------------------------------- */

#define BROKEN(...) \
  gf_fail(GF_EINTERNAL, NULL, GF_NO_INDEX, GF_NO_INDEX, __VA_ARGS__)

/* Walks a tree in order: checks order, AVL heights and balance, and that
 * every node has the tree's state. Counts nodes and sums sizes. */
static int check_tree(const gf_pool *p, int tree, uint32_t i, uint32_t *last,
                      uint64_t *count, uint64_t *bytes, int *h) {
  if (i == NIL) {
    *h = 0;
    return 0;
  }
  if (i >= p->ncap)
    return BROKEN("%s: tree %d links to node %u of %u", p->name, tree, i,
                  p->ncap);
  if (*count > p->ncap)
    return BROKEN("%s: tree %d has a cycle", p->name, tree);
  int hl = 0, hr = 0, rc;
  const node *n = &p->nodes[i];
  if ((rc = check_tree(p, tree, n->left, last, count, bytes, &hl)) < 0)
    return rc;
  if (n->state != (tree == TREE_FREE ? NODE_FREE : NODE_USED))
    return BROKEN("%s: node %u in tree %d has state %u", p->name, i, tree,
                  n->state);
  if (*last != NIL && !less(p, tree, *last, i))
    return BROKEN("%s: tree %d out of order at node %u", p->name, tree, i);
  *last = i;
  (*count)++;
  *bytes += n->size;
  if ((rc = check_tree(p, tree, n->right, last, count, bytes, &hr)) < 0)
    return rc;
  if (hl - hr > 1 || hr - hl > 1)
    return BROKEN("%s: tree %d unbalanced at node %u (%d vs %d)", p->name,
                  tree, i, hl, hr);
  *h = (hl > hr ? hl : hr) + 1;
  if (n->height != *h)
    return BROKEN("%s: node %u height %u, should be %d", p->name, i,
                  n->height, *h);
  return 0;
}

int gf_pool_check(const gf_pool *p) {
  if (!p)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_pool_check needs a pool");
  uint64_t a = p->cfg.alignment;
  uint64_t used_bytes = 0, free_bytes = 0, nused = 0, nfree = 0, usable = 0;
  uint64_t reserved = 0;
  for (size_t r = 0; r < p->nregions; r++) {
    const region *g = &p->regions[r];
    reserved += g->raw_size;
    usable += g->size;
    if (g->base % a || g->size % a || g->base < g->raw_base ||
        g->base + g->size > g->raw_base + g->raw_size)
      return BROKEN("%s: region %zu trimmed wrongly", p->name, r);
    uint64_t at = g->base;
    uint32_t prev = NIL;
    uint64_t steps = 0;
    for (uint32_t i = g->first; i != NIL; i = p->nodes[i].next) {
      const node *n = &p->nodes[i];
      if (++steps > p->ncap)
        return BROKEN("%s: region %zu block list has a cycle", p->name, r);
      if (n->region != r || n->prev != prev)
        return BROKEN("%s: block %u has region %u prev %u, should be %zu "
                      "and %u",
                      p->name, i, n->region, n->prev, r, prev);
      if (n->addr != at)
        return BROKEN("%s: region %zu: block %u starts at %#llx, should "
                      "at %#llx (gap or overlap)",
                      p->name, r, i, (unsigned long long)n->addr,
                      (unsigned long long)at);
      if (n->size == 0 || n->size % a || n->addr % a)
        return BROKEN("%s: block %u [%#llx, +%llu) breaks the alignment %llu",
                      p->name, i, (unsigned long long)n->addr,
                      (unsigned long long)n->size, (unsigned long long)a);
      if (n->state == NODE_FREE) {
        if (prev != NIL && p->nodes[prev].state == NODE_FREE)
          return BROKEN("%s: free blocks %u and %u are adjacent, not "
                        "coalesced",
                        p->name, prev, i);
        free_bytes += n->size;
        nfree++;
      } else if (n->state == NODE_USED) {
        used_bytes += n->size;
        nused++;
      } else {
        return BROKEN("%s: spare node %u is in region %zu", p->name, i, r);
      }
      at += n->size;
      prev = i;
    }
    if (at != g->base + g->size)
      return BROKEN("%s: region %zu blocks end at %#llx, should at %#llx",
                    p->name, r, (unsigned long long)at,
                    (unsigned long long)(g->base + g->size));
  }
  uint64_t cnt[2] = {0, 0}, sum[2] = {0, 0};
  for (int t = 0; t < 2; t++) {
    uint32_t last = NIL;
    int h, rc = check_tree(p, t, p->root[t], &last, &cnt[t], &sum[t], &h);
    if (rc < 0)
      return rc;
  }
  if (cnt[TREE_FREE] != nfree || sum[TREE_FREE] != free_bytes ||
      cnt[TREE_USED] != nused || sum[TREE_USED] != used_bytes)
    return BROKEN("%s: trees hold %llu free (%llu B) and %llu live (%llu B), "
                  "the regions %llu (%llu B) and %llu (%llu B)",
                  p->name, (unsigned long long)cnt[0],
                  (unsigned long long)sum[0], (unsigned long long)cnt[1],
                  (unsigned long long)sum[1], (unsigned long long)nfree,
                  (unsigned long long)free_bytes, (unsigned long long)nused,
                  (unsigned long long)used_bytes);
  if (p->in_use != used_bytes || p->free_bytes != free_bytes ||
      p->live != nused || p->free_blocks != nfree || p->usable != usable ||
      p->reserved != reserved || p->peak < p->in_use ||
      p->frees + p->live != p->allocs)
    return BROKEN("%s: counters disagree with the blocks (in use %llu vs "
                  "%llu, free %llu vs %llu, live %llu vs %llu)",
                  p->name, (unsigned long long)p->in_use,
                  (unsigned long long)used_bytes,
                  (unsigned long long)p->free_bytes,
                  (unsigned long long)free_bytes, (unsigned long long)p->live,
                  (unsigned long long)nused);
  uint64_t spares = 0;
  for (uint32_t i = p->spare; i != NIL; i = p->nodes[i].next) {
    if (p->nodes[i].state != NODE_SPARE || ++spares > p->ncap)
      return BROKEN("%s: spare list broken at node %u", p->name, i);
  }
  if (spares + nfree + nused != p->ncap)
    return BROKEN("%s: %llu nodes lost (spare %llu, free %llu, live %llu of "
                  "%u)",
                  p->name,
                  (unsigned long long)(p->ncap - spares - nfree - nused),
                  (unsigned long long)spares, (unsigned long long)nfree,
                  (unsigned long long)nused, p->ncap);
  return 0;
}
