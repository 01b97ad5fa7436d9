/* Opening the shards of a WebDataset source (wds_set.h): the options
 * read, each shard opened in parallel from its sidecar index or a scan of
 * its headers, the shards' samples merged in order. */
#include "format/wds_set_impl.h"

#include "format/format.h"
#include "format/tar_scan.h"
#include "format/wds_index.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- options ------------------------------------------------------------ */

static int parse_opts(gf_wds_set *s, const gf_wds_set_opts *o) {
  int rc = gf_wds_rules_parse(&s->rules, o->image_fields, o->label);
  if (rc < 0 ||
      (rc = gf_wds_fields_parse(&s->fields, o->fields, o->field_bytes)) < 0)
    return rc;
  if (o->index > GF_WDS_INDEX_SCAN)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "shards: index mode %u is not one of auto (0), require "
                   "(1), scan (2)",
                   o->index);
  return 0;
}

/* ---- one shard ---------------------------------------------------------- */

typedef struct job {
  gf_wds_set *s;
  const gf_wds_set_opts *o;
  atomic_uint next;
  atomic_bool stop;
} job;

static int add_member(void *ctx, const gf_tar_member *m) {
  shard *sh = ctx;
  return gf_wds_group_add(&sh->part, sh->obj->display, m->path, m->data_offset,
                          m->size);
}

/* A compressed file's magic, named; NULL when none. */
static const char *compressed_magic(const uint8_t *b, int64_t n) {
  if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
    return "gzip";
  if (n >= 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd)
    return "zstd";
  if (n >= 6 && !memcmp(b,
                        "\xfd"
                        "7zXZ",
                        5))
    return "xz";
  if (n >= 3 && !memcmp(b, "BZh", 3))
    return "bzip2";
  return NULL;
}

static int scan_shard(shard *sh) {
  uint8_t head[8];
  int64_t n = gf_object_read_upto(sh->obj, head, 0, sizeof head);
  if (n < 0)
    return (int)n;
  const char *z = compressed_magic(head, n);
  if (z)
    return gf_fail(GF_EUNSUPPORTED, sh->obj->display, GF_NO_INDEX, 0,
                   "a %s-compressed file, not a tar shard: gpufeed reads a "
                   "shard's samples at their offsets, which compression "
                   "hides; decompress the shards to plain .tar files",
                   z);
  gf_wds_samples_free(&sh->part);
  return gf_tar_scan_object_counted(sh->obj, add_member, sh, &sh->skipped);
}

/* The samples of an index, grouped by webdataset's rules from the members'
 * names (v1.2; v1.1 has none: "<sample>.<ext>" stands in). */
static int from_index(shard *sh, const gf_wds_index *ix) {
  char nm[64];
  for (uint64_t i = 0; i < ix->sample_count; i++)
    for (uint64_t e = ix->first[i]; e < ix->first[i + 1]; e++) {
      const gf_wds_index_entry *en = &ix->entries[e];
      const char *path = en->filename;
      char *tmp = NULL;
      if (!path) {
        size_t need = strlen(en->ext) + 32;
        tmp = need <= sizeof nm ? nm : malloc(need);
        if (!tmp)
          return -ENOMEM;
        snprintf(tmp, need, "%llu.%s", (unsigned long long)i, en->ext);
        path = tmp;
      }
      int rc = gf_wds_group_add(&sh->part, sh->obj->display, path, en->offset,
                                en->size);
      if (tmp != nm)
        free(tmp);
      if (rc < 0)
        return rc;
    }
  return 0;
}

/* Reads the shard's sidecar named with ext (".idx", ".sums": within the
 * options' index_bytes) into *text (the caller's), its display name into
 * where. Returns 0 or gf_object_slurp's code (-ENOENT: there is none). */
static int read_sidecar(job *j, shard *sh, const char *ext, const char *what,
                        char **text, uint64_t *len, char *where, size_t cap) {
  char name[GF_WDS_NAME_BYTES];
  int rc = gf_wds_sidecar_named(sh->name, ext, what, name, sizeof name);
  if (rc < 0) {
    gf_strlcpy(where, sh->obj->display, cap); /* the shard, named */
    return rc;
  }
  uint64_t max =
      j->o->index_bytes ? j->o->index_bytes : GF_WDS_INDEX_BYTES_DEFAULT;
  rc = gf_object_slurp(j->s->st, name, max, text, len);
  gf_storage_name_display(j->s->st, name, where, cap);
  return rc;
}

