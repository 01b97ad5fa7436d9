/* _C.Core: one gf_loader, shared with the batches it lent (see gfpy.h for
 * the lifetime and lock rules). The consumer calls run with the GIL
 * released, under core->mu; next() waits in short slices
 * (gf_loader_next_timed) and checks for signals between them, so Ctrl-C
 * interrupts a wait and leaves the loader usable. */
#include "gfpy.h"

#include <stdlib.h>
#include <string.h>

/* A wait slice of next(): how late Ctrl-C may be noticed. */
#define NEXT_SLICE_NS 20000000LL

PyObject *gfpy_CoreType;

typedef struct {
  PyObject_HEAD
  core *c; /* NULL once closed */
} CoreObject;

void gfpy_core_unref(core *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1)
    return;
  gf_loader_destroy(c->l);
  pthread_mutex_destroy(&c->mu);
  pthread_mutex_destroy(&c->pend_mu);
  free(c);
}

int gfpy_give_back(core *c, cbatch *cb) {
  void *streams[GFPY_STREAMS_MAX];
  pthread_mutex_lock(&c->pend_mu);
  if (cb->given_back) {
    pthread_mutex_unlock(&c->pend_mu);
    return 0;
  }
  cb->given_back = true;
  uint32_t n = cb->nstreams;
  memcpy(streams, cb->streams, sizeof streams);
  pthread_mutex_unlock(&c->pend_mu);
  c->held--;
  return gf_loader_release_streams(c->l, cb->b, streams, n);
}

void gfpy_drain(core *c) {
  pthread_mutex_lock(&c->pend_mu);
  cbatch *list = c->pending;
  c->pending = NULL;
  pthread_mutex_unlock(&c->pend_mu);
  while (list) {
    cbatch *cb = list;
    list = cb->next;
    gfpy_give_back(c, cb);
    gfpy_cbatch_free(cb);
    /* Not the last reference: the caller holds one. */
    gfpy_core_unref(c);
  }
}

/* The core of a Core object that is not closed, with a reference the
 * caller drops (gfpy_core_unref); NULL with an error when closed. */
static core *grab(CoreObject *self) {
  core *c = self->c;
  if (!c) {
    gfpy_raise_msg(-EINVAL, "the loader is closed");
    return NULL;
  }
  atomic_fetch_add(&c->refs, 1);
  return c;
}

static PyObject *core_new(PyTypeObject *type, PyObject *args,
                          PyObject *kwargs) {
  PyObject *d;
  static char *kw[] = {"config", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Core", kw, &d))
    return NULL;
  gf_loader_config cfg;
  PyObject *keep = PyList_New(0);
  if (!keep)
    return NULL;
  if (gfpy_config_from_dict(d, &cfg, keep) < 0) {
    Py_DECREF(keep);
    return NULL;
  }
  core *c = calloc(1, sizeof *c);
  if (!c) {
    Py_DECREF(keep);
    return PyErr_NoMemory();
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = gf_loader_create(&cfg, &c->l);
  Py_END_ALLOW_THREADS
  Py_DECREF(keep);
  if (rc < 0) {
    free(c);
    return gfpy_raise(rc);
  }
  gf_loader_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  gf_loader_stats_get(c->l, &st);
  atomic_init(&c->refs, 1);
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->pend_mu, NULL);
  c->on_device = st.device >= 0;
  c->device = st.device;
  c->prefetch = (uint32_t)st.slots;
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  CoreObject *self = (CoreObject *)alloc(type, 0);
  if (!self) {
    gfpy_core_unref(c);
    return NULL;
  }
  self->c = c;
  return (PyObject *)self;
}

static void close_impl(CoreObject *self) {
  core *c = self->c;
  if (!c)
    return;
  self->c = NULL;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&c->mu);
  pthread_mutex_lock(&c->pend_mu);
  c->closed = true;
  pthread_mutex_unlock(&c->pend_mu);
  gfpy_drain(c);
  pthread_mutex_unlock(&c->mu);
  gfpy_core_unref(c); /* the loader goes with the last batch */
  Py_END_ALLOW_THREADS
}

