/* S3's error codes (docs.aws.amazon.com's "Error responses"), one table
 * for every requester of the library: what is retried, what a message
 * adds. */
#include "io/s3_codes.h"

#include <string.h>

bool gf_s3_code_retried(const char *code) {
  static const char *const retried[] = {
      "SlowDown",       "InternalError",
      "RequestTimeout", "ServiceUnavailable",
      "Throttling",     "XAmzContentSHA256Mismatch",
      "BadDigest",      NULL};
  for (int i = 0; retried[i]; i++)
    if (!strcmp(code, retried[i]))
      return true;
  return false;
}

bool gf_s3_code_expired(const char *code) {
  return !strcmp(code, "ExpiredToken") || !strcmp(code, "TokenRefreshRequired");
}

const char *gf_s3_code_hint(const char *code, bool writing) {
  if (!strcmp(code, "RequestTimeTooSkewed"))
    return " (this machine's clock is off: set it right, with NTP)";
  if (!strcmp(code, "SignatureDoesNotMatch"))
    return " (the secret key does not match the access key id)";
  if (!strcmp(code, "InvalidAccessKeyId"))
    return " (the access key id is unknown to this store)";
  if (!strcmp(code, "NoSuchBucket"))
    return " (check the bucket's name, the endpoint and the region)";
  if (writing && !strcmp(code, "AccessDenied"))
    return " (the credentials may not write here: s3:PutObject, "
           "s3:AbortMultipartUpload, s3:DeleteObject)";
  if (!strcmp(code, "PermanentRedirect") ||
      !strcmp(code, "AuthorizationHeaderMalformed"))
    return " (the bucket is in another region: set AWS_REGION)";
  return "";
}
