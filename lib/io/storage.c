/* The storage registry (one line a storage) and the calls every storage
 * shares: choosing the storage of a location, names for messages,
 * whole-range reads. */
#include "io/storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* The storages, asked in order whether they serve a location; the local
 * file system last: it serves what no scheme claims. */
static const gf_storage_ops *const storages[] = {
    &gf_storage_s3,
    &gf_storage_http,
    &gf_storage_local,
};

/* Defaults of gf_remote_config (gpufeed.h says why each). */
#define GF_REMOTE_ATTEMPTS 5u
#define GF_REMOTE_RETRY_MS 60000u
#define GF_REMOTE_CONNECT_MS 10000u
#define GF_REMOTE_STALL_MS 15000u
#define GF_REMOTE_FETCH_REQUESTS 1024u
#define GF_REMOTE_FETCH_BYTES (256ull << 20)
#define GF_REMOTE_CACHE_BYTES (64ull << 30)

static int remote_bad(const char *field, const char *why) {
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "remote config: %s %s", field, why);
}

int gf_remote_resolve(const gf_remote_config *in, gf_remote_config *out) {
  *out = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
  if (in) {
    int rc =
        gf_check_struct_size(in->struct_size, sizeof *in, "gf_remote_config");
    if (rc < 0)
      return rc;
    memcpy(out, in, in->struct_size);
    out->struct_size = sizeof *out;
    for (size_t i = 0; i < sizeof out->reserved / sizeof out->reserved[0]; i++)
      if (out->reserved[i])
        return remote_bad("reserved", "fields must be zero");
  }
  if (out->tls_no_verify > 1)
    return remote_bad("tls_no_verify", "is neither 0 nor 1");
  if (out->max_attempts > 100)
    return remote_bad("max_attempts", "is above 100");
  if (out->max_connections > 4096)
    return remote_bad("max_connections", "is above 4096");
  if (out->fetch_requests > 65536)
    return remote_bad("fetch_requests", "is above 65536");
  if (out->fetch_threads > 64)
    return remote_bad("fetch_threads", "is above 64");
  if (out->reserved32)
    return remote_bad("reserved32", "must be zero");
  if (!out->max_attempts)
    out->max_attempts = GF_REMOTE_ATTEMPTS;
  if (!out->retry_ms)
    out->retry_ms = GF_REMOTE_RETRY_MS;
  if (!out->connect_timeout_ms)
    out->connect_timeout_ms = GF_REMOTE_CONNECT_MS;
  if (!out->stall_ms)
    out->stall_ms = GF_REMOTE_STALL_MS;
  if (!out->fetch_requests)
    out->fetch_requests = GF_REMOTE_FETCH_REQUESTS;
  /* HTTP/1.1 carries one request at a time a connection: as many as the
   * reads in flight, so that fetch_requests is what is on the wire; but
   * at most half the descriptors the process may open (ulimit -n), so
   * that a loader never runs out of them. */
  if (!out->max_connections) {
    uint32_t m = out->fetch_requests < 4096 ? out->fetch_requests : 4096;
    struct rlimit fds;
    if (getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur != RLIM_INFINITY &&
        fds.rlim_cur / 2 < m)
      m = fds.rlim_cur / 2 > 16 ? (uint32_t)(fds.rlim_cur / 2) : 16;
    out->max_connections = m;
  }
  if (!out->fetch_bytes)
    out->fetch_bytes = GF_REMOTE_FETCH_BYTES;
  if (out->cache_dir && !out->cache_dir[0])
    out->cache_dir = NULL;
  if (out->cache_dir && !out->cache_dir_bytes)
    out->cache_dir_bytes = GF_REMOTE_CACHE_BYTES;
  return 0;
}

#ifdef GPUFEED_TESTING
/* Test builds only: storages a test registers, asked before the others
 * (a test's own scheme: a local folder that acts remote, say). */
static const gf_storage_ops *test_storages[4];

int gf_storage_register_test(const gf_storage_ops *ops) {
  for (size_t i = 0; i < sizeof test_storages / sizeof test_storages[0]; i++)
    if (!test_storages[i] || test_storages[i] == ops) {
      test_storages[i] = ops;
      return 0;
    }
  return -ENOSPC;
}
#endif

int gf_storage_open(const char *location, const gf_remote_config *remote,
                    gf_storage **out) {
  *out = NULL;
  if (!location || !location[0])
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "no location given (a folder path or a URL)");
  gf_remote_config rc;
  int err = gf_remote_resolve(remote, &rc);
  if (err < 0)
    return err;
  const gf_storage_ops *ops = NULL;
#ifdef GPUFEED_TESTING
  for (size_t i = 0; i < sizeof test_storages / sizeof test_storages[0]; i++)
    if (!ops && test_storages[i] && test_storages[i]->claims(location))
      ops = test_storages[i];
