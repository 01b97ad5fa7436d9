/* An S3 location's client (s3_client.c), between the files of lib/io only:
 * what s3://bucket/prefix resolves to (the bucket, the prefix, the request
 * URLs, the Host header) and who asks (credentials and region from the
 * caller's gf_s3_config, else the AWS conventions of s3_config.c, else the
 * container or instance metadata service of s3_creds.c), and the signing
 * of any request to it with SigV4 (s3_sigv4.c). The reading storage
 * (storage_s3.c, an HTTP storage with S3's flavour), its listing
 * (s3_list.c) and the builder's uploads (s3_upload.c) all sign through
 * one client.
 *
 * Addressing: an endpoint configured (MinIO, Ceph, moto, R2...) is
 * addressed path-style, endpoint/bucket/key, unless its addressing_style
 * says virtual; none means AWS itself, virtual-hosted,
 * https://bucket.s3.REGION.amazonaws.com/key (path-style there when asked).
 *
 * Credentials fetched from a metadata service expire: the client fetches
 * them again before they do (five minutes before), and when the store
 * answers ExpiredToken (gf_s3_client_expired). Secrets (the secret key,
 * the session token) never reach a message; the client wipes them when
 * freed. Any thread, after open. */
#ifndef GF_IO_S3_CLIENT_H
#define GF_IO_S3_CLIENT_H

#include "common/common.h"

#include <pthread.h>
#include <time.h>

struct curl_slist;

typedef struct gf_s3_client {
  char bucket[64];
  char *prefix;       /* decoded, without leading or trailing '/'; "" */
  char *bucket_url;   /* the request URL of the bucket, no trailing '/' */
  char *root_url;     /* of the prefix (bucket_url when there is none) */
  char host[300];     /* the Host header requests carry */
  char *display_root; /* "s3://bucket[/prefix]" */
  char region[64];
  char endpoint[1024];   /* as configured ("" for AWS's own) */
  char cred_source[600]; /* where the credentials came from, for messages
                            ("none (unsigned requests)" when anonymous) */
  bool anonymous;        /* requests go unsigned */
  /* the credentials, under mu (they change when refreshed) */
  pthread_mutex_t mu;
  char access_key[128];
  char secret_key[256]; /* a secret */
  char *session_token;  /* a secret; NULL when none */
  time_t expires;       /* 0: they do not expire */
  time_t fetched_at;    /* when fetched from a metadata service */
  bool refreshable;     /* from a metadata service: fetched again */
  uint64_t refreshes;   /* fetched again so far */
} gf_s3_client;

/* Resolves `location` (s3://bucket[/prefix]) with remote->s3 (NULL: the
 * environment's conventions alone). Returns 0, or -EINVAL (a bad bucket
 * name, a query, a setting), -ENOMEM, or the credential chain's error,
 * recorded against the location (gf_fail). */
int gf_s3_client_open(const char *location, const gf_remote_config *remote,
                      gf_s3_client **out);
/* Wipes and frees. NULL accepted. */
void gf_s3_client_free(gf_s3_client *c);

/* The request URL of key `key` of the bucket (the whole key, decoded:
 * "prefix/cat/1.jpg"), with `query` (already encoded, without '?'; NULL:
 * none). malloc'd, NULL when out of memory. */
char *gf_s3_client_url(const gf_s3_client *c, const char *key,
                       const char *query);

/* Appends to *list the headers that sign a `method` request for `url`
 * (one the client's URLs gave: its path and query are signed as sent),
 * with payload_hash (NULL: UNSIGNED-PAYLOAD): Authorization, x-amz-date,
 * x-amz-content-sha256 and x-amz-security-token; nothing when anonymous.
 * Credentials about to expire are fetched again first. Returns 0, or
 * -EINVAL/-ENOMEM/a fetch's error with the reason in why (no secret). */
int gf_s3_client_sign(gf_s3_client *c, const char *method, const char *url,
                      const char *payload_hash, struct curl_slist **list,
                      char *why, size_t cap);

/* The store answered ExpiredToken (or InvalidToken) to credentials signed
 * at `signed_at` (time(NULL) then): fetches fresh ones from their source
 * (once for all requests that saw it). Returns 1 when a retry may succeed
 * (fresh credentials, or others fetched them since), 0 when they cannot
 * change (not from a metadata service), or a negative code with why. */
int gf_s3_client_expired(gf_s3_client *c, time_t signed_at, char *why,
                         size_t cap);

#endif /* GF_IO_S3_CLIENT_H */
