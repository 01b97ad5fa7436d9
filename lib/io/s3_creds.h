/* Container and EC2 instance credentials (s3_creds.c fetches them;
 * s3_creds_doc.c reads the JSON document they come in), between the files
 * of lib/io only: the next links of the AWS chain after s3_config.c's
 * environment and shared files, fetched the way botocore's ContainerProvider
 * and InstanceMetadataProvider fetch them (credentials.py, utils.py), over
 * libcurl's easy interface, one request at a time.
 *
 * Container (ECS, EKS Pod Identity, Greengrass, local emulators), when a
 * variable names it:
 *   URL        AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, a path ("/v2/...")
 *              after http://169.254.170.2; else
 *              AWS_CONTAINER_CREDENTIALS_FULL_URI, which must be https, or
 *              http to a loopback address (127.0.0.0/8, ::1, localhost) or
 *              to 169.254.170.2, 169.254.170.23 or fd00:ec2::23 (anything
 *              else is refused before any connection). Its user:password,
 *              if any, is dropped, never sent.
 *   header     Authorization: the content of the file
 *              AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE names (read at each
 *              fetch, blanks and line ends around it trimmed), else
 *              AWS_CONTAINER_AUTHORIZATION_TOKEN; refused when it holds a
 *              line break or another control byte. Accept: application/json.
 *   tries      3 (botocore's), 1 s apart; each 2 s at most (botocore's).
 * Instance metadata (IMDS), when no container variable is set:
 *   off        AWS_EC2_METADATA_DISABLED=true (any case)
 *   URL        AWS_EC2_METADATA_SERVICE_ENDPOINT, else by
 *              AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE (IPv4, IPv6; any
 *              case; unset: AWS_IMDS_USE_IPV6=true for IPv6):
 *              http://169.254.169.254 or http://[fd00:ec2::254]
 *   requests   PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds:
 *              21600) for a token; GET /latest/meta-data/iam/
 *              security-credentials/ with it (X-aws-ec2-metadata-token): the
 *              first line is the role; GET .../ROLE: the document.
 *   IMDSv1     as botocore: when the token request is answered 403, 404 or
 *              405, is not answered in time once connected, or keeps failing
 *              with another status, the GETs go without a token, unless
 *              AWS_EC2_METADATA_V1_DISABLED=true (then an error). Where this
 *              differs: when the service cannot be connected to at all, the
 *              GETs are not tried (botocore tries them and they fail alike).
 *              A 400 to the token request means no credentials (botocore's
 *              BadIMDSRequestError).
 *   none       no role (the list answered 404 or empty), or no document
 *              for it after the tries (another status, no answer): no
 *              credentials, as botocore. Where this differs: a document
 *              that gf_aws_creds_parse refuses (botocore: none when a
 *              field is missing, and it does not read Code), a role name
 *              or token unfit for a request, a reply too large: errors.
 *   tries      1 a request (botocore's), each 1 s at most.
 * Both: AWS_METADATA_SERVICE_TIMEOUT (whole seconds, 1 to 3600) sets each
 * request's time limit and AWS_METADATA_SERVICE_NUM_ATTEMPTS (1 to 100) the
 * tries (botocore applies both to the instance metadata only). A variable
 * set to "" is unset (s3_config.h's rule; botocore counts a container
 * variable set to "" as set). Requests never go through a proxy, never
 * follow a redirect, and read at most GF_AWS_CREDS_REPLY_MAX bytes of a
 * reply.
 *
 * Secrets (the secret key, the session token, the authorization token, the
 * metadata token, a document's bytes) never reach a message, a log line or
 * a source string; every buffer that held one is wiped. */
#ifndef GF_IO_S3_CREDS_H
#define GF_IO_S3_CREDS_H

#include "io/s3_config.h" /* gf_aws_getenv */

#include <stddef.h>
#include <time.h>

/* The largest reply read (a larger one is an error, not cut). */
#define GF_AWS_CREDS_REPLY_MAX (64u << 10)

