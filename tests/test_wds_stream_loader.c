/* Tar shards in streaming mode (GF_SHARDS_INDEX_STREAM: lib/pipeline/
 * stream.c, source_stream.c and the loader's streaming paths), over local
 * shards (the storage's chunked stream; HTTP is cli_shards.sh's): every
 * sample once an epoch; the same order whatever the threads, another with
 * another seed or epoch; ranks given whole shards, each sample once across
 * them; GF_ORDER_SEQUENTIAL with one lane is the shards' own order; a
 * resume state continues the order exactly; drop_last; bad samples dropped
 * and counted under skip, named under fail; a sample that fails to decode
 * repaired by a replay, nothing lost or doubled; the memory plan shows the
 * stage. */
#include "decode/decode.h"
#include "tar_testutil.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SHARDS 6
#define PER 30
#define N (SHARDS * PER)
#define MAXSEQ 1024

static char dir[512];

/* Sample k: key "d/kNNN", its PNG (pixels k), its cls (k * 3 + 1). */
static void add_sample(FILE *f, unsigned k, const char *bad) {
  char name[64], cls[16];
  size_t len;
  void *png = tar_test_png((uint8_t)k, &len);
  snprintf(name, sizeof name, "d/k%03u.cls", k);
  snprintf(cls, sizeof cls, "%u\n", k * 3 + 1);
  if (bad && !strcmp(bad, "label"))
    snprintf(cls, sizeof cls, "x%u", k);
  tar_add(f, name, cls, strlen(cls));
  snprintf(name, sizeof name, "d/k%03u.png", k);
  if (bad && !strcmp(bad, "pixels"))
    memset((uint8_t *)png + 40, 0x5a, len - 40); /* damaged after IHDR */
  if (!(bad && !strcmp(bad, "image")))
    tar_add(f, name, png, len);
  free(png);
  /* A caption for most samples; sample 50's larger than the bound. */
  if (k % 7 != 3) {
    char cap[5000];
    size_t n = (size_t)snprintf(cap, sizeof cap, "caption %u", k);
    if (k == 50) {
      memset(cap + n, '.', sizeof cap - n);
      n = sizeof cap;
    }
    snprintf(name, sizeof name, "d/k%03u.txt", k);
    tar_add(f, name, cap, n);
  }
}

static void make_shards(const char *sub, unsigned bad_k, const char *bad,
                        unsigned bad_k2, const char *bad2) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  (void)mkdir(path, 0755);
  for (unsigned s = 0; s < SHARDS; s++) {
    snprintf(path, sizeof path, "%s/%s/shard-%02u.tar", dir, sub, s);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
      return;
    for (unsigned k = s * PER; k < (s + 1) * PER; k++)
      add_sample(f, k, k == bad_k ? bad : k == bad_k2 ? bad2 : NULL);
    tar_end(f);
    fclose(f);
  }
}

typedef struct run {
  unsigned seq[MAXSEQ]; /* samples in delivery order, across epochs */
  unsigned n;
  unsigned per_epoch[4];
  unsigned count[N];
  unsigned bad_label, skipped;
  int rc;
  char err[1024];
} run;

typedef struct opts {
  const char *sub;
  uint32_t threads, world, rank, order, policy, lanes, shuffle, drop_last;
  uint32_t batch;
  const char *fields;
  uint64_t seed;
  unsigned epochs;
  unsigned stop_after; /* batches; then export into *state */
  gf_loader_state *state;
  const gf_loader_state *resume;
} opts;

static void source_of(const char *sub, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s/shard-{00..%02u}.tar", dir, sub, SHARDS - 1);
}

