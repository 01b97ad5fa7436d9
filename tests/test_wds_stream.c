/* One WebDataset shard read front to back (lib/format/wds_stream.c),
 * checked against the indexed reader of the same shard (wds_set.c: the
 * scan, the extent, the unpack), sample by sample: the same keys in the
 * same order, the same image bytes and labels, the same bad samples with
 * the same codes (no image, two images, a field twice, a label that is no
 * number); a sample larger than the buffer fails alone; the pulls only go
 * forward (but for the back window), so one GET of the shard serves them;
 * a truncated shard gives the samples before the cut, then its error;
 * the caller can stop. */
#include "format/wds_set.h"
#include "format/wds_stream.h"
#include "io/storage.h"
#include "tar_testutil.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXN 64
#define BUF 4096

static char dir[512];

/* Sample k's image: bytes that say k, 100 + 37 * k long. */
static size_t image_of(unsigned k, uint8_t *buf) {
  size_t n = 100 + 37 * (size_t)k;
  for (size_t i = 0; i < n; i++)
    buf[i] = (uint8_t)(k * 7 + i);
  return n;
}

static void write_shard(const char *name, bool cut) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f)
    return;
  uint8_t img[8192];
  char nm[128], cls[32];
  tar_add(f, "__meta__", "{}", 2); /* metadata: dropped */
  for (unsigned k = 0; k < 40; k++) {
    size_t n = image_of(k, img);
    snprintf(nm, sizeof nm, "x.y/k%03u.cls", k); /* a dotted folder */
    snprintf(cls, sizeof cls, " %u\n", k * 5);
    if (k == 7)
      snprintf(cls, sizeof cls, "seven");
    if (k != 5 && k < 30) /* 30 on: samples of one member */
      tar_add(f, nm, cls, strlen(cls));
    snprintf(nm, sizeof nm, "x.y/k%03u.%s", k, k % 3 ? "JPG" : "png");
    if (k == 9)
      n = BUF + 1; /* larger than the reader's buffer */
    if (k != 11)
      tar_add(f, nm, img, n);
    if (k == 13) {
      snprintf(nm, sizeof nm, "x.y/k%03u.png", k); /* two images */
      tar_add(f, nm, img, 10);
    }
    if (k == 17) {
      snprintf(nm, sizeof nm, "x.y/k%03u.cls", k); /* a field twice */
      tar_add(f, nm, "1", 1);
    }
    if (k >= 30)
      continue;
    snprintf(nm, sizeof nm, "x.y/k%03u.txt", k);
    tar_add(f, nm, "caption", 7);
    tar_add(f, "noext", "z", 1); /* no key: dropped */
  }
  tar_end(f);
  long end = ftell(f);
  fclose(f);
  if (cut)
    CHECK(truncate(path, end / 2 / 512 * 512 + 300) == 0); /* mid-block */
}

typedef struct got {
  unsigned n;
  char key[MAXN][64];
  int rc[MAXN];
  uint8_t *img[MAXN];
  uint64_t len[MAXN];
  int64_t label[MAXN];
  unsigned stop_at;
} got;

static int collect(void *ctx, const gf_wds_streamed *s) {
  got *g = ctx;
  CHECK(s->ordinal == g->n);
  if (g->n >= MAXN)
    return -1;
  unsigned i = g->n++;
  snprintf(g->key[i], sizeof g->key[i], "%s", s->key);
  g->rc[i] = s->rc;
  g->label[i] = s->label;
  g->len[i] = s->image_len;
  if (s->rc == 0) {
    g->img[i] = malloc(s->image_len);
    memcpy(g->img[i], s->image, s->image_len);
  }
  return i + 1 == g->stop_at ? 9 : 0;
}

typedef struct pull_src {
  gf_object *o;
  uint64_t size, furthest, pulled;
  bool backwards; /* a pull behind the back window */
} pull_src;

static int64_t pull(void *ctx, void *buf, uint64_t off, uint64_t len) {
  pull_src *p = ctx;
  if (off + GF_WDS_STREAM_BACK < p->furthest)
    p->backwards = true;
  if (off + len > p->furthest)
    p->furthest = off + len;
  p->pulled += len;
  return gf_object_read_upto(p->o, buf, off, len);
}

