/* One signed S3 request and its tries on a libcurl easy handle
 * (s3_request.c), between the files of lib/io only: the S3 uploader's
 * (s3_upload.c) PUTs, multipart requests and DELETEs. Each try is signed
 * anew by the client (a signature holds the time it was made) with the
 * body's SHA-256; the reply's head and body (as much as asked) are kept
 * for the caller's checks; a failure is judged (remote_failure.c for the
 * transport, the store's error document and s3_codes.c for a refusal)
 * and retried as the HTTP storage's are (gf_remote_config's max_attempts
 * and retry_ms, backoff with full jitter). Redirects are never followed.
 * No message holds a secret: the client's secret key and session token
 * are scrubbed from curl's words and the store's messages.
 *
 * A gf_s3_req is one thread's: one request at a time on it (its
 * connection is kept between requests). This header does not include
 * curl.h: the handle is a void pointer. */
#ifndef GF_IO_S3_REQUEST_H
#define GF_IO_S3_REQUEST_H

#include "io/s3_client.h"
#include "io/s3_xml.h"       /* gf_s3_error */
#include "io/storage_http.h" /* gf_http_reply */

#include <stdatomic.h>

/* A reply body big enough for any error document; a request that reads a
 * larger result (an XML document up to GF_S3_XML_MAX) asks for more, and
 * the buffer is freed after it. */
#define GF_S3_REQ_BODY_MAX (64u << 10)

/* What the tries add up to, the caller's, added to atomically as they go
 * (so they may be read at any time from any thread). requests: tries
 * sent (failed ones included); retries: tries followed by another;
 * bytes: body bytes of data requests that succeeded; retried_bytes: body
 * bytes of data tries that were sent again. */
typedef struct gf_s3_req_counters {
  _Atomic uint64_t requests, retries, bytes, retried_bytes;
} gf_s3_req_counters;

typedef struct gf_s3_req gf_s3_req;

/* One request to run: the caller's, read until gf_s3_req_run returns.
 *
 * method: "PUT" (the body streamed from memory, rewound for a retry),
 * "POST" (the body posted), or another without a body ("DELETE"). url:
 * gf_s3_client_url's (signed as sent). hash: the body's hex SHA-256
 * (x-amz-content-sha256). ctype: a header line to add ("Content-Type:
 * ..."), NULL for none. reply_max: the most of a reply's body kept (a
 * longer one is cut: bover). data: the body is object bytes (counted in
 * bytes and retried_bytes). gone_ok: a 404 is success (a DELETE: gone
 * already). what: the request, for messages ("PUT part 3 of 5"); shown:
 * the object, for the log ("s3://bucket/key"). */
typedef struct gf_s3_req_desc {
  const char *method;
  const char *url;
  const uint8_t *body;
  uint64_t len;
  const char *hash;
  const char *ctype;
  size_t reply_max;
  bool data;
  bool gone_ok;
  const char *what;
  const char *shown;
  /* Whether to stop now: the transfer is cut, a wait between tries ends,
   * and run returns -ECANCELED. Called on the running thread (from
   * curl's progress callback too). NULL: the request is never cut (an
   * abort; a create, whose upload, made but not known, could not be
   * aborted). */
  bool (*stopped)(void *ctx);
  /* Judges a 2xx reply (r's reply, body, blen, bover) for what the
   * request needs of it. Returns 0 (done), 1 when the store said an error
   * inside it (*e filled: judged as a refused reply's document is), or a
   * negative code with *retry and the cause (cap bytes). NULL: every 2xx
   * is done. */
  int (*accept)(void *ctx, const gf_s3_req *r, gf_s3_error *e, bool *retry,
                char *cause, size_t cap);
  void *ctx; /* stopped's and accept's */
} gf_s3_req_desc;

/* A thread's handle and what its last try received. The fields above
 * "private" may be read by accept and after run; none written. */
struct gf_s3_req {
  void *easy;          /* the CURL *, its connection kept */
  gf_http_reply reply; /* the last try's head */
  char *body;          /* its body's first reply_max bytes (blen) */
  size_t blen;
  bool bover; /* the body was longer than reply_max (cut, not kept) */
  /* private */
  size_t bcap, bmax;
  const gf_s3_req_desc *d;
  uint64_t send_off;
  char errbuf[256]; /* curl's words (CURL_ERROR_SIZE) */
};

/* Makes r's easy handle (curl initialised once for the process first).
 * Returns 0, or -ENOMEM / GF_EREMOTE (libcurl did not initialise) with
 * why (cap bytes). Free with gf_s3_req_free, even after a failure. */
int gf_s3_req_init(gf_s3_req *r, char *why, size_t cap);
/* Closes the handle and frees the body. r's memory stays the caller's;
 * a zeroed r accepted. */
void gf_s3_req_free(gf_s3_req *r);

/* Runs d with its tries on r, signed by c, with remote's timeouts,
 * retries and TLS settings (resolved by gf_remote_resolve), counting
 * into n. Blocks, sleeping between tries.
 * Returns 0, or a code with "what: cause (tries)" in why (cap bytes):
 * -EACCES (401, 403), -ENOENT (404), GF_EREMOTE (other refusals, the
 * transport after its tries), accept's code, -ECANCELED (stopped),
 * -ENOMEM, or the signer's code ("what: cannot sign the request: ...").
 * The calling thread only, one run at a time on r. */
int gf_s3_req_run(gf_s3_req *r, gf_s3_client *c, const gf_remote_config *remote,
                  const gf_s3_req_desc *d, gf_s3_req_counters *n, char *why,
                  size_t cap);

#endif /* GF_IO_S3_REQUEST_H */
