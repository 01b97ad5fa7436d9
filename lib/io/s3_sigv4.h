/* AWS Signature Version 4 for S3 requests (s3_sigv4.c), between the files
 * of lib/io only: the canonical request, the string to sign and the
 * Authorization header, as AWS's "Authenticating Requests: Using the
 * Authorization Header (AWS Signature Version 4)" describes them for S3
 * (the path is encoded once, '/' kept; the query's names and values are
 * encoded with '/' too, and sorted). HMAC-SHA256 and SHA-256 are
 * OpenSSL's. Nothing here prints a secret: the signing key and the secret
 * stay in the caller's memory and in this file's stack. */
#ifndef GF_IO_S3_SIGV4_H
#define GF_IO_S3_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The payload hash of a request without a body, and of a body not hashed
 * (S3 accepts it over TLS and plain HTTP alike). */
#define GF_SIGV4_EMPTY_SHA256                                                  \
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define GF_SIGV4_UNSIGNED "UNSIGNED-PAYLOAD"

typedef struct gf_sigv4_pair {
  const char *name;
  const char *value;
} gf_sigv4_pair;

typedef struct gf_sigv4_key {
  const char *access_key;
  const char *secret_key;    /* a secret */
  const char *session_token; /* a secret; NULL or "" when none */
} gf_sigv4_key;

typedef struct gf_sigv4_request {
  const char *method;         /* "GET", "PUT", ... */
  const char *host;           /* as sent in Host: "host" or "host:port" */
  const char *path;           /* not encoded, starting with '/': the
                                 bucket and key as the URL has them */
  const gf_sigv4_pair *query; /* not encoded, any order (value "" for a
                                 name alone: "?lifecycle") */
  size_t nquery;
  const gf_sigv4_pair *headers; /* more headers to sign (range, if-match,
                                   date...), any case, any order; host,
                                   x-amz-date, x-amz-content-sha256 and
                                   x-amz-security-token are added here */
  size_t nheaders;
  const char *payload_hash; /* hex SHA-256 of the body, or
                               GF_SIGV4_UNSIGNED (NULL: the empty body's) */
  const char *region;       /* "us-east-1" */
  const char *service;      /* "s3" */
  time_t when;              /* the request's time (UTC) */
  bool path_encoded;        /* path is already URI-encoded as S3 wants
                               (the request URL's): taken as it is */
} gf_sigv4_request;

/* What a signed request must carry besides its own headers. */
typedef struct gf_sigv4_out {
  char amz_date[17];        /* x-amz-date: "20130524T000000Z" */
  char payload_hash[65];    /* x-amz-content-sha256 (or UNSIGNED-PAYLOAD) */
  char authorization[1024]; /* the Authorization header's value */
  char signature[65];       /* its hex signature alone (tests) */
} gf_sigv4_out;

/* Signs r with k. Returns 0, -EINVAL (a field missing, a header name
 * or value with CR or LF, a key or region too long) or -ENOMEM; the
 * canonical request, when canon is not NULL, goes there (cap bytes, cut;
 * tests and debugging: it holds no secret, the session token aside,
 * which is a header there). */
int gf_sigv4_sign(const gf_sigv4_request *r, const gf_sigv4_key *k,
                  gf_sigv4_out *out, char *canon, size_t cap);

/* S3's URI encoding of s into buf (cap > 0, cut to fit): every byte but
 * A-Z a-z 0-9 - . _ ~ as %XX (upper-case hex), and '/' too unless
 * keep_slash. Returns the length the whole encoding needs. */
size_t gf_sigv4_encode(const char *s, bool keep_slash, char *buf, size_t cap);

/* Lower-case hex SHA-256 of len bytes into hex[65]. */
void gf_sigv4_sha256_hex(const void *data, size_t len, char hex[65]);

#endif /* GF_IO_S3_SIGV4_H */
