/* A dict of gf_loader_config fields (the C names) -> the struct, starting
 * from GF_LOADER_CONFIG_INIT: every field reachable, the C defaults for
 * those not given. "transform" and "limits" take dicts of their structs'
 * fields; "remote" (with its "s3") and "shards" dicts of theirs, or None
 * (the C defaults); mean, std, scale and ratio take sequences of floats. */
#include "gfpy.h"

#include <stddef.h>
#include <string.h>

typedef enum { F_U32, F_I32, F_U64, F_STR, F_F32 } ftype;
typedef struct field {
  const char *name;
  size_t off;
  ftype type;
  uint32_t n; /* F_F32: array length */
} field;

#define C_(name, t) {#name, offsetof(gf_loader_config, name), t, 1}
static const field config_fields[] = {
    C_(batch_size, F_U32),     C_(source, F_STR),
    C_(labels_file, F_STR),    C_(seed, F_U64),
    C_(threads, F_U32),        C_(order, F_U32),
    C_(rank, F_U32),           C_(world, F_U32),
    C_(partition, F_U32),      C_(drop_last, F_U32),
    C_(cache_bytes, F_U64),    C_(prefetch, F_U32),
    C_(channels, F_U32),       C_(keep_16bit, F_U32),
    C_(error_policy, F_U32),   C_(io_backend, F_U32),
    C_(io_queue_depth, F_U32), C_(io_direct, F_U32),
    C_(block_size, F_U32),     C_(max_sample_bytes, F_U64),
    C_(device, F_I32),         C_(staging_slots, F_U32),
    C_(device_pool_bytes, F_U64), C_(trace_events, F_U64),
    C_(cache_direct, F_U32),   C_(jpeg_scale, F_U32),
    C_(gpu_decode, F_U32),     C_(gpu_decode_percent, F_U32),
    C_(worker_sched, F_U32),   C_(gpu_decoders, F_U32),
    {NULL, 0, F_U32, 0}};
#undef C_
#define T_(name, t, n) {#name, offsetof(gf_transform, name), t, n}
static const field transform_fields[] = {
    T_(out_dtype, F_U32, 1),   T_(layout, F_U32, 1),
    T_(height, F_U32, 1),      T_(width, F_U32, 1),
    T_(random_crop, F_U32, 1), T_(pad, F_U32, 1),
    T_(hflip, F_U32, 1),       T_(resize, F_U32, 1),
    T_(mean, F_F32, 4),        T_(std, F_F32, 4),
    T_(seed, F_U64, 1),        T_(resize_size, F_U32, 1),
    T_(no_antialias, F_U32, 1), T_(scale, F_F32, 2),
    T_(ratio, F_F32, 2),       {NULL, 0, F_U32, 0}};
