/* A libcurl transfer's failure judged once for every remote request of
 * the library (the HTTP storage's reads, the S3 uploader's requests), and
 * secrets scrubbed out of the words that come back from elsewhere. */
#include "io/remote_failure.h"

#include <curl/curl.h> /* CURLcode, the connect time */

#include <string.h>

int gf_curl_failure(void *easy, int curlcode, bool *retry, const char **what) {
  int code = GF_EREMOTE;
  *retry = true;
  switch ((CURLcode)curlcode) {
  case CURLE_COULDNT_CONNECT:
    *what = "cannot connect (refused or unreachable)";
    break;
  case CURLE_COULDNT_RESOLVE_HOST:
    *what = "the host name does not resolve";
    break;
  case CURLE_OPERATION_TIMEDOUT: {
    /* Connected: the stall rule (CURLOPT_LOW_SPEED_TIME) cut it. */
    curl_off_t connected = 0;
    if (easy)
      curl_easy_getinfo((CURL *)easy, CURLINFO_CONNECT_TIME_T, &connected);
    *what = connected > 0 ? "stalled (no byte within stall_ms)"
                          : "the connection timed out (connect_timeout_ms)";
    break;
  }
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
    *what = "the connection was reset";
    break;
  case CURLE_GOT_NOTHING:
    *what = "the server closed the connection without a reply";
    break;
  case CURLE_PARTIAL_FILE:
    *what = "the reply's body was cut short";
    break;
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    *what = "an HTTP/2 stream failed";
    break;
  case CURLE_SSL_CONNECT_ERROR:
    *what = "the TLS handshake failed";
    break;
  case CURLE_PEER_FAILED_VERIFICATION:
    *what = "TLS: the server's certificate or name does not verify "
            "(ca_file names the CA to trust)";
    *retry = false;
    break;
  case CURLE_SSL_CACERT_BADFILE:
    *what = "TLS: the CA file cannot be read";
    *retry = false;
    break;
  case CURLE_OUT_OF_MEMORY:
    *what = "out of memory";
    code = -ENOMEM;
    *retry = false;
    break;
  case CURLE_ABORTED_BY_CALLBACK:
    *what = "cancelled";
    code = -ECANCELED;
    *retry = false;
    break;
  default:
    *what = "the request failed";
    *retry = false;
    break;
  }
  return code;
}

void gf_scrub_secret(char *text, size_t cap, const char *secret) {
  static const char mark[] = "<redacted>";
  size_t n = secret ? strlen(secret) : 0;
  if (n < 3)
    return;
  char *p = text;
  while ((p = strstr(p, secret))) {
    size_t rest = strlen(p + n);
    size_t m = sizeof mark - 1;
    if ((size_t)(p - text) + m + rest + 1 > cap) {
      /* No room for the mark: cut the text there. */
      *p = '\0';
      return;
    }
    memmove(p + m, p + n, rest + 1);
    memcpy(p, mark, m);
    p += m;
  }
}