static void core_dealloc(PyObject *o) {
  PyTypeObject *tp = Py_TYPE(o);
  close_impl((CoreObject *)o);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static PyObject *core_close(PyObject *o, PyObject *unused) {
  (void)unused;
  close_impl((CoreObject *)o);
  Py_RETURN_NONE;
}

int gfpy_core_take(core *c, void *stream, gf_batch **out) {
  for (;;) {
    int rc;
    long held = 0;
    bool closed;
    gf_batch *b = NULL;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&c->mu);
    closed = c->closed;
    if (!closed) {
      gfpy_drain(c);
      rc = gf_loader_next_timed(c->l, stream, NEXT_SLICE_NS, &b);
      if (rc == 0)
        c->held++;
      held = c->held;
    } else {
      rc = -EINVAL;
    }
    pthread_mutex_unlock(&c->mu);
    Py_END_ALLOW_THREADS
    if (closed) {
      gfpy_raise_msg(-EINVAL, "the loader was closed");
      return -1;
    }
    if (rc == 0) {
      *out = b;
      return 1;
    }
    if (rc == GF_EEPOCHEND)
      return 0;
    if (rc == -ETIMEDOUT) {
      if (PyErr_CheckSignals() < 0)
        return -1; /* KeyboardInterrupt: nothing was taken */
      continue;
    }
    if (rc == -EBUSY)
      gfpy_raise_msg(-EBUSY,
                     "the program holds %ld batches, all of the loader's %u "
                     "(prefetch): free the tensors of earlier batches (del "
                     "them, or call batch.release()) before taking the next, "
                     "or raise prefetch",
                     held, c->prefetch);
    else
      gfpy_raise(rc);
    return -1;
  }
}

/* next(stream=0) -> Batch, or None at the end of the epoch. stream: the
 * cudaStream_t (as an int) the batch's output is handed to; 0: the host
 * waits for it (GPU mode). */
static PyObject *core_next(PyObject *o, PyObject *args, PyObject *kwargs) {
  unsigned long long stream_u = 0;
  static char *kw[] = {"stream", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|K:next", kw, &stream_u))
    return NULL;
  void *stream = (void *)(uintptr_t)stream_u;
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  gf_batch *b = NULL;
  int got = gfpy_core_take(c, stream, &b);
  PyObject *r = got > 0   ? gfpy_batch_new(c, b, stream)
                : got == 0 ? Py_NewRef(Py_None)
                           : NULL;
  gfpy_core_unref(c);
  return r;
}

/* tensors(stream_of, make, owner=None, indices_of=None) -> the rest of
 * the epoch as (images, labels) made by make(capsule) (torch's capsule
 * importer), one C call a batch; stream_of(device) -> the cudaStream_t to
 * hand each batch to (GPU mode; None in host mode); owner: an object the
 * iterator keeps alive (the Loader: `for x, y in Loader(...)` must not
 * close it under the loop); indices_of(bytearray) -> a third item, the
 * batch's sample indices (a copy, native uint64). */
static PyObject *core_tensors(PyObject *o, PyObject *args) {
  PyObject *stream_of, *make, *owner = Py_None, *indices_of = Py_None;
  if (!PyArg_ParseTuple(args, "OO|OO:tensors", &stream_of, &make, &owner,
                        &indices_of))
    return NULL;
  if ((stream_of != Py_None && !PyCallable_Check(stream_of)) ||
      !PyCallable_Check(make) ||
      (indices_of != Py_None && !PyCallable_Check(indices_of))) {
    PyErr_SetString(PyExc_TypeError,
                    "tensors(stream_of, make, owner, indices_of): callables "
                    "(stream_of may be None in host mode, indices_of None "
                    "for pairs)");
    return NULL;
  }
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  PyObject *r = gfpy_iter_new(c, stream_of, make, owner, indices_of);
  gfpy_core_unref(c);
  return r;
}

/* Runs f(c->l, arg) under mu with the GIL released, after giving back the
 * queued batches. */
static int locked_call(core *c, int (*f)(gf_loader *, void *), void *arg) {
  int rc;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&c->mu);
  gfpy_drain(c);
  rc = f(c->l, arg);
  pthread_mutex_unlock(&c->mu);
  Py_END_ALLOW_THREADS
  return rc;
}

