/* _C.TensorIter: the rest of an epoch as (images, labels) tensors (and,
 * for tar shards read with other fields, a dict of them third: see
 * gfpy_fields_of), one C
 * call a batch. Each step asks stream_of(device) for the stream to hand
 * the batch to (GPU mode: torch's current stream, asked every batch so a
 * loop that switches streams is followed), takes the next batch on it,
 * exports its images and labels as DLPack capsules on that stream and
 * turns each into a tensor with make(capsule) (torch's capsule importer).
 * No Batch or Array object is made and the iterator keeps no reference to
 * the batch: the tensors hold the batch's record (export.c), and it goes
 * back to the loader when the last of them is freed. With indices_of,
 * each step also gives indices_of(bytearray of the batch's sample indices,
 * native uint64), copied before the step returns (a tensor of them does not
 * hold the batch). It is what gpufeed.Loader's iteration runs (and
 * gpufeed.torch.DataLoader's with return_indices); the per-object path
 * (Core.next, Batch.images.__dlpack__) gives the same tensors with more
 * Python calls.
 * After the end of the epoch or an error (a corrupt sample, Ctrl-C during
 * a wait) the iterator is finished, as a generator would be. */
#include "gfpy.h"

static PyObject *gfpy_TensorIterType;

typedef struct {
  PyObject_HEAD
  core *c;              /* a reference; NULL once finished */
  PyObject *stream_of;  /* callable, or None (host mode) */
  PyObject *args;       /* (device,): stream_of's argument */
  PyObject *make;       /* capsule -> tensor */
  PyObject *indices_of; /* bytearray -> indices, or None (pairs) */
  PyObject *owner;      /* kept alive while iterating (the Loader, whose
                           finaliser closes the core), or None */
} IterObject;

static void finish(IterObject *self) {
  if (self->c) {
    core *c = self->c;
    self->c = NULL;
    gfpy_core_unref(c);
  }
}

/* The stream to take the next batch on: NULL in host mode; torch's legacy
 * default stream (0 there) is 1, as in DLPack. -1 with an error set. */
static int next_stream(IterObject *self, void **out) {
  *out = NULL;
  if (self->stream_of == Py_None)
    return 0;
  PyObject *r = PyObject_Call(self->stream_of, self->args, NULL);
  if (!r)
    return -1;
  unsigned long long s = PyLong_AsUnsignedLongLong(r);
  Py_DECREF(r);
  if (s == (unsigned long long)-1 && PyErr_Occurred())
    return -1;
  *out = (void *)(uintptr_t)(s ? s : 1u);
  return 0;
}

/* make(capsule of kind k of cb), the capsule exported on `stream` when the
 * view is device memory. */
static PyObject *tensor_of(IterObject *self, cbatch *cb, int k,
                           void *stream) {
  gfpy_view v;
  if (gfpy_view_of(cb, k, &v) < 0)
    return NULL;
  PyObject *cap =
      gfpy_export(cb, &v, v.dev.device_type == kDLCUDA ? stream : NULL,
                  false);
  if (!cap)
    return NULL;
  PyObject *t = PyObject_CallFunctionObjArgs(self->make, cap, NULL);
  Py_DECREF(cap);
  return t;
}

static PyObject *iter_next(PyObject *o) {
  IterObject *self = (IterObject *)o;
  if (!self->c)
    return NULL; /* finished: StopIteration */
  void *stream;
  gf_batch *b = NULL;
  int got = next_stream(self, &stream);
  if (got == 0)
    got = gfpy_core_take(self->c, stream, &b);
  if (got <= 0) {
    finish(self); /* the end (no error set) or the error */
    return NULL;
  }
  cbatch *cb = gfpy_cbatch_new(self->c, b, stream);
  if (!cb) {
    finish(self);
    return NULL;
  }
  PyObject *images = tensor_of(self, cb, GFPY_IMAGES, stream);
  PyObject *labels = images ? tensor_of(self, cb, GFPY_LABELS, stream) : NULL;
  PyObject *indices = NULL, *fields = NULL;
  /* Tar shards' other fields, copied out before the batch can go back. */
  bool with_fields = gf_loader_field_count(self->c->l) > 0;
  if (labels && with_fields && !(fields = gfpy_fields_of(self->c, b)))
    Py_CLEAR(labels);
  if (labels && self->indices_of != Py_None) {
    Py_ssize_t len = (Py_ssize_t)b->count * (Py_ssize_t)sizeof *b->indices;
    PyObject *buf =
        PyByteArray_FromStringAndSize((const char *)b->indices, len);
    indices = buf ? PyObject_CallFunctionObjArgs(self->indices_of, buf, NULL)
                  : NULL;
    Py_XDECREF(buf);
  }
  gfpy_cbatch_unref(cb); /* the tensors hold it now (none: it goes back) */
  PyObject *r = NULL;
  if (labels && self->indices_of == Py_None)
    r = with_fields ? PyTuple_Pack(3, images, labels, fields)
                    : PyTuple_Pack(2, images, labels);
  else if (indices)
    r = with_fields ? PyTuple_Pack(4, images, labels, fields, indices)
                    : PyTuple_Pack(3, images, labels, indices);
  Py_XDECREF(images);
  Py_XDECREF(labels);
  Py_XDECREF(fields);
  Py_XDECREF(indices);
  if (!r)
    finish(self);
  return r;
}

static PyObject *iter_self(PyObject *o) { return Py_NewRef(o); }

static void iter_dealloc(PyObject *o) {
  IterObject *self = (IterObject *)o;
  PyTypeObject *tp = Py_TYPE(o);
  finish(self);
  Py_XDECREF(self->stream_of);
  Py_XDECREF(self->args);
  Py_XDECREF(self->make);
  Py_XDECREF(self->indices_of);
  Py_XDECREF(self->owner);
  freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
  f(o);
  Py_DECREF(tp);
}

PyObject *gfpy_iter_new(core *c, PyObject *stream_of, PyObject *make,
                        PyObject *owner, PyObject *indices_of) {
  PyObject *args = Py_BuildValue("(i)", (int)c->device);
  if (!args)
    return NULL;
  PyTypeObject *tp = (PyTypeObject *)gfpy_TensorIterType;
  allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
  IterObject *self = (IterObject *)alloc(tp, 0);
  if (!self) {
    Py_DECREF(args);
    return NULL;
  }
  atomic_fetch_add(&c->refs, 1);
  self->c = c;
  self->stream_of = Py_NewRef(stream_of);
  self->args = args;
  self->make = Py_NewRef(make);
  self->indices_of = Py_NewRef(indices_of);
  self->owner = Py_NewRef(owner);
  return (PyObject *)self;
}

static PyType_Slot iter_slots[] = {
    {Py_tp_dealloc, (void *)iter_dealloc},
    {Py_tp_iter, (void *)iter_self},
    {Py_tp_iternext, (void *)iter_next},
    {Py_tp_doc, "An epoch of a loader as (images, labels[, indices]) tensors."},
    {0, NULL}};

static PyType_Spec iter_spec = {"gpufeed._C.TensorIter", sizeof(IterObject),
                                0, Py_TPFLAGS_DEFAULT, iter_slots};

int gfpy_iter_init(PyObject *m) {
  gfpy_TensorIterType = PyType_FromSpec(&iter_spec);
  if (!gfpy_TensorIterType)
    return -1;
  return PyModule_AddObjectRef(m, "TensorIter", gfpy_TensorIterType);
}
