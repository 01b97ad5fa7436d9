/* Tar shards' other fields handed with each batch (gf_shards_config.fields,
 * gf_batch_field; lib/format/wds_set.c, lib/pipeline/loader_sample.c):
 * shards written here whose samples hold a caption (txt) of varied sizes,
 * before or after the image, an empty one and one too large, and a json
 * field only some samples have. Each delivered sample's fields are
 * compared with what its key says they hold (its image's pixels say which
 * sample it is): shuffled, with several workers, from the cache in a
 * second epoch, and through the skip policy's repair; a field over
 * field_bytes fails its sample, named (fail policy), or skips it and
 * nothing else (skip policy); an absent field is absent, not an error;
 * the field's tar header is checked as the image's; bad options are
 * refused, named; the memory plan counts the field places create
 * allocates. */
#include "decode/decode.h"
#include "format/tar_scan.h"
#include "format/wds_index.h"
#include "pipeline/loader_plan.h"
#include "tar_testutil.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 40u
#define BIG 13u     /* its caption is 5,000 bytes */
#define EMPTY 20u   /* its caption is empty */
#define DAMAGED 35u /* its caption's header is broken (its own shard) */

static char dir[512];

/* ---- what sample k holds ------------------------------------------------ */

/* Its caption: "kNNN:" and letters from k, of a length from k. */
static size_t caption_of(unsigned k, char *buf, size_t cap) {
  size_t len = k == BIG ? 5000 : k == EMPTY ? 0 : 10 + (k * 37u) % 300;
  if (len > cap)
    len = cap;
  for (size_t i = 0; i < len; i++)
    buf[i] = (char)('a' + (i + k) % 26);
  if (len >= 5)
    memcpy(buf, "k", 1), buf[1] = (char)('0' + k / 100),
                         buf[2] = (char)('0' + k / 10 % 10),
                         buf[3] = (char)('0' + k % 10), buf[4] = ':';
  return len;
}

/* Its json: only samples whose number is not a multiple of 3 have one. */
static size_t json_of(unsigned k, char *buf, size_t cap) {
  if (k % 3 == 0)
    return 0;
  int n = snprintf(buf, cap, "{\"k\": %u, \"pad\": \"%.*s\"}", k, (int)(k % 17),
                   "xxxxxxxxxxxxxxxxxxxx");
  return (size_t)n;
}

/* Sample k: key "d/kNNN"; its cls, png, txt and json members, the caption
 * before the image for odd k (an extent then starts at the caption). */
static void add_sample(FILE *f, unsigned k) {
  char name[64], cls[16], text[5000], js[128];
  size_t len, tl = caption_of(k, text, sizeof text);
  void *png = tar_test_png((uint8_t)k, &len);
  snprintf(name, sizeof name, "d/k%03u.cls", k);
  snprintf(cls, sizeof cls, "%u\n", k * 3 + 1);
  tar_add(f, name, cls, strlen(cls));
  snprintf(name, sizeof name, "d/k%03u.txt", k);
  if (k % 2)
    tar_add(f, name, text, tl);
  snprintf(name, sizeof name, "d/k%03u.png", k);
  tar_add(f, name, png, len);
  snprintf(name, sizeof name, "d/k%03u.txt", k);
  if (k % 2 == 0)
    tar_add(f, name, text, tl);
  size_t jl = json_of(k, js, sizeof js);
  snprintf(name, sizeof name, "d/k%03u.json", k);
  if (jl)
    tar_add(f, name, js, jl);
  free(png);
}

static void make_shard(const char *name, unsigned first, unsigned n) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f)
    return;
  for (unsigned k = first; k < first + n; k++)
    add_sample(f, k);
  tar_end(f);
  fclose(f);
}

/* ---- reading ------------------------------------------------------------ */

typedef struct seen {
  unsigned count[N];
  unsigned total, skipped, wrong;
  uint64_t cache_hits;
  int rc; /* the first error next() returned (fail policy) */
  char err[1024];
} seen;

