/* Uploads to S3: whole objects with one PUT, larger files as multipart
 * uploads whose parts go out in parallel, and deletes. This file is the
 * uploader's API: each call's object (its key, URL and body), the steps
 * of a multipart upload (create, the parts, complete; abort on failure),
 * the outcome recorded on the caller's thread, and the uploader's
 * threads started and stopped. Every request runs on those threads
 * (s3_upload_queue.c), each with its own request handle (s3_request.c:
 * one libcurl easy handle, its connection kept alive between requests)
 * and one part buffer, so the requests in flight and the memory are
 * bounded whatever the callers do. */
#include "io/s3_upload.h"

#include "io/s3_sigv4.h"
#include "io/s3_upload_queue.h"
#include "io/s3_xml.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The key's longest, as S3 allows. */
#define KEY_MAX 1024u

/* The CompleteMultipartUpload body: every part's number and ETag, in
 * order. Returns 0 or -ENOMEM. */
static int complete_body(gf_s3_call *up) {
  size_t need = 64;
  char one[1];
  for (uint32_t i = 0; i < up->nparts; i++)
    need += 80 + gf_s3_xml_escape(up->etags[i], one, sizeof one);
  char *b = malloc(need);
  if (!b)
    return -ENOMEM;
  size_t n = (size_t)snprintf(b, need, "<CompleteMultipartUpload>");
  for (uint32_t i = 0; i < up->nparts; i++) {
    n += (size_t)snprintf(b + n, need - n,
                          "<Part><PartNumber>%u</PartNumber>"
                          "<ETag>",
                          i + 1);
    n += gf_s3_xml_escape(up->etags[i], b + n, need - n);
    n += (size_t)snprintf(b + n, need - n, "</ETag></Part>");
  }
  n += (size_t)snprintf(b + n, need - n, "</CompleteMultipartUpload>");
  up->complete_body = b;
  up->complete_len = n;
  return 0;
}

static void call_free(gf_s3_call *up) {
  if (up->fd >= 0)
    close(up->fd);
  free(up->key);
  free(up->url);
  free(up->etags);
  free(up->done_len);
  free(up->complete_body);
  pthread_cond_destroy(&up->cv);
}

/* The call's outcome recorded against the object (gf_fail on the
 * caller's thread), its resources freed. */
static int call_end(gf_s3_call *up, int rc, const char *why) {
  if (rc < 0)
    gf_fail(rc, up->shown, GF_NO_INDEX, GF_NO_INDEX, "%s", why);
  call_free(up);
  return rc;
}

/* A call for object name: its key, URL and display form. Returns 0, or a
 * code with why. */
static int call_init(gf_s3_uploader *u, gf_s3_call *up, const char *name,
                     char *why, size_t cap) {
  memset(up, 0, sizeof *up);
  up->u = u;
  up->fd = -1;
  pthread_cond_init(&up->cv, NULL);
  gf_s3_client *c = u->c;
  snprintf(up->shown, sizeof up->shown, "%s/%s", c->display_root,
           name ? name : "");
  if (!name || !name[0]) {
    snprintf(why, cap, "an object needs a name");
    return -EINVAL;
  }
  if (asprintf(&up->key, "%s%s%s", c->prefix, c->prefix[0] ? "/" : "", name) <
      0) {
    up->key = NULL;
    snprintf(why, cap, "out of memory");
    return -ENOMEM;
  }
  if (strlen(up->key) > KEY_MAX) {
    snprintf(why, cap, "the key is %zu bytes long: S3's keys are at most %u",
             strlen(up->key), KEY_MAX);
    return -EINVAL;
  }
  if (!(up->url = gf_s3_client_url(c, up->key, NULL))) {
    snprintf(why, cap, "out of memory");
    return -ENOMEM;
  }
  if (atomic_load(&u->cancelled)) {
    snprintf(why, cap, "cancelled (gf_s3_uploader_cancel) before it started");
    return -ECANCELED;
  }
  return 0;
}

