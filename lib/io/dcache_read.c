/* What the disk cache tier's synchronous read and its engine share
 * (io/dcache.h): serving a read from the entries, claiming what they do not
 * hold, storing what the inner storage gave. */
#include "io/dcache.h"

#include "common/fault.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool gf_dcache_cacheable(const gf_cached_object *o, uint64_t off,
                         uint64_t len) {
  return o->co && len && len <= GF_DCACHE_ENTRY_MAX && off <= o->base.size &&
         len <= o->base.size - off;
}

/* Logs a damaged entry's removal (each: damage is rare, and worth a
 * line). */
static void log_damaged(const gf_dcache_obj *co, uint64_t off, uint64_t len,
                        const char *why) {
  gf_log(GF_LOG_WARN,
         "disk cache: the entry of %s bytes [%llu, +%llu) is damaged (%s): "
         "removed, the bytes are read from the server",
         co->key.display, (unsigned long long)off, (unsigned long long)len,
         why);
}

/* Reads [a, b) of the object from entry r into dst. Returns 1 when it
 * did; 0 when it could not (a missing entry is dropped from the index, a
 * damaged one removed); -EAGAIN with nowait when the page cache does not
 * hold it all. */
static int read_piece(gf_dcache_store *cs, gf_dcache_obj *co, gf_dcache_range r,
                      uint64_t a, uint64_t b, uint8_t *dst, bool nowait) {
  char path[4300], why[256] = "";
  gf_dcache_entry_path(co->index.dir, r.off, r.len, "", path, sizeof path);
  int fd = gf_sys_open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
  int rc = fd;
  if (fd >= 0) {
    int64_t mtime;
    rc = gf_dcache_entry_read(fd, &co->key, r.off, r.len, a, b, dst, nowait,
                              &mtime, why, sizeof why);
    /* Touched at most once a GF_DCACHE_TOUCH_NS: the eviction's clock,
     * without a metadata write on every hit. */
    if (rc == 0 &&
        (time(NULL) - mtime) * 1000000000ll > (int64_t)GF_DCACHE_TOUCH_NS)
      futimens(fd, NULL);
    close(fd);
  }
  if (rc == 0)
    return 1;
  if (rc == -EAGAIN && nowait)
    return -EAGAIN;
  if (rc != -ENOENT) {
    if (!why[0])
      snprintf(why, sizeof why, "%s", gf_strerror(rc));
    if (gf_dcache_dir_remove(cs->dir, co->index.dir, r.off, r.len)) {
      cs->c.corrupt++;
      log_damaged(co, r.off, r.len, why);
    }
  }
  pthread_mutex_lock(&co->index.mu);
  gf_dcache_index_drop(&co->index, r.off, r.len);
  pthread_mutex_unlock(&co->index.mu);
  return 0;
}

void gf_dcache_serve(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                     uint64_t len, uint8_t *dst, uint64_t *gap_off,
                     uint64_t *gap_len) {
  const uint64_t a = off, b = off + len;
  gf_dcache_range pre[GF_DCACHE_PIECES], suf[GF_DCACHE_PIECES];
  for (int attempt = 0; attempt < 4; attempt++) {
    uint64_t pend, sstart = b;
    size_t ns = 0;
    pthread_mutex_lock(&co->index.mu);
    size_t np =
        gf_dcache_index_prefix(&co->index, a, b, pre, GF_DCACHE_PIECES, &pend);
    if (pend < b)
      ns = gf_dcache_index_suffix(&co->index, pend, b, suf, GF_DCACHE_PIECES,
                                  &sstart);
    pthread_mutex_unlock(&co->index.mu);
    bool ok = true;
    uint64_t cur = a;
    for (size_t i = 0; ok && i < np; i++) {
      uint64_t e =
          pre[i].off + pre[i].len < pend ? pre[i].off + pre[i].len : pend;
      ok = read_piece(cs, co, pre[i], cur, e, dst + (cur - a), false) == 1;
      cur = e;
    }
    cur = b;
    for (size_t i = 0; ok && i < ns; i++) {
      uint64_t s = suf[i].off > sstart ? suf[i].off : sstart;
      ok = read_piece(cs, co, suf[i], s, cur, dst + (s - a), false) == 1;
      cur = s;
    }
    if (!ok)
      continue; /* an entry was gone or damaged: look again */
    uint64_t served = (pend - a) + (b - sstart);
    if (pend >= sstart) {
      served = len;
      *gap_off = b;
      *gap_len = 0;
    } else {
      *gap_off = pend;
      *gap_len = sstart - pend;
    }
    cs->c.hit_bytes += served;
    return;
  }
  *gap_off = a;
  *gap_len = len;
}

bool gf_dcache_serve_now(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                         uint64_t len, uint8_t *dst) {
  gf_dcache_range pre[GF_DCACHE_PIECES];
  uint64_t end, cur = off;
  pthread_mutex_lock(&co->index.mu);
  size_t np = gf_dcache_index_prefix(&co->index, off, off + len, pre,
                                     GF_DCACHE_PIECES, &end);
  pthread_mutex_unlock(&co->index.mu);
  if (end < off + len)
    return false;
  for (size_t i = 0; i < np; i++) {
    uint64_t e = pre[i].off + pre[i].len < end ? pre[i].off + pre[i].len : end;
    if (read_piece(cs, co, pre[i], cur, e, dst + (cur - off), true) != 1)
      return false;
    cur = e;
  }
  cs->c.hits++;
  cs->c.hit_bytes += len;
  return true;
}

