/* gpufeed._C: the CPython extension over the C library (stable ABI,
 * Py_LIMITED_API 3.11). What its files share:
 *   module.c  the module, errors (gf_last_error -> gpufeed.Error), version
 *   config.c  a dict of gf_loader_config fields -> the struct
 *   loader.c  _C.Core: one gf_loader (next, release, metadata, state)
 *   batch.c   _C.Batch and _C.Array: a lent gf_batch and its DLPack views
 *   export.c  a lent batch's record (cbatch) and its DLPack capsules
 *   iter.c    _C.TensorIter: an epoch as (images, labels) tensors, one C
 *             call a batch
 *
 * Lifetime. A `core` (the loader) is shared by the Python Core object and
 * every batch it lent (C reference counts, atomics): gf_loader_destroy runs
 * when the last of them goes, so tensors stay valid after close() and after
 * the Core object is gone. A `cbatch` (one lent gf_batch) is shared by its
 * Python Batch object and every DLPack tensor made from it; when the last
 * goes, the batch is given back to the loader over the streams it was
 * exported to. The DLPack deleter may run on any thread, with or without
 * the GIL: it never touches a Python object, and only queues the batch on
 * core->pending (pend_mu); the consumer's next call, close() or release()
 * gives it back. After close() it is given back at once (under mu).
 *
 * Locks. core->mu serialises the C consumer calls (gf_loader_* is one
 * consumer thread at a time; Python threads take turns). It is only taken
 * with the GIL released (so a thread holding it never waits for the GIL),
 * except by the deleter after close(), which may hold the GIL and waits
 * for mu's holders, none of which wait for the GIL. Order: mu, then
 * pend_mu. */
#ifndef GFPY_H
#define GFPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "dlpack.h"
#include "gpufeed.h"

#define GFPY_STREAMS_MAX GF_RELEASE_STREAMS_MAX

typedef struct cbatch cbatch;

typedef struct core {
  atomic_long refs;      /* the Core object's + one a live cbatch */
  pthread_mutex_t mu;    /* consumer calls on l */
  pthread_mutex_t pend_mu;
  gf_loader *l;
  bool closed;           /* under pend_mu (and mu to set) */
  bool on_device;        /* GPU mode */
  int32_t device;        /* the CUDA device, or -1 */
  uint32_t prefetch;     /* batches the caller may hold */
  long held;             /* lent, not given back (under mu) */
  cbatch *pending;       /* views gone, to give back (pend_mu) */
} core;

struct cbatch {
  atomic_long refs;      /* the Batch object's + one a live DLPack view */
  core *c;               /* holds a reference to it */
  gf_batch *b;
  bool given_back;       /* under pend_mu */
  uint32_t nstreams;     /* under pend_mu */
  void *streams[GFPY_STREAMS_MAX];
  void *next_stream;     /* the stream the batch was taken on (NULL: the
                            host waited) */
  cbatch *next;          /* core->pending */
};

/* module.c */
/* Sets the Python error for gpufeed status rc from gf_last_error() (the
 * calling thread's) through the factory gpufeed/errors.py installed. */
PyObject *gfpy_raise(int rc);
/* The same with a message of our own (for checks done here). */
PyObject *gfpy_raise_msg(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* config.c */
/* Fills *cfg (starting from GF_LOADER_CONFIG_INIT) from dict d; string
 * fields point into `keep`'s objects (a list the caller keeps alive while
 * cfg is used). Returns 0, or -1 with a Python error set. */
int gfpy_config_from_dict(PyObject *d, gf_loader_config *cfg, PyObject *keep);

/* loader.c */
extern PyObject *gfpy_CoreType;
int gfpy_loader_init(PyObject *m);
void gfpy_core_unref(core *c);
/* Gives cb back to the loader now if it was not yet (under c->mu). */
int gfpy_give_back(core *c, cbatch *cb);
/* Gives back the queued batches (under c->mu). */
void gfpy_drain(core *c);

/* loader.c: the next batch of core c for `stream` (0: the host waits),
 * with the GIL held (released while it waits; Ctrl-C interrupts):
 * 1 and *out, 0 at the end of the epoch, -1 with a Python error set. */
int gfpy_core_take(core *c, void *stream, gf_batch **out);

/* batch.c */
extern PyObject *gfpy_BatchType;
extern PyObject *gfpy_ArrayType;
int gfpy_batch_init(PyObject *m);
/* A new Batch object over b, which c just lent (taking a core reference).
 * NULL with an error set (b is then given back). */
PyObject *gfpy_batch_new(core *c, gf_batch *b, void *next_stream);
/* The other fields of lent batch b of c's loader (tar shards' fields), a
 * dict {name: list of count items}: "txt" as str (UTF-8, undecodable
 * bytes replaced by U+FFFD), any other field as bytes, None where a
 * sample has no such member. NULL with an error set. */
PyObject *gfpy_fields_of(core *c, const gf_batch *b);

/* export.c */
enum { GFPY_IMAGES = 0, GFPY_LABELS = 1 };
/* What a view of a batch exports: a dense tensor. */
typedef struct gfpy_view {
  void *data;
  DLDevice dev;
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[4];
} gfpy_view;
/* A record over b, which c just lent: one reference (the caller's), a
 * core reference. NULL with an error set (b is then given back). */
cbatch *gfpy_cbatch_new(core *c, gf_batch *b, void *next_stream);
/* Drops a reference; the last gives the batch back (queued for the
 * consumer while the loader is open, at once after close()). Any thread,
 * with or without the GIL; no Python object is touched. */
void gfpy_cbatch_unref(cbatch *cb);
/* Frees a batch record (given back, no reference left). */
void gfpy_cbatch_free(cbatch *cb);
/* Batch records alive (tests: nothing leaks). */
long gfpy_live_records(void);
/* The images (GFPY_IMAGES) or labels of cb as a dense tensor; -1 with a
 * BufferError when there is none (a ragged batch). */
int gfpy_view_of(const cbatch *cb, int kind, gfpy_view *v);
/* A DLPack capsule ("dltensor", or "dltensor_versioned" when versioned)
 * over v, holding a reference to cb. stream: where the tensor will be used
 * (NULL: no ordering, a CPU tensor or the caller synchronises); it is
 * recorded, and made to wait for the batch unless the batch was taken on
 * it. NULL with an error set. */
PyObject *gfpy_export(cbatch *cb, const gfpy_view *v, void *stream,
                      bool versioned);

/* iter.c */
int gfpy_iter_init(PyObject *m);
/* core.tensors(stream_of, make, owner, indices_of): the iterator; it
 * keeps owner alive; indices_of None: pairs, else triples. */
PyObject *gfpy_iter_new(core *c, PyObject *stream_of, PyObject *make,
                        PyObject *owner, PyObject *indices_of);

#endif /* GFPY_H */