static int go(const opts *o, run *r) {
  memset(r, 0, sizeof *r);
  char src[800];
  source_of(o->sub, src, sizeof src);
  gf_shards_config sc = GF_SHARDS_CONFIG_INIT;
  sc.index = GF_SHARDS_INDEX_STREAM;
  sc.threads = o->lanes;
  sc.shuffle = o->shuffle;
  sc.fields = o->fields;
  sc.field_bytes = 4096;
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = src;
  c.shards = &sc;
  c.batch_size = o->batch ? o->batch : 8;
  c.threads = o->threads ? o->threads : 2;
  c.device = GF_DEVICE_CPU;
  c.seed = o->seed;
  c.world = o->world ? o->world : 1;
  c.rank = o->rank;
  c.order = o->order;
  c.error_policy = o->policy;
  c.drop_last = o->drop_last;
  c.transform.height = 4;
  c.transform.width = 4;
  gf_loader *l;
  int rc = gf_loader_create(&c, &l);
  if (rc < 0) {
    snprintf(r->err, sizeof r->err, "%s", gf_last_error()->message);
    return rc;
  }
  if (o->resume && (rc = gf_loader_state_import(l, o->resume)) < 0) {
    r->rc = rc;
    snprintf(r->err, sizeof r->err, "%s", gf_last_error()->message);
    gf_loader_destroy(l);
    return 0;
  }
  unsigned epochs = o->epochs ? o->epochs : 1, e = 0, batches = 0;
  while (e < epochs) {
    gf_batch *b;
    /* Bounded: a loader that never ends an epoch fails, not hangs. */
    rc = gf_loader_next_timed(l, NULL, 30000000000ll, &b);
    if (rc == GF_EEPOCHEND) {
      e++;
      continue;
    }
    if (rc == -ETIMEDOUT) {
      r->rc = rc;
      snprintf(r->err, sizeof r->err, "no batch nor epoch end in 30 s");
      break;
    }
    if (rc < 0) {
      if (!r->rc) {
        r->rc = rc;
        snprintf(r->err, sizeof r->err, "%s", gf_last_error()->message);
      }
      if (o->policy == GF_ON_ERROR_FAIL)
        break;
      continue;
    }
    for (uint32_t i = 0; i < b->count; i++) {
      const uint8_t *px = (const uint8_t *)b->data + b->offsets[i];
      unsigned k = px[0];
      if (k < N && e == 0)
        r->count[k]++;
      if (b->labels[i] != (int64_t)k * 3 + 1)
        r->bad_label++;
      /* The id names the sample's shard and its number there. */
      CHECK(b->indices[i] >> 40 == k / PER &&
            (b->indices[i] & 0xffffffffffull) == k % PER);
      if (o->fields) {
        /* Its own caption, or none where it has none. */
        const void *d;
        uint64_t n;
        int pr = gf_batch_field(b, i, 0, &d, &n);
        char want[32];
        int wn = snprintf(want, sizeof want, "caption %u", k);
        if (k % 7 == 3)
          CHECK(pr == 0);
        else
          CHECK(pr == 1 && n == (uint64_t)wn && !memcmp(d, want, n));
      }
      if (r->n < MAXSEQ)
        r->seq[r->n++] = k;
      if (e < 4)
        r->per_epoch[e]++;
    }
    gf_loader_release(l, b);
    if (o->stop_after && ++batches == o->stop_after) {
      CHECK_OK(gf_loader_state_export(l, o->state));
      break;
    }
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  r->skipped = (unsigned)st.skipped;
  gf_loader_destroy(l);
  return 0;
}

static bool once_each(const run *r, const unsigned *missing, unsigned nm) {
  for (unsigned k = 0; k < N; k++) {
    unsigned want = 1;
    for (unsigned m = 0; m < nm; m++)
      want = missing[m] == k ? 0 : want;
    if (r->count[k] != want) {
      printf("  sample %u came %u times\n", k, r->count[k]);
      return false;
    }
  }
  return r->bad_label == 0;
}

static bool same_seq(const run *a, const run *b) {
  return a->n == b->n && !memcmp(a->seq, b->seq, a->n * sizeof a->seq[0]);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", gf_test_tmpdir());
  make_shards("good", N, NULL, N, NULL);

  /* Every sample once an epoch; two epochs in different orders. */
  run a, b;
  opts o = {.sub = "good", .epochs = 2};
  CHECK_OK(go(&o, &a));
  CHECK(a.rc == 0 && once_each(&a, NULL, 0));
  CHECK(a.per_epoch[0] == N && a.per_epoch[1] == N);
  CHECK(memcmp(a.seq, a.seq + N, N * sizeof a.seq[0]) != 0);

  /* The same order whatever the threads; another with another seed. */
  o.threads = 1;
  CHECK_OK(go(&o, &b));
  CHECK(same_seq(&a, &b));
  o.threads = 3;
  CHECK_OK(go(&o, &b));
  CHECK(same_seq(&a, &b));
  o.threads = 2;
  o.seed = 7;
  CHECK_OK(go(&o, &b));
  CHECK(!same_seq(&a, &b) && once_each(&b, NULL, 0));
  o.seed = 0;

  /* Shuffled: not the shards' order. With one lane, no buffer and the
   * sequential order: exactly the shards' order. */
  bool sorted = true;
  for (unsigned i = 1; i < N; i++)
    sorted = sorted && a.seq[i] == a.seq[i - 1] + 1;
  CHECK(!sorted);
  opts q = {.sub = "good", .order = GF_ORDER_SEQUENTIAL, .lanes = 1};
  CHECK_OK(go(&q, &b));
  for (unsigned i = 0; i < N; i++)
    CHECK(b.seq[i] == i);

  /* Two ranks: whole shards each, every sample once across them. */
  run r0, r1;
  opts w = {.sub = "good", .world = 2, .rank = 0};
  CHECK_OK(go(&w, &r0));
  w.rank = 1;
  CHECK_OK(go(&w, &r1));
  unsigned shard_rank[SHARDS];
  memset(shard_rank, 0, sizeof shard_rank);
  for (unsigned k = 0; k < N; k++) {
    CHECK(r0.count[k] + r1.count[k] == 1);
    shard_rank[k / PER] |= r0.count[k] ? 1u : 2u;
  }
  for (unsigned s = 0; s < SHARDS; s++)
    CHECK(shard_rank[s] == 1 || shard_rank[s] == 2); /* never split */
  CHECK(r0.per_epoch[0] == 3 * PER && r1.per_epoch[0] == 3 * PER);

  /* drop_last: the last partial batch of the epoch goes (180 = 22 x 8 +
   * 4), and the next epoch still comes. */
  opts d = {.sub = "good", .drop_last = 1, .epochs = 2};
  CHECK_OK(go(&d, &b));
  CHECK(b.per_epoch[0] == 176 && b.per_epoch[1] == 176);

  /* A batch larger than the whole epoch under drop_last: each epoch ends
   * with no batch (its length is known only at its end), once an epoch,
   * never a loop over empty epochs. */
  opts big = {
      .sub = "good", .batch = 256 /* > N */, .drop_last = 1, .epochs = 3};
  CHECK_OK(go(&big, &b));
  CHECK(b.rc == 0 && b.n == 0);

  /* A resume state continues the epoch's order exactly. */
  gf_loader_state st;
  opts s1 = {.sub = "good", .stop_after = 5, .state = &st};
  CHECK_OK(go(&s1, &b));
  CHECK(b.n == 40);
  opts s2 = {.sub = "good", .resume = &st};
  run c;
  CHECK_OK(go(&s2, &c));
  CHECK(c.n == N - 40 && !memcmp(c.seq, a.seq + 40, c.n * sizeof c.seq[0]));
  /* Another rank's state is refused, naming why. */
  opts s3 = {.sub = "good", .world = 2, .resume = &st};
  CHECK_OK(go(&s3, &c));
  CHECK(c.rc == -EINVAL && strstr(c.err, "rank 0 of 1"));

  /* Bad samples: no image, a label that is no number. Skip: dropped and
   * counted; fail: the error names the shard and the sample's key. */
  make_shards("bad", 33, "image", 100, "label");
  opts k = {.sub = "bad", .policy = GF_ON_ERROR_SKIP};
  CHECK_OK(go(&k, &b));
  unsigned missing[] = {33, 100};
  CHECK(b.rc == 0 && once_each(&b, missing, 2) && b.skipped == 2);
  k.policy = GF_ON_ERROR_FAIL;
  CHECK_OK(go(&k, &b));
  CHECK(b.rc == GF_EBADSOURCE && strstr(b.err, "shard-0") &&
        (strstr(b.err, "d/k033") || strstr(b.err, "d/k100")));

  /* A sample whose image fails to decode: repaired (a replay of the
   * stream up to its batch), nothing lost or doubled. */
  make_shards("pixels", 77, "pixels", N, NULL);
  opts p = {.sub = "pixels", .policy = GF_ON_ERROR_SKIP};
  CHECK_OK(go(&p, &b));
  unsigned missing77[] = {77};
  CHECK(b.rc == 0 && once_each(&b, missing77, 1) && b.skipped == 1);

  /* Other fields with each sample: its own caption, none where it has
   * none; one over field_bytes is a bad sample, dropped under skip. */
  opts fo = {.sub = "good", .fields = "txt", .policy = GF_ON_ERROR_SKIP};
  CHECK_OK(go(&fo, &b));
  unsigned missing50[] = {50};
  CHECK(b.rc == 0 && once_each(&b, missing50, 1) && b.skipped == 1);
  fo.policy = GF_ON_ERROR_FAIL;
  CHECK_OK(go(&fo, &b));
  CHECK(b.rc == GF_ELIMIT && strstr(b.err, "d/k050") &&
        strstr(b.err, "field 'txt' is 5000 bytes"));

  /* The memory plan shows the stage. */
  char src[800], plan[8192];
  source_of("good", src, sizeof src);
  gf_shards_config sc = GF_SHARDS_CONFIG_INIT;
  sc.index = GF_SHARDS_INDEX_STREAM;
  gf_loader_config pc = GF_LOADER_CONFIG_INIT;
  pc.source = src;
  pc.shards = &sc;
  pc.device = GF_DEVICE_CPU;
  pc.transform.height = 4;
  pc.transform.width = 4;
  CHECK(gf_loader_plan(&pc, plan, sizeof plan) > 0);
  CHECK(strstr(plan, "stream buffer") != NULL);
  /* Without a fixed output size nothing can be sized before the stream. */
  pc.transform.height = pc.transform.width = 0;
  CHECK(gf_loader_plan(&pc, plan, sizeof plan) == -EINVAL &&
        strstr(gf_last_error()->message, "streaming mode"));
  return gf_test_finish();
}
