/* _C.Batch (a lent gf_batch) and _C.Array (its images or labels, exported
 * through DLPack). See gfpy.h for who holds what. DLPack, per the Python
 * array API's __dlpack__: stream None is the legacy default stream on
 * CUDA, 1 the legacy default, 2 the per-thread default, any other positive
 * int a cudaStream_t, -1 "no synchronisation"; 0 is refused. The stream
 * given is made to wait for the batch (an event wait, never a host sync)
 * and recorded: the batch is given back over every stream it was exported
 * to, so its memory is reused only after they have passed that point
 * (the record and the capsules: export.c). */
#include "gfpy.h"

#include <stdlib.h>
#include <string.h>

PyObject *gfpy_BatchType;
PyObject *gfpy_ArrayType;

typedef struct {
  PyObject_HEAD
  cbatch *cb;
  bool released; /* release() ran: the views' memory is the loader's */
  uint64_t epoch, index;
  uint32_t count, skipped;
} BatchObject;

typedef struct {
  PyObject_HEAD
  BatchObject *batch; /* a reference */
  int kind;
} ArrayObject;

/* ---- Batch -------------------------------------------------------------- */

PyObject *gfpy_batch_new(core *c, gf_batch *b, void *next_stream) {
  cbatch *cb = gfpy_cbatch_new(c, b, next_stream);
  if (!cb)
    return NULL;
  PyTypeObject *tp = (PyTypeObject *)gfpy_BatchType;
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  BatchObject *self = (BatchObject *)alloc(tp, 0);
  if (!self) {
    gfpy_cbatch_unref(cb);
    return NULL;
  }
  self->cb = cb;
  self->epoch = b->epoch;
  self->index = b->index;
  self->count = b->count;
  self->skipped = b->skipped;
  return (PyObject *)self;
}

static void batch_dealloc(PyObject *o) {
  BatchObject *self = (BatchObject *)o;
  PyTypeObject *tp = Py_TYPE(o);
  if (self->cb)
    gfpy_cbatch_unref(self->cb);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static int check_live(BatchObject *self) {
  if (self->released) {
    PyErr_SetString(PyExc_BufferError,
                    "the batch was released: its memory is the loader's");
    return -1;
  }
  return 0;
}

static PyObject *batch_release(PyObject *o, PyObject *unused) {
  (void)unused;
  BatchObject *self = (BatchObject *)o;
  if (self->released)
    Py_RETURN_NONE;
  self->released = true;
  cbatch *cb = self->cb;
  core *c = cb->c;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&c->mu);
  rc = gfpy_give_back(c, cb);
  pthread_mutex_unlock(&c->mu);
  Py_END_ALLOW_THREADS
  self->cb = NULL;
  gfpy_cbatch_unref(cb); /* the views' references only free the record now */
  if (rc < 0)
    return gfpy_raise(rc);
  Py_RETURN_NONE;
}

static PyObject *get_u64(uint64_t v) { return PyLong_FromUnsignedLongLong(v); }
static PyObject *b_epoch(PyObject *o, void *u) {
  (void)u;
  return get_u64(((BatchObject *)o)->epoch);
}
static PyObject *b_index(PyObject *o, void *u) {
  (void)u;
  return get_u64(((BatchObject *)o)->index);
}
static PyObject *b_count(PyObject *o, void *u) {
  (void)u;
  return get_u64(((BatchObject *)o)->count);
}
static PyObject *b_skipped(PyObject *o, void *u) {
  (void)u;
  return get_u64(((BatchObject *)o)->skipped);
}

static PyObject *u64_tuple(const uint64_t *v, uint32_t n) {
  PyObject *t = PyTuple_New(n);
  for (uint32_t i = 0; t && i < n; i++) {
    PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SetItem(t, i, x);
  }
  return t;
}

static PyObject *b_indices(PyObject *o, void *u) {
  (void)u;
  BatchObject *self = (BatchObject *)o;
  if (check_live(self) < 0)
    return NULL;
  return u64_tuple(self->cb->b->indices, self->count);
}

