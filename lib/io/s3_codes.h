/* What S3's error codes mean to the library (s3_codes.c), between the
 * files of lib/io only: which are worth another try whatever the HTTP
 * status, which say the credentials expired, and what a message adds to
 * the store's own words. The reading storage (storage_s3.c) and the
 * uploader (s3_request.c) judge the store's error documents with it, so
 * both retry and explain the same codes. Any thread. */
#ifndef GF_IO_S3_CODES_H
#define GF_IO_S3_CODES_H

#include "common/common.h"

/* Whether code (an error document's <Code>) is worth another try:
 * SlowDown, Throttling, InternalError, RequestTimeout, ServiceUnavailable,
 * and XAmzContentSHA256Mismatch and BadDigest (a body damaged on the
 * way). */
bool gf_s3_code_retried(const char *code);

/* Whether code says the request's credentials expired (ExpiredToken,
 * TokenRefreshRequired): fresh ones may be fetched (gf_s3_client_expired)
 * and the request tried again. */
bool gf_s3_code_expired(const char *code);

/* What to tell the user of code besides the store's message, starting
 * with a space (" (this machine's clock is off: ...)"), "" when nothing.
 * writing: the request writes (PUT, POST, DELETE): AccessDenied then
 * names the permissions an upload needs. A static string. */
const char *gf_s3_code_hint(const char *code, bool writing);

#endif /* GF_IO_S3_CODES_H */
