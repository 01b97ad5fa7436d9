/* The disk cache tier's tests' helpers (cache_testutil.h). */
#include "cache_testutil.h"

#include "io/io.h"
#include "pipeline/loader_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h> /* flock: the tier's lock */
#include <sys/stat.h>
#include <sys/wait.h>
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
      c->charge += gf_dcache_charge(len);
    } else if (kind == GF_DCACHE_NAME_CLAIM && c) {
      c->claims++;
    }
  }
  closedir(d);
  return n;
}

void cache_census_take(const char *cache_dir, cache_census *out) {
  memset(out, 0, sizeof *out);
  char root[4200], state[4300];
  snprintf(root, sizeof root, "%s/%s", cache_dir, GF_DCACHE_FOLDER);
  snprintf(state, sizeof state, "%s/state", root);
  /* Under the tier's lock: every change of what the folder holds is made
   * under it, so the walk sees no rename half done (a listing during a
   * rename may show the file under both names). */
  int fd = open(state, O_RDWR | O_CLOEXEC);
  if (fd >= 0)
    while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
      ;
  bool stop = false;
  walk(root, 0, out, NULL, NULL, &stop);
  if (fd >= 0)
    close(fd);
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

void cache_object_dir(const char *cache_dir, const gf_object *o, char *buf,
                      size_t cap) {
  uint64_t h = gf_dcache_key_hash(o->display, o->version, o->size);
  snprintf(buf, cap, "%s/%s/%02x/%016llx", cache_dir, GF_DCACHE_FOLDER,
           (unsigned)(h >> 56), (unsigned long long)h);
}

void cache_entry_file(const char *cache_dir, const gf_object *o, uint64_t off,
                      uint64_t len, char *buf, size_t cap) {
  char dir[4300];
  cache_object_dir(cache_dir, o, dir, sizeof dir);
  gf_dcache_entry_path(dir, off, len, "", buf, cap);
}

int64_t cache_read_engine(gf_storage *st, const gf_object *o, uint64_t off,
                          uint64_t len, void *buf) {
  gf_reader_opts ro = GF_READER_OPTS_INIT;
  ro.storage = st;
  gf_reader *r;
  int rc = gf_reader_create(&ro, &r);
  if (rc < 0)
    return rc;
  gf_read_req q = {
      .obj = o, .offset = off, .length = len, .buf = buf, .user_data = 7};
  int64_t res = gf_reader_submit(r, &q, 1);
  if (res == 0) {
    gf_read_done d;
    int n = gf_reader_wait(r, &d, 1, 1);
    res = n < 0 ? n : n == 1 && d.user_data == 7 ? d.result : GF_EINTERNAL;
  }
  gf_reader_destroy(r);
  return res;
}

int cache_dead_pid(void) {
  pid_t p = fork();
  if (p == 0)
    _exit(0);
  int st;
  waitpid(p, &st, 0);
  return (int)p;
}