#undef T_
#define R_(name, t)                                                            \
  { #name, offsetof(gf_remote_config, name), t, 1 }
static const field remote_fields[] = {R_(tls_no_verify, F_U32),
                                      R_(ca_file, F_STR),
                                      R_(max_attempts, F_U32),
                                      R_(retry_ms, F_U32),
                                      R_(connect_timeout_ms, F_U32),
                                      R_(stall_ms, F_U32),
                                      R_(max_connections, F_U32),
                                      R_(fetch_requests, F_U32),
                                      R_(fetch_bytes, F_U64),
                                      R_(cache_dir, F_STR),
                                      R_(cache_dir_bytes, F_U64),
                                      R_(fetch_threads, F_U32),
                                      {NULL, 0, F_U32, 0}};
#undef R_
#define S_(name, t)                                                            \
  { #name, offsetof(gf_s3_config, name), t, 1 }
static const field s3_fields[] = {S_(anonymous, F_U32),
                                  S_(access_key_id, F_STR),
                                  S_(secret_access_key, F_STR),
                                  S_(session_token, F_STR),
                                  S_(region, F_STR),
                                  S_(endpoint_url, F_STR),
                                  S_(profile, F_STR),
                                  S_(addressing, F_U32),
                                  {NULL, 0, F_U32, 0}};
#undef S_
#define H_(name, t)                                                            \
  { #name, offsetof(gf_shards_config, name), t, 1 }
static const field shards_fields[] = {
    H_(index, F_U32),       H_(image_fields, F_STR), H_(label, F_STR),
    H_(threads, F_U32),     H_(index_bytes, F_U64),  H_(fields, F_STR),
    H_(field_bytes, F_U64), H_(shuffle, F_U32),      H_(shuffle_bytes, F_U64),
    {NULL, 0, F_U32, 0}};
#undef H_
#define L_(name, t) {#name, offsetof(gf_limits, name), t, 1}
static const field limits_fields[] = {
    L_(max_width, F_U32), L_(max_height, F_U32), L_(max_pixels, F_U64),
    L_(max_bytes, F_U64), {NULL, 0, F_U32, 0}};
#undef L_

static int set_int(const char *name, PyObject *v, void *dst, ftype t) {
  if (!PyLong_Check(v)) {
    gfpy_raise_msg(-EINVAL, "loader config: %s must be an int", name);
    return -1;
  }
  if (t == F_I32) {
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred())
      return -1;
    if (x < INT32_MIN || x > INT32_MAX)
      goto range;
    *(int32_t *)dst = (int32_t)x;
    return 0;
  }
  unsigned long long x = PyLong_AsUnsignedLongLong(v);
  if (x == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    goto range;
  }
  if (t == F_U32) {
    if (x > UINT32_MAX)
      goto range;
    *(uint32_t *)dst = (uint32_t)x;
  } else {
    *(uint64_t *)dst = x;
  }
  return 0;
range:
  gfpy_raise_msg(-EINVAL, "loader config: %s is out of range", name);
  return -1;
}

static int set_floats(const char *name, PyObject *v, float *dst, uint32_t n) {
  PyObject *seq = PySequence_Fast(v, "");
  if (!seq) {
    PyErr_Clear();
    gfpy_raise_msg(-EINVAL, "loader config: %s must be a sequence of "
                 "at most %u floats", name, n);
    return -1;
  }
  Py_ssize_t len = PySequence_Size(seq);
  if (len < 0 || len > (Py_ssize_t)n) {
    Py_DECREF(seq);
    gfpy_raise_msg(-EINVAL, "loader config: %s takes at most %u "
                 "values", name, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *x = PySequence_GetItem(seq, i);
    double d = x ? PyFloat_AsDouble(x) : -1.0;
    Py_XDECREF(x);
    if (d == -1.0 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return -1;
    }
    dst[i] = (float)d;
  }
  Py_DECREF(seq);
  return 0;
}

static int fill(PyObject *d, void *base, const field *table, const char *what,
                PyObject *keep, gf_loader_config *cfg);

/* A nested config struct (remote, remote.s3, shards) of `size` bytes: a
 * bytearray that `keep` holds until create has read it, so that the
 * pointer stored in the parent struct stays valid. NULL with an error. */
static void *kept_struct(PyObject *keep, size_t size) {
  PyObject *buf = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)size);
  if (!buf || PyList_Append(keep, buf) < 0) {
    Py_XDECREF(buf);
    return NULL;
  }
  Py_DECREF(buf); /* keep holds it */
  return PyByteArray_AsString(buf);
}

static int set_field(const field *f, PyObject *v, void *base, PyObject *keep) {
  void *dst = (char *)base + f->off;
  switch (f->type) {
  case F_STR: {
    if (v == Py_None) {
      *(const char **)dst = NULL;
      return 0;
    }
    if (!PyUnicode_Check(v)) {
      gfpy_raise_msg(-EINVAL, "loader config: %s must be a str",
                   f->name);
      return -1;
    }
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(v, &n);
    if (!s)
      return -1;
    if ((Py_ssize_t)strlen(s) != n) {
      gfpy_raise_msg(-EINVAL, "loader config: %s holds a NUL",
                   f->name);
      return -1;
    }
    if (PyList_Append(keep, v) < 0)
      return -1;
    *(const char **)dst = s;
    return 0;
  }
  case F_F32:
    return set_floats(f->name, v, (float *)dst, f->n);
  default:
    return set_int(f->name, v, dst, f->type);
  }
}

static int fill(PyObject *d, void *base, const field *table, const char *what,
                PyObject *keep, gf_loader_config *cfg) {
  if (!PyDict_Check(d)) {
    gfpy_raise_msg(-EINVAL, "loader config: %s must be a dict", what);
    return -1;
  }
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(d, &pos, &k, &v)) {
    Py_ssize_t n;
    const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8AndSize(k, &n)
                                          : NULL;
    if (!name) {
      PyErr_Clear();
      gfpy_raise_msg(-EINVAL, "loader config: %s keys must be str",
                   what);
      return -1;
    }
    if (cfg && strcmp(name, "transform") == 0) {
      if (fill(v, &cfg->transform, transform_fields, "transform", keep,
               NULL) < 0)
        return -1;
      continue;
    }
    if (cfg && strcmp(name, "remote") == 0) {
      if (v == Py_None) {
        cfg->remote = NULL;
        continue;
      }
      gf_remote_config *rc = kept_struct(keep, sizeof *rc);
      if (!rc)
        return -1;
      *rc = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
      if (fill(v, rc, remote_fields, "remote", keep, NULL) < 0)
        return -1;
      cfg->remote = rc;
      continue;
    }
    if (table == remote_fields && strcmp(name, "s3") == 0) {
      gf_remote_config *rc = base;
      if (v == Py_None) {
        rc->s3 = NULL;
        continue;
      }
      gf_s3_config *s3 = kept_struct(keep, sizeof *s3);
      if (!s3)
        return -1;
      *s3 = (gf_s3_config)GF_S3_CONFIG_INIT;
      if (fill(v, s3, s3_fields, "remote.s3", keep, NULL) < 0)
        return -1;
      rc->s3 = s3;
      continue;
    }
    if (cfg && strcmp(name, "shards") == 0) {
      if (v == Py_None) {
        cfg->shards = NULL;
        continue;
      }
      gf_shards_config *sc = kept_struct(keep, sizeof *sc);
      if (!sc)
        return -1;
      *sc = (gf_shards_config)GF_SHARDS_CONFIG_INIT;
      if (fill(v, sc, shards_fields, "shards", keep, NULL) < 0)
        return -1;
      cfg->shards = sc;
      continue;
    }
    if (cfg && strcmp(name, "limits") == 0) {
      if (fill(v, &cfg->limits, limits_fields, "limits", keep, NULL) < 0)
        return -1;
      continue;
    }
    const field *f = table;
    while (f->name && strcmp(f->name, name) != 0)
      f++;
    if (!f->name) {
      gfpy_raise_msg(-EINVAL, "loader config: %s has no field '%s'",
                   what, name);
      return -1;
    }
    if (set_field(f, v, base, keep) < 0)
      return -1;
  }
  return 0;
}

int gfpy_config_from_dict(PyObject *d, gf_loader_config *cfg, PyObject *keep) {
  gf_loader_config init = GF_LOADER_CONFIG_INIT;
  *cfg = init;
  return fill(d, cfg, config_fields, "gf_loader_config", keep, cfg);
}