typedef struct gf_aws_fetched {
  char access_key[128];
  char secret_key[256];     /* a secret */
  char session_token[4096]; /* a secret; "" when none */
  time_t expires;           /* UTC; 0 when the document gives none */
  char source[300];         /* for messages: "container credentials
                               endpoint http://127.0.0.1:PORT/path" (no
                               query, no user:password), or "EC2 instance
                               metadata (IMDSv2), role NAME" ("(IMDSv1)"
                               when fetched without a token) */
} gf_aws_fetched;

/* Credentials from the container endpoint, else the EC2 instance metadata
 * service, as above, reading the environment through getenv_fn(ctx, name)
 * (NULL: the process's getenv). Returns 1 with *out filled; 0 when neither
 * gives any (no container variable set, and IMDS disabled, unreachable, or
 * without a role: not an error, as in botocore; why then says what was
 * tried, in one line, e.g. "no container credentials variable; instance
 * metadata at http://169.254.169.254 did not answer in 1 s"); or a
 * negative code with the reason in why (cap bytes, cut to fit; never a
 * secret): -EINVAL, a variable's value refused (a container URL not
 * allowed or not http(s), a relative URI without its leading '/', an
 * authorization token with a control byte, a bad timeout, attempt count,
 * endpoint or endpoint mode); -errno, the token file unreadable; and, from
 * a configured container endpoint after its tries, or from the metadata
 * service once it answered: -ECONNREFUSED (refused the connection, or no route
 * to it), -ETIMEDOUT (did not answer in time), -EACCES (HTTP 401 or 403), -EIO
 * (another HTTP status, another transfer failure), -EPROTO (a reply larger
 * than GF_AWS_CREDS_REPLY_MAX, a document gf_aws_creds_parse refuses, a
 * metadata token or role name that cannot go into a request), -ENOMEM.
 * Messages name the endpoint (as in source) and the HTTP status. On
 * anything but 1, *out is wiped. Any thread, as long as getenv_fn may be
 * called from it. Blocking: at most the tries times the time limit, plus
 * the 1 s pauses between a container endpoint's tries (8 s by default). */
int gf_aws_creds_fetch(gf_aws_getenv getenv_fn, void *ctx, gf_aws_fetched *out,
                       char *why, size_t cap);

/* (s3_creds_doc.c) Wipes *f. NULL accepted. */
void gf_aws_fetched_clear(gf_aws_fetched *f);

/* (s3_creds_doc.c) The JSON document of either service parsed into *out (source
 * left ""): the root object's fields AccessKeyId and SecretAccessKey (required,
 * not empty), Token (none when absent, null or ""), Expiration (ISO 8601,
 * "2026-11-28T06:00:00Z", fractional seconds and an offset such as
 * "+00:00" accepted; 0 when absent or null) and Code (when present and not
 * null, it must be "Success", as IMDS writes it). Every other field, and
 * whatever it holds, is skipped. The values must fit their fields and hold
 * only printable ASCII without spaces (they go into headers). The JSON is
 * RFC 8259's, strictly: UTF-8, escapes (\uXXXX with surrogate pairs), no
 * trailing bytes but blanks, nesting at most 64 deep (checked in a loop,
 * no recursion); a key given twice: the later wins (Python's json).
 * Returns 0, or -EPROTO with why (cap bytes; the field or the byte offset
 * that is wrong, never the document's bytes: it holds secrets; only an
 * IMDS Code that is a plain word is named). On failure *out is wiped. Any
 * thread. The fuzz target's entry. */
int gf_aws_creds_parse(const char *doc, size_t len, gf_aws_fetched *out,
                       char *why, size_t cap);

#ifdef GPUFEED_TESTING
/* Test builds only (common/fault.h says which those are). */

/* The HTTP requests made so far (every try counts): a test checks that a
 * refusal made none. */
extern _Atomic unsigned long gf_aws_creds__test_requests;

/* The URLs a fetch would use, without a request: the container endpoint
 * in container (with its query; "" when no container variable is set) and
 * the instance metadata service's base in imds ("" when disabled or when
 * a container variable is set). Returns 0, or what the fetch would return
 * for the variables' values (-EINVAL with why). */
int gf_aws_creds__test_urls(gf_aws_getenv getenv_fn, void *ctx, char *container,
                            char *imds, size_t ucap, char *why, size_t cap);
#endif

#endif /* GF_IO_S3_CREDS_H */