/* The shard's verification sidecar, where it has one that matches it
 * (a warning names one that does not: its images are then decoded on the
 * CPU, as they would be without it). Returns 0, or an error reading it
 * other than its absence. */
static int load_sums(job *j, shard *sh) {
  char where[GF_WDS_NAME_BYTES], *text = NULL;
  uint64_t len = 0;
  int rc = read_sidecar(j, sh, ".sums", "sums file", &text, &len, where,
                        sizeof where);
  /* Optional: absent is the rule. S3 answers 403 for a missing key to a
   * reader without s3:ListBucket, so a refusal means absent too. */
  if (rc == -ENOENT || rc == -EACCES) {
    gf_error_clear();
    return 0;
  }
  if (rc < 0)
    return gf_fail_context(rc, where, GF_NO_INDEX,
                           "reading the shard's verification sums");
  rc = gf_wds_sums_parse(where, text, (size_t)len, sh->obj->size, &sh->sums);
  free(text);
  if (rc == -ENOMEM)
    return rc;
  if (rc < 0) {
    gf_log(GF_LOG_WARN,
           "%s: the verification sums do not match the shard, whose images "
           "are decoded on the CPU (`gpufeed index --verify --force` writes "
           "them again): %s",
           where, gf_last_error()->message);
    sh->sums_refused = 1;
    gf_error_clear();
  }
  return 0;
}

static int load_members(job *j, shard *sh) {
  int rc = gf_object_open(j->s->st, sh->name, 0, &sh->obj);
  if (rc < 0)
    return rc;
  if (j->o->index != GF_WDS_INDEX_SCAN) {
    char where[GF_WDS_NAME_BYTES], *text = NULL;
    uint64_t len = 0;
    rc = read_sidecar(j, sh, ".idx", "index", &text, &len, where, sizeof where);
    if (rc == -ENOENT) {
      if (j->o->index == GF_WDS_INDEX_REQUIRE)
        return gf_fail(GF_EBADSOURCE, sh->obj->display, GF_NO_INDEX,
                       GF_NO_INDEX,
                       "the shard has no index (%s), which the options "
                       "require: `gpufeed index` writes one",
                       where);
      gf_error_clear();
    } else if (rc < 0) {
      return gf_fail_context(rc, where, GF_NO_INDEX,
                             "reading the shard's index");
    } else {
      gf_wds_index *ix = NULL;
      rc = gf_wds_index_parse(where, text, (size_t)len, sh->obj->size, &ix);
      free(text);
      if (rc == 0)
        rc = from_index(sh, ix);
      gf_wds_index_free(ix);
      if (rc == 0) {
        sh->indexed = 1;
        return 0;
      }
      if (rc == -ENOMEM || j->o->index == GF_WDS_INDEX_REQUIRE)
        return gf_fail_context(rc, NULL, GF_NO_INDEX,
                               "the shard's index does not match it");
      gf_log(GF_LOG_WARN,
             "%s: the index does not match its shard, which is scanned "
             "instead (`gpufeed index --force` rewrites it): %s",
             where, gf_last_error()->message);
      sh->refused = 1;
      gf_error_clear();
    }
  }
  return scan_shard(sh);
}

static int load_shard(job *j, shard *sh) {
  int rc = load_members(j, sh);
  if (rc == 0 && j->o->index != GF_WDS_INDEX_SCAN)
    rc = load_sums(j, sh);
  return rc;
}

static void *open_main(void *arg) {
  job *j = arg;
  for (;;) {
    if (atomic_load(&j->stop))
      break;
    unsigned i = atomic_fetch_add(&j->next, 1);
    if (i >= j->s->nshards)
      break;
    shard *sh = &j->s->shards[i];
    gf_error_clear();
    sh->rc = load_shard(j, sh);
    if (sh->rc < 0) {
      sh->err = *gf_last_error();
      atomic_store(&j->stop, true);
    }
  }
  return NULL;
}

static uint32_t default_threads(const gf_wds_set *s, uint32_t n) {
  uint32_t t;
  if (gf_storage_caps(s->st) & GF_STORAGE_REMOTE) {
    t = 128; /* round trips, not cores: HEAD and index GET each */
  } else {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    t = c > 0 ? (uint32_t)(c > 64 ? 64 : c) : 1;
  }
  return t < n ? t : n;
}

