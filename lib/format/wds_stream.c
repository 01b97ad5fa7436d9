/* One WebDataset shard read front to back (wds_stream.h). */
#include "format/wds_stream.h"

#include <stdio.h>
#include <string.h>

/* A taken member of the sample being read: its number in the sample and
 * where its bytes lie in the caller's buffer. */
typedef struct taken {
  uint32_t k;
  uint64_t at, len;
} taken;

typedef struct reader {
  const char *shard;
  gf_tar_read_fn pull;
  void *pull_ctx;
  const gf_wds_stream_opts *o;
  gf_wds_streamed_fn fn;
  void *ctx;
  gf_wds_samples t; /* the sample being read (at most one more) */
  taken tk[GF_WDS_IMAGE_FIELDS_MAX + 1 + GF_FIELDS_MAX];
  uint32_t ntk;
  uint64_t used;
  /* A taken member that did not fit: its field and size, and the bound
   * it broke (an asked field's, or the buffer's). */
  char over_field[64];
  uint64_t over_size, over_bound;
  bool over_asked;
  uint64_t ordinal;
  gf_wds_stream_counts n;
} reader;

/* The fields of sample 0, for messages. */
static void field_list(const gf_wds_samples *t, char *buf, size_t cap) {
  const gf_wds_sample *m = &t->samples[0];
  size_t at = 0;
  buf[0] = '\0';
  for (uint32_t k = 0; k < m->count && at + 2 < cap; k++) {
    int w = snprintf(buf + at, cap - at, "%s%s", k ? ", " : "",
                     gf_wds_field_name(t, &t->fields[m->first + k]));
    if (w < 0)
      break;
    at += (size_t)w;
  }
}

static const taken *taken_of(const reader *r, int k) {
  for (uint32_t i = 0; i < r->ntk; i++)
    if ((int)r->tk[i].k == k)
      return &r->tk[i];
  return NULL;
}

/* Where sample 0's asked fields lie in the buffer. */
static void put_fields(const reader *r, gf_wds_streamed *out) {
  const gf_wds_fields *fl = r->o->fields;
  for (uint32_t i = 0; fl && i < fl->n; i++)
    out->field_len[i] = GF_NO_INDEX;
  const gf_wds_sample *m = &r->t.samples[0];
  for (uint32_t k = 0; fl && k < m->count; k++) {
    int i = gf_wds_fields_find(
        fl, gf_wds_field_name(&r->t, &r->t.fields[m->first + k]));
    const taken *t = i >= 0 ? taken_of(r, (int)k) : NULL;
    if (t) {
      out->field[i] = r->o->buf + t->at;
      out->field_len[i] = t->len;
    }
  }
}

/* Hands sample 0 on. */
static int emit(reader *r) {
  const gf_wds_samples *t = &r->t;
  const gf_wds_sample *m = &t->samples[0];
  uint64_t off = m->count ? t->fields[m->first].offset : 0;
  gf_wds_streamed out = {
      .key = gf_wds_key(t, 0), .ordinal = r->ordinal++, .offset = off};
  char why[400] = "";
  int code = 0;
  gf_wds_rule_ids ids;
  gf_wds_rules_ids(r->o->rules, t, &ids);
  gf_wds_pick p;
  if (r->over_field[0] && r->over_asked) {
    code = GF_ELIMIT;
    snprintf(why, sizeof why,
             "field '%s' is %llu bytes, more than field_bytes (%llu): raise "
             "the shards option field_bytes",
             r->over_field, (unsigned long long)r->over_size,
             (unsigned long long)r->over_bound);
  } else if (r->over_field[0]) {
    code = GF_ELIMIT;
    snprintf(why, sizeof why,
             "its '%s' member of %llu bytes does not fit (the members a "
             "sample hands on may hold %llu bytes)",
             r->over_field, (unsigned long long)r->over_size,
             (unsigned long long)r->over_bound);
  } else if ((code = gf_wds_rules_pick(r->o->rules, &ids, t, 0, &p, why,
                                       sizeof why)) == 0) {
    const taken *img = taken_of(r, p.image);
    const taken *lab = p.label >= 0 ? taken_of(r, p.label) : NULL;
    out.label = -1;
    if (!img || (p.label >= 0 && !lab)) {
      code = GF_EINTERNAL;
      snprintf(why, sizeof why, "a member it needs was not kept");
    } else if (lab)
      code = gf_wds_rules_label(r->o->rules, r->o->buf + lab->at, lab->len,
                                &out.label, why, sizeof why);
    if (code == 0) {
      out.image = r->o->buf + img->at;
      out.image_len = img->len;
      out.codec = p.codec;
      put_fields(r, &out);
    }
  }
  if (code < 0) {
    char fields[256];
    field_list(t, fields, sizeof fields);
    out.rc = gf_fail(code, r->shard, GF_NO_INDEX, off,
                     "sample '%s' (data from byte %llu; fields: %s): %s",
                     out.key, (unsigned long long)off, fields, why);
    out.label = 0;
    r->n.bad++;
  }
  r->n.samples++;
  int rc = r->fn(r->ctx, &out);
  r->ntk = 0;
  r->used = 0;
  r->over_field[0] = '\0';
  return rc;
}