/* Uploads a call's body (its fd or mem, size set). */
static int upload(gf_s3_call *up, void (*progress)(void *, uint64_t),
                  void *ctx) {
  gf_s3_uploader *u = up->u;
  char why[1000];
  if (!up->multipart)
    up->nparts = 1;
  if (!(up->done_len = calloc(up->nparts, sizeof *up->done_len)))
    return call_end(up, -ENOMEM, "out of memory");
  if (!up->multipart) {
    int rc = gf_s3_queue_parts(up, progress, ctx);
    return call_end(up, rc, up->why);
  }
  if (!(up->etags = calloc(up->nparts, sizeof *up->etags)))
    return call_end(up, -ENOMEM, "out of memory");
  gf_s3_ctl j;
  int rc = gf_s3_queue_ctl(up, GF_S3_K_CREATE, &j);
  if (rc < 0)
    return call_end(up, rc, j.why);
  /* An id of at most 1023 bytes, each encoded in at most 3. */
  gf_sigv4_encode(up->upload_id, false, up->upload_id_enc,
                  sizeof up->upload_id_enc);
  if (atomic_load(&u->cancelled)) {
    rc = -ECANCELED;
    snprintf(up->why, sizeof up->why, "cancelled (gf_s3_uploader_cancel)");
  } else {
    rc = gf_s3_queue_parts(up, progress, ctx);
  }
  if (rc == 0 && atomic_load(&u->cancelled)) {
    rc = -ECANCELED;
    snprintf(up->why, sizeof up->why,
             "cancelled (gf_s3_uploader_cancel) before it was completed");
  }
  if (rc == 0 && complete_body(up) < 0) {
    rc = -ENOMEM;
    snprintf(up->why, sizeof up->why, "out of memory");
  }
  if (rc == 0) {
    rc = gf_s3_queue_ctl(up, GF_S3_K_COMPLETE, &j);
    if (rc < 0)
      gf_strlcpy(up->why, j.why, sizeof up->why);
  }
  if (rc == 0)
    return call_end(up, 0, "");
  /* Failed or cancelled: no part of it is left stored (S3 keeps, and
   * bills, the parts of an upload until it is aborted). */
  pthread_mutex_lock(&u->mu);
  uint32_t done = up->done;
  pthread_mutex_unlock(&u->mu);
  if (rc == -ECANCELED)
    snprintf(why, sizeof why, "cancelled (gf_s3_uploader_cancel)");
  else
    gf_strlcpy(why, up->why, sizeof why);
  size_t l = strlen(why);
  if (gf_s3_queue_ctl(up, GF_S3_K_ABORT, &j) < 0)
    snprintf(why + l, sizeof why - l,
             "; and the multipart upload %.100s could not be aborted "
             "(its parts stay stored until it is): %.300s",
             up->upload_id, j.why);
  else
    snprintf(why + l, sizeof why - l,
             "; %u of %u parts had been uploaded, and the multipart upload "
             "was aborted",
             done, up->nparts);
  return call_end(up, rc, why);
}

