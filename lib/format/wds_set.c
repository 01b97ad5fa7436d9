/* A WebDataset source's samples (wds_set.h): where each lies, the check
 * of its bytes against the index once read, its label, and the set's
 * fingerprint. (Opening: wds_set_open.c.) */
#include "format/wds_set_impl.h"

#include "format/format.h"
#include "format/tar_header.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- lookups ------------------------------------------------------------ */

uint64_t gf_wds_set_count(const gf_wds_set *s) { return s->all.count; }

void gf_wds_set_info_get(const gf_wds_set *s, gf_wds_set_info *out) {
  *out = s->info;
}

uint32_t gf_wds_set_shards(const gf_wds_set *s) { return s->nshards; }

const char *gf_wds_set_shard_name(const gf_wds_set *s, uint32_t i) {
  return i < s->nshards ? s->shards[i].name : NULL;
}

uint32_t gf_wds_set_shard_of(const gf_wds_set *s, uint64_t idx) {
  uint32_t lo = 0, hi = s->nshards;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (s->shards[mid].first <= idx)
      lo = mid;
    else
      hi = mid;
  }
  /* Shards without samples share their first with the next: skip them. */
  while (lo + 1 < s->nshards && s->shards[lo].count == 0 &&
         s->shards[lo + 1].first <= idx)
    lo++;
  return lo;
}

const char *gf_wds_set_key(const gf_wds_set *s, uint64_t idx) {
  return gf_wds_key(&s->all, idx);
}

const gf_wds_samples *gf_wds_set_samples(const gf_wds_set *s) {
  return &s->all;
}

uint32_t gf_wds_set_field_count(const gf_wds_set *s) { return s->fields.n; }

const char *gf_wds_set_field_name(const gf_wds_set *s, uint32_t i) {
  return i < s->fields.n ? s->fields.names[i] : NULL;
}

uint64_t gf_wds_set_field_bytes(const gf_wds_set *s) { return s->fields.bytes; }

/* Sample idx's member of asked field i (within field_bytes unless `any`),
 * or NULL. A sample holds a field once (a repeat fails it first). */
static const gf_wds_field *asked_member(const gf_wds_set *s, uint64_t idx,
                                        uint32_t i, bool any) {
  const gf_wds_sample *m = &s->all.samples[idx];
  if (s->field_ids[i] == UINT32_MAX)
    return NULL;
  for (uint32_t k = 0; k < m->count; k++) {
    const gf_wds_field *f = &s->all.fields[m->first + k];
    if (f->name == s->field_ids[i])
      return any || f->size <= s->fields.bytes ? f : NULL;
  }
  return NULL;
}

void gf_wds_set_name(const gf_wds_set *s, uint64_t idx, char *buf, size_t cap) {
  const shard *sh = &s->shards[gf_wds_set_shard_of(s, idx)];
  snprintf(buf, cap, "%s: sample '%s'", sh->obj->display,
           gf_wds_key(&s->all, idx));
}

/* Fails sample idx: `what` names the problem. */
static int bad_sample(const gf_wds_set *s, uint64_t idx, int code, uint64_t off,
                      const char *what) {
  const gf_wds_sample *m = &s->all.samples[idx];
  const shard *sh = &s->shards[gf_wds_set_shard_of(s, idx)];
  char fields[256] = "";
  size_t at = 0;
  for (uint32_t k = 0; k < m->count && at + 2 < sizeof fields; k++) {
    int w = snprintf(fields + at, sizeof fields - at, "%s%s", k ? ", " : "",
                     gf_wds_field_name(&s->all, &s->all.fields[m->first + k]));
    if (w < 0)
      break;
    at += (size_t)w;
  }
  return gf_fail(code, sh->obj->display, idx, off,
                 "sample '%s' (data from byte %llu; fields: %s): %s",
                 gf_wds_key(&s->all, idx), (unsigned long long)off, fields,
                 what);
}

