/* WebDataset tar shards as a loader's source (lib/format/wds_set.c,
 * lib/pipeline/source_shards.c): shards written here member by member (a
 * ustar writer of the test's own, so that damage can be placed byte by
 * byte), read through brace patterns, "::" lists and list files; every
 * sample delivered once an epoch with the image and label of its own
 * members (each image a PNG whose pixels say its sample number); sidecar
 * indexes used, refused when they do not fit their shard (scanned
 * instead, or create fails when they are required), and caught when the
 * shard changed under them; bad samples (no image, two images, a label
 * that is no number) failed under the error policy, named, while every
 * other sample still comes once; truncated and compressed shards named at
 * create. */
#include "decode/decode.h"
#include "format/tar_scan.h"
#include "format/wds_index.h"
#include "tar_testutil.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXS 256

static char dir[512];

/* Sample k: key "d/kNNN", its PNG (pixels k), its cls (k * 3 + 1). */
static void add_sample_cap(FILE *f, unsigned k, size_t cap_len) {
  char name[64], cls[16];
  size_t len;
  void *png = tar_test_png((uint8_t)k, &len);
  snprintf(name, sizeof name, "d/k%03u.cls", k);
  snprintf(cls, sizeof cls, "%u\n", k * 3 + 1);
  tar_add(f, name, cls, strlen(cls));
  snprintf(name, sizeof name, "d/k%03u.PNG", k); /* fields are lower-cased */
  tar_add(f, name, png, len);
  snprintf(name, sizeof name, "d/k%03u.txt", k);
  char caption[2048];
  memset(caption, 'c', sizeof caption);
  tar_add(f, name, caption, cap_len < sizeof caption ? cap_len : 7);
  free(png);
}

static void add_sample(FILE *f, unsigned k) { add_sample_cap(f, k, 7); }

/* shard-<s>.tar with samples [first, first + n). */
static void make_shard_cap(unsigned s, unsigned first, unsigned n,
                           size_t cap_len) {
  char path[600];
  snprintf(path, sizeof path, "%s/shard-%02u.tar", dir, s);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f)
    return;
  for (unsigned k = first; k < first + n; k++)
    add_sample_cap(f, k, cap_len);
  tar_end(f);
  fclose(f);
}

static void make_shard(unsigned s, unsigned first, unsigned n) {
  make_shard_cap(s, first, n, 7);
}

/* ---- reading ------------------------------------------------------------ */

typedef struct seen {
  unsigned count[MAXS];
  unsigned total, skipped, bad_label;
  int rc; /* the first error next() returned (fail policy) */
  char err[1024];
} seen;

/* sized: a transform of fixed output size (4x4, no resize: the pixels as
 * decoded), under which create reads no image header. */
static int run_epoch_t(const char *source, const gf_shards_config *sc,
                       uint32_t policy, bool sized, seen *out) {
  memset(out, 0, sizeof *out);
  gf_loader_config c = GF_LOADER_CONFIG_INIT;
  c.source = source;
  c.batch_size = 4;
  c.threads = 2;
  c.device = GF_DEVICE_CPU;
  c.error_policy = policy;
  c.shards = sc;
  if (sized) {
    c.transform.height = 4;
    c.transform.width = 4;
  }
  gf_loader *l;
  int rc = gf_loader_create(&c, &l);
  if (rc < 0) {
    snprintf(out->err, sizeof out->err, "%s", gf_last_error()->message);
    return rc;
  }
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
      if (k < MAXS)
        out->count[k]++;
      if (b->labels[i] != (int64_t)k * 3 + 1)
        out->bad_label++;
      /* The sample's path is its key. */
      char key[64], want[64];
      snprintf(want, sizeof want, "d/k%03u", k);
      CHECK(gf_loader_sample_path(l, b->indices[i], key, sizeof key) > 0 &&
            strcmp(key, want) == 0);
      out->total++;
    }
    gf_loader_release(l, b);
  }
  gf_loader_stats st = {.struct_size = sizeof st};
  CHECK_OK(gf_loader_stats_get(l, &st));
  out->skipped = (unsigned)st.skipped;
  gf_loader_destroy(l);
  return 0;
}