int gf_wds_set_open(gf_storage *st, char *const *names, uint32_t n,
                    const gf_wds_set_opts *opts, gf_wds_set **out) {
  *out = NULL;
  gf_wds_set_opts none = {0};
  if (!opts)
    opts = &none;
  if (n == 0)
    return gf_fail(-EINVAL, gf_storage_display(st), GF_NO_INDEX, GF_NO_INDEX,
                   "no shards");
  gf_wds_set *s = calloc(1, sizeof *s);
  if (!s)
    return -ENOMEM;
  s->st = st;
  int rc = parse_opts(s, opts);
  if (rc < 0) {
    free(s);
    return rc;
  }
  s->shards = calloc(n, sizeof *s->shards);
  if (!s->shards) {
    free(s);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for %u shards", n);
  }
  s->nshards = n;
  for (uint32_t i = 0; i < n && rc == 0; i++)
    if (!(s->shards[i].name = strdup(names[i])))
      rc = -ENOMEM;
  if (rc < 0) {
    gf_wds_set_close(s);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for %u shards", n);
  }
  job j = {.s = s, .o = opts};
  atomic_init(&j.next, 0);
  atomic_init(&j.stop, false);
  uint32_t threads = opts->threads ? opts->threads : default_threads(s, n);
  if (threads > n)
    threads = n;
  pthread_t *tid = calloc(threads, sizeof *tid);
  uint32_t started = 1;
  if (!tid) {
    gf_wds_set_close(s);
    return -ENOMEM;
  }
  gf_error_info saved = *gf_last_error();
  for (; started < threads; started++)
    if (pthread_create(&tid[started], NULL, open_main, &j) != 0)
      break;
  open_main(&j);
  for (uint32_t i = 1; i < started; i++)
    pthread_join(tid[i], NULL);
  free(tid);
  gf_error_restore(&saved);
  /* The first shard (in order) that failed; those after a failure may
   * not have been tried. */
  for (uint32_t i = 0; i < n; i++)
    if (s->shards[i].rc < 0) {
      rc = s->shards[i].rc;
      gf_error_restore(&s->shards[i].err);
      gf_wds_set_close(s);
      return rc;
    }
  /* Merged in order. */
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    shard *sh = &s->shards[i];
    sh->first = s->all.count;
    sh->count = sh->part.count;
    rc = gf_wds_samples_append(&s->all, &sh->part, sh->obj->display);
    s->info.members += sh->part.field_count;
    s->info.skipped += sh->skipped;
    s->info.shard_bytes += sh->obj->size;
    s->info.indexed += sh->indexed;
    s->info.scanned += !sh->indexed;
    s->info.index_refused += sh->refused;
    s->info.verified += sh->sums != NULL;
    s->info.sums_refused += sh->sums_refused;
    gf_wds_samples_free(&sh->part);
  }
  if (rc == 0)
    gf_wds_rules_ids(&s->rules, &s->all, &s->ids);
  if (rc == 0)
    for (uint32_t i = 0; i < s->fields.n; i++)
      s->field_ids[i] = gf_wds_name_id(&s->all, s->fields.names[i]);
  if (rc < 0) {
    gf_wds_set_close(s);
    return rc;
  }
  s->info.shards = n;
  s->info.samples = s->all.count;
  s->info.dropped = s->all.dropped;
  if (s->info.scanned && (gf_storage_caps(st) & GF_STORAGE_REMOTE))
    gf_log(GF_LOG_WARN,
           "%s: %u of the %u shards have no index and were scanned over the "
           "network, which reads them through; `gpufeed index` writes "
           "indexes beside them",
           gf_storage_display(st), s->info.scanned, n);
  for (uint64_t i = 0; i < s->all.count; i++) {
    gf_wds_extent x;
    if (gf_wds_set_extent(s, i, &x) < 0)
      s->info.no_image++;
    const gf_wds_sample *m = &s->all.samples[i];
    bool over = false;
    for (uint32_t k = 0; k < m->count; k++)
      for (uint32_t f = 0; f < s->fields.n; f++)
        over |= s->all.fields[m->first + k].name == s->field_ids[f] &&
                s->all.fields[m->first + k].size > s->fields.bytes;
    s->info.field_over += over;
  }
  gf_error_clear();
  *out = s;
  return 0;
}

void gf_wds_set_close(gf_wds_set *s) {
  if (!s)
    return;
  for (uint32_t i = 0; i < s->nshards; i++) {
    gf_object_close(s->shards[i].obj);
    gf_wds_sums_free(s->shards[i].sums);
    gf_wds_samples_free(&s->shards[i].part);
    free(s->shards[i].name);
  }
  free(s->shards);
  gf_wds_samples_free(&s->all);
  free(s);
}
