/* gpufeed inspect: what a dataset holds, from its index alone. */
#include "cli.h"

#include "common/common.h"
#include "format/format.h"
#include "format/wds_spec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CMD "inspect"
#define CLASSES_SHOWN 10
#define SHAPES_SHOWN 10
#define LABELS_SHOWN 10

/* A small open-addressing count table keyed by 64-bit values; grows by
 * doubling, so its size follows the number of distinct keys (at most the
 * dataset's sample count). */
typedef struct count_tab {
  uint64_t *keys;
  uint64_t *counts; /* 0: empty entry */
  size_t cap;
  size_t used;
} count_tab;

static size_t hash64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return (size_t)k;
}

static int tab_add(count_tab *t, uint64_t key) {
  if ((t->used + 1) * 2 > t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 64;
    uint64_t *nk = calloc(ncap, sizeof *nk), *nc = calloc(ncap, sizeof *nc);
    if (!nk || !nc) {
      free(nk);
      free(nc);
      return -ENOMEM;
    }
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->counts[i])
        continue;
      size_t h = hash64(t->keys[i]) & (ncap - 1);
      while (nc[h])
        h = (h + 1) & (ncap - 1);
      nk[h] = t->keys[i];
      nc[h] = t->counts[i];
    }
    free(t->keys);
    free(t->counts);
    t->keys = nk;
    t->counts = nc;
    t->cap = ncap;
  }
  size_t h = hash64(key) & (t->cap - 1);
  while (t->counts[h] && t->keys[h] != key)
    h = (h + 1) & (t->cap - 1);
  if (!t->counts[h]) {
    t->keys[h] = key;
    t->used++;
  }
  t->counts[h]++;
  return 0;
}

typedef struct kv {
  uint64_t key;
  uint64_t count;
} kv;

/* The table's entries as an array (caller frees), sorted by cmp. */
static kv *tab_sorted(const count_tab *t,
                      int (*cmp)(const void *, const void *)) {
  kv *a = malloc((t->used ? t->used : 1) * sizeof *a);
  if (!a)
    return NULL;
  size_t n = 0;
  for (size_t i = 0; i < t->cap; i++)
    if (t->counts[i])
      a[n++] = (kv){t->keys[i], t->counts[i]};
  qsort(a, n, sizeof *a, cmp);
  return a;
}

static int by_count_desc(const void *pa, const void *pb) {
  const kv *a = pa, *b = pb;
  if (a->count != b->count)
    return a->count > b->count ? -1 : 1;
  return a->key < b->key ? -1 : a->key > b->key;
}

static int by_label(const void *pa, const void *pb) {
  int64_t a = (int64_t)((const kv *)pa)->key;
  int64_t b = (int64_t)((const kv *)pb)->key;
  return a < b ? -1 : a > b;
}

/* Shapes packed into a key: 16 bits each for height and width (dimensions
 * are at most 65535), then channels and dtype. */
static uint64_t shape_key(const gf_shape *s) {
  return ((uint64_t)s->height << 32) | ((uint64_t)s->width << 16) |
         ((uint64_t)(s->channels & 0xff) << 8) | (s->dtype & 0xff);
}

static gf_shape key_shape(uint64_t k) {
  return (gf_shape){(uint32_t)(k >> 32), (uint32_t)(k >> 16) & 0xffff,
                    (uint32_t)(k >> 8) & 0xff, (uint32_t)k & 0xff};
}

static const char *dtype_name(uint32_t d) {
  return d == GF_DTYPE_U8 ? "u8" : d == GF_DTYPE_U16 ? "u16" : "?";
}

static const char *base_name(const char *p) {
  const char *s = p ? strrchr(p, '/') : NULL;
  return s ? s + 1 : p ? p : "";
}

/* Sides are at most 65535 (uint16): per-value counts of height, width,
 * the shorter and the longer side give exact medians and a histogram. */
#define SIDES 65536u
#define SIZE_BUCKETS 8u

typedef struct side_stats {
  uint32_t min, median, max;
} side_stats;

