/* The storage registry (one line a storage) and the calls every storage
 * shares: choosing the storage of a location, names for messages,
 * whole-range reads. */
#include "io/storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The storages, asked in order whether they serve a location; the local
 * file system last: it serves what no scheme claims. */
static const gf_storage_ops *const storages[] = {
    &gf_storage_local,
};

int gf_storage_open(const char *location, gf_storage **out) {
  *out = NULL;
  if (!location || !location[0])
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "no location given (a folder path or a URL)");
  for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
    if (storages[i]->claims(location))
      return storages[i]->open(location, out);
  /* Only the scheme is named: the rest of a URL may hold a secret. */
  const char *sep = strstr(location, "://");
  int n = sep ? (int)(sep - location) : 0;
  return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                 "no storage serves %.*s:// locations (this build reads "
                 "local paths)",
                 n > 32 ? 32 : n, location);
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

int gf_object_open_path(const char *location, uint32_t flags, gf_object **out) {
  *out = NULL;
  char *dir, *base;
  int rc = gf_location_split(location, &dir, &base);
  if (rc < 0)
    return gf_fail(rc, NULL, GF_NO_INDEX, GF_NO_INDEX, "%s",
                   rc == -ENOMEM ? "out of memory"
                                 : "a file's location ends with '/'");
  gf_storage *s;
  rc = gf_storage_open(dir, &s);
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

int gf_object_slurp(gf_storage *s, const char *name, uint64_t max, char **buf,
                    uint64_t *len) {
  *buf = NULL;
  *len = 0;
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
