/* Uploads to S3 (s3_upload.c), between the files of lib (the builder's
 * `gpufeed build SRC s3://bucket/prefix`): objects written under an S3
 * location's prefix, each signed by its client (s3_client.h) with the
 * SHA-256 of its real body, so that the store checks every byte.
 *
 * An uploader owns `parallel` threads, each with one libcurl handle (its
 * connection kept between requests) and one part buffer; every request of
 * every call (PUTs, the multipart requests, DELETEs) runs on those
 * threads, so at most `parallel` requests are in flight and the memory is
 * bounded by parallel x part_size (a buffer is allocated at its thread's
 * first file part, kept until destroy). Requests that complete or abort a
 * multipart upload go before any part still waiting.
 *
 * Retries as the HTTP storage's (docs/REMOTE.md): gf_remote_config's
 * max_attempts and retry_ms, exponential backoff with full jitter; 5xx,
 * 429, 408, resets, refused connections, stalls (stall_ms without a byte
 * moving either way) and the store's codes SlowDown, Throttling,
 * InternalError, RequestTimeout, ServiceUnavailable,
 * XAmzContentSHA256Mismatch and BadDigest are retried (s3_codes.c);
 * ExpiredToken fetches the credentials again (gf_s3_client_expired) and
 * retries; any other 4xx is not. Redirects are never followed. No
 * message holds a secret (the client's secret key and session token are
 * scrubbed from curl's words and the store's messages).
 *
 * Threads: every call but destroy may come from any thread, several at
 * once on one uploader (they share its threads).
 *
 * Files: s3_upload.c (this API, the steps of a multipart upload),
 * s3_upload_queue.c (the threads and their queue), s3_request.c (one
 * request and its tries), with s3_codes.c (S3's error codes) and
 * remote_failure.c (transport failures, secrets scrubbed) shared with
 * the reading storage. */
#ifndef GF_IO_S3_UPLOAD_H
#define GF_IO_S3_UPLOAD_H

#include "io/s3_client.h"

#include <stdint.h>

/* S3's limits: a part of a multipart upload (the last one may be
 * smaller), the parts of one upload, and one PUT. */
#define GF_S3_PART_MIN (5ull << 20)
#define GF_S3_PART_MAX (5ull << 30)
#define GF_S3_PARTS_MAX 10000u
#define GF_S3_PUT_MAX (5ull << 30)
#define GF_S3_PARALLEL_MAX 64u

typedef struct gf_s3_uploader gf_s3_uploader;

/* An uploader of objects under client c's prefix: up to `parallel`
 * (1..64) requests in flight on as many threads, each with one part
 * buffer of part_size bytes (5 MiB .. 5 GiB; the memory: parallel x
 * part_size), remote's timeouts, retries and TLS settings (NULL: the
 * defaults; its s3 field is not read: c has resolved it). c stays the
 * caller's and must outlive the uploader. Returns 0 or a negative code
 * (-EINVAL: a part size, a parallel or a remote field out of range;
 * -ENOMEM; GF_EREMOTE: libcurl or a thread would not start) with why
 * (cap bytes; a remote field's is also recorded, as gf_remote_resolve
 * does). The caller frees *out with gf_s3_uploader_destroy. */
int gf_s3_uploader_create(gf_s3_client *c, const gf_remote_config *remote,
                          uint64_t part_size, unsigned parallel,
                          gf_s3_uploader **out, char *why, size_t cap);
/* Stops the threads and frees the uploader. No call may be running on it
 * (gf_s3_uploader_cancel, then wait for them to return: each has aborted
 * the multipart upload it started by then, so none is left open). NULL
 * accepted. */
void gf_s3_uploader_destroy(gf_s3_uploader *u);

/* Uploads local file `path` (size bytes, read with pread: it must not
 * change meanwhile: a file of another size, or found shorter while read,
 * fails with GF_ECHANGED) as object `name` (relative to the prefix; the
 * key is prefix/name, 1024 bytes at most): one PUT when size <= part_size,
 * else a multipart upload (CreateMultipartUpload, UploadPart of every part
 * on the threads, CompleteMultipartUpload with the parts' ETags in order;
 * at most 10,000 parts, else -EINVAL). Each body is signed with its real
 * SHA-256 (x-amz-content-sha256), so the store checks every byte. Blocks
 * until the object is complete or failed. Returns 0, or the error
 * recorded with gf_fail against "s3://bucket/prefix/name": the request
 * (PUT, part N of M, complete), the HTTP status and the store's code and
 * message from its XML error body, the tries; -EACCES (401, 403), -ENOENT
 * (404), GF_EREMOTE (other refusals, transport failures after their
 * tries), GF_EREPLY (a reply S3 would not send: a part without ETag, an
 * unreadable XML reply), -ECANCELED (gf_s3_uploader_cancel), a local
 * file's -errno or GF_ECHANGED. On failure a multipart upload it
 * started is aborted (AbortMultipartUpload) before it returns (a failed
 * abort is added to the message). Any thread; several calls may run at
 * once on one uploader. progress (may be NULL) is called from the calling
 * thread after each part with the bytes done so far of this file (once a
 * part even when several completed meanwhile, so strictly increasing;
 * once, with size, for a single PUT); the parts go on meanwhile, but the
 * call does not return before it does. */
int gf_s3_upload_file(gf_s3_uploader *u, const char *path, uint64_t size,
                      const char *name,
                      void (*progress)(void *ctx, uint64_t done), void *ctx);
/* Uploads len bytes from memory (the caller's until it returns) as object
 * name (one PUT; len <= 5 GiB, else -EINVAL). Returns as
 * gf_s3_upload_file. Any thread. */
int gf_s3_upload_bytes(gf_s3_uploader *u, const void *data, uint64_t len,
                       const char *name);
/* Deletes object name (DeleteObject; a missing one is not an error).
 * Returns 0 or the error as above. Any thread. */
int gf_s3_delete(gf_s3_uploader *u, const char *name);

/* Asks every upload in progress to stop: requests on the wire are cut,
 * waits between tries end, and their calls abort their multipart uploads
 * and return -ECANCELED. Sticky: every later upload or delete on this
 * uploader returns -ECANCELED at once (a builder interrupted between two
 * files starts no third); the uploader is then only good for destroy.
 * Any thread (from a signal handler's flag watcher, say); not
 * async-signal-safe. */
void gf_s3_uploader_cancel(gf_s3_uploader *u);

/* What it did, since create. requests: tries sent (every request's, the
 * aborts' and failures' included); retries: tries followed by another;
 * bytes: object bytes sent in PUTs (whole objects and parts) that
 * succeeded, each once; retried_bytes: object bytes of PUT tries that
 * were retried (sent again); parts: parts uploaded; objects: objects
 * completed (PUT or CompleteMultipartUpload); aborted: multipart uploads
 * aborted. The XML bodies of the multipart requests count in requests
 * only. Any thread (each field read atomically, not all at one instant). */
typedef struct gf_s3_upload_counters {
  uint64_t requests, retries, bytes, retried_bytes, parts, objects, aborted;
} gf_s3_upload_counters;
void gf_s3_uploader_counters(const gf_s3_uploader *u,
                             gf_s3_upload_counters *out);

#endif /* GF_IO_S3_UPLOAD_H */