int gf_wds_set_extent(const gf_wds_set *s, uint64_t idx, gf_wds_extent *out) {
  const gf_wds_sample *m = &s->all.samples[idx];
  const gf_wds_field *f = &s->all.fields[m->first];
  uint64_t at = m->count ? f[0].offset : 0;
  gf_wds_pick p;
  char why[400];
  if (gf_wds_rules_pick(&s->rules, &s->ids, &s->all, idx, &p, why, sizeof why) <
      0)
    return bad_sample(s, idx, GF_EBADSOURCE, at, why);
  int img = p.image, lab = p.label, codec = p.codec;
  uint64_t lo = f[img].offset, hi = f[img].offset + f[img].size;
  if (lab >= 0) {
    if (f[lab].offset < lo)
      lo = f[lab].offset;
    if (f[lab].offset + f[lab].size > hi)
      hi = f[lab].offset + f[lab].size;
  }
  /* The asked fields' members, adjacent in the shard: still one read.
   * One over field_bytes is left out (unpack fails the sample). */
  for (uint32_t i = 0; i < s->fields.n; i++) {
    const gf_wds_field *af = asked_member(s, idx, i, false);
    if (!af)
      continue;
    if (af->offset < lo)
      lo = af->offset;
    if (af->offset + af->size > hi)
      hi = af->offset + af->size;
  }
  lo -= GF_TAR_BLOCK; /* the first member's header (an index's offsets are
                         at least 512) */
  uint32_t sh = gf_wds_set_shard_of(s, idx);
  *out = (gf_wds_extent){.shard = sh,
                         .obj = s->shards[sh].obj,
                         .offset = lo,
                         .length = hi - lo,
                         .image_offset = f[img].offset - lo,
                         .image_length = f[img].size,
                         .codec = codec,
                         .has_label = lab >= 0,
                         .label_offset = lab >= 0 ? f[lab].offset - lo : 0,
                         .label_length = lab >= 0 ? f[lab].size : 0};
  const gf_wds_sum *sum =
      gf_wds_sums_find(s->shards[sh].sums, f[img].offset, f[img].size);
  if (sum) {
    out->has_crc = true;
    out->crc = sum->crc;
  }
  return 0;
}

/* Whether a tar header's name is the member's: key "." field, the field
 * compared without case (the set holds it lower-cased). Names of 100 bytes
 * or more are not compared (a GNU or PAX long name lies in an earlier
 * header, the ustar field holding a cut or made-up one). */
static bool same_name(const char *hdr, const char *key, const char *field) {
  size_t kl = strlen(key), fl = strlen(field);
  if (kl + 1 + fl >= 100 || strlen(hdr) >= 100)
    return true;
  if (strlen(hdr) != kl + 1 + fl || memcmp(hdr, key, kl) || hdr[kl] != '.')
    return false;
  for (size_t i = 0; i < fl; i++) {
    char c = hdr[kl + 1 + i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != field[i])
      return false;
  }
  return true;
}

/* The member f whose data lies at `off` in buf: its header must be the
 * block before, a regular file of its size and name. */
static int check_header(const gf_wds_set *s, uint64_t idx,
                        const gf_wds_extent *x, const uint8_t *buf,
                        uint64_t off, const gf_wds_field *f) {
  gf_tar_header h;
  const char *why = NULL;
  const char *key = gf_wds_key(&s->all, idx);
  const char *field = gf_wds_field_name(&s->all, f);
  if (off < GF_TAR_BLOCK || gf_tar_header_read(buf + off - GF_TAR_BLOCK, &h))
    why = "no valid tar header precedes it";
  else if (h.type != '0' && h.type != '\0' && h.type != '7')
    why = "the tar header before it is not a regular file's";
  else if (h.size != f->size && f->size < (1ull << 33))
    why = "the tar header before it gives another size";
  else if (!s->shards[x->shard].anonymous && !same_name(h.name, key, field))
    why = "the tar header before it names another member";
  if (!why)
    return 0;
  char what[600];
  snprintf(what, sizeof what,
           "the shard does not hold what its index says: member '%s.%s' of "
           "%llu bytes at byte %llu: %s (the shard changed since its index "
           "was written: `gpufeed index --force` rewrites it)",
           key, field, (unsigned long long)f->size,
           (unsigned long long)(x->offset + off), why);
  return bad_sample(s, idx, GF_ECORRUPT, x->offset + off, what);
}