/* Whether field name id of t is one the rules take or the caller asks
 * for; *bound: the most bytes it may hold. */
static bool wanted(const reader *r, uint32_t id, uint64_t *bound, bool *asked) {
  const gf_wds_rules *ru = r->o->rules;
  const char *name = r->t.names[id];
  *bound = r->o->max_bytes;
  *asked = false;
  if (r->o->fields && gf_wds_fields_find(r->o->fields, name) >= 0) {
    *asked = true;
    *bound = r->o->fields->bytes;
    return true;
  }
  for (uint32_t i = 0; i < ru->n_image; i++)
    if (!strcmp(name, gf_wds_rules_image(ru, i)))
      return true;
  return ru->label_mode != GF_WDS_LABEL_NONE && !strcmp(name, ru->label_name);
}

static int on_member(void *ctx, const gf_tar_member *mb) {
  reader *r = ctx;
  uint64_t had = r->t.count, fields = r->t.field_count;
  int rc =
      gf_wds_group_add(&r->t, r->shard, mb->path, mb->data_offset, mb->size);
  if (rc < 0)
    return rc;
  bool added = r->t.field_count > fields;
  if (r->t.count > had && had) {
    /* A new key: the sample before is whole. Its members go; the new
     * sample's first member becomes member 0 of sample 0. */
    gf_wds_sample last = r->t.samples[r->t.count - 1];
    r->t.count--; /* emit sees sample 0 alone */
    rc = emit(r);
    r->t.count++;
    r->t.samples[r->t.count - 1] = last;
    gf_wds_samples_keep_last(&r->t);
    if (rc)
      return rc;
  }
  if (!added)
    return 0; /* dropped, or a field twice: nothing to take */
  const gf_wds_sample *m = &r->t.samples[r->t.count - 1];
  const gf_wds_field *f = &r->t.fields[m->first + m->count - 1];
  uint64_t bound;
  bool asked;
  if (!wanted(r, f->name, &bound, &asked) || r->over_field[0] ||
      r->ntk == sizeof r->tk / sizeof r->tk[0])
    return 0;
  if (mb->size > bound || mb->size > r->o->max_bytes - r->used) {
    gf_strlcpy(r->over_field, r->t.names[f->name], sizeof r->over_field);
    r->over_size = mb->size;
    r->over_asked = asked && mb->size > bound;
    r->over_bound = r->over_asked ? bound : r->o->max_bytes;
    return 0;
  }
  if (mb->size) {
    int64_t got =
        r->pull(r->pull_ctx, r->o->buf + r->used, mb->data_offset, mb->size);
    if (got < 0)
      return (int)got;
    if ((uint64_t)got != mb->size)
      return gf_fail(GF_ETRUNCATED, r->shard, GF_NO_INDEX,
                     mb->data_offset + (uint64_t)got,
                     "the shard ends inside member '%s' at byte %llu", mb->path,
                     (unsigned long long)(mb->data_offset + (uint64_t)got));
  }
  r->tk[r->ntk++] = (taken){.k = m->count - 1, .at = r->used, .len = mb->size};
  r->used += mb->size;
  return 0;
}

int gf_wds_stream_shard(const char *shard, uint64_t size, gf_tar_read_fn pull,
                        void *pull_ctx, const gf_wds_stream_opts *o,
                        gf_wds_streamed_fn fn, void *ctx,
                        gf_wds_stream_counts *counts) {
  reader r = {.shard = shard ? shard : "(tar shard)",
              .pull = pull,
              .pull_ctx = pull_ctx,
              .o = o,
              .fn = fn,
              .ctx = ctx};
  uint64_t skipped = 0;
  int rc = gf_tar_scan_counted(r.shard, size, pull, pull_ctx, on_member, &r,
                               &skipped);
  if (rc == 0 && r.t.count)
    rc = emit(&r);
  r.n.skipped = skipped;
  r.n.dropped = r.t.dropped;
  gf_wds_samples_free(&r.t);
  if (counts)
    *counts = r.n;
  return rc;
}