static int set_epoch_f(gf_loader *l, void *arg) {
  return gf_loader_set_epoch(l, *(uint64_t *)arg);
}

static PyObject *core_set_epoch(PyObject *o, PyObject *arg) {
  uint64_t e = PyLong_AsUnsignedLongLong(arg);
  if (e == (uint64_t)-1 && PyErr_Occurred())
    return NULL;
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  int rc = locked_call(c, set_epoch_f, &e);
  gfpy_core_unref(c);
  if (rc < 0)
    return gfpy_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *core_epoch_size(PyObject *o, PyObject *unused) {
  (void)unused;
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  uint64_t samples = 0, batches = 0;
  int rc = gf_loader_epoch_size(c->l, &samples, &batches);
  gfpy_core_unref(c);
  if (rc < 0)
    return gfpy_raise(rc);
  return Py_BuildValue("(KK)", (unsigned long long)samples,
                       (unsigned long long)batches);
}

static PyObject *core_class_names(PyObject *o, PyObject *unused) {
  (void)unused;
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  uint32_t n = gf_loader_class_count(c->l);
  PyObject *list = PyList_New(n);
  char buf[4096];
  for (uint32_t i = 0; list && i < n; i++) {
    int rc = gf_loader_class_name(c->l, i, buf, sizeof buf);
    PyObject *s = rc < 0 ? gfpy_raise(rc)
                         : PyUnicode_DecodeFSDefaultAndSize(buf, rc);
    if (!s) {
      Py_CLEAR(list);
      break;
    }
    PyList_SetItem(list, i, s);
  }
  gfpy_core_unref(c);
  return list;
}

static PyObject *core_sample_path(PyObject *o, PyObject *arg) {
  uint64_t i = PyLong_AsUnsignedLongLong(arg);
  if (i == (uint64_t)-1 && PyErr_Occurred())
    return NULL;
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  char buf[4096];
  int rc = gf_loader_sample_path(c->l, i, buf, sizeof buf);
  gfpy_core_unref(c);
  if (rc < 0)
    return gfpy_raise(rc);
  return PyUnicode_DecodeFSDefaultAndSize(buf, rc);
}

/* ---- stats and state as dicts ------------------------------------------ */

static int put_u64(PyObject *d, const char *k, uint64_t v) {
  PyObject *x = PyLong_FromUnsignedLongLong(v);
  int rc = x ? PyDict_SetItemString(d, k, x) : -1;
  Py_XDECREF(x);
  return rc;
}
static int put_i64(PyObject *d, const char *k, int64_t v) {
  PyObject *x = PyLong_FromLongLong(v);
  int rc = x ? PyDict_SetItemString(d, k, x) : -1;
  Py_XDECREF(x);
  return rc;
}
static int put_str(PyObject *d, const char *k, const char *s, size_t cap) {
  PyObject *x = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strnlen(s, cap), "replace");
  int rc = x ? PyDict_SetItemString(d, k, x) : -1;
  Py_XDECREF(x);
  return rc;
}
/* n counters as a list. */
static int put_u64s(PyObject *d, const char *k, const uint64_t *v, size_t n) {
  PyObject *x = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; x && i < n; i++) {
    PyObject *e = PyLong_FromUnsignedLongLong(v[i]);
    if (!e || PyList_SetItem(x, (Py_ssize_t)i, e) < 0) { /* steals e */
      Py_CLEAR(x);
      break;
    }
  }
  int rc = x ? PyDict_SetItemString(d, k, x) : -1;
  Py_XDECREF(x);
  return rc;
}
static int put_stage(PyObject *d, const char *k, const gf_stage_stats *s) {
  PyObject *x = PyDict_New();
  int rc = x && put_u64(x, "samples", s->samples) == 0 &&
                   put_u64(x, "bytes", s->bytes) == 0 &&
                   put_u64(x, "busy_ns", s->busy_ns) == 0 &&
                   put_u64(x, "wait_ns", s->wait_ns) == 0
               ? PyDict_SetItemString(d, k, x)
               : -1;
  Py_XDECREF(x);
  return rc;
}