/* Sample idx's member whose data lies at byte `at` of its shard. */
static const gf_wds_field *member_at(const gf_wds_set *s, uint64_t idx,
                                     uint64_t at) {
  const gf_wds_sample *m = &s->all.samples[idx];
  for (uint32_t k = 0; k < m->count; k++)
    if (s->all.fields[m->first + k].offset == at)
      return &s->all.fields[m->first + k];
  return &s->all.fields[m->first]; /* not reached: extent found it */
}

int gf_wds_set_unpack(const gf_wds_set *s, uint64_t idx, const uint8_t *buf,
                      uint64_t len, uint64_t *image_off, uint64_t *image_len,
                      int64_t *label, gf_wds_span *fields) {
  gf_wds_extent x;
  int rc = gf_wds_set_extent(s, idx, &x);
  if (rc < 0)
    return rc;
  if (len != x.length)
    return bad_sample(s, idx, GF_EINTERNAL, x.offset,
                      "the bytes given are not the sample's extent");
  const gf_wds_field *img = member_at(s, idx, x.offset + x.image_offset);
  if ((rc = check_header(s, idx, &x, buf, x.image_offset, img)) < 0)
    return rc;
  *label = -1;
  if (x.has_label) {
    const gf_wds_field *lf = member_at(s, idx, x.offset + x.label_offset);
    if ((rc = check_header(s, idx, &x, buf, x.label_offset, lf)) < 0)
      return rc;
    char why[300];
    if (gf_wds_rules_label(&s->rules, buf + x.label_offset, x.label_length,
                           label, why, sizeof why) < 0)
      return bad_sample(s, idx, GF_EBADSOURCE, x.offset + x.label_offset, why);
  }
  for (uint32_t i = 0; fields && i < s->fields.n; i++) {
    const gf_wds_field *af = asked_member(s, idx, i, true);
    fields[i] = (gf_wds_span){.offset = GF_NO_INDEX, .length = 0};
    if (!af)
      continue; /* absent, as webdataset leaves the key out */
    if (af->size > s->fields.bytes) {
      char what[300];
      snprintf(what, sizeof what,
               "field '%s' is %llu bytes, more than field_bytes (%llu): "
               "raise the shards option field_bytes",
               s->fields.names[i], (unsigned long long)af->size,
               (unsigned long long)s->fields.bytes);
      return bad_sample(s, idx, GF_ELIMIT, af->offset, what);
    }
    uint64_t at = af->offset - x.offset;
    if ((rc = check_header(s, idx, &x, buf, at, af)) < 0)
      return rc;
    fields[i] = (gf_wds_span){.offset = at, .length = af->size};
  }
  *image_off = x.image_offset;
  *image_len = x.image_length;
  return 0;
}

/* splitmix64's finalizer. */
static uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t z = h ^ v;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t mix_bytes(uint64_t h, const char *p, size_t n) {
  for (size_t o = 0; o < n; o += 8) {
    uint8_t w[8] = {0};
    memcpy(w, p + o, n - o < 8 ? n - o : 8);
    h = mix(h, gf_le64(w));
  }
  return mix(h, n);
}

uint64_t gf_wds_set_fingerprint(const gf_wds_set *s) {
  uint64_t h = mix(0x7764737368617264ull /* "wdsshard" */, s->nshards);
  for (uint32_t i = 0; i < s->nshards; i++) {
    h = mix_bytes(h, s->shards[i].name, strlen(s->shards[i].name));
    h = mix(h, s->shards[i].obj->size);
    h = mix(h, s->shards[i].count);
  }
  for (uint64_t i = 0; i < s->all.count; i++) {
    const gf_wds_sample *m = &s->all.samples[i];
    h = mix_bytes(h, s->all.keys + m->key, m->key_len);
    for (uint32_t k = 0; k < m->count; k++) {
      const gf_wds_field *f = &s->all.fields[m->first + k];
      h = mix(h, f->offset);
      h = mix(h, f->size ^ ((uint64_t)f->name << 48));
    }
  }
  return h;
}