static int run_epoch(const char *source, const gf_shards_config *sc,
                     uint32_t policy, seen *out) {
  return run_epoch_t(source, sc, policy, false, out);
}

/* Every sample in [0, n) but those in `missing` came exactly once. */
static bool each_once(const seen *s, unsigned n, const unsigned *missing,
                      unsigned nm) {
  for (unsigned k = 0; k < n; k++) {
    unsigned want = 1;
    for (unsigned m = 0; m < nm; m++)
      if (missing[m] == k)
        want = 0;
    if (s->count[k] != want) {
      printf("  sample %u came %u times\n", k, s->count[k]);
      return false;
    }
  }
  return s->bad_label == 0;
}

static void write_text(const char *name, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  CHECK_OK(gf_test_write_file(path, text, strlen(text)));
}

/* Writes shard s's sidecar index from a scan of it. */
static int collect(void *ctx, const gf_tar_member *m);
typedef struct members {
  gf_tar_member m[64];
  char path[64][64];
  unsigned n;
} members;
static int collect(void *ctx, const gf_tar_member *m) {
  members *ms = ctx;
  if (ms->n < 64) {
    snprintf(ms->path[ms->n], sizeof ms->path[0], "%s", m->path);
    ms->m[ms->n] = *m;
    ms->m[ms->n].path = ms->path[ms->n];
    ms->n++;
  }
  return 0;
}

