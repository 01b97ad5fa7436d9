/* The sizes each versioned struct of the API has been published with, and
 * the check every call that takes one makes (common.h). */
#include "common/common.h"

#include <stddef.h> /* offsetof */
#include <stdio.h>
#include <string.h>

/* Every size a header has published for the struct, oldest first. Each
 * struct at version 1 has one size, this build's sizeof. A struct that
 * grew (gf_loader_stats: version 2 the JPEG counters, version 3 the GPU
 * decoder's) keeps each older size as offsetof(T, the first field the
 * next version added) and appends sizeof(T): callers built with any of
 * those headers are accepted, and fields past a caller's struct_size take
 * their defaults. */
#define GF_MAX_VERSIONS 4
typedef struct published {
  const char *name;
  uint32_t sizes[GF_MAX_VERSIONS]; /* 0: no such version */
} published;

static const published table[] = {
    {"gf_decode_opts", {sizeof(gf_decode_opts)}},
    {"gf_loader_config", {sizeof(gf_loader_config)}},
    {"gf_loader_stats",
     {offsetof(gf_loader_stats, jpeg_decoded),
      offsetof(gf_loader_stats, jpeg_gpu_backend),
      offsetof(gf_loader_stats, remote), sizeof(gf_loader_stats)}},
    {"gf_device_pool_config", {sizeof(gf_device_pool_config)}},
    {"gf_device_pool_stats", {sizeof(gf_device_pool_stats)}},
    {"gf_remote_config", {sizeof(gf_remote_config)}},
    {"gf_shards_config", {sizeof(gf_shards_config)}},
};

/* gf_shards_config's fields and field_bytes were taken from its reserved
 * words: its one published size is unchanged. */
_Static_assert(sizeof(void *) != 8 || sizeof(gf_shards_config) == 72,
               "gf_shards_config changed size");

static const published *find(const char *what) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, what) == 0)
      return &table[i];
  return NULL;
}

int gf_check_struct_size(uint32_t given, size_t known, const char *what) {
  const published *p = find(what);
  if (!p) {
    /* An internal options struct (lib/ only): any size from the size
     * field up to this build's. */
    if (given < sizeof(uint32_t) || given > known)
      return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                     "%s: struct_size %u is not valid for this build (it "
                     "knows %zu bytes); initialise it with its _INIT macro",
                     what, given, known);
    return 0;
  }
  char list[96];
  size_t n = 0;
  list[0] = '\0';
  for (int v = 0; v < GF_MAX_VERSIONS && p->sizes[v]; v++) {
    if (given == p->sizes[v])
      return 0;
    int w = snprintf(list + n, sizeof list - n, "%s%u (version %d)",
                     v ? ", " : "", p->sizes[v], v + 1);
    if (w > 0 && (size_t)w < sizeof list - n)
      n += (size_t)w;
  }
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "%s: struct_size %u is not a size this struct was "
                 "published with (accepted: %s); initialise it with its "
                 "_INIT macro from the header gpufeed was built with",
                 what, given, list);
}
