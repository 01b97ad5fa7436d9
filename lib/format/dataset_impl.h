/* The dataset reader's insides, shared by its two files: dataset.c (the
 * index: opening and checking it, its records, the accessors) and
 * dataset_shards.c (the shards: opening and checking each, at open or on
 * first use, several at once for a batch). Included only there. */
#ifndef GF_FORMAT_DATASET_IMPL_H
#define GF_FORMAT_DATASET_IMPL_H

#include "format/format.h"
#include "format/pages.h"
#include "io/storage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct gf_shard {
  /* Open, or NULL until first used (lazy shards). Its display name is the
   * shard's path in messages. */
  gf_object *_Atomic obj;
  const char *path;
  char *own_path; /* lazy shards: the path, before any open */
  uint64_t size;  /* from the shard table */
  bool opening;   /* lazy shards: a thread opens it (under mu) */
} gf_shard;

struct gf_dataset {
  gf_storage *st;
  bool own_st;
  char *index_path;
  const uint8_t *map; /* the whole index file, read-only (paged: the image,
                         valid where its pages are read) */
  size_t map_len;
  bool mapped;          /* map is an mmap of the file */
  gf_pages *pages;      /* no descriptors: the index read in pages */
  gf_object *index_obj; /* paged: kept open for the pages */
  uint32_t version;
  uint64_t count;
  uint32_t nshards;
  uint32_t nclasses;
  uint32_t alignment;
  uint64_t data_start;
  uint64_t dataset_id;
  uint64_t records_off;
  uint64_t names_off, names_size;
  uint32_t summary_size; /* version 2 */
  uint32_t records_crc, names_crc;
  const char **class_names; /* into map, each NUL-terminated */
  gf_shard *shards;
  bool lazy_shards;
  pthread_mutex_t mu; /* lazy shards' opening */
  pthread_cond_t cv;  /* an open ended */
  bool sync_init;
};

/* The handle's parts that change after open (shards opened on first use)
 * are written through this, under mu. */
static inline gf_dataset *gf_dataset__mut(const gf_dataset *ds) {
  return (gf_dataset *)ds;
}

/* The storage's words for the error it just recorded (its message), for
 * a message of ours that gives the context. */
static inline void gf_dataset__storage_why(char *buf, size_t cap) {
  gf_strlcpy(buf, gf_last_error()->message, cap);
}

/* Opens shard i and checks it against the shard table and the index
 * (FORMAT.md, "at open", step 6): *out on success, nothing left open on
 * failure. Touches nothing of ds but reads: any thread. */
int gf_dataset__open_shard(const gf_dataset *ds, uint32_t i, uint64_t want_size,
                           gf_object **out);
/* Shard i's object: open already, or opened now (lazy shards: by one
 * thread, others waiting for it; a failed open is tried again by the next
 * use). Returns 0 or the open's error, the shard named. */
int gf_dataset__shard_get(const gf_dataset *ds, uint32_t i, gf_object **out);

#endif