static void write_index(unsigned s, const char *as) {
  char path[600];
  snprintf(path, sizeof path, "%s/shard-%02u.tar", dir, s);
  gf_object *o;
  members ms = {0};
  CHECK_OK(gf_object_open_path(path, 0, &o));
  CHECK_OK(gf_tar_scan_object(o, collect, &ms));
  gf_object_close(o);
  char *text;
  size_t len;
  CHECK_OK(gf_wds_index_write(path, ms.m, ms.n, &text, &len));
  snprintf(path, sizeof path, "%s/%s", dir, as);
  CHECK_OK(gf_test_write_file(path, text, len));
  free(text);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/wds_source", gf_test_tmpdir());
  mkdir(dir, 0755);
  /* 3 shards of 10, 7 and 12 samples. */
  make_shard(0, 0, 10);
  make_shard(1, 10, 7);
  make_shard(2, 17, 12);
  const unsigned N = 29;
  char src[1400];
  seen s;

  /* A brace pattern, scanned (no index yet). */
  snprintf(src, sizeof src, "%s/shard-{00..02}.tar", dir);
  CHECK_OK(run_epoch(src, NULL, GF_ON_ERROR_FAIL, &s));
  CHECK(each_once(&s, N, NULL, 0) && s.rc == 0);
  printf("scanned: %u samples\n", s.total);

  /* "::" lists and a list file (relative to its folder, with a comment). */
  snprintf(src, sizeof src, "%s/shard-00.tar::%s/shard-{01,02}.tar", dir,
           dir);
  CHECK_OK(run_epoch(src, NULL, GF_ON_ERROR_FAIL, &s));
  CHECK(each_once(&s, N, NULL, 0));
  write_text("list.txt", "# the shards\nshard-00.tar\n\n  shard-0{1..2}.tar\n");
  snprintf(src, sizeof src, "@%s/list.txt", dir);
  CHECK_OK(run_epoch(src, NULL, GF_ON_ERROR_FAIL, &s));
  CHECK(each_once(&s, N, NULL, 0));

  /* Sidecar indexes, used: shard-01's index made from shard-02 (of other
   * members) is refused when its members run past the shard's end... */
  write_index(0, "shard-00.idx");
  write_index(1, "shard-01.idx");
  write_index(2, "shard-02.idx");
  snprintf(src, sizeof src, "%s/shard-{00..02}.tar", dir);
  gf_shards_config req = GF_SHARDS_CONFIG_INIT;
  req.index = GF_SHARDS_INDEX_REQUIRE;
  CHECK_OK(run_epoch(src, &req, GF_ON_ERROR_FAIL, &s));
  CHECK(each_once(&s, N, NULL, 0));
  /* ... an index that is not this shard's (shard-00's given to shard-01:
   * it fits inside the larger shard? no: shard-00 is larger, so its
   * members run past shard-01's end): refused, the shard scanned; with
   * indexes required, create fails naming it. */
  write_index(0, "shard-01.idx");
  CHECK_OK(run_epoch(src, NULL, GF_ON_ERROR_FAIL, &s));
  CHECK(each_once(&s, N, NULL, 0));
  gf_error_clear();
  CHECK_ERR(run_epoch(src, &req, GF_ON_ERROR_FAIL, &s), GF_ECORRUPT);
  printf("required index refused: %s\n", s.err);
  CHECK(strstr(s.err, "shard-01.idx") && strstr(s.err, "past"));
  /* A shard rewritten after its index was made (its captions now 900
   * bytes: every member after the first moved, the shard grew, so the old
   * index still fits inside it): the index is used, and every sample read
   * through it is caught by its tar header check, named, never decoded
   * from the wrong bytes. */
  write_index(1, "shard-01.idx");
  make_shard_cap(2, 17, 12, 900);
  /* Create reads each image's header (local shards are sized as a local
   * folder is), checked as a loader reads it: the fail policy fails it,
   * naming the first sample that is not where the index says. */
  gf_error_clear();
  CHECK_ERR(run_epoch_t(src, &req, GF_ON_ERROR_FAIL, true, &s), GF_ECORRUPT);
  printf("stale index: %s\n", s.err);
  CHECK(strstr(s.err, "shard-02.tar") &&
        strstr(s.err, "does not hold what its index says"));
  CHECK_OK(run_epoch_t(src, &req, GF_ON_ERROR_SKIP, true, &s));
  /* Its first sample's image and label did not move: only it comes. */
  CHECK(s.count[17] == 1 && s.skipped == 11);
  write_index(2, "shard-02.idx");
  CHECK_OK(run_epoch(src, &req, GF_ON_ERROR_FAIL, &s));
  CHECK(each_once(&s, N, NULL, 0) && s.rc == 0);

  /* Bad samples: no image, two images, a label that is not a number. */
  {
    char path[600];
    snprintf(path, sizeof path, "%s/bad.tar", dir);
    FILE *f = fopen(path, "wb");
    size_t len;
    void *png = tar_test_png(200, &len);
    add_sample(f, 100);
    tar_add(f, "d/k101.cls", "7", 1); /* no image */
    add_sample(f, 102);
    tar_add(f, "d/k103.png", png, len); /* two images */
    tar_add(f, "d/k103.jpg", png, len);
    add_sample(f, 104);
    tar_add(f, "d/k105.cls", "seven", 5); /* not a number */
    tar_add(f, "d/k105.png", png, len);
    add_sample(f, 106);
    tar_end(f);
    fclose(f);
    free(png);
    snprintf(src, sizeof src, "%s/bad.tar", dir);
    CHECK_OK(run_epoch(src, NULL, GF_ON_ERROR_SKIP, &s));
    printf("bad samples skipped: %u, delivered %u\n", s.skipped, s.total);
    CHECK(s.skipped == 3 && s.total == 4);
    CHECK(s.count[100] == 1 && s.count[102] == 1 && s.count[104] == 1 &&
          s.count[106] == 1 && s.count[200] == 0 && s.bad_label == 0);
    /* The fail policy: create (which reads the image headers) names the
     * first. */
    gf_error_clear();
    CHECK_ERR(run_epoch_t(src, NULL, GF_ON_ERROR_FAIL, true, &s),
              GF_EBADSOURCE);
    printf("bad sample: %s\n", s.err);
    CHECK(strstr(s.err, "bad.tar") && strstr(s.err, "'d/k101'") &&
          strstr(s.err, "no image field"));
  }

  /* Truncated and compressed shards: named at create. */
  {
    char path[600];
    snprintf(path, sizeof path, "%s/shard-00.tar", dir);
    size_t len;
    uint8_t *b = gf_test_read_file(path, &len);
    snprintf(path, sizeof path, "%s/cut.tar", dir);
    CHECK_OK(gf_test_write_file(path, b, 700)); /* inside member 1's data */
    snprintf(src, sizeof src, "%s/cut.tar", dir);
    gf_shards_config scan = GF_SHARDS_CONFIG_INIT;
    scan.index = GF_SHARDS_INDEX_SCAN;
    gf_error_clear();
    int rc = run_epoch(src, &scan, GF_ON_ERROR_FAIL, &s);
    printf("truncated: %s\n", s.err);
    CHECK(rc < 0 && strstr(s.err, "cut.tar"));
    uint8_t gz[64] = {0x1f, 0x8b, 8};
    snprintf(path, sizeof path, "%s/z.tar", dir);
    CHECK_OK(gf_test_write_file(path, gz, sizeof gz));
    snprintf(src, sizeof src, "%s/z.tar", dir);
    CHECK_ERR(run_epoch(src, &scan, GF_ON_ERROR_FAIL, &s), GF_EUNSUPPORTED);
    CHECK(strstr(s.err, "z.tar") && strstr(s.err, "gzip"));
    snprintf(src, sizeof src, "%s/shards-{0..3}.tar.gz", dir);
    CHECK_ERR(run_epoch(src, &scan, GF_ON_ERROR_FAIL, &s), GF_EUNSUPPORTED);
    CHECK(strstr(s.err, "decompress"));
    free(b);
  }

  /* Labels: "none" gives -1; a field every sample must hold. */
  {
    gf_shards_config lab = GF_SHARDS_CONFIG_INIT;
    lab.label = "txt"; /* "caption": not a number */
    snprintf(src, sizeof src, "%s/shard-00.tar", dir);
    CHECK_OK(run_epoch(src, &lab, GF_ON_ERROR_FAIL, &s));
    CHECK(s.rc == GF_EBADSOURCE && strstr(s.err, "'txt'"));
    lab.label = "Cls";
    CHECK_ERR(run_epoch(src, &lab, GF_ON_ERROR_FAIL, &s), -EINVAL);
    lab.label = NULL;
    lab.image_fields = "jpg"; /* no sample has one */
    CHECK_OK(run_epoch(src, &lab, GF_ON_ERROR_SKIP, &s));
    printf("no image field anywhere: skipped %u (%s)\n", s.skipped, s.err);
    CHECK(s.total == 0 && s.skipped == 10);
  }
  /* Labels from a key of the json field: each sample's own; one whose json
   * lacks the key fails, named. */
  {
    char path[600];
    snprintf(path, sizeof path, "%s/json.tar", dir);
    FILE *f = fopen(path, "wb");
    for (unsigned k = 40; k < 46; k++) {
      char name[64], js[96];
      size_t len;
      void *png = tar_test_png((uint8_t)k, &len);
      snprintf(name, sizeof name, "d/k%03u.json", k);
      if (k == 45)
        snprintf(js, sizeof js, "{\"other\": 1}");
      else
        snprintf(js, sizeof js, "{\"caption\": \"a {k}\", \"label\": %u}",
                 k * 3 + 1);
      tar_add(f, name, js, strlen(js));
      snprintf(name, sizeof name, "d/k%03u.png", k);
      tar_add(f, name, png, len);
      free(png);
    }
    tar_end(f);
    fclose(f);
    gf_shards_config js = GF_SHARDS_CONFIG_INIT;
    js.label = "json:label";
    snprintf(src, sizeof src, "%s/json.tar", dir);
    CHECK_OK(run_epoch(src, &js, GF_ON_ERROR_SKIP, &s));
    CHECK(s.total == 5 && s.skipped == 1 && s.bad_label == 0 &&
          s.count[40] == 1 && s.count[44] == 1 && s.count[45] == 0);
    /* Its image is sound: create passes, next() names it. */
    gf_error_clear();
    CHECK_OK(run_epoch(src, &js, GF_ON_ERROR_FAIL, &s));
    CHECK(s.rc == GF_EBADSOURCE);
    printf("json label: %s\n", s.err);
    CHECK(strstr(s.err, "'d/k045'") && strstr(s.err, "no key 'label'"));
    js.label = "json:";
    CHECK_ERR(run_epoch(src, &js, GF_ON_ERROR_FAIL, &s), -EINVAL);
  }
  return gf_test_finish();
}
