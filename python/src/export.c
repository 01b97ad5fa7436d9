/* A lent batch's record (cbatch: who holds it, the streams it was
 * exported to, giving it back when the last holder goes) and its DLPack
 * export: the images or labels described as a dense tensor and wrapped in
 * a capsule whose deleter drops the record's reference. See gfpy.h for who
 * holds what. A capsule that is never consumed is freed by its destructor
 * (the consumer renames a consumed one "used_dltensor*", and owns it from
 * then on). */
#include "gfpy.h"

#include <stdlib.h>
#include <string.h>

static atomic_long live_records;

void gfpy_cbatch_free(cbatch *cb) {
  atomic_fetch_sub(&live_records, 1);
  free(cb);
}

long gfpy_live_records(void) { return atomic_load(&live_records); }

/* Drops a reference to cb; the last one gives the batch back (queued for
 * the consumer while the loader is open, at once after close()). Any
 * thread; no Python object is touched. */
void gfpy_cbatch_unref(cbatch *cb) {
  if (atomic_fetch_sub(&cb->refs, 1) != 1)
    return;
  core *c = cb->c;
  pthread_mutex_lock(&c->pend_mu);
  if (!cb->given_back && !c->closed) {
    cb->next = c->pending;
    c->pending = cb;
    pthread_mutex_unlock(&c->pend_mu);
    return;
  }
  bool given = cb->given_back;
  pthread_mutex_unlock(&c->pend_mu);
  if (!given) {
    pthread_mutex_lock(&c->mu);
    gfpy_give_back(c, cb);
    pthread_mutex_unlock(&c->mu);
  }
  gfpy_cbatch_free(cb);
  gfpy_core_unref(c); /* may be the last: the loader goes */
}

/* Records `stream` as one the batch is used on. 0 or -1 (full). */
static int add_stream(cbatch *cb, void *stream) {
  core *c = cb->c;
  int rc = 0;
  pthread_mutex_lock(&c->pend_mu);
  uint32_t i = 0;
  while (i < cb->nstreams && cb->streams[i] != stream)
    i++;
  if (i == cb->nstreams) {
    if (cb->nstreams < GFPY_STREAMS_MAX)
      cb->streams[cb->nstreams++] = stream;
    else
      rc = -1;
  }
  pthread_mutex_unlock(&c->pend_mu);
  return rc;
}

cbatch *gfpy_cbatch_new(core *c, gf_batch *b, void *next_stream) {
  cbatch *cb = calloc(1, sizeof *cb);
  if (!cb) {
    /* Give it back unused (nothing views it). */
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&c->mu);
    c->held--;
    gf_loader_release(c->l, b);
    pthread_mutex_unlock(&c->mu);
    Py_END_ALLOW_THREADS
    PyErr_NoMemory();
    return NULL;
  }
  atomic_fetch_add(&live_records, 1);
  atomic_init(&cb->refs, 1);
  atomic_fetch_add(&c->refs, 1);
  cb->c = c;
  cb->b = b;
  cb->next_stream = next_stream;
  if (next_stream && c->on_device)
    cb->streams[cb->nstreams++] = next_stream;
  return cb;
}

/* ---- DLPack ------------------------------------------------------------- */

int gfpy_view_of(const cbatch *cb, int kind, gfpy_view *v) {
  const gf_batch *b = cb->b;
  const core *c = cb->c;
  memset(v, 0, sizeof *v);
  v->dev.device_type = kDLCPU;
  if (kind == GFPY_LABELS) {
    v->data = (void *)b->labels;
    if (b->labels_device) {
      v->data = (void *)b->labels_device;
      v->dev.device_type = kDLCUDA;
      v->dev.device_id = c->device;
    }
    v->dtype = (DLDataType){kDLInt, 64, 1};
    v->ndim = 1;
    v->shape[0] = b->count;
    return 0;
  }
  if (!b->output) {
    PyErr_SetString(PyExc_BufferError,
                    "the batch's samples differ in size (a ragged batch): "
                    "give the loader a transform with a fixed size");
    return -1;
  }
  v->data = b->output;
  if (b->on_device) {
    v->dev.device_type = kDLCUDA;
    v->dev.device_id = c->device;
  }
  uint64_t elems = (uint64_t)b->count * b->out_height * b->out_width *
                   b->out_channels;
  switch (b->out_dtype) {
  case GF_OUT_U8:
    /* 16-bit samples kept as they are (keep_16bit) stay uint16. */
    v->dtype = (DLDataType){kDLUInt,
                            (uint8_t)(elems && b->output_bytes >= 2 * elems
                                          ? 16
                                          : 8),
                            1};
    break;
  case GF_OUT_F32:
    v->dtype = (DLDataType){kDLFloat, 32, 1};
    break;
  case GF_OUT_F16:
    v->dtype = (DLDataType){kDLFloat, 16, 1};
    break;
  case GF_OUT_BF16:
    v->dtype = (DLDataType){kDLBfloat, 16, 1};
    break;
  default:
    PyErr_Format(PyExc_BufferError, "unknown output dtype %u", b->out_dtype);
    return -1;
  }
  v->ndim = 4;
  v->shape[0] = b->count;
  if (b->out_layout == GF_LAYOUT_NCHW) {
    v->shape[1] = b->out_channels;
    v->shape[2] = b->out_height;
    v->shape[3] = b->out_width;
  } else {
    v->shape[1] = b->out_height;
    v->shape[2] = b->out_width;
    v->shape[3] = b->out_channels;
  }
  return 0;
}