/* Whether the index covers [off, off + len), refreshed from the folder
 * first (the entry of exactly that range; with `listing`, the folder's
 * listing too: other processes' entries under other ranges). */
static bool covered_now(gf_dcache_obj *co, uint64_t off, uint64_t len,
                        bool listing) {
  gf_dcache_range r[GF_DCACHE_PIECES];
  uint64_t end;
  pthread_mutex_lock(&co->index.mu);
  gf_dcache_index_refresh(&co->index, off, len, listing);
  gf_dcache_index_prefix(&co->index, off, off + len, r, GF_DCACHE_PIECES, &end);
  pthread_mutex_unlock(&co->index.mu);
  return end >= off + len;
}

/* Writing stops for a while after an error: logged once a process and
 * kind of error. */
static void write_off(gf_dcache_store *cs, int err) {
  static atomic_flag logged[3] = {ATOMIC_FLAG_INIT, ATOMIC_FLAG_INIT,
                                  ATOMIC_FLAG_INIT};
  cs->c.write_errors++;
  cs->write_off_errno = -err;
  cs->write_off_until = gf_dcache_now_ns() + GF_DCACHE_WRITE_OFF_NS;
  int kind = err == -ENOSPC || err == -EDQUOT                   ? 0
             : err == -EROFS || err == -EACCES || err == -EPERM ? 1
                                                                : 2;
  if (!atomic_flag_test_and_set(&logged[kind]))
    gf_log(GF_LOG_WARN,
           "disk cache: cannot write entries in %s (%s%s): reads go to the "
           "server, and entries are written again in %llu s (logged once)",
           gf_dcache_dir_root(cs->dir), gf_strerror(err),
           kind == 0   ? ": the disk is full"
           : kind == 1 ? ": the folder is not writable"
                       : "",
           (unsigned long long)(GF_DCACHE_WRITE_OFF_NS / 1000000000ull));
}

int gf_dcache_claim(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                    uint64_t len, bool *covered) {
  *covered = false;
  /* Another process may hold it already under other ranges. */
  if (covered_now(co, off, len, true)) {
    *covered = true;
    return GF_CLAIM_HELD;
  }
  if (gf_dcache_now_ns() < cs->write_off_until)
    return -EROFS; /* nothing would be written: no claim */
  int rc = gf_dcache_dir_claim(cs->dir, co->index.dir, off, len);
  if (rc < 0) /* the folder takes no file now: no entry either */
    write_off(cs, rc);
  /* Written and unclaimed between the miss and the claim: not again. */
  if (rc == GF_CLAIM_MINE && covered_now(co, off, len, false)) {
    gf_dcache_dir_unclaim(cs->dir, co->index.dir, off, len);
    *covered = true;
    return GF_CLAIM_HELD;
  }
  return rc;
}

bool gf_dcache_wait_over(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                         uint64_t len, uint64_t deadline, bool *expired) {
  *expired = false;
  if (covered_now(co, off, len, true))
    return true;
  if (!gf_dcache_dir_claim_held(cs->dir, co->index.dir, off, len))
    return true; /* its owner finished (or failed, or died) */
  if (gf_dcache_now_ns() >= deadline) {
    *expired = true;
    return true;
  }
  return false;
}

void gf_dcache_unclaim(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                       uint64_t len) {
  gf_dcache_dir_unclaim(cs->dir, co->index.dir, off, len);
}

void gf_dcache_store_entry(gf_dcache_store *cs, gf_dcache_obj *co, uint64_t off,
                           uint64_t len, const void *buf, bool claimed) {
  cs->c.fetched_bytes += len;
  if (gf_dcache_now_ns() >= cs->write_off_until) {
    uint8_t hdr[GF_DCACHE_HEADER_BYTES];
    char tmp[4300];
    int fd;
    gf_dcache_entry_header(&co->key, off, buf, len, hdr);
    int rc = gf_dcache_dir_begin(cs->dir, co->index.dir, off, len, &fd, tmp,
                                 sizeof tmp);
    if (rc == 0) {
      /* No fsync: a reader checks the size and every CRC, so an entry
       * torn by a power loss is found and fetched again; a cache needs no
       * durability, and a flush an entry would hold every write to the
       * disk's flush latency. */
      rc = gf_dcache_entry_write(fd, hdr, buf, len);
      if (close(fd) < 0 && rc == 0)
        rc = -errno;
      if (rc < 0)
        gf_dcache_dir_abort(cs->dir, tmp, len);
      else
        rc = gf_dcache_dir_commit(cs->dir, co->index.dir, off, len, tmp);
      if (rc == 0) {
        cs->c.writes++;
        cs->c.written_bytes += len;
        pthread_mutex_lock(&co->index.mu);
        gf_dcache_index_add(&co->index, off, len);
        pthread_mutex_unlock(&co->index.mu);
      }
    }
    if (rc < 0)
      write_off(cs, rc);
  }
  /* After the rename: a waiter that sees the claim gone finds the entry. */
  if (claimed)
    gf_dcache_dir_unclaim(cs->dir, co->index.dir, off, len);
}