typedef struct run_opts {
  const char *source;
  const char *fields;
  uint64_t field_bytes;
  uint32_t policy, threads, epochs, index;
  uint64_t cache_bytes;
} run_opts;

/* Whether field f (named name) of sample i of b is what sample k holds. */
static bool field_ok(const gf_batch *b, uint32_t i, uint32_t f,
                     const char *name, unsigned k) {
  char want[5000];
  size_t wl;
  bool has = true;
  if (!strcmp(name, "txt")) {
    wl = caption_of(k, want, sizeof want);
  } else if (!strcmp(name, "json")) {
    wl = json_of(k, want, sizeof want);
    has = wl > 0;
  } else {
    return false;
  }
  const void *data;
  uint64_t len;
  int rc = gf_batch_field(b, i, f, &data, &len);
  if (rc != (has ? 1 : 0)) {
    printf("  sample %u field %s: gf_batch_field gave %d\n", k, name, rc);
    return false;
  }
  if (!has)
    return data == NULL && len == 0;
  if (len != wl || (wl && memcmp(data, want, wl))) {
    printf("  sample %u field %s: %llu bytes, not its own %zu\n", k, name,
           (unsigned long long)len, wl);
    return false;
  }
  return true;
}

static int run(const run_opts *o, seen *out) {
  memset(out, 0, sizeof *out);
  gf_shards_config sc = GF_SHARDS_CONFIG_INIT;
  sc.fields = o->fields;
  sc.field_bytes = o->field_bytes;
  sc.index = o->index;
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = o->source;
  c.batch_size = 5;
  c.threads = o->threads ? o->threads : 3;
  c.device = GF_DEVICE_CPU;
  c.error_policy = o->policy;
  c.cache_bytes = o->cache_bytes;
  c.seed = 7;
  c.shards = &sc;
  gf_loader *l;
  int rc = gf_loader_create(&c, &l);
  if (rc < 0) {
    snprintf(out->err, sizeof out->err, "%s", gf_last_error()->message);
    return rc;
  }
  uint32_t nf = gf_loader_field_count(l);
  for (uint32_t e = 0; e < (o->epochs ? o->epochs : 1); e++) {
    if (e)
      memset(out->count, 0, sizeof out->count);
    for (;;) {
      gf_batch *b;
      rc = gf_loader_next(l, &b);
      if (rc == GF_EEPOCHEND)
        break;
      if (rc < 0) {
        if (!out->rc) {
          out->rc = rc;
          snprintf(out->err, sizeof out->err, "%s", gf_last_error()->message);
        }
        continue;
      }
      for (uint32_t i = 0; i < b->count; i++) {
        const uint8_t *px = (const uint8_t *)b->data + b->offsets[i];
        unsigned k = px[0];
        if (k >= N || b->labels[i] != (int64_t)k * 3 + 1) {
          out->wrong++;
          continue;
        }
        out->count[k]++;
        for (uint32_t f = 0; f < nf; f++)
          if (!field_ok(b, i, f, gf_loader_field_name(l, f), k))
            out->wrong++;
        out->total++;
      }
      /* Out of range: refused, named. */
      const void *d;
      uint64_t n;
      CHECK_ERR(gf_batch_field(b, b->count, 0, &d, &n), -EINVAL);
      CHECK_ERR(gf_batch_field(b, 0, nf, &d, &n), -EINVAL);
      gf_loader_release(l, b);
    }
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  out->skipped = (unsigned)st.skipped;
  out->cache_hits = st.cache_hits;
  gf_loader_destroy(l);
  return 0;
}

/* Every sample in [0, N) but `missing` (N: none) came once, its fields
 * and label its own. */
static bool each_once(const seen *s, unsigned missing) {
  for (unsigned k = 0; k < N; k++)
    if (s->count[k] != (k == missing ? 0u : 1u)) {
      printf("  sample %u came %u times\n", k, s->count[k]);
      return false;
    }
  return s->wrong == 0;
}

/* ---- the damaged caption header ----------------------------------------- */

typedef struct members {
  gf_tar_member m[16];
  char path[16][64];
  unsigned n;
} members;

static int collect(void *ctx, const gf_tar_member *m) {
  members *ms = ctx;
  if (ms->n < 16) {
    snprintf(ms->path[ms->n], sizeof ms->path[0], "%s", m->path);
    ms->m[ms->n] = *m;
    ms->m[ms->n].path = ms->path[ms->n];
    ms->n++;
  }
  return 0;
}

/* damaged.tar: sample DAMAGED alone, its index written, then its
 * caption's tar header broken (a name byte changed, the checksum not). */
static void make_damaged(void) {
  char path[600];
  make_shard("damaged.tar", DAMAGED, 1);
  snprintf(path, sizeof path, "%s/damaged.tar", dir);
  gf_object *o;
  members ms = {0};
  CHECK_OK(gf_object_open_path(path, 0, &o));
  CHECK_OK(gf_tar_scan_object(o, collect, &ms));
  gf_object_close(o);
  char *text;
  size_t len;
  CHECK_OK(gf_wds_index_write(path, ms.m, ms.n, &text, &len));
  char idx[600];
  snprintf(idx, sizeof idx, "%s/damaged.idx", dir);
  CHECK_OK(gf_test_write_file(idx, text, len));
  free(text);
  for (unsigned i = 0; i < ms.n; i++)
    if (strstr(ms.path[i], ".txt")) {
      FILE *f = fopen(path, "r+b");
      CHECK(f != NULL);
      if (!f)
        return;
      fseek(f, (long)(ms.m[i].data_offset - 512), SEEK_SET);
      fputc('e', f); /* "d/k035.txt" -> "e/k035.txt" */
      fclose(f);
    }
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/wds_fields", gf_test_tmpdir());
  mkdir(dir, 0755);
  make_shard("f-0.tar", 0, 12);
  make_shard("f-1.tar", 12, 11);
  make_shard("f-2.tar", 23, 17);
  char src[1400];
  snprintf(src, sizeof src, "%s/f-{0..2}.tar", dir);
  seen s;

  /* Shuffled, three workers: each sample once with its own fields; json
   * absent where a sample has none, the empty caption present and
   * empty. */
  run_opts o = {.source = src, .fields = "txt;json"};
  CHECK_OK(run(&o, &s));
  CHECK(each_once(&s, N) && s.rc == 0);
  printf("fields: %u samples, txt and json their own\n", s.total);

  /* From the cache: the second epoch's hits deliver their own fields. */
  o.cache_bytes = 1u << 20;
  o.epochs = 2;
  CHECK_OK(run(&o, &s));
  CHECK(each_once(&s, N) && s.cache_hits >= N);
  printf("cached: %llu hits, fields their own\n",
         (unsigned long long)s.cache_hits);

  /* A caption over field_bytes. Fail policy: next() names the shard,
   * the sample, the field and both sizes. */
  o = (run_opts){.source = src, .fields = "txt", .field_bytes = 4096};
  CHECK_OK(run(&o, &s));
  CHECK(s.rc == GF_ELIMIT);
  printf("too large: %s\n", s.err);
  CHECK(strstr(s.err, "f-1.tar") && strstr(s.err, "'d/k013'") &&
        strstr(s.err, "field 'txt'") && strstr(s.err, "5000 bytes") &&
        strstr(s.err, "(4096)"));
  /* Skip policy: that sample skipped, every other one delivered once with
   * its own fields, repaired positions too; in a second epoch from the
   * cache as well. */
  o.policy = GF_ON_ERROR_SKIP;
  o.fields = "json;txt";
  CHECK_OK(run(&o, &s));
  CHECK(each_once(&s, BIG) && s.skipped == 1);
  o.cache_bytes = 1u << 20;
  o.epochs = 2;
  o.threads = 1;
  CHECK_OK(run(&o, &s));
  CHECK(each_once(&s, BIG) && s.skipped == 2 && s.cache_hits > 0);
  /* Without fields the large caption is not read: no sample is bad. */
  o = (run_opts){.source = src, .policy = GF_ON_ERROR_FAIL};
  CHECK_OK(run(&o, &s));
  CHECK(each_once(&s, N) && s.rc == 0);

  /* An image field asked as a field: its stored bytes, a PNG. */
  {
    gf_shards_config sc = GF_SHARDS_CONFIG_INIT;
    sc.fields = "png";
    gf_loader_config c = GF_LOADER_CONFIG_INIT;
    c.source = src;
    c.batch_size = 5;
    c.device = GF_DEVICE_CPU;
    c.shards = &sc;
    gf_loader *l;
    CHECK_OK(gf_loader_create(&c, &l));
    gf_batch *b;
    CHECK_OK(gf_loader_next(l, &b));
    const void *d;
    uint64_t n;
    CHECK(gf_batch_field(b, 0, 0, &d, &n) == 1 && n > 8 &&
          !memcmp(d, "\x89PNG", 4));
    CHECK(gf_loader_field_count(l) == 1 &&
          !strcmp(gf_loader_field_name(l, 0), "png") &&
          gf_loader_field_name(l, 1) == NULL);
    gf_loader_release(l, b);
    gf_loader_destroy(l);
  }

  /* The caption's tar header is checked as the image's: broken, the
   * sample fails when its caption is asked for, and loads without. */
  make_damaged();
  char dsrc[700];
  snprintf(dsrc, sizeof dsrc, "%s/damaged.tar", dir);
  o = (run_opts){.source = dsrc, .fields = "txt", .index = 1 /* require */};
  CHECK_OK(run(&o, &s));
  CHECK(s.rc == GF_ECORRUPT && s.total == 0);
  printf("damaged: %s\n", s.err);
  CHECK(strstr(s.err, "d/k035.txt") && strstr(s.err, "damaged.tar"));
  o.fields = NULL;
  CHECK_OK(run(&o, &s));
  CHECK(s.rc == 0 && s.total == 1 && s.count[DAMAGED] == 1);

  /* Bad options, refused and named. */
  static const char *const bad[] = {
      "txt;;json", "txt;", ";txt", "txt;txt",
      "TXT",       "a.b",  "a/b",  "a;b;c;d;e;f;g;h;i;j;k;l;m;n;o;p;q"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    o = (run_opts){.source = src, .fields = bad[i]};
    CHECK_ERR(run(&o, &s), -EINVAL);
    CHECK(strstr(s.err, "fields") != NULL);
    printf("refused '%s': %s\n", bad[i], s.err);
  }

  /* The memory plan counts the field places create allocates:
   * slots x batch_size x fields x field_bytes, and their length table. */
  {
    gf_shards_config sc = GF_SHARDS_CONFIG_INIT;
    sc.fields = "txt;json";
    sc.field_bytes = 1000;
    gf_loader_config c = GF_LOADER_CONFIG_INIT;
    c.source = src;
    c.batch_size = 5;
    c.prefetch = 3;
    c.threads = 2;
    c.device = GF_DEVICE_CPU;
    c.shards = &sc;
    gf_memory_plan p;
    CHECK_OK(gf_loader_plan_get(&c, &p, NULL));
    CHECK(p.field_slots == 3 && p.field_slot_bytes == 5 * 2 * 1000);
    char text[4096];
    CHECK(gf_loader_plan(&c, text, sizeof text) > 0);
    CHECK(strstr(text, "batch fields") && strstr(text, "30,000"));
    gf_loader *l;
    CHECK_OK(gf_loader_create(&c, &l));
    gf_loader_allocs a;
    gf_loader_allocated(l, &a);
    CHECK(a.slot_field_bytes == p.field_slots * p.field_slot_bytes);
    CHECK(a.slot_table_bytes == p.table_slots * p.table_slot_bytes);
    gf_loader_destroy(l);
    /* Without fields: no such row. */
    c.shards = NULL;
    CHECK_OK(gf_loader_plan_get(&c, &p, NULL));
    CHECK(p.field_slots == 0 && p.field_slot_bytes == 0);
    CHECK(gf_loader_plan(&c, text, sizeof text) > 0);
    CHECK(!strstr(text, "batch fields"));
  }
  return gf_test_finish();
}