typedef struct size_hist {
  uint64_t *h, *w, *shorter, *longer; /* [SIDES] each */
  side_stats hs, ws;
  uint32_t lo, width; /* buckets: [lo + k*width, lo + (k+1)*width) */
  uint32_t nb;
  uint64_t bshort[SIZE_BUCKETS], blong[SIZE_BUCKETS];
} size_hist;

static side_stats side_of(const uint64_t *c, uint64_t n) {
  side_stats r = {0, 0, 0};
  uint64_t seen = 0, mid = n ? (n - 1) / 2 : 0; /* the lower median */
  bool have_min = false, have_med = false;
  for (uint32_t v = 0; v < SIDES; v++) {
    if (!c[v])
      continue;
    if (!have_min) {
      r.min = v;
      have_min = true;
    }
    seen += c[v];
    if (!have_med && seen > mid) {
      r.median = v;
      have_med = true;
    }
    r.max = v;
  }
  return r;
}

/* Buckets of equal width over [shortest side, longest side]. */
static void size_buckets(size_hist *z, uint64_t n) {
  z->hs = side_of(z->h, n);
  z->ws = side_of(z->w, n);
  uint32_t lo = z->hs.min < z->ws.min ? z->hs.min : z->ws.min;
  uint32_t hi = z->hs.max > z->ws.max ? z->hs.max : z->ws.max;
  uint32_t span = hi - lo + 1;
  z->nb = span < SIZE_BUCKETS ? span : SIZE_BUCKETS;
  z->lo = lo;
  z->width = (span + z->nb - 1) / z->nb;
  z->nb = (span + z->width - 1) / z->width;
  for (uint32_t v = lo; v <= hi; v++) {
    uint32_t k = (v - lo) / z->width;
    z->bshort[k] += z->shorter[v];
    z->blong[k] += z->longer[v];
  }
}

static uint32_t bucket_hi(const size_hist *z, uint32_t k) {
  uint32_t hi = z->lo + (k + 1) * z->width - 1;
  uint32_t top = z->hs.max > z->ws.max ? z->hs.max : z->ws.max;
  return hi < top ? hi : top;
}

typedef struct stats {
  uint64_t codec_n[GF_CODEC_COUNT_];
  uint64_t codec_bytes[GF_CODEC_COUNT_];
  uint64_t stored, decoded, shard_bytes;
  count_tab shapes, labels;
  kv *shape_list, *label_list;
  uint64_t label_min_count, label_max_count;
  size_hist sizes;
} stats;

static void print_record_text(const gf_dataset *ds, const gf_sample_info *s) {
  printf("  %" PRIu64 ": %s offset %" PRIu64 " length %" PRIu64
         " %s %ux%ux%u %s label %" PRId64 " crc 0x%08x source %.*s\n",
         s->index, base_name(gf_dataset_shard_path(ds, s->shard)), s->offset,
         s->length,
         gf_codec_name((int)s->codec) ? gf_codec_name((int)s->codec) : "?",
         s->shape.height, s->shape.width, s->shape.channels,
         dtype_name(s->shape.dtype), s->label, s->checksum, (int)s->source_len,
         s->source ? s->source : "");
}

static void print_record_json(const gf_dataset *ds, const gf_sample_info *s,
                              bool last) {
  const char *cn = gf_codec_name((int)s->codec);
  printf("    {\"index\": %" PRIu64 ", \"shard\": %u, \"shard_file\": \"",
         s->index, s->shard);
  const char *sf = base_name(gf_dataset_shard_path(ds, s->shard));
  gfc_json_str(stdout, sf, strlen(sf));
  printf("\", \"offset\": %" PRIu64 ", \"length\": %" PRIu64
         ", \"codec\": \"%s\", \"height\": %u, \"width\": %u, "
         "\"channels\": %u, \"dtype\": \"%s\", \"label\": %" PRId64
         ", \"checksum\": %u, \"source\": \"",
         s->offset, s->length, cn ? cn : "?", s->shape.height, s->shape.width,
         s->shape.channels, dtype_name(s->shape.dtype), s->label, s->checksum);
  gfc_json_str(stdout, s->source ? s->source : "", s->source_len);
  printf("\"}%s\n", last ? "" : ",");
}