int gf_s3_upload_file(gf_s3_uploader *u, const char *path, uint64_t size,
                      const char *name,
                      void (*progress)(void *ctx, uint64_t done), void *ctx) {
  gf_s3_call up;
  char why[600];
  int rc = call_init(u, &up, name, why, sizeof why);
  if (rc < 0)
    return call_end(&up, rc, why);
  up.path = path;
  up.size = size;
  if ((up.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
    int e = errno;
    snprintf(why, sizeof why, "cannot open %.400s: %s", path, strerror(e));
    return call_end(&up, -e, why);
  }
  struct stat st;
  if (fstat(up.fd, &st) == 0 && S_ISREG(st.st_mode) &&
      (uint64_t)st.st_size != size) {
    snprintf(why, sizeof why,
             "%.400s is %llu bytes, not the %llu to upload: it changed?", path,
             (unsigned long long)st.st_size, (unsigned long long)size);
    return call_end(&up, GF_ECHANGED, why);
  }
  if (size > u->part_size) {
    uint64_t n = (size + u->part_size - 1) / u->part_size;
    if (n > GF_S3_PARTS_MAX) {
      snprintf(why, sizeof why,
               "%llu bytes in parts of %llu would be %llu parts: S3 takes "
               "%u at most (a larger part_size)",
               (unsigned long long)size, (unsigned long long)u->part_size,
               (unsigned long long)n, GF_S3_PARTS_MAX);
      return call_end(&up, -EINVAL, why);
    }
    up.multipart = true;
    up.nparts = (uint32_t)n;
  }
  return upload(&up, progress, ctx);
}

int gf_s3_upload_bytes(gf_s3_uploader *u, const void *data, uint64_t len,
                       const char *name) {
  gf_s3_call up;
  char why[600];
  int rc = call_init(u, &up, name, why, sizeof why);
  if (rc < 0)
    return call_end(&up, rc, why);
  if (len > GF_S3_PUT_MAX) {
    snprintf(why, sizeof why,
             "%llu bytes in one PUT: S3 takes 5 GiB at most (upload a file "
             "in parts)",
             (unsigned long long)len);
    return call_end(&up, -EINVAL, why);
  }
  if (len && !data) {
    snprintf(why, sizeof why, "no data");
    return call_end(&up, -EINVAL, why);
  }
  up.mem = len ? data : (const uint8_t *)"";
  up.size = len;
  /* One PUT whatever part_size is: the body is the caller's memory. */
  return upload(&up, NULL, NULL);
}

int gf_s3_delete(gf_s3_uploader *u, const char *name) {
  gf_s3_call up;
  char why[600];
  int rc = call_init(u, &up, name, why, sizeof why);
  if (rc < 0)
    return call_end(&up, rc, why);
  gf_s3_ctl j;
  rc = gf_s3_queue_ctl(&up, GF_S3_K_DELETE, &j);
  return call_end(&up, rc, j.why);
}

void gf_s3_uploader_cancel(gf_s3_uploader *u) {
  if (!u)
    return;
  atomic_store(&u->cancelled, true);
  gf_s3_queue_cancel(u);
}

/* ---- the uploader ------------------------------------------------------- */

void gf_s3_uploader_counters(const gf_s3_uploader *u,
                             gf_s3_upload_counters *out) {
  gf_s3_uploader *m = (gf_s3_uploader *)u;
  out->requests = atomic_load(&m->n.requests);
  out->retries = atomic_load(&m->n.retries);
  out->bytes = atomic_load(&m->n.bytes);
  out->retried_bytes = atomic_load(&m->n.retried_bytes);
  out->parts = atomic_load(&m->parts);
  out->objects = atomic_load(&m->objects);
  out->aborted = atomic_load(&m->aborted);
}

void gf_s3_uploader_destroy(gf_s3_uploader *u) {
  if (!u)
    return;
  pthread_mutex_lock(&u->mu);
  u->quit = true;
  pthread_cond_broadcast(&u->work);
  pthread_mutex_unlock(&u->mu);
  for (unsigned i = 0; u->workers && i < u->parallel; i++) {
    gf_s3_worker *w = &u->workers[i];
    if (w->started)
      pthread_join(w->thread, NULL);
    gf_s3_req_free(&w->req);
    free(w->buf);
  }
  free(u->workers);
  pthread_cond_destroy(&u->work);
  pthread_mutex_destroy(&u->mu);
  free(u->ca_file);
  free(u);
}

int gf_s3_uploader_create(gf_s3_client *c, const gf_remote_config *remote,
                          uint64_t part_size, unsigned parallel,
                          gf_s3_uploader **out, char *why, size_t cap) {
  *out = NULL;
  if (!c) {
    snprintf(why, cap, "no client");
    return -EINVAL;
  }
  if (part_size < GF_S3_PART_MIN || part_size > GF_S3_PART_MAX ||
      part_size > SIZE_MAX) {
    snprintf(why, cap,
             "part_size %llu is outside S3's range of part sizes, 5 MiB to "
             "5 GiB",
             (unsigned long long)part_size);
    return -EINVAL;
  }
  if (parallel < 1 || parallel > GF_S3_PARALLEL_MAX) {
    snprintf(why, cap, "parallel %u is not 1 to %u", parallel,
             GF_S3_PARALLEL_MAX);
    return -EINVAL;
  }
  gf_remote_config rc;
  int r = gf_remote_resolve(remote, &rc);
  if (r < 0) {
    snprintf(why, cap, "%s", gf_last_error()->message);
    return r;
  }
  gf_s3_uploader *u = calloc(1, sizeof *u);
  if (!u) {
    snprintf(why, cap, "out of memory");
    return -ENOMEM;
  }
  u->c = c;
  u->part_size = part_size;
  u->parallel = parallel;
  u->remote = rc;
  u->remote.cache_dir = NULL; /* not ours, and not kept */
  u->remote.s3 = NULL;
  u->remote.ca_file = NULL;
  pthread_mutex_init(&u->mu, NULL);
  pthread_cond_init(&u->work, NULL);
  if ((rc.ca_file && !(u->ca_file = strdup(rc.ca_file))) ||
      !(u->workers = calloc(parallel, sizeof *u->workers))) {
    gf_s3_uploader_destroy(u);
    snprintf(why, cap, "out of memory");
    return -ENOMEM;
  }
  u->remote.ca_file = u->ca_file;
  if (u->ca_file && access(u->ca_file, R_OK) != 0) {
    int e = errno;
    snprintf(why, cap, "ca_file %.300s cannot be read: %s", u->ca_file,
             strerror(e));
    gf_s3_uploader_destroy(u);
    return -e;
  }
  for (unsigned i = 0; i < parallel; i++) {
    gf_s3_worker *w = &u->workers[i];
    w->u = u;
    if ((r = gf_s3_req_init(&w->req, why, cap)) < 0) {
      gf_s3_uploader_destroy(u);
      return r;
    }
    int e = pthread_create(&w->thread, NULL, gf_s3_queue_thread, w);
    if (e) {
      gf_s3_uploader_destroy(u);
      snprintf(why, cap, "cannot start an upload thread: %s", strerror(e));
      return GF_EREMOTE;
    }
    w->started = true;
  }
  *out = u;
  return 0;
}