#endif
  for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
    if (!ops && storages[i]->claims(location))
      ops = storages[i];
  if (ops) {
    err = ops->open(location, &rc, out);
    /* A remote storage with cache_dir set reads through the disk cache
     * tier. */
    if (err == 0 && (err = gf_storage_cache_wrap(out, &rc)) < 0) {
      gf_storage_close(*out);
      *out = NULL;
    }
    return err;
  }
  /* Only the scheme is named: the rest of a URL may hold a secret. */
  const char *sep = strstr(location, "://");
  int n = sep ? (int)(sep - location) : 0;
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "no storage serves %.*s:// locations (this build reads "
                 "local paths and http:// and https:// URLs)",
                 n > 32 ? 32 : n, location);
}

int gf_location_display(const char *location, const gf_remote_config *remote,
                        char *buf, size_t cap) {
  if (!buf || !cap)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_location_display: no buffer");
  buf[0] = '\0';
  if (!location)
    return 0;
  for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
    if (storages[i]->claims(location)) {
      if (storages[i]->display)
        storages[i]->display(location, remote, buf, cap);
      else
        gf_location_redact(location, buf, cap);
      return 0;
    }
  gf_location_redact(location, buf, cap);
  return 0;
}

void gf_storage_close(gf_storage *s) {
  if (s)
    s->ops->close(s);
}

char *gf_storage_name_display(const gf_storage *s, const char *name, char *buf,
                              size_t cap) {
  if (!name || !name[0])
    snprintf(buf, cap, "%s", s->display);
  else
    snprintf(buf, cap, "%s/%s", s->display, name);
  return buf;
}

void gf_storage_counters_get(gf_storage *s, gf_storage_counters *out) {
  memset(out, 0, sizeof *out);
  if (s->ops->counters)
    s->ops->counters(s, out);
}

void gf_storage_describe(gf_storage *s, char *buf, size_t cap) {
  if (s->ops->describe)
    s->ops->describe(s, buf, cap);
  else
    snprintf(buf, cap, "%s", s->ops->name);
}

int gf_storage_stat(gf_storage *s, const char *name, bool follow,
                    gf_stat *out) {
  memset(out, 0, sizeof *out);
  return s->ops->stat(s, name, follow, out);
}

int gf_storage_list(gf_storage *s, const char *dir, gf_list_fn fn, void *ctx) {
  if (!(s->ops->caps & GF_STORAGE_LIST)) {
    char where[1024];
    return gf_fail(-ENOTSUP,
                   gf_storage_name_display(s, dir, where, sizeof where),
                   GF_NO_INDEX, GF_NO_INDEX, "%s storage cannot list folders",
                   s->ops->name);
  }
  return s->ops->list(s, dir, fn, ctx);
}

int gf_storage_resolve(gf_storage *s, const char *name, gf_stat *out,
                       bool *inside, char *target, size_t cap) {
  memset(out, 0, sizeof *out);
  *inside = false;
  if (cap)
    target[0] = '\0';
  if (!(s->ops->caps & GF_STORAGE_LINKS))
    return gf_fail(-ENOTSUP, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "%s storage has no links", s->ops->name);
  return s->ops->resolve(s, name, out, inside, target, cap);
}

int gf_object_open(gf_storage *s, const char *name, uint32_t flags,
                   gf_object **out) {
  *out = NULL;
  return s->ops->obj_open(s, name, flags, out);
}

int gf_object_open_known(gf_storage *s, const char *name, const gf_stat *known,
                         uint32_t flags, gf_object **out) {
  *out = NULL;
  if (!s->ops->obj_open_known || !known || known->type != GF_ENTRY_FILE)
    return s->ops->obj_open(s, name, flags, out);
  return s->ops->obj_open_known(s, name, known, flags, out);
}

void gf_storage_list_done(gf_storage *s) {
  if (s && s->ops->list_done)
    s->ops->list_done(s);
}

int gf_object_open_path(const char *location, uint32_t flags, gf_object **out) {
  *out = NULL;
  char *dir, *base;
  int rc = gf_location_split(location, &dir, &base);
  if (rc < 0)
    return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX, "%s",
                   rc == -ENOMEM ? "out of memory"
                                 : "a file's location ends with '/'");
  gf_storage *s;
  rc = gf_storage_open(dir, NULL, &s);
  if (rc == 0) {
    rc = gf_object_open(s, base, flags, out);
    if (rc == 0)
      (*out)->owns_storage = true;
    else
      gf_storage_close(s);
  }
  free(dir);
  free(base);
  return rc;
}

void gf_object_close(gf_object *o) {
  if (!o)
    return;
  gf_storage *s = o->owns_storage ? o->st : NULL;
  o->st->ops->obj_close(o);
  gf_storage_close(s);
}