static void print_text(const gfc_inspect_opts *o, const gf_dataset *ds,
                       const stats *st) {
  char b1[32], b2[32], b3[32];
  uint64_t n = gf_dataset_count(ds);
  uint32_t nc = gf_dataset_num_classes(ds);
  char shown[1024];
  printf("dataset    %s\n",
         gfc_shown(o->dataset, &o->remote, shown, sizeof shown));
  printf("samples    %" PRIu64 "\n", n);
  printf("classes    %u", nc);
  for (uint32_t c = 0; c < nc && c < CLASSES_SHOWN; c++)
    printf("%s%s", c ? ", " : " (", gf_dataset_class_name(ds, c));
  printf("%s\n", nc > CLASSES_SHOWN ? ", ...)" : nc ? ")" : "");
  printf("shards     %u (%s)\n", gf_dataset_num_shards(ds),
         gfc_fmt_bytes(st->shard_bytes, b1, sizeof b1));
  printf("alignment  %u\n", gf_dataset_alignment(ds));
  printf("codecs    ");
  for (int c = 0; c < GF_CODEC_COUNT_; c++)
    if (st->codec_n[c])
      printf(" %s %" PRIu64 " (%s)", gf_codec_name(c), st->codec_n[c],
             gfc_fmt_bytes(st->codec_bytes[c], b2, sizeof b2));
  printf("\n");
  printf("stored     %s\n", gfc_fmt_bytes(st->stored, b1, sizeof b1));
  printf("decoded    %s (%.2fx stored)\n",
         gfc_fmt_bytes(st->decoded, b3, sizeof b3),
         st->stored ? (double)st->decoded / (double)st->stored : 0.0);
  printf("shapes     %zu distinct\n", st->shapes.used);
  for (size_t i = 0; i < st->shapes.used && i < SHAPES_SHOWN; i++) {
    gf_shape s = key_shape(st->shape_list[i].key);
    char dims[48];
    snprintf(dims, sizeof dims, "%ux%ux%u %s", s.height, s.width, s.channels,
             dtype_name(s.dtype));
    printf("  %-20s %" PRIu64 "\n", dims, st->shape_list[i].count);
  }
  if (st->shapes.used > SHAPES_SHOWN)
    printf("  ... %zu more\n", st->shapes.used - SHAPES_SHOWN);
  const size_hist *z = &st->sizes;
  printf("sizes      height %u / %u / %u, width %u / %u / %u "
         "(min / median / max)\n",
         z->hs.min, z->hs.median, z->hs.max, z->ws.min, z->ws.median,
         z->ws.max);
  if (z->hs.min != z->hs.max || z->ws.min != z->ws.max) {
    printf("  %-13s %10s %10s\n", "side", "shorter", "longer");
    for (uint32_t k = 0; k < z->nb; k++) {
      char r[32];
      snprintf(r, sizeof r, "%u-%u", z->lo + k * z->width, bucket_hi(z, k));
      printf("  %-13s %10" PRIu64 " %10" PRIu64 "\n", r, z->bshort[k],
             z->blong[k]);
    }
  }
  if (st->labels.used) {
    const kv *l = st->label_list;
    printf("labels     %zu distinct, %" PRId64 " to %" PRId64 ", %" PRIu64
           " to %" PRIu64 " samples each\n",
           st->labels.used, (int64_t)l[0].key,
           (int64_t)l[st->labels.used - 1].key, st->label_min_count,
           st->label_max_count);
    for (size_t i = 0; i < st->labels.used && i < LABELS_SHOWN; i++)
      printf("  %" PRId64 ": %" PRIu64 "\n", (int64_t)l[i].key, l[i].count);
    if (st->labels.used > LABELS_SHOWN)
      printf("  ... %zu more\n", st->labels.used - LABELS_SHOWN);
  }
}