/* The labels as a tuple of ints (host copy; no DLPack needed). */
static PyObject *b_label_list(PyObject *o, void *u) {
  (void)u;
  BatchObject *self = (BatchObject *)o;
  if (check_live(self) < 0)
    return NULL;
  PyObject *t = PyTuple_New(self->count);
  for (uint32_t i = 0; t && i < self->count; i++) {
    PyObject *x = PyLong_FromLongLong(self->cb->b->labels[i]);
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SetItem(t, i, x);
  }
  return t;
}

/* The indices as a bytearray of native uint64 (what torch.frombuffer
 * takes without a Python int per sample). */
static PyObject *batch_indices_buffer(PyObject *o, PyObject *unused) {
  (void)unused;
  BatchObject *self = (BatchObject *)o;
  if (check_live(self) < 0)
    return NULL;
  return PyByteArray_FromStringAndSize(
      (const char *)self->cb->b->indices,
      (Py_ssize_t)self->count * (Py_ssize_t)sizeof self->cb->b->indices[0]);
}

PyObject *gfpy_fields_of(core *c, const gf_batch *b) {
  uint32_t n = gf_loader_field_count(c->l);
  PyObject *d = PyDict_New();
  for (uint32_t f = 0; d && f < n; f++) {
    const char *name = gf_loader_field_name(c->l, f);
    /* webdataset's default decoder reads "txt" as text; replacing what is
     * not UTF-8 keeps one bad caption from ending an epoch. */
    bool text = !strcmp(name, "txt");
    PyObject *list = PyList_New(b->count);
    for (uint32_t j = 0; list && j < b->count; j++) {
      const void *data;
      uint64_t len;
      int rc = gf_batch_field(b, j, f, &data, &len);
      PyObject *x;
      if (rc < 0)
        x = gfpy_raise(rc);
      else if (rc == 0)
        x = Py_NewRef(Py_None);
      else if (text)
        x = PyUnicode_DecodeUTF8(data, (Py_ssize_t)len, "replace");
      else
        x = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
      if (!x)
        Py_CLEAR(list);
      else
        PyList_SetItem(list, j, x);
    }
    if (!list || PyDict_SetItemString(d, name, list) < 0)
      Py_CLEAR(d);
    Py_XDECREF(list);
  }
  return d;
}

/* The other fields (tar shards' fields; {} without them). */
static PyObject *b_fields(PyObject *o, void *u) {
  (void)u;
  BatchObject *self = (BatchObject *)o;
  if (check_live(self) < 0)
    return NULL;
  return gfpy_fields_of(self->cb->c, self->cb->b);
}

static PyObject *make_array(BatchObject *self, int kind) {
  if (check_live(self) < 0)
    return NULL;
  PyTypeObject *tp = (PyTypeObject *)gfpy_ArrayType;
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  ArrayObject *a = (ArrayObject *)alloc(tp, 0);
  if (!a)
    return NULL;
  a->batch = (BatchObject *)Py_NewRef((PyObject *)self);
  a->kind = kind;
  return (PyObject *)a;
}
static PyObject *b_images(PyObject *o, void *u) {
  (void)u;
  return make_array((BatchObject *)o, GFPY_IMAGES);
}
static PyObject *b_labels(PyObject *o, void *u) {
  (void)u;
  return make_array((BatchObject *)o, GFPY_LABELS);
}
static PyObject *b_images_ptr(PyObject *o, void *u) {
  (void)u;
  BatchObject *self = (BatchObject *)o;
  if (check_live(self) < 0)
    return NULL;
  return PyLong_FromVoidPtr(self->cb->b->output);
}
static PyObject *b_on_device(PyObject *o, void *u) {
  (void)u;
  BatchObject *self = (BatchObject *)o;
  if (check_live(self) < 0)
    return NULL;
  return PyBool_FromLong(self->cb->b->on_device);
}