static PyObject *core_stats(PyObject *o, PyObject *unused) {
  (void)unused;
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  gf_loader_stats st;
  memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  int rc = gf_loader_stats_get(c->l, &st);
  gfpy_core_unref(c);
  if (rc < 0)
    return gfpy_raise(rc);
  PyObject *d = PyDict_New();
  if (!d)
    return NULL;
#define U_(f) put_u64(d, #f, st.f) < 0
#define S_(f) put_str(d, #f, st.f, sizeof st.f) < 0
  if (U_(threads) || put_stage(d, "read", &st.read) < 0 ||
      put_stage(d, "decode", &st.decode) < 0 ||
      put_stage(d, "cache", &st.cache) < 0 || U_(cache_hits) ||
      U_(cache_misses) || U_(cache_bytes) || U_(cache_budget) || U_(batches) ||
      U_(consumer_wait_ns) || U_(next_calls) || U_(ready_sum) || U_(slots) ||
      U_(skipped) || S_(last_skip_reason) || S_(io_backend) ||
      S_(io_fallback_reason) || U_(io_in_flight) ||
      put_i64(d, "device", st.device) < 0 || S_(host_mode_reason) ||
      U_(device_pool_in_use) || U_(device_pool_peak) ||
      U_(device_pool_reserved) || S_(tuning) || U_(trace_recorded) ||
      U_(trace_dropped) || U_(cache_direct) || U_(cache_pinned_bytes) ||
      U_(cache_pin_failures) ||
      put_u64s(d, "jpeg_decoded", st.jpeg_decoded, 4) < 0 ||
      U_(jpeg_pixels_decoded) || U_(jpeg_pixels_full) || S_(jpeg_gpu_backend) ||
      S_(jpeg_gpu_why) || U_(jpeg_gpu_decoded) || U_(jpeg_checked) ||
      U_(jpeg_check_failed) || U_(jpeg_cpu_decoded) || U_(jpeg_gpu_refused) ||
      U_(jpeg_gpu_device_budget) || U_(jpeg_gpu_device_peak) ||
      U_(jpeg_gpu_pinned_budget) || U_(jpeg_gpu_pinned_peak) || S_(remote) ||
      U_(fetch_requests) || U_(fetch_bytes) || U_(fetch_failed) ||
      U_(fetch_retries) || U_(fetch_block_reads) || U_(fetch_cached) ||
      U_(fetch_wait_ns) || U_(fetch_inflight) || U_(fetch_inflight_max) ||
      U_(fetch_held_bytes) || U_(fetch_held_max) || U_(fetch_budget) ||
      U_(disk_cache_hits) || U_(disk_cache_misses) ||
      U_(disk_cache_bytes_read) || U_(disk_cache_bytes_written) ||
      U_(disk_cache_evictions) || U_(index_reads) || U_(index_bytes) ||
      U_(index_pages) || U_(fetch_unprepared)) {
    Py_DECREF(d);
    return NULL;
  }
#undef U_
#undef S_
  return d;
}

/* The state's fields, in order; check last. */
#define GFPY_STATE_FIELDS(X)                                                   \
  X(struct_size, u32)                                                          \
  X(version, u32) X(epoch, u64) X(position, u64) X(start, u64) X(batch, u64)   \
      X(rank_position, u64) X(samples, u64) X(fingerprint, u64) X(seed, u64)   \
          X(batch_size, u64) X(block_size, u64) X(window_blocks, u32)          \
              X(order, u32) X(partition, u32) X(drop_last, u32) X(world, u32)  \
                  X(rank, u32) X(order_world, u32) X(reserved0, u32)           \
                      X(check, u64)

static int state_export_f(gf_loader *l, void *arg) {
  return gf_loader_state_export(l, arg);
}
static int state_import_f(gf_loader *l, void *arg) {
  return gf_loader_state_import(l, arg);
}