static void print_json(const gfc_inspect_opts *o, const gf_dataset *ds,
                       const stats *st) {
  uint64_t n = gf_dataset_count(ds);
  uint32_t nc = gf_dataset_num_classes(ds);
  char shown[1024];
  gfc_shown(o->dataset, &o->remote, shown, sizeof shown);
  printf("{\n  \"dataset\": \"");
  gfc_json_str(stdout, shown, strlen(shown));
  printf("\",\n  \"samples\": %" PRIu64 ",\n", n);
  printf("  \"classes\": {\"count\": %u, \"names\": [", nc);
  for (uint32_t c = 0; c < nc && c < CLASSES_SHOWN; c++) {
    const char *name = gf_dataset_class_name(ds, c);
    printf("%s\"", c ? ", " : "");
    gfc_json_str(stdout, name, strlen(name));
    printf("\"");
  }
  printf("], \"names_truncated\": %s},\n",
         nc > CLASSES_SHOWN ? "true" : "false");
  printf("  \"shards\": {\"count\": %u, \"bytes\": %" PRIu64 "},\n",
         gf_dataset_num_shards(ds), st->shard_bytes);
  printf("  \"alignment\": %u,\n", gf_dataset_alignment(ds));
  printf("  \"codecs\": {");
  bool first = true;
  for (int c = 0; c < GF_CODEC_COUNT_; c++) {
    if (!st->codec_n[c])
      continue;
    printf("%s\"%s\": {\"samples\": %" PRIu64 ", \"stored_bytes\": %" PRIu64
           "}",
           first ? "" : ", ", gf_codec_name(c), st->codec_n[c],
           st->codec_bytes[c]);
    first = false;
  }
  printf("},\n");
  printf("  \"bytes\": {\"stored\": %" PRIu64 ", \"decoded\": %" PRIu64
         ", \"ratio\": %.4f},\n",
         st->stored, st->decoded,
         st->stored ? (double)st->decoded / (double)st->stored : 0.0);
  printf("  \"shapes\": {\"distinct\": %zu, \"top\": [", st->shapes.used);
  for (size_t i = 0; i < st->shapes.used && i < SHAPES_SHOWN; i++) {
    gf_shape s = key_shape(st->shape_list[i].key);
    printf("%s{\"height\": %u, \"width\": %u, \"channels\": %u, "
           "\"dtype\": \"%s\", \"count\": %" PRIu64 "}",
           i ? ", " : "", s.height, s.width, s.channels, dtype_name(s.dtype),
           st->shape_list[i].count);
  }
  printf("]},\n");
  const size_hist *z = &st->sizes;
  printf("  \"sizes\": {\"height\": {\"min\": %u, \"median\": %u, \"max\": %u}, "
         "\"width\": {\"min\": %u, \"median\": %u, \"max\": %u}, "
         "\"buckets\": [",
         z->hs.min, z->hs.median, z->hs.max, z->ws.min, z->ws.median,
         z->ws.max);
  for (uint32_t k = 0; k < z->nb; k++)
    printf("%s{\"lo\": %u, \"hi\": %u, \"shorter\": %" PRIu64
           ", \"longer\": %" PRIu64 "}",
           k ? ", " : "", z->lo + k * z->width, bucket_hi(z, k), z->bshort[k],
           z->blong[k]);
  printf("]},\n");
  printf("  \"labels\": {\"distinct\": %zu", st->labels.used);
  if (st->labels.used) {
    const kv *l = st->label_list;
    printf(", \"min\": %" PRId64 ", \"max\": %" PRId64
           ", \"min_count\": %" PRIu64 ", \"max_count\": %" PRIu64
           ", \"first\": [",
           (int64_t)l[0].key, (int64_t)l[st->labels.used - 1].key,
           st->label_min_count, st->label_max_count);
    for (size_t i = 0; i < st->labels.used && i < LABELS_SHOWN; i++)
      printf("%s{\"label\": %" PRId64 ", \"count\": %" PRIu64 "}",
             i ? ", " : "", (int64_t)l[i].key, l[i].count);
    printf("]");
  }
  printf("}");
}

