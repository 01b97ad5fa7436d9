/* `gpufeed inspect SHARDS`: what a source of WebDataset tar shards holds
 * (docs/SHARDS.md): its shards, how each was read (index or scan), its
 * samples and members, the fields and how many samples have each, what
 * was skipped or is no sample; with --samples N, the first N samples
 * each read and checked as a loader reads it: key, fields, label, image
 * field, size and CRC-32 (zlib's, as Python's zlib.crc32), and the fields
 * asked with --fields (their bytes, or absent). */
#include "cli.h"

#include "format/wds_set.h"
#include "format/wds_spec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CMD "inspect"

typedef struct one {
  int rc;
  int64_t label;
  uint64_t image_bytes;
  uint32_t crc;
  const char *image_field;
  uint8_t *buf; /* the extent read (one_free), the fields in it */
  gf_wds_span fields[GF_FIELDS_MAX];
} one;

static void one_free(one *r) {
  free(r->buf);
  r->buf = NULL;
}

/* A JSON string, quoted. */
static void jstr(const char *s, size_t len) {
  putchar('"');
  gfc_json_str(stdout, s, len);
  putchar('"');
}

/* Reads sample i's extent and takes it apart. */
static void read_one(const gf_wds_set *set, uint64_t i, one *r) {
  memset(r, 0, sizeof *r);
  r->label = -1;
  gf_wds_extent x;
  r->rc = gf_wds_set_extent(set, i, &x);
  if (r->rc < 0)
    return;
  uint8_t *buf = malloc(x.length ? x.length : 1);
  if (!buf) {
    r->rc = -ENOMEM;
    return;
  }
  uint64_t io, il;
  r->rc = gf_object_read(x.obj, buf, x.offset, x.length);
  if (r->rc == 0)
    r->rc = gf_wds_set_unpack(set, i, buf, x.length, &io, &il, &r->label,
                              r->fields);
  if (r->rc == 0) {
    r->image_bytes = il;
    uLong c = crc32(0L, Z_NULL, 0);
    for (uint64_t at = 0; at < il;) {
      uInt n = il - at > (1u << 30) ? (1u << 30) : (uInt)(il - at);
      c = crc32(c, buf + io + at, n);
      at += n;
    }
    r->crc = (uint32_t)c;
    const gf_wds_samples *all = gf_wds_set_samples(set);
    const gf_wds_sample *m = &all->samples[i];
    for (uint32_t k = 0; k < m->count; k++)
      if (all->fields[m->first + k].offset == x.offset + x.image_offset)
        r->image_field = gf_wds_field_name(all, &all->fields[m->first + k]);
  }
  r->buf = buf;
}

/* The asked fields of a sample read: JSON strings (bytes that are not
 * UTF-8 escaped as gfc_json_str does) or null; in text, each cut to 60
 * bytes, control bytes as '?'. */
static void print_asked(const gf_wds_set *set, const one *r, bool json) {
  uint32_t n = gf_wds_set_field_count(set);
  for (uint32_t f = 0; f < n; f++) {
    const char *name = gf_wds_set_field_name(set, f);
    const gf_wds_span *sp = &r->fields[f];
    bool has = sp->offset != GF_NO_INDEX;
    const char *p = has ? (const char *)r->buf + sp->offset : NULL;
    if (json) {
      printf("%s", f ? ", " : "");
      jstr(name, strlen(name));
      printf(": ");
      if (has)
        jstr(p, (size_t)sp->length);
      else
        printf("null");
      continue;
    }
    if (!has) {
      printf("  %s absent", name);
      continue;
    }
    uint64_t shown = sp->length < 60 ? sp->length : 60;
    printf("  %s \"", name);
    for (uint64_t k = 0; k < shown; k++)
      putchar((unsigned char)p[k] >= 0x20 && p[k] != 0x7f ? p[k] : '?');
    printf("%s\" (%" PRIu64 " bytes)", sp->length > shown ? "..." : "",
           sp->length);
  }
}

static void print_fields(const gf_wds_samples *all, uint64_t i, bool json) {
  const gf_wds_sample *m = &all->samples[i];
  for (uint32_t k = 0; k < m->count; k++) {
    const char *f = gf_wds_field_name(all, &all->fields[m->first + k]);
    if (json) {
      printf("%s", k ? ", " : "");
      jstr(f, strlen(f));
    } else {
      printf("%s%s", k ? "," : "", f);
    }
  }
}