int gf_object_read(gf_object *o, void *buf, uint64_t off, uint64_t len) {
  int64_t n = gf_object_read_upto(o, buf, off, len);
  if (n < 0)
    return (int)n;
  if ((uint64_t)n < len)
    return gf_fail(GF_ETRUNCATED, o->display, GF_NO_INDEX, off + (uint64_t)n,
                   "the object ended after %llu of the %llu bytes asked at "
                   "offset %llu",
                   (unsigned long long)n, (unsigned long long)len,
                   (unsigned long long)off);
  return 0;
}

/* gf_object_stream where the storage cannot stream: reads of
 * GF_STREAM_CHUNK bytes into one buffer, each handed to sink. */
static int64_t stream_by_reads(gf_object *o, uint64_t off, uint64_t len,
                               gf_stream_sink sink, void *ctx) {
  size_t cap = len < GF_STREAM_CHUNK ? (size_t)len : GF_STREAM_CHUNK;
  uint8_t *buf = malloc(cap);
  if (!buf)
    return gf_fail(-ENOMEM, o->display, GF_NO_INDEX, off,
                   "out of memory for a %zu-byte stream buffer", cap);
  uint64_t done = 0;
  int64_t rc = 0;
  while (done < len) {
    uint64_t want = len - done < cap ? len - done : cap;
    int64_t n = gf_object_read_upto(o, buf, off + done, want);
    if (n < 0) {
      rc = n;
      break;
    }
    /* obj_read is short only where the object ends: it was cut since it
     * was opened (len was cut at its size then). The caller is told, as
     * a count short of len would mean that sink stopped. */
    if ((uint64_t)n < want) {
      rc = gf_fail(
          GF_ETRUNCATED, o->display, GF_NO_INDEX, off + done + (uint64_t)n,
          "the object ended after %llu of the %llu bytes streamed "
          "from offset %llu (it was %llu bytes at open)",
          (unsigned long long)(done + (uint64_t)n), (unsigned long long)len,
          (unsigned long long)off, (unsigned long long)o->size);
      break;
    }
    int r = sink(ctx, buf, (size_t)n);
    if (r < 0) {
      rc = r;
      break;
    }
    done += (uint64_t)n;
    if (r > 0)
      break;
  }
  free(buf);
  return rc < 0 ? rc : (int64_t)done;
}

int64_t gf_object_stream(gf_object *o, uint64_t off, uint64_t len,
                         gf_stream_sink sink, void *ctx) {
  if (off >= o->size || !len)
    return 0;
  if (len > o->size - off)
    len = o->size - off;
  if (o->st->ops->obj_stream)
    return o->st->ops->obj_stream(o, off, len, sink, ctx);
  return stream_by_reads(o, off, len, sink, ctx);
}

int gf_object_slurp(gf_storage *s, const char *name, uint64_t max, char **buf,
                    uint64_t *len) {
  *buf = NULL;
  *len = 0;
  if (s->ops->slurp) {
    int r = s->ops->slurp(s, name, max, buf, len);
    if (r <= 0)
      return r;
  }
  gf_object *o;
  int rc = gf_object_open(s, name, 0, &o);
  if (rc < 0)
    return rc;
  if (o->size > max) {
    rc = gf_fail(GF_ELIMIT, o->display, GF_NO_INDEX, GF_NO_INDEX,
                 "%llu bytes, beyond the %llu this file may hold",
                 (unsigned long long)o->size, (unsigned long long)max);
    gf_object_close(o);
    return rc;
  }
  char *b = malloc(o->size + 1);
  if (!b) {
    gf_object_close(o);
    return gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory for a %llu-byte file",
                   (unsigned long long)o->size);
  }
  int64_t n = gf_object_read_upto(o, b, 0, o->size);
  gf_object_close(o);
  if (n < 0) {
    free(b);
    return (int)n;
  }
  b[n] = '\0';
  *buf = b;
  *len = (uint64_t)n;
  return 0;
}

int gf_location_split(const char *path, char **dir, char **base) {
  *dir = *base = NULL;
  const char *slash = strrchr(path, '/');
  const char *scheme = strstr(path, "://");
  if (scheme && slash && slash <= scheme + 2)
    slash = NULL; /* "http://host" has no folder part */
  if (slash && !slash[1])
    return -EINVAL;
  if (!slash) {
    if (scheme)
      return -EINVAL;
    *dir = strdup(".");
    *base = strdup(path);
  } else {
    *dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
    *base = strdup(slash + 1);
  }
  if (!*dir || !*base) {
    free(*dir);
    free(*base);
    *dir = *base = NULL;
    return -ENOMEM;
  }
  return 0;
}