static int stream(gf_storage *st, const char *name, unsigned stop_at, got *g,
                  gf_wds_stream_counts *n, pull_src *p) {
  gf_wds_rules rules;
  CHECK_OK(gf_wds_rules_parse(&rules, NULL, NULL));
  memset(g, 0, sizeof *g);
  g->stop_at = stop_at;
  memset(p, 0, sizeof *p);
  CHECK_OK(gf_object_open(st, name, 0, &p->o));
  if (!p->o)
    return -1;
  p->size = p->o->size;
  uint8_t *buf = malloc(BUF);
  gf_wds_stream_opts o = {.rules = &rules, .buf = buf, .max_bytes = BUF};
  int rc = gf_wds_stream_shard(p->o->display, p->o->size, pull, p, &o, collect,
                               g, n);
  CHECK(!p->backwards);
  gf_object_close(p->o);
  free(buf);
  return rc;
}

static void free_got(got *g) {
  for (unsigned i = 0; i < g->n; i++)
    free(g->img[i]);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s", gf_test_tmpdir());
  write_shard("a.tar", false);
  write_shard("cut.tar", true);
  gf_storage *st = NULL;
  CHECK_OK(gf_storage_open(dir, NULL, &st));
  if (!st)
    return gf_test_finish();

  /* The indexed reader's view of a.tar. */
  char *names[] = {"a.tar"};
  gf_wds_set_opts so = {.index = GF_WDS_INDEX_SCAN};
  gf_wds_set *set = NULL;
  CHECK_OK(gf_wds_set_open(st, names, 1, &so, &set));

  got g;
  gf_wds_stream_counts n;
  pull_src p;
  CHECK_OK(stream(st, "a.tar", 0, &g, &n, &p));
  CHECK(g.n == 40 && n.samples == 40);
  CHECK(n.dropped == 31); /* the metadata member and 30 "noext" */
  /* Front to back: the headers' blocks once, and the taken members'
   * bytes once more (from the ring of a stream, not the server). */
  CHECK(p.furthest == p.size && p.pulled <= 2 * p.size);
  if (set)
    CHECK(gf_wds_set_count(set) == g.n);
  unsigned bad = 0;
  for (unsigned i = 0; set && i < g.n && i < gf_wds_set_count(set); i++) {
    CHECK(strcmp(g.key[i], gf_wds_set_key(set, i)) == 0);
    gf_wds_extent x;
    int rc = gf_wds_set_extent(set, i, &x);
    uint64_t io = 0, il = 0;
    int64_t label = -1;
    uint8_t *ext = NULL;
    if (rc == 0) {
      ext = malloc(x.length);
      CHECK_OK(gf_object_read(x.obj, ext, x.offset, x.length));
      rc = gf_wds_set_unpack(set, i, ext, x.length, &io, &il, &label, NULL);
    }
    if (i == 9) {
      /* Too large for the stream's buffer only. */
      CHECK(rc == 0 && g.rc[i] == GF_ELIMIT);
    } else {
      CHECK(g.rc[i] == rc);
    }
    if (rc == 0 && g.rc[i] == 0) {
      CHECK(g.len[i] == il && memcmp(g.img[i], ext + io, il) == 0);
      CHECK(g.label[i] == label);
    }
    bad += g.rc[i] != 0;
    free(ext);
  }
  /* 5: no cls (label -1 under auto, not bad); 7, 9, 11, 13, 17 bad. */
  CHECK(bad == 5 && n.bad == 5);
  CHECK(g.rc[5] == 0 && g.label[5] == -1 && g.label[6] == 30);
  CHECK(g.rc[7] == GF_EBADSOURCE && g.rc[11] == GF_EBADSOURCE &&
        g.rc[13] == GF_EBADSOURCE && g.rc[17] == GF_EBADSOURCE);
  free_got(&g);

  /* Stopping at the third sample. */
  CHECK(stream(st, "a.tar", 3, &g, &n, &p) == 9 && g.n == 3);
  free_got(&g);

  /* A shard cut in the middle: what came before, then the cut, named. */
  int rc = stream(st, "cut.tar", 0, &g, &n, &p);
  CHECK(rc == GF_ETRUNCATED || rc == GF_ECORRUPT);
  CHECK(strstr(gf_last_error()->message, "cut.tar") != NULL);
  CHECK(g.n > 5 && g.n < 40);
  for (unsigned i = 0; i < g.n; i++)
    CHECK(strcmp(g.key[i], gf_wds_set_key(set, i)) == 0);
  free_got(&g);

  gf_wds_set_close(set);
  gf_storage_close(st);
  return gf_test_finish();
}
