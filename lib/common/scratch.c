/* The per-thread scratch buffer of common/scratch.h: one pthread key, a
 * buffer kept per thread up to GF_SCRATCH_KEEP bytes, freed at thread
 * exit. */
#include "common/scratch.h"

#include <pthread.h>
#include <stdlib.h>

/* Buffers up to this size stay with the thread between calls: they cover
 * the usual training images (a 1024x1024 RGBA u16 image is 8 MiB) without
 * a malloc and page faults per sample, and bound what an idle thread
 * holds. */
#define GF_SCRATCH_KEEP ((size_t)32 << 20)

typedef struct scratch_tls {
  void *buf;
  size_t cap;
} scratch_tls;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_err;

static void scratch_free(void *p) {
  scratch_tls *t = p;
  free(t->buf);
  free(t);
}

static void scratch_key_init(void) {
  scratch_key_err = pthread_key_create(&scratch_key, scratch_free);
}

static scratch_tls *scratch_tls_get(void) {
  if (pthread_once(&scratch_once, scratch_key_init) != 0 || scratch_key_err)
    return NULL;
  scratch_tls *t = pthread_getspecific(scratch_key);
  if (t)
    return t;
  t = calloc(1, sizeof *t);
  if (t && pthread_setspecific(scratch_key, t) != 0) {
    free(t);
    t = NULL;
  }
  return t;
}

void *gf_scratch_get(size_t n) {
  void *p = NULL;
  if (n <= GF_SCRATCH_KEEP) {
    scratch_tls *t = scratch_tls_get();
    if (t && t->cap >= n)
      return t->buf;
    if (t) {
      free(t->buf);
      t->cap = 0;
      /* Round up so slowly growing requests do not reallocate each time. */
      size_t want = n < 65536 ? 65536 : n + n / 4;
      if (want > GF_SCRATCH_KEEP)
        want = GF_SCRATCH_KEEP;
      t->buf = malloc(want);
      if (t->buf) {
        t->cap = want;
        return t->buf;
      }
    }
  }
  p = malloc(n ? n : 1);
  if (!p)
    gf_fail(-ENOMEM, NULL, GF_NO_INDEX, GF_NO_INDEX,
            "out of memory for a %zu-byte decode buffer", n);
  return p;
}

void gf_scratch_release(void *p) {
  if (!p)
    return;
  scratch_tls *t = scratch_key_err ? NULL : pthread_getspecific(scratch_key);
  if (t && t->buf == p)
    return;
  free(p);
}