static PyObject *core_state_export(PyObject *o, PyObject *unused) {
  (void)unused;
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  gf_loader_state st;
  memset(&st, 0, sizeof st);
  int rc = locked_call(c, state_export_f, &st);
  gfpy_core_unref(c);
  if (rc < 0)
    return gfpy_raise(rc);
  PyObject *d = PyDict_New();
  if (!d)
    return NULL;
#define X_(f, t)                                                             \
  if (put_u64(d, #f, st.f) < 0) {                                            \
    Py_DECREF(d);                                                            \
    return NULL;                                                             \
  }
  GFPY_STATE_FIELDS(X_)
#undef X_
  return d;
}

static PyObject *core_state_import(PyObject *o, PyObject *d) {
  if (!PyDict_Check(d)) {
    PyErr_SetString(PyExc_TypeError, "load_state_dict: a dict from "
                                     "state_dict() is needed");
    return NULL;
  }
  gf_loader_state st;
  memset(&st, 0, sizeof st);
  unsigned long long v;
  PyObject *zero = PyLong_FromLong(0);
  if (!zero)
    return NULL;
  Py_DECREF(zero); /* small ints are immortal: the pointer stays valid */
#define X_(f, t)                                                               \
  {                                                                            \
    PyObject *x = PyDict_GetItemString(d, #f);                                 \
    /* Version 2's dicts have neither: 0 (the C import reads them as           \
     * version 2's struct). */                                                 \
    if (!x && (!strcmp(#f, "order_world") || !strcmp(#f, "reserved0")))        \
      x = zero;                                                                \
    if (!x || !PyLong_Check(x))                                                \
      return gfpy_raise_msg(GF_ESTATE,                                         \
                            "resume state: field '%s' is "                     \
                            "missing or not an int",                           \
                            #f);                                               \
    v = PyLong_AsUnsignedLongLong(x);                                          \
    if (PyErr_Occurred() || (sizeof st.f == 4 && v > UINT32_MAX)) {            \
      PyErr_Clear();                                                           \
      return gfpy_raise_msg(GF_ESTATE,                                         \
                            "resume state: field '%s' is out "                 \
                            "of range",                                        \
                            #f);                                               \
    }                                                                          \
    st.f = v;                                                                  \
  }
  GFPY_STATE_FIELDS(X_)
#undef X_
  if (st.version == 2 && st.struct_size == 120) {
    /* Version 2's struct: its check follows rank (where order_world now
     * is); the C import reads it from there. */
    uint64_t ck = st.check;
    memcpy((uint8_t *)&st + 112, &ck, sizeof ck);
  }
  core *c = grab((CoreObject *)o);
  if (!c)
    return NULL;
  int rc = locked_call(c, state_import_f, &st);
  gfpy_core_unref(c);
  if (rc < 0)
    return gfpy_raise(rc);
  Py_RETURN_NONE;
}

static int trace_write_f(gf_loader *l, void *arg) {
  return gf_loader_trace_write(l, arg);
}

static PyObject *core_trace_write(PyObject *o, PyObject *arg) {
  PyObject *b = NULL;
  if (!PyUnicode_FSConverter(arg, &b))
    return NULL;
  core *c = grab((CoreObject *)o);
  if (!c) {
    Py_DECREF(b);
    return NULL;
  }
  char *path = NULL;
  Py_ssize_t n = 0;
  int rc = PyBytes_AsStringAndSize(b, &path, &n);
  if (rc == 0)
    rc = locked_call(c, trace_write_f, path);
  else
    rc = -EINVAL;
  Py_DECREF(b);
  gfpy_core_unref(c);
  if (rc < 0)
    return PyErr_Occurred() ? NULL : gfpy_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *get_held(PyObject *o, void *unused) {
  (void)unused;
  core *c = ((CoreObject *)o)->c;
  if (!c)
    return PyLong_FromLong(0);
  long held;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&c->mu);
  gfpy_drain(c);
  held = c->held;
  pthread_mutex_unlock(&c->mu);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(held);
}
static PyObject *get_prefetch(PyObject *o, void *unused) {
  (void)unused;
  core *c = ((CoreObject *)o)->c;
  return PyLong_FromUnsignedLong(c ? c->prefetch : 0);
}
static PyObject *get_device(PyObject *o, void *unused) {
  (void)unused;
  core *c = ((CoreObject *)o)->c;
  return PyLong_FromLong(c ? c->device : -1);
}
/* The other fields asked for (tar shards' "fields"), in order. */
static PyObject *get_field_names(PyObject *o, void *unused) {
  (void)unused;
  core *c = ((CoreObject *)o)->c;
  uint32_t n = c ? gf_loader_field_count(c->l) : 0;
  PyObject *t = PyTuple_New(n);
  for (uint32_t i = 0; t && i < n; i++) {
    PyObject *x = PyUnicode_FromString(gf_loader_field_name(c->l, i));
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SetItem(t, i, x);
  }
  return t;
}
static PyObject *get_field_count(PyObject *o, void *unused) {
  (void)unused;
  core *c = ((CoreObject *)o)->c;
  return PyLong_FromUnsignedLong(c ? gf_loader_field_count(c->l) : 0);
}
static PyObject *get_closed(PyObject *o, void *unused) {
  (void)unused;
  return PyBool_FromLong(((CoreObject *)o)->c == NULL);
}

static PyMethodDef core_methods[] = {
    {"next", (PyCFunction)(void (*)(void))core_next,
     METH_VARARGS | METH_KEYWORDS,
     "next(stream=0) -> Batch, or None at the end of the epoch."},
    {"tensors", core_tensors, METH_VARARGS,
     "tensors(stream_of, make, owner=None, indices_of=None) -> iterator of "
     "(images, labels[, fields][, indices_of(bytearray of uint64 "
     "indices)]), fields a dict where the loader has other fields: "
     "make(capsule) a tensor, stream_of(device) the stream (None: host "
     "mode), owner kept alive."},
    {"close", core_close, METH_NOARGS, "Stops delivery (idempotent)."},
    {"set_epoch", core_set_epoch, METH_O, "gf_loader_set_epoch."},
    {"epoch_size", core_epoch_size, METH_NOARGS, "(samples, batches)."},
    {"class_names", core_class_names, METH_NOARGS, "The named classes."},
    {"sample_path", core_sample_path, METH_O, "Sample i's source path."},
    {"stats", core_stats, METH_NOARGS, "gf_loader_stats as a dict."},
    {"state_export", core_state_export, METH_NOARGS,
     "gf_loader_state as a dict of ints."},
    {"state_import", core_state_import, METH_O,
     "Moves the loader to a state from state_export."},
    {"trace_write", core_trace_write, METH_O, "gf_loader_trace_write."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef core_getset[] = {
    {"held", get_held, NULL, "batches lent and not given back", NULL},
    {"prefetch", get_prefetch, NULL, "batches the caller may hold", NULL},
    {"device", get_device, NULL, "the CUDA device, or -1 (host mode)", NULL},
    {"closed", get_closed, NULL, "whether close() ran", NULL},
    {"field_names", get_field_names, NULL,
     "the other fields asked for (tar shards), a tuple", NULL},
    {"field_count", get_field_count, NULL, "len(field_names)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot core_slots[] = {
    {Py_tp_new, (void *)core_new},
    {Py_tp_dealloc, (void *)core_dealloc},
    {Py_tp_methods, core_methods},
    {Py_tp_getset, core_getset},
    {Py_tp_doc, "Core(config: dict): a gf_loader (internal; use "
                "gpufeed.Loader)."},
    {0, NULL}};

static PyType_Spec core_spec = {"gpufeed._C.Core", sizeof(CoreObject), 0,
                                Py_TPFLAGS_DEFAULT, core_slots};

int gfpy_loader_init(PyObject *m) {
  gfpy_CoreType = PyType_FromSpec(&core_spec);
  if (!gfpy_CoreType)
    return -1;
  return PyModule_AddObjectRef(m, "Core", gfpy_CoreType);
}
