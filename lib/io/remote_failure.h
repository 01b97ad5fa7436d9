/* What a failed request to a remote store says (remote_failure.c),
 * between the files of lib/io only: a libcurl transfer's failure as the
 * library's code, whether another try may succeed, and its words; and
 * secrets taken out of text before it reaches a message. The HTTP storage
 * (storage_http_xfer.c) and the S3 uploader (s3_request.c) both judge
 * their transfers with it, so they retry the same failures and say them
 * alike. This header does not include curl.h: a handle is a void pointer,
 * a CURLcode an int. Any thread. */
#ifndef GF_IO_REMOTE_FAILURE_H
#define GF_IO_REMOTE_FAILURE_H

#include "common/common.h"

/* A transfer on easy (a CURL *, read for its connect time: a stall and a
 * connection that timed out are told apart) that ended with CURLcode
 * curlcode (not CURLE_OK). Returns GF_EREMOTE, -ENOMEM (curl ran out of
 * memory) or -ECANCELED (a callback stopped it); *retry: whether another
 * try may succeed (refused, reset or closed connections, timeouts and
 * stalls, a reply cut short, HTTP/2 stream and TLS handshake failures;
 * not a certificate that does not verify, nor a failure not named here);
 * *what: its words, a static string ("cannot connect (refused or
 * unreachable)"), which callers follow with curl's own (its error
 * buffer, secrets scrubbed). */
int gf_curl_failure(void *easy, int curlcode, bool *retry, const char **what);

/* Replaces every occurrence of secret in text (a string in a buffer of
 * cap bytes) with "<redacted>"; where the mark does not fit, the text is
 * cut where the secret began. A secret NULL or shorter than 3 bytes is
 * left alone: it would take common letters out of every message, and no
 * message is made from a secret (this is for others' words: curl's, a
 * store's). */
void gf_scrub_secret(char *text, size_t cap, const char *secret);

#endif /* GF_IO_REMOTE_FAILURE_H */
