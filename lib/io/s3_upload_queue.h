/* The S3 uploader's threads and their queue (s3_upload_queue.c), for
 * s3_upload.c only: the uploader's state, the calls it serves, and the
 * work its threads take. s3_upload.c makes the calls (an object to PUT,
 * whole or in parts, a delete), hands them here and waits; the threads
 * run each request with s3_request.c. Calls go s3_upload -> queue ->
 * request, never back.
 *
 * The work the threads take: first the control requests (create, complete
 * and abort a multipart upload, delete), one FIFO, so that a call about to
 * finish is not kept behind another's thousand parts; then the parts of
 * the calls queued, the oldest call's first. A single PUT of a file or of
 * memory is a call of one part without an upload id.
 *
 * A call's caller waits on its condition variable; the threads record each
 * part's outcome (its ETag, the first failure) under the uploader's mutex.
 * The failure of one part, and gf_s3_uploader_cancel, stop the call's other
 * parts: their transfers are cut, their waits between tries end; an abort
 * is never cut, nor a create. gf_fail is called on the caller's thread
 * only (the last error is per thread), by s3_upload.c. */
#ifndef GF_IO_S3_UPLOAD_QUEUE_H
#define GF_IO_S3_UPLOAD_QUEUE_H

#include "io/s3_request.h"
#include "io/s3_upload.h"

#include <pthread.h>
#include <stdatomic.h>

typedef enum gf_s3_kind {
  GF_S3_K_PUT,      /* a whole object */
  GF_S3_K_PART,     /* UploadPart */
  GF_S3_K_CREATE,   /* CreateMultipartUpload */
  GF_S3_K_COMPLETE, /* CompleteMultipartUpload */
  GF_S3_K_ABORT,    /* AbortMultipartUpload */
  GF_S3_K_DELETE    /* DeleteObject */
} gf_s3_kind;

typedef struct gf_s3_call gf_s3_call;

/* A control request for the threads, on the caller's stack. */
typedef struct gf_s3_ctl {
  struct gf_s3_ctl *next;
  gf_s3_call *up;
  gf_s3_kind kind;
  bool done;
  int rc;
  char why[900];
} gf_s3_ctl;

/* One API call: an object to PUT (in parts or whole), or a delete. */
struct gf_s3_call {
  gf_s3_uploader *u;
  char *key; /* prefix/name */
  char *url; /* the object's request URL, no query */
  char shown[1100];
  /* the body: a file (fd, path) or memory */
  int fd;
  const char *path;
  const uint8_t *mem;
  uint64_t size;
  /* its parts; a single PUT is one part without an upload id */
  bool multipart;
  uint32_t nparts, next, inflight, done;
  uint64_t *done_len; /* the parts' lengths, in the order they completed */
  char upload_id[1024];
  char upload_id_enc[3 * 1024];      /* percent-encoded for queries */
  char (*etags)[GF_VERSION_TAG_MAX]; /* nparts, as the store sent them */
  char *complete_body;               /* the CompleteMultipartUpload XML */
  size_t complete_len;
  gf_s3_call *qnext; /* in the uploader's queue of parts */
  bool queued;
  _Atomic bool stop; /* a part failed, or cancelled: the others stop */
  int rc;            /* the first failure (under the uploader's mutex) */
  char why[900];
  pthread_cond_t cv; /* parts done, control requests done */
};

/* One thread: its request handle (connection kept) and part buffer. */
typedef struct gf_s3_worker {
  gf_s3_uploader *u;
  pthread_t thread;
  bool started;
  gf_s3_req req;
  uint8_t *buf; /* part_size bytes, at the first part from a file */
} gf_s3_worker;

struct gf_s3_uploader {
  gf_s3_client *c;
  gf_remote_config remote; /* resolved; ca_file is ours */
  char *ca_file;
  uint64_t part_size;
  unsigned parallel;
  pthread_mutex_t mu;
  pthread_cond_t work; /* the threads wait for work here */
  bool quit;
  gf_s3_ctl *chead, *ctail;  /* control requests waiting */
  gf_s3_call *qhead, *qtail; /* calls with parts to hand out */
  _Atomic bool cancelled;
  gf_s3_worker *workers;
  gf_s3_req_counters n; /* requests, retries, bytes, retried_bytes */
  _Atomic uint64_t parts, objects, aborted;
};

/* A thread's body (pthread_create's, arg: its gf_s3_worker): takes work
 * until u->quit. */
void *gf_s3_queue_thread(void *arg);

/* Runs a control request of kind on a thread for call up and waits for
 * it. Returns its code, its words in j->why. The caller's thread. */
int gf_s3_queue_ctl(gf_s3_call *up, gf_s3_kind kind, gf_s3_ctl *j);

/* Hands call up's parts (nparts set) to the threads and waits for them,
 * calling progress (may be NULL) on this thread after each. Returns 0 or
 * the first failure's code (its words in up->why). The caller's thread. */
int gf_s3_queue_parts(gf_s3_call *up, void (*progress)(void *, uint64_t),
                      void *ctx);

/* What is queued and not started fails -ECANCELED: the parts not handed
 * out, and the control requests but the aborts. (u->cancelled, set by
 * the caller first, stops what is running.) Any thread. */
void gf_s3_queue_cancel(gf_s3_uploader *u);

#endif /* GF_IO_S3_UPLOAD_QUEUE_H */