int gfc_inspect(const gfc_inspect_opts *o) {
  if (gf_wds_spec_claims(o->dataset))
    return gfc_inspect_shards(o);
  int status = GFC_EXIT_FAIL;
  gf_dataset *ds = NULL;
  stats st;
  memset(&st, 0, sizeof st);
  int rc = gf_dataset_open_with(o->dataset, &o->remote, &ds);
  if (rc != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  uint64_t n = gf_dataset_count(ds);
  size_hist *z = &st.sizes;
  z->h = calloc(SIDES, sizeof *z->h);
  z->w = calloc(SIDES, sizeof *z->w);
  z->shorter = calloc(SIDES, sizeof *z->shorter);
  z->longer = calloc(SIDES, sizeof *z->longer);
  if (!z->h || !z->w || !z->shorter || !z->longer) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  for (uint32_t i = 0; i < gf_dataset_num_shards(ds); i++)
    st.shard_bytes += gf_dataset_shard_size(ds, i);
  /* Every record below: a remote index read whole, many reads at once,
   * rather than a page at a time. */
  if ((rc = gf_dataset_load_index(ds)) != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  for (uint64_t i = 0; i < n; i++) {
    gf_sample_info s;
    if ((rc = gf_dataset_sample_info(ds, i, &s)) != 0) {
      gfc_error_last(CMD, rc);
      char shown[1024];
      gfc_error(CMD,
                "the index has a bad record; 'gpufeed verify %s' checks "
                "every sample",
                gfc_shown(o->dataset, &o->remote, shown, sizeof shown));
      goto out;
    }
    if (s.codec < GF_CODEC_COUNT_) {
      st.codec_n[s.codec]++;
      st.codec_bytes[s.codec] += s.length;
    }
    st.stored += s.length;
    st.decoded += gf_shape_bytes(&s.shape);
    /* sample_info checked the shape against the limits: sides < SIDES. */
    uint32_t sh = s.shape.height & (SIDES - 1);
    uint32_t sw = s.shape.width & (SIDES - 1);
    z->h[sh]++;
    z->w[sw]++;
    z->shorter[sh < sw ? sh : sw]++;
    z->longer[sh < sw ? sw : sh]++;
    if (tab_add(&st.shapes, shape_key(&s.shape)) != 0 ||
        tab_add(&st.labels, (uint64_t)s.label) != 0) {
      gfc_error(CMD, "out of memory");
      goto out;
    }
  }
  size_buckets(z, n);
  st.shape_list = tab_sorted(&st.shapes, by_count_desc);
  st.label_list = tab_sorted(&st.labels, by_label);
  if (!st.shape_list || !st.label_list) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < st.labels.used; i++) {
    uint64_t c = st.label_list[i].count;
    if (i == 0 || c < st.label_min_count)
      st.label_min_count = c;
    if (c > st.label_max_count)
      st.label_max_count = c;
  }
  if (o->json)
    print_json(o, ds, &st);
  else
    print_text(o, ds, &st);
  uint64_t shown = o->samples < n ? o->samples : n;
  if (o->json && shown)
    printf(",\n  \"records\": [\n");
  else if (shown)
    printf("records (first %" PRIu64 ")\n", shown);
  for (uint64_t i = 0; i < shown; i++) {
    gf_sample_info s;
    if ((rc = gf_dataset_sample_info(ds, i, &s)) != 0)
      break; /* all were checked above */
    if (o->json)
      print_record_json(ds, &s, i + 1 == shown);
    else
      print_record_text(ds, &s);
  }
  if (o->json)
    printf(shown ? "  ]\n}\n" : "\n}\n");
  status = GFC_EXIT_OK;
out:
  free(st.sizes.h);
  free(st.sizes.w);
  free(st.sizes.shorter);
  free(st.sizes.longer);
  free(st.shapes.keys);
  free(st.shapes.counts);
  free(st.labels.keys);
  free(st.labels.counts);
  free(st.shape_list);
  free(st.label_list);
  gf_dataset_close(ds);
  return status;
}