int gfc_inspect_shards(const gfc_inspect_opts *o) {
  char *root = NULL, **names = NULL;
  uint32_t n = 0;
  gf_storage *st = NULL;
  gf_wds_set *set = NULL;
  int status = GFC_EXIT_FAIL;
  int rc = gf_wds_spec_parse(o->dataset, 0, &root, &names, &n);
  if (rc == 0)
    rc = gf_storage_open(root, &o->remote, &st);
  gf_wds_set_opts wo = {.image_fields = o->shards.image_fields,
                        .label = o->shards.label,
                        .index = o->shards.index,
                        .threads = o->shards.threads,
                        .index_bytes = o->shards.index_bytes,
                        .fields = o->shards.fields,
                        .field_bytes = o->shards.field_bytes};
  if (rc == 0)
    rc = gf_wds_set_open(st, names, n, &wo, &set);
  if (rc != 0) {
    gfc_error_last(CMD, rc);
    goto out;
  }
  gf_wds_set_info in;
  gf_wds_set_info_get(set, &in);
  const gf_wds_samples *all = gf_wds_set_samples(set);
  /* Samples holding each field. */
  uint64_t *has = calloc(all->name_count ? all->name_count : 1, sizeof *has);
  if (!has) {
    gfc_error(CMD, "out of memory");
    goto out;
  }
  for (uint64_t i = 0; i < all->count; i++)
    for (uint32_t k = 0; k < all->samples[i].count; k++)
      has[all->fields[all->samples[i].first + k].name]++;
  char shown[4200];
  gfc_shown(o->dataset, &o->remote, shown, sizeof shown);
  uint64_t listed = o->samples < in.samples ? o->samples : in.samples;
  if (o->json) {
    printf("{\"source\": ");
    jstr(shown, strlen(shown));
    printf(", \"kind\": \"shards\", \"shards\": %u, \"indexed\": %u, "
           "\"scanned\": %u, \"index_refused\": %u, \"verified\": %u, "
           "\"sums_refused\": %u, \"samples\": %" PRIu64
           ", \"members\": %" PRIu64 ", \"skipped_members\": %" PRIu64
           ", \"dropped_members\": %" PRIu64 ", \"not_samples\": %" PRIu64
           ", \"shard_bytes\": %" PRIu64 ", \"fields\": {",
           in.shards, in.indexed, in.scanned, in.index_refused, in.verified,
           in.sums_refused, in.samples, in.members, in.skipped, in.dropped,
           in.no_image, in.shard_bytes);
    for (uint32_t f = 0; f < all->name_count; f++) {
      printf("%s", f ? ", " : "");
      jstr(all->names[f], strlen(all->names[f]));
      printf(": %" PRIu64, has[f]);
    }
    printf("}");
    if (o->samples) {
      printf(", \"sample_list\": [");
      for (uint64_t i = 0; i < listed; i++) {
        one r;
        read_one(set, i, &r);
        const char *key = gf_wds_key(all, i);
        printf("%s{\"index\": %" PRIu64 ", \"shard\": ", i ? ", " : "", i);
        const char *sn =
            gf_wds_set_shard_name(set, gf_wds_set_shard_of(set, i));
        jstr(sn, strlen(sn));
        printf(", \"key\": ");
        jstr(key, strlen(key));
        printf(", \"fields\": [");
        print_fields(all, i, true);
        printf("]");
        if (r.rc == 0) {
          printf(", \"label\": %" PRId64 ", \"image_field\": ", r.label);
          jstr(r.image_field ? r.image_field : "",
               r.image_field ? strlen(r.image_field) : 0);
          printf(", \"image_bytes\": %" PRIu64 ", \"image_crc32\": %u",
                 r.image_bytes, r.crc);
          if (gf_wds_set_field_count(set)) {
            printf(", \"asked\": {");
            print_asked(set, &r, true);
            printf("}");
          }
          printf("}");
        } else {
          const char *e = gf_last_error()->message;
          printf(", \"error\": ");
          jstr(e, strlen(e));
          printf("}");
        }
        one_free(&r);
      }
      printf("]");
    }
    printf("}\n");
  } else {
    printf("shards     %s\n", shown);
    printf("kind       WebDataset tar shards: %u (%u indexed, %u scanned%s; "
           "%u verified%s), %" PRIu64 " bytes\n",
           in.shards, in.indexed, in.scanned,
           in.index_refused ? ", some indexes refused" : "", in.verified,
           in.sums_refused ? ", some sums refused" : "", in.shard_bytes);
    printf("samples    %" PRIu64 " (%" PRIu64 " members)\n", in.samples,
           in.members);
    printf("fields    ");
    for (uint32_t f = 0; f < all->name_count; f++)
      printf(" %s (%" PRIu64 ")", all->names[f], has[f]);
    printf("\n");
    if (in.skipped || in.dropped)
      printf("left out   %" PRIu64 " members not regular files (links, "
             "folders, devices, sparse files), %" PRIu64
             " without a key and field or webdataset metadata\n",
             in.skipped, in.dropped);
    if (in.field_over)
      printf("too large  %" PRIu64 " samples with an asked field over "
             "--field-bytes: a loader fails or skips them\n",
             in.field_over);
    if (in.no_image)
      printf("not samples %" PRIu64 " (no image field or two, a field "
             "twice, no label field): a loader fails or skips them\n",
             in.no_image);
    for (uint64_t i = 0; i < listed; i++) {
      one r;
      read_one(set, i, &r);
      printf("%8" PRIu64 "  %s  %s  [", i,
             gf_wds_set_shard_name(set, gf_wds_set_shard_of(set, i)),
             gf_wds_key(all, i));
      print_fields(all, i, false);
      if (r.rc == 0) {
        printf("]  label %" PRId64 "  %s %" PRIu64 " bytes crc32 %08x", r.label,
               r.image_field ? r.image_field : "?", r.image_bytes, r.crc);
        print_asked(set, &r, false);
        printf("\n");
      } else {
        printf("]  error: %s\n", gf_last_error()->message);
      }
      one_free(&r);
    }
  }
  free(has);
  status = GFC_EXIT_OK;
out:
  gf_wds_set_close(set);
  gf_storage_close(st);
  gf_wds_spec_free(root, names, n);
  return status;
}
