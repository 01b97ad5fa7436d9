/* The module gpufeed._C: its init, the error mapping and the functions that
 * need no loader (version, plan, error names). */
#include "gfpy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PyObject *error_factory; /* gpufeed.errors._make, set at import */

/* Builds the exception for (code, path, sample, message) and sets it. */
static PyObject *raise_info(int code, const char *path, uint64_t sample,
                            const char *message) {
  PyObject *sample_o = sample == GF_NO_INDEX
                           ? Py_NewRef(Py_None)
                           : PyLong_FromUnsignedLongLong(sample);
  if (!sample_o)
    return NULL;
  if (!error_factory) {
    PyErr_Format(PyExc_RuntimeError, "%s: %s", gf_err_name(code), message);
    Py_DECREF(sample_o);
    return NULL;
  }
  PyObject *exc = PyObject_CallFunction(error_factory, "isssO", code,
                                        gf_err_name(code), path, message,
                                        sample_o);
  Py_DECREF(sample_o);
  if (!exc)
    return NULL;
  PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
  Py_DECREF(exc);
  return NULL;
}

PyObject *gfpy_raise(int rc) {
  const gf_error_info *e = gf_last_error();
  if (e->code == rc && e->message[0])
    return raise_info(rc, e->path, e->sample, e->message);
  return raise_info(rc, "", GF_NO_INDEX, gf_strerror(rc));
}

PyObject *gfpy_raise_msg(int rc, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return raise_info(rc, "", GF_NO_INDEX, msg);
}

static PyObject *set_error_factory(PyObject *self, PyObject *f) {
  (void)self;
  if (!PyCallable_Check(f)) {
    PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
    return NULL;
  }
  PyObject *old = error_factory;
  error_factory = Py_NewRef(f);
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

static PyObject *err_name(PyObject *self, PyObject *arg) {
  (void)self;
  int code = (int)PyLong_AsLong(arg);
  if (code == -1 && PyErr_Occurred())
    return NULL;
  return PyUnicode_FromString(gf_err_name(code));
}

static PyObject *error_table(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  PyObject *d = PyDict_New();
  if (!d)
    return NULL;
#define GFPY_ERR_(name, value, msg)                                     \
  do {                                                                  \
    PyObject *v = PyLong_FromLong(value);                               \
    if (!v || PyDict_SetItemString(d, "GF_E" #name, v) < 0) {           \
      Py_XDECREF(v);                                                    \
      Py_DECREF(d);                                                     \
      return NULL;                                                      \
    }                                                                   \
    Py_DECREF(v);                                                       \
  } while (0);
  GF_ERRNO_MAP(GFPY_ERR_)
#undef GFPY_ERR_
  return d;
}

/* plan(config_dict) -> str: gf_loader_plan's table. */
static PyObject *plan(PyObject *self, PyObject *d) {
  (void)self;
  gf_loader_config cfg;
  PyObject *keep = PyList_New(0);
  if (!keep)
    return NULL;
  if (gfpy_config_from_dict(d, &cfg, keep) < 0) {
    Py_DECREF(keep);
    return NULL;
  }
  size_t cap = 1 << 16;
  for (;;) {
    char *buf = malloc(cap);
    if (!buf) {
      Py_DECREF(keep);
      return PyErr_NoMemory();
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gf_loader_plan(&cfg, buf, cap);
    Py_END_ALLOW_THREADS
    if (rc == -ENOBUFS && cap < (1u << 26)) {
      free(buf);
      cap *= 4;
      continue;
    }
    PyObject *r = rc < 0 ? gfpy_raise(rc) : PyUnicode_FromStringAndSize(buf, rc);
    free(buf);
    Py_DECREF(keep);
    return r;
  }
}

/* location_display(str) -> str: the location as reports show it (a URL
 * without its credentials and query). */
static PyObject *location_display(PyObject *self, PyObject *arg) {
  (void)self;
  Py_ssize_t n;
  const char *loc = PyUnicode_AsUTF8AndSize(arg, &n);
  if (!loc)
    return NULL;
  char buf[1024];
  gf_location_display(loc, NULL, buf, sizeof buf);
  return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
}

static PyObject *live_records(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyLong_FromLong(gfpy_live_records());
}

static PyMethodDef methods[] = {
    {"_live_batch_records", live_records, METH_NOARGS,
     "Batch records alive in this process (for tests: nothing leaks)."},
    {"_set_error_factory", set_error_factory, METH_O,
     "Installs f(code, name, path, message, sample) -> exception."},
    {"err_name", err_name, METH_O, "The symbolic name of an error code."},
    {"error_table", error_table, METH_NOARGS,
     "gpufeed's own error codes: {'GF_ECORRUPT': -1004, ...}."},
    {"location_display", location_display, METH_O,
     "location_display(str) -> str: a location as messages show it (a URL "
     "without its user:password and query)."},
    {"plan", plan, METH_O,
     "plan(config: dict) -> str: the memory plan of a loader of that config."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "gpufeed._C",
    "The C core of gpufeed (see the gpufeed package for the API).", -1,
    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__C(void);
PyMODINIT_FUNC PyInit__C(void) {
  PyObject *m = PyModule_Create(&moddef);
  if (!m)
    return NULL;
  if (PyModule_AddStringConstant(m, "version", gf_version_string()) < 0 ||
      PyModule_AddIntConstant(m, "DEVICE_AUTO", GF_DEVICE_AUTO) < 0 ||
      PyModule_AddIntConstant(m, "DEVICE_CPU", GF_DEVICE_CPU) < 0 ||
      PyModule_AddIntConstant(m, "STREAMS_MAX", GFPY_STREAMS_MAX) < 0 ||
      gfpy_loader_init(m) < 0 || gfpy_batch_init(m) < 0 ||
      gfpy_iter_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