static PyMethodDef batch_methods[] = {
    {"release", batch_release, METH_NOARGS,
     "Gives the batch back now (tensors made from it must not be used "
     "after); otherwise it goes back when its last view is freed."},
    {"_indices_buffer", batch_indices_buffer, METH_NOARGS,
     "The dataset sample indices as a bytearray of native uint64."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef batch_getset[] = {
    {"epoch", b_epoch, NULL, NULL, NULL},
    {"index", b_index, NULL, "batch number within the epoch", NULL},
    {"count", b_count, NULL, "samples in the batch", NULL},
    {"skipped", b_skipped, NULL, "bad samples skipped making it", NULL},
    {"indices", b_indices, NULL, "dataset sample indices (tuple)", NULL},
    {"label_list", b_label_list, NULL, "labels (tuple of ints)", NULL},
    {"fields", b_fields, NULL,
     "other fields: {name: [str (txt) | bytes | None] a sample}", NULL},
    {"images", b_images, NULL, "the transformed batch (DLPack)", NULL},
    {"labels", b_labels, NULL, "the labels, int64 (DLPack)", NULL},
    {"images_ptr", b_images_ptr, NULL, "address of the output", NULL},
    {"on_device", b_on_device, NULL, "whether output is device memory", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot batch_slots[] = {
    {Py_tp_dealloc, (void *)batch_dealloc},
    {Py_tp_methods, batch_methods},
    {Py_tp_getset, batch_getset},
    {Py_tp_doc, "A batch lent by the loader."},
    {0, NULL}};

static PyType_Spec batch_spec = {"gpufeed._C.Batch", sizeof(BatchObject), 0,
                                 Py_TPFLAGS_DEFAULT, batch_slots};

/* ---- Array: what a view exports ----------------------------------------- */

/* The array's view; -1 with an error when the batch was released or has
 * no dense form. */
static int describe(ArrayObject *a, gfpy_view *v) {
  if (check_live(a->batch) < 0)
    return -1;
  return gfpy_view_of(a->batch->cb, a->kind, v);
}

/* The stream argument -> the stream to wait on (NULL: none). */
static int stream_of(PyObject *s, const gfpy_view *v, void **out) {
  *out = NULL;
  if (v->dev.device_type != kDLCUDA) {
    if (s != Py_None) {
      long x = PyLong_Check(s) ? PyLong_AsLong(s) : 0;
      if (x != -1) {
        PyErr_Clear();
        PyErr_SetString(PyExc_BufferError,
                        "__dlpack__: a CPU array takes stream=None");
        return -1;
      }
    }
    return 0;
  }
  if (s == Py_None) {
    *out = (void *)(uintptr_t)1; /* cudaStreamLegacy */
    return 0;
  }
  if (!PyLong_Check(s)) {
    PyErr_SetString(PyExc_TypeError, "__dlpack__: stream must be an int");
    return -1;
  }
  long long x = PyLong_AsLongLong(s);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    unsigned long long ux = PyLong_AsUnsignedLongLong(s);
    if (PyErr_Occurred())
      return -1;
    *out = (void *)(uintptr_t)ux;
    return 0;
  }
  if (x == -1)
    return 0; /* the consumer synchronises */
  if (x == 0 || x < -1) {
    PyErr_Format(PyExc_ValueError, "__dlpack__: stream %lld is not valid on "
                 "CUDA (None, 1, 2, a cudaStream_t, or -1)", x);
    return -1;
  }
  *out = (void *)(uintptr_t)x;
  return 0;
}

static PyObject *array_dlpack(PyObject *o, PyObject *args, PyObject *kwargs) {
  ArrayObject *a = (ArrayObject *)o;
  PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None,
           *copy = Py_None;
  static char *kw[] = {"stream", "max_version", "dl_device", "copy", NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kw,
                                   &stream, &max_version, &dl_device, &copy))
    return NULL;
  gfpy_view v;
  if (describe(a, &v) < 0)
    return NULL;
  if (copy == Py_True) {
    PyErr_SetString(PyExc_BufferError,
                    "__dlpack__: gpufeed exports its memory, never a copy");
    return NULL;
  }
  if (dl_device != Py_None) {
    int dt = -1, di = -1;
    if (!PyArg_ParseTuple(dl_device, "ii", &dt, &di))
      return NULL;
    if (dt != v.dev.device_type || di != v.dev.device_id) {
      PyErr_Format(PyExc_BufferError, "__dlpack__: the array is on device "
                   "(%d, %d), not (%d, %d), and is never copied",
                   (int)v.dev.device_type, (int)v.dev.device_id, dt, di);
      return NULL;
    }
  }
  bool versioned = false;
  if (max_version != Py_None) {
    unsigned major = 0, minor = 0;
    if (!PyArg_ParseTuple(max_version, "II", &major, &minor))
      return NULL;
    versioned = major >= 1;
  }
  void *s = NULL;
  if (stream_of(stream, &v, &s) < 0)
    return NULL;
  return gfpy_export(a->batch->cb, &v, s, versioned);
}

static PyObject *array_dlpack_device(PyObject *o, PyObject *unused) {
  (void)unused;
  gfpy_view v;
  if (describe((ArrayObject *)o, &v) < 0)
    return NULL;
  return Py_BuildValue("(ii)", (int)v.dev.device_type, (int)v.dev.device_id);
}

static PyObject *a_data_ptr(PyObject *o, void *u) {
  (void)u;
  gfpy_view v;
  if (describe((ArrayObject *)o, &v) < 0)
    return NULL;
  return PyLong_FromVoidPtr(v.data);
}
static PyObject *a_shape(PyObject *o, void *u) {
  (void)u;
  gfpy_view v;
  if (describe((ArrayObject *)o, &v) < 0)
    return NULL;
  PyObject *t = PyTuple_New(v.ndim);
  for (int i = 0; t && i < v.ndim; i++) {
    PyObject *x = PyLong_FromLongLong(v.shape[i]);
    if (!x) {
      Py_CLEAR(t);
      break;
    }
    PyTuple_SetItem(t, i, x);
  }
  return t;
}
static PyObject *a_dtype(PyObject *o, void *u) {
  (void)u;
  gfpy_view v;
  if (describe((ArrayObject *)o, &v) < 0)
    return NULL;
  const char *name = "unknown";
  switch (v.dtype.code) {
  case kDLInt:
    name = "int64";
    break;
  case kDLUInt:
    name = v.dtype.bits == 16 ? "uint16" : "uint8";
    break;
  case kDLFloat:
    name = v.dtype.bits == 32 ? "float32" : "float16";
    break;
  case kDLBfloat:
    name = "bfloat16";
    break;
  default:
    break;
  }
  return PyUnicode_FromString(name);
}

static void array_dealloc(PyObject *o) {
  PyTypeObject *tp = Py_TYPE(o);
  Py_XDECREF((PyObject *)((ArrayObject *)o)->batch);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

static PyMethodDef array_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))array_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, "
     "copy=None) -> capsule (DLPack)."},
    {"__dlpack_device__", array_dlpack_device, METH_NOARGS,
     "(device_type, device_id): (1, 0) host, (2, N) CUDA device N."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef array_getset[] = {
    {"data_ptr", a_data_ptr, NULL, "address of the first element", NULL},
    {"shape", a_shape, NULL, NULL, NULL},
    {"dtype", a_dtype, NULL, "numpy-style name", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot array_slots[] = {
    {Py_tp_dealloc, (void *)array_dealloc},
    {Py_tp_methods, array_methods},
    {Py_tp_getset, array_getset},
    {Py_tp_doc, "A batch's images or labels, exported through DLPack."},
    {0, NULL}};

static PyType_Spec array_spec = {"gpufeed._C.Array", sizeof(ArrayObject), 0,
                                 Py_TPFLAGS_DEFAULT, array_slots};

int gfpy_batch_init(PyObject *m) {
  gfpy_BatchType = PyType_FromSpec(&batch_spec);
  gfpy_ArrayType = gfpy_BatchType ? PyType_FromSpec(&array_spec) : NULL;
  if (!gfpy_ArrayType)
    return -1;
  if (PyModule_AddObjectRef(m, "Batch", gfpy_BatchType) < 0 ||
      PyModule_AddObjectRef(m, "Array", gfpy_ArrayType) < 0)
    return -1;
  return 0;
}