/* One allocation: the managed tensor, then shape[4] and strides[4]. */
typedef struct legacy_mt {
  DLManagedTensor mt;
  int64_t shape[4], strides[4];
} legacy_mt;
typedef struct versioned_mt {
  DLManagedTensorVersioned mt;
  int64_t shape[4], strides[4];
} versioned_mt;

static void deleter_legacy(DLManagedTensor *m) {
  cbatch *cb = m->manager_ctx;
  free(m); /* the first member of legacy_mt */
  gfpy_cbatch_unref(cb);
}
static void deleter_versioned(DLManagedTensorVersioned *m) {
  cbatch *cb = m->manager_ctx;
  free(m);
  gfpy_cbatch_unref(cb);
}
static void capsule_legacy_dtor(PyObject *cap) {
  if (!PyCapsule_IsValid(cap, "dltensor"))
    return; /* consumed: the consumer calls the deleter */
  DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
  if (m && m->deleter)
    m->deleter(m);
}
static void capsule_versioned_dtor(PyObject *cap) {
  if (!PyCapsule_IsValid(cap, "dltensor_versioned"))
    return;
  DLManagedTensorVersioned *m =
      PyCapsule_GetPointer(cap, "dltensor_versioned");
  if (m && m->deleter)
    m->deleter(m);
}

static void fill_tensor(DLTensor *t, const gfpy_view *v, int64_t *shape,
                        int64_t *strides) {
  t->data = v->data;
  t->device = v->dev;
  t->ndim = v->ndim;
  t->dtype = v->dtype;
  int64_t s = 1;
  for (int i = v->ndim - 1; i >= 0; i--) {
    shape[i] = v->shape[i];
    strides[i] = s;
    s *= v->shape[i];
  }
  t->shape = shape;
  t->strides = strides;
  t->byte_offset = 0;
}

PyObject *gfpy_export(cbatch *cb, const gfpy_view *v, void *s,
                      bool versioned) {
  core *c = cb->c;
  if (s) {
    if (add_stream(cb, s) < 0) {
      PyErr_Format(PyExc_BufferError, "__dlpack__: the batch is already "
                   "used on %d streams, the most gpufeed tracks",
                   GFPY_STREAMS_MAX);
      return NULL;
    }
    if (s != cb->next_stream) {
      int rc;
      Py_BEGIN_ALLOW_THREADS
      pthread_mutex_lock(&c->mu);
      rc = gf_loader_batch_wait_on(c->l, cb->b, s);
      pthread_mutex_unlock(&c->mu);
      Py_END_ALLOW_THREADS
      if (rc < 0)
        return gfpy_raise(rc);
    }
  }
  PyObject *cap;
  if (versioned) {
    versioned_mt *m = calloc(1, sizeof *m);
    if (!m)
      return PyErr_NoMemory();
    m->mt.version = (DLPackVersion){GFPY_DLPACK_MAJOR, GFPY_DLPACK_MINOR};
    m->mt.manager_ctx = cb;
    m->mt.deleter = deleter_versioned;
    m->mt.flags = 0;
    fill_tensor(&m->mt.dl_tensor, v, m->shape, m->strides);
    atomic_fetch_add(&cb->refs, 1);
    cap = PyCapsule_New(&m->mt, "dltensor_versioned", capsule_versioned_dtor);
    if (!cap)
      deleter_versioned(&m->mt);
  } else {
    legacy_mt *m = calloc(1, sizeof *m);
    if (!m)
      return PyErr_NoMemory();
    m->mt.manager_ctx = cb;
    m->mt.deleter = deleter_legacy;
    fill_tensor(&m->mt.dl_tensor, v, m->shape, m->strides);
    atomic_fetch_add(&cb->refs, 1);
    cap = PyCapsule_New(&m->mt, "dltensor", capsule_legacy_dtor);
    if (!cap)
      deleter_legacy(&m->mt);
  }
  return cap;
}
