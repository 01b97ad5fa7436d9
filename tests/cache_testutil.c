/* The disk cache tier's tests' helpers (cache_testutil.h). */
#include "cache_testutil.h"

#include "pipeline/loader_impl.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t walk(const char *dir, int depth, cache_census *c,
                     int (*fn)(void *, const char *), void *ctx, bool *stop) {
  uint64_t n = 0;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  struct dirent *e;
  while (!*stop && (e = readdir(d))) {
    if (e->d_name[0] == '.' || !strcmp(e->d_name, "state"))
      continue;
    char path[4600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (depth < 2) {
      n += walk(path, depth + 1, c, fn, ctx, stop);
      continue;
    }
    uint64_t off, len, start;
    int pid;
    int kind = gf_dcache_name_parse(e->d_name, &off, &len, &pid, &start);
    if (kind == GF_DCACHE_NAME_ENTRY) {
      n++;
      if (c) {
        c->entries++;
        c->charge += gf_dcache_charge(len);
      }
      if (fn && fn(ctx, path))
        *stop = true;
    } else if (kind == GF_DCACHE_NAME_TMP && c) {
      c->tmps++;
    } else if (kind == GF_DCACHE_NAME_CLAIM && c) {
      c->claims++;
    }
  }
  closedir(d);
  return n;
}

void cache_census_take(const char *cache_dir, cache_census *out) {
  memset(out, 0, sizeof *out);
  char root[4200];
  snprintf(root, sizeof root, "%s/%s", cache_dir, GF_DCACHE_FOLDER);
  bool stop = false;
  walk(root, 0, out, NULL, NULL, &stop);
}

uint64_t cache_each_entry(const char *cache_dir,
                          int (*fn)(void *ctx, const char *path), void *ctx) {
  char root[4200];
  snprintf(root, sizeof root, "%s/%s", cache_dir, GF_DCACHE_FOLDER);
  bool stop = false;
  return walk(root, 0, NULL, fn, ctx, &stop);
}

void cache_rmrf(const char *path) {
  struct stat sb;
  if (lstat(path, &sb) < 0)
    return;
  if (S_ISDIR(sb.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
          continue;
        char sub[4600];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        cache_rmrf(sub);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

gf_storage *cache_loader_storage(gf_loader *l) {
  return gf_source_storage(l->src);
}
