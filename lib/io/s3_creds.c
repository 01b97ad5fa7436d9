/* Container and instance credentials (s3_creds.h): the endpoints the
 * variables name, and the requests, one libcurl easy handle each; the
 * document they return is read by s3_creds_doc.c. Every buffer that held a
 * secret (a document, a token, a header line carrying one) is wiped before
 * it is let go. */
#include "io/s3_creds.h"

#include "common/common.h" /* gf_log, gf_say */

#include <curl/curl.h>

#include <arpa/inet.h> /* inet_pton: the hosts a container URL may name */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* explicit_bzero */
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GPUFEED_TESTING
_Atomic unsigned long gf_aws_creds__test_requests;
#endif

/* Frees a string that may hold a secret, wiped first. */
static void free_secret(char *s) {
  if (s) {
    explicit_bzero(s, strlen(s));
    free(s);
  }
}

/* ---- the plan: what the variables ask for -------------------------------- */

#define CONTAINER_BASE "http://169.254.170.2"
#define CONTAINER_TIMEOUT_S 2u /* botocore's ContainerMetadataFetcher */
#define CONTAINER_ATTEMPTS 3u
#define CONTAINER_PAUSE_S 1u
#define IMDS_V4 "http://169.254.169.254/"
#define IMDS_V6 "http://[fd00:ec2::254]/"
#define IMDS_TIMEOUT_S 1u
#define IMDS_ATTEMPTS 1u

typedef struct plan {
  gf_aws_getenv getenv_fn;
  void *ctx;
  unsigned timeout_s, attempts; /* 0: the provider's default */
  CURLU *container;             /* NULL: no container variable */
  const char *container_var;
  char container_shown[256];
  bool imds;            /* to be asked (no container, not disabled) */
  bool imds_v1_off;     /* AWS_EC2_METADATA_V1_DISABLED */
  char imds_base[2048]; /* with its trailing '/' */
  char imds_shown[256];
} plan;

/* A variable's value; set to "" is unset (s3_config.h's rule). */
static const char *env(const plan *p, const char *name) {
  const char *v = p->getenv_fn ? p->getenv_fn(p->ctx, name) : getenv(name);
  return v && v[0] ? v : NULL;
}

/* "true" in any case (botocore's ensure_boolean and its .lower()). */
static bool env_true(const plan *p, const char *name) {
  const char *v = env(p, name);
  return v && strcasecmp(v, "true") == 0;
}

static int env_count(const plan *p, const char *name, unsigned hi,
                     const char *unit, unsigned *out, char *why, size_t cap) {
  const char *v = env(p, name);
  *out = 0;
  if (!v)
    return 0;
  unsigned long n = 0;
  const char *c = v;
  for (; *c >= '0' && *c <= '9' && n <= hi; c++)
    n = n * 10 + (unsigned long)(*c - '0');
  if (*c || n < 1 || n > hi) {
    gf_say(why, cap, "%s must be a whole number of %s from 1 to %u", name, unit,
           hi);
    return -EINVAL;
  }
  *out = (unsigned)n;
  return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* Once for the process, never cleaned up, as storage_http.c does (Debian
 * 12's libcurl has a thread-safe curl_global_init). */
static void curl_init(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Parses s into a fresh handle: -EINVAL (with why naming var) when it is
 * no URL, -ENOMEM. */
static int url_parse(const char *s, const char *var, CURLU **out, char *why,
                     size_t cap) {
  CURLU *u = curl_url();
  if (!u) {
    gf_say(why, cap, "out of memory");
    return -ENOMEM;
  }
  CURLUcode uc = curl_url_set(u, CURLUPART_URL, s, 0);
  if (uc != CURLUE_OK) {
    curl_url_cleanup(u);
    if (uc == CURLUE_OUT_OF_MEMORY) {
      gf_say(why, cap, "out of memory");
      return -ENOMEM;
    }
    gf_say(why, cap, "%s is not a URL (%s)", var, curl_url_strerror(uc));
    return -EINVAL;
  }
  *out = u;
  return 0;
}

/* A part of u (curl_free'd by the caller), or NULL. */
static char *url_part(CURLU *u, CURLUPart what) {
  char *s = NULL;
  return curl_url_get(u, what, &s, 0) == CURLUE_OK ? s : NULL;
}

/* u as messages show it: scheme://host[:port][/path], without user,
 * password, query or fragment (they may be secrets). */
static void url_shown(CURLU *u, char *dst, size_t cap) {
  char *scheme = url_part(u, CURLUPART_SCHEME),
       *host = url_part(u, CURLUPART_HOST), *port = url_part(u, CURLUPART_PORT),
       *path = url_part(u, CURLUPART_PATH);
  gf_say(dst, cap, "%s://%s%s%s%s", scheme ? scheme : "?", host ? host : "?",
         port ? ":" : "", port ? port : "",
         path && strcmp(path, "/") != 0 ? path : "");
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_free(path);
}

/* http to this host is allowed (botocore's _validate_allowed_url: a
 * loopback address or one of the ECS/EKS hosts). host is what curl will
 * connect to (an IPv6 address in brackets); spellings of these addresses
 * other than botocore's are accepted, being the same address. */
static bool host_allowed(const char *host) {
  static const unsigned char eks6[16] = {0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
                                         0,    0,    0,    0,    0, 0, 0, 0x23};
  char h[64];
  size_t n = strlen(host);
  if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
    if (n - 2 >= sizeof h)
      return false;
    memcpy(h, host + 1, n - 2);
    h[n - 2] = '\0';
  } else if (n < sizeof h)
    memcpy(h, host, n + 1);
  else
    return false;
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, h, &a4) == 1) {
    uint32_t ip = ntohl(a4.s_addr);
    return (ip >> 24) == 127 || ip == 0xa9feaa02u /* 169.254.170.2 */ ||
           ip == 0xa9feaa17u /* 169.254.170.23 */;
  }
  if (inet_pton(AF_INET6, h, &a6) == 1)
    return memcmp(&a6, &in6addr_loopback, sizeof a6) == 0 ||
           memcmp(&a6, eks6, sizeof a6) == 0;
  return strcasecmp(h, "localhost") == 0;
}

/* The container endpoint, when a variable names one. */
static int plan_container(plan *p, char *why, size_t cap) {
  const char *rel = env(p, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"),
             *full = env(p, "AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!rel && !full)
    return 0;
  int rc;
  if (rel) {
    p->container_var = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";
    if (rel[0] != '/') {
      gf_say(why, cap, "%s must begin with '/'", p->container_var);
      return -EINVAL;
    }
    size_t n = strlen(CONTAINER_BASE) + strlen(rel) + 1;
    char *url = malloc(n);
    if (!url) {
      gf_say(why, cap, "out of memory");
      return -ENOMEM;
    }
    snprintf(url, n, "%s%s", CONTAINER_BASE, rel);
    rc = url_parse(url, p->container_var, &p->container, why, cap);
    free(url);
  } else {
    p->container_var = "AWS_CONTAINER_CREDENTIALS_FULL_URI";
    rc = url_parse(full, p->container_var, &p->container, why, cap);
  }
  if (rc < 0)
    return rc;
  /* A user:password is never sent (curl would send it as Basic). */
  curl_url_set(p->container, CURLUPART_USER, NULL, 0);
  curl_url_set(p->container, CURLUPART_PASSWORD, NULL, 0);
  curl_url_set(p->container, CURLUPART_OPTIONS, NULL, 0);
  url_shown(p->container, p->container_shown, sizeof p->container_shown);
  char *scheme = url_part(p->container, CURLUPART_SCHEME),
       *host = url_part(p->container, CURLUPART_HOST);
  bool https = scheme && strcasecmp(scheme, "https") == 0,
       http = scheme && strcasecmp(scheme, "http") == 0;
  rc = 0;
  if (!(https || http) || !host) {
    gf_say(why, cap, "%s must be an http:// or https:// URL", p->container_var);
    rc = -EINVAL;
  } else if (http && !host_allowed(host)) {
    gf_say(why, cap,
           "%s: http to %s is not allowed (only https, or http to a loopback "
           "address, 169.254.170.2, 169.254.170.23 or fd00:ec2::23)",
           p->container_var, host);
    rc = -EINVAL;
  }
  curl_free(scheme);
  curl_free(host);
  return rc < 0 ? rc : 1;
}

/* The instance metadata service's base URL, unless disabled. */
static int plan_imds(plan *p, char *why, size_t cap) {
  if (env_true(p, "AWS_EC2_METADATA_DISABLED"))
    return 0;
  const char *mode = env(p, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"),
             *ep = env(p, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
  if (mode && strcasecmp(mode, "ipv4") != 0 && strcasecmp(mode, "ipv6") != 0) {
    gf_say(why, cap,
           "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE must be IPv4 or IPv6");
    return -EINVAL;
  }
  bool v6 =
      mode ? strcasecmp(mode, "ipv6") == 0 : env_true(p, "AWS_IMDS_USE_IPV6");
  const char *base = ep ? ep : v6 ? IMDS_V6 : IMDS_V4;
  size_t n = strlen(base);
  if (n + 2 > sizeof p->imds_base) {
    gf_say(why, cap,
           "AWS_EC2_METADATA_SERVICE_ENDPOINT is longer than %zu bytes",
           sizeof p->imds_base - 2);
    return -EINVAL;
  }
  snprintf(p->imds_base, sizeof p->imds_base, "%s%s", base,
           n && base[n - 1] == '/' ? "" : "/");
  CURLU *u;
  int rc = url_parse(p->imds_base, "AWS_EC2_METADATA_SERVICE_ENDPOINT", &u, why,
                     cap);
  if (rc < 0)
    return rc;
  char *scheme = url_part(u, CURLUPART_SCHEME),
       *host = url_part(u, CURLUPART_HOST);
  bool ok =
      scheme && host && host[0] &&
      (strcasecmp(scheme, "http") == 0 || strcasecmp(scheme, "https") == 0);
  url_shown(u, p->imds_shown, sizeof p->imds_shown);
  size_t m = strlen(p->imds_shown); /* the base's own '/' */
  if (m && p->imds_shown[m - 1] == '/')
    p->imds_shown[m - 1] = '\0';
  curl_free(scheme);
  curl_free(host);
  curl_url_cleanup(u);
  if (!ok) {
    gf_say(
        why, cap,
        "AWS_EC2_METADATA_SERVICE_ENDPOINT must be an http:// or https:// URL");
    return -EINVAL;
  }
  p->imds_v1_off = env_true(p, "AWS_EC2_METADATA_V1_DISABLED");
  return 1;
}

static int make_plan(plan *p, char *why, size_t cap) {
  int rc;
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc != CURLE_OK) {
    gf_say(why, cap, "libcurl cannot start: %s",
           curl_easy_strerror(curl_init_rc));
    return -EIO;
  }
  if ((rc = env_count(p, "AWS_METADATA_SERVICE_TIMEOUT", 3600, "seconds",
                      &p->timeout_s, why, cap)) < 0 ||
      (rc = env_count(p, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", 100, "attempts",
                      &p->attempts, why, cap)) < 0)
    return rc;
  if ((rc = plan_container(p, why, cap)) != 0)
    return rc < 0 ? rc : 0;
  if ((rc = plan_imds(p, why, cap)) < 0)
    return rc;
  p->imds = rc == 1;
  return 0;
}

static void plan_free(plan *p) {
  curl_url_cleanup(p->container);
  p->container = NULL;
}

/* ---- requests ------------------------------------------------------------ */

typedef struct reply {
  CURLcode rc;
  long status;    /* 0 without an answer */
  bool connected; /* a connection was made */
  bool too_big;   /* more than GF_AWS_CREDS_REPLY_MAX bytes */
  size_t len;
  char *body; /* GF_AWS_CREDS_REPLY_MAX + 1 bytes, NUL-terminated; wiped */
  char err[CURL_ERROR_SIZE];
} reply;

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
  reply *r = ctx;
  size_t k = size * n;
  if (k > GF_AWS_CREDS_REPLY_MAX - r->len) {
    r->too_big = true;
    return 0; /* ends the transfer */
  }
  memcpy(r->body + r->len, data, k);
  r->len += k;
  r->body[r->len] = '\0';
  return k;
}

static size_t no_body(char *data, size_t size, size_t n, void *ctx) {
  (void)data;
  (void)size;
  (void)n;
  (void)ctx;
  return 0;
}

static void wipe_list(struct curl_slist *list) {
  for (struct curl_slist *s = list; s; s = s->next)
    explicit_bzero(s->data, strlen(s->data));
  curl_slist_free_all(list);
}

/* One request to url: GET, or PUT (put) with an empty body, with the
 * header lines (NULL-terminated; those holding secrets are wiped after).
 * Returns 0 with *r filled (the transfer's result and status there), or
 * -ENOMEM. */
static int request(CURLU *url, bool put, const char *const *headers,
                   unsigned timeout_s, reply *r) {
  r->rc = CURLE_OK;
  r->status = 0;
  r->connected = r->too_big = false;
  r->len = 0;
  r->body[0] = '\0';
  r->err[0] = '\0';
#ifdef GPUFEED_TESTING
  gf_aws_creds__test_requests++;
#endif
  CURL *e = curl_easy_init();
  if (!e)
    return -ENOMEM;
  struct curl_slist *list = NULL;
  CURLcode c = CURLE_OK;
  for (; *headers && c == CURLE_OK; headers++) {
    struct curl_slist *l = curl_slist_append(list, *headers);
    if (!l)
      c = CURLE_OUT_OF_MEMORY;
    else
      list = l;
  }
#define SET(opt, val)                                                          \
  do {                                                                         \
    if (c == CURLE_OK)                                                         \
      c = curl_easy_setopt(e, opt, val);                                       \
  } while (0)
  SET(CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
  SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  SET(CURLOPT_CURLU, url);
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_NOPROXY, "*");
  SET(CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_s * 1000);
  SET(CURLOPT_TIMEOUT_MS, (long)timeout_s * 1000);
  SET(CURLOPT_MAXFILESIZE, (long)GF_AWS_CREDS_REPLY_MAX);
  SET(CURLOPT_USERAGENT, "gpufeed");
  SET(CURLOPT_HTTPHEADER, list);
  SET(CURLOPT_WRITEFUNCTION, on_body);
  SET(CURLOPT_WRITEDATA, r);
  SET(CURLOPT_ERRORBUFFER, r->err);
  if (put) {
    SET(CURLOPT_UPLOAD, 1L);
    SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)0);
    SET(CURLOPT_READFUNCTION, no_body);
  }
#undef SET
  if (c != CURLE_OK) {
    wipe_list(list);
    curl_easy_cleanup(e);
    return -ENOMEM;
  }
  r->rc = curl_easy_perform(e);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
  curl_off_t connect_us = 0;
  curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connect_us);
  r->connected =
      r->status != 0 || connect_us > 0 ||
      !(r->rc == CURLE_COULDNT_CONNECT || r->rc == CURLE_COULDNT_RESOLVE_HOST ||
        r->rc == CURLE_OPERATION_TIMEDOUT);
  if (r->rc == CURLE_FILESIZE_EXCEEDED)
    r->too_big = true;
  wipe_list(list);
  curl_easy_cleanup(e);
  return 0;
}

/* Why a reply is not the one wanted, as words after the endpoint's name,
 * and its code. */
static int reply_failure(const reply *r, unsigned timeout_s, char *dst,
                         size_t cap) {
  if (r->too_big) {
    gf_say(dst, cap, "sent a reply larger than %u bytes",
           GF_AWS_CREDS_REPLY_MAX);
    return -EPROTO;
  }
  switch (r->rc) {
  case CURLE_OK:
    gf_say(dst, cap, "answered HTTP %ld", r->status);
    return r->status == 401 || r->status == 403 ? -EACCES : -EIO;
  case CURLE_COULDNT_CONNECT:
    /* curl's words do not tell a refusal from no route. */
    gf_say(dst, cap, "refused the connection or is unreachable");
    return -ECONNREFUSED;
  case CURLE_OPERATION_TIMEDOUT:
    gf_say(dst, cap, "did not answer in %u s", timeout_s);
    return -ETIMEDOUT;
  case CURLE_OUT_OF_MEMORY:
    gf_say(dst, cap, "out of memory");
    return -ENOMEM;
  default:
    gf_say(dst, cap, "failed: %s",
           r->err[0] ? r->err : curl_easy_strerror(r->rc));
    return -EIO;
  }
}

static bool reply_ok(const reply *r) {
  return r->rc == CURLE_OK && !r->too_big && r->status == 200;
}

/* A URL of its own for each request (curl keeps no state in it). */
static int url_join(const char *base, const char *path, CURLU **out, char *why,
                    size_t cap) {
  size_t n = strlen(base) + strlen(path) + 1;
  char *s = malloc(n);
  if (!s) {
    gf_say(why, cap, "out of memory");
    return -ENOMEM;
  }
  snprintf(s, n, "%s%s", base, path);
  int rc = url_parse(s, "AWS_EC2_METADATA_SERVICE_ENDPOINT", out, why, cap);
  free(s);
  return rc;
}

static void pause_s(unsigned s) {
  struct timespec ts = {.tv_sec = s, .tv_nsec = 0};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* ---- the container endpoint ---------------------------------------------- */

/* Reads the token file (bounded), trimmed of blanks and line ends. */
static int read_token_file(const char *path, char **out, char *why,
                           size_t cap) {
  static const char var[] = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE";
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    gf_say(why, cap, "cannot open %s (from %s): %s", path, var, strerror(err));
    return -err;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    gf_say(why, cap, "cannot stat %s (from %s): %s", path, var, strerror(err));
    return -err;
  }
  if (!S_ISREG(st.st_mode) || st.st_size > (off_t)GF_AWS_CREDS_REPLY_MAX) {
    close(fd);
    gf_say(why, cap, "%s (from %s) is not a regular file of at most %u bytes",
           path, var, GF_AWS_CREDS_REPLY_MAX);
    return -EINVAL;
  }
  size_t room = GF_AWS_CREDS_REPLY_MAX + 1, got = 0;
  char *buf = malloc(room + 1);
  if (!buf) {
    close(fd);
    gf_say(why, cap, "out of memory");
    return -ENOMEM;
  }
  while (got < room) {
    ssize_t r = read(fd, buf + got, room - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int err = errno;
      explicit_bzero(buf, got);
      free(buf);
      close(fd);
      gf_say(why, cap, "cannot read %s (from %s): %s", path, var,
             strerror(err));
      return -err;
    }
    if (r == 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  if (got > GF_AWS_CREDS_REPLY_MAX) {
    explicit_bzero(buf, got);
    free(buf);
    gf_say(why, cap, "%s (from %s) is larger than %u bytes", path, var,
           GF_AWS_CREDS_REPLY_MAX);
    return -EINVAL;
  }
  size_t a = 0, b = got;
  while (a < b &&
         (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r' || buf[a] == '\n'))
    a++;
  while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t' ||
                   buf[b - 1] == '\r' || buf[b - 1] == '\n'))
    b--;
  memmove(buf, buf + a, b - a);
  explicit_bzero(buf + (b - a), got - (b - a));
  buf[b - a] = '\0';
  *out = buf;
  return 0;
}

/* The Authorization header line ("" when there is no token). */
static int auth_header(const plan *p, char **line, char *why, size_t cap) {
  const char *file = env(p, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  const char *from = file ? "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
                          : "AWS_CONTAINER_AUTHORIZATION_TOKEN";
  char *owned = NULL;
  const char *token = env(p, "AWS_CONTAINER_AUTHORIZATION_TOKEN");
  *line = NULL;
  if (file) {
    int rc = read_token_file(file, &owned, why, cap);
    if (rc < 0)
      return rc;
    token = owned;
  }
  int rc = 0;
  size_t n = token ? strlen(token) : 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    unsigned char c = (unsigned char)token[i];
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      gf_say(why, cap,
             "the authorization token from %s holds a line break or another "
             "control byte",
             from);
      rc = -EINVAL;
    }
  }
  if (rc == 0) {
    size_t m = sizeof "Authorization: " + n;
    *line = malloc(m);
    if (!*line) {
      gf_say(why, cap, "out of memory");
      rc = -ENOMEM;
    } else if (n)
      snprintf(*line, m, "Authorization: %s", token);
    else
      (*line)[0] = '\0';
  }
  free_secret(owned);
  return rc;
}

static int container_fetch(const plan *p, gf_aws_fetched *out, char *why,
                           size_t cap) {
  unsigned timeout_s = p->timeout_s ? p->timeout_s : CONTAINER_TIMEOUT_S,
           attempts = p->attempts ? p->attempts : CONTAINER_ATTEMPTS;
  char *auth;
  int rc = auth_header(p, &auth, why, cap);
  if (rc < 0)
    return rc;
  reply r = {.body = malloc(GF_AWS_CREDS_REPLY_MAX + 1)};
  if (!r.body) {
    free_secret(auth);
    gf_say(why, cap, "out of memory");
    return -ENOMEM;
  }
  const char *headers[] = {"Accept: application/json", auth[0] ? auth : NULL,
                           NULL};
  char words[400];
  for (unsigned i = 0; i < attempts; i++) {
    if (i)
      pause_s(CONTAINER_PAUSE_S);
    if ((rc = request(p->container, false, headers, timeout_s, &r)) < 0) {
      gf_say(words, sizeof words, "out of memory");
      break;
    }
    if (!reply_ok(&r)) {
      rc = reply_failure(&r, timeout_s, words, sizeof words);
    } else if ((rc = gf_aws_creds_parse(r.body, r.len, out, words,
                                        sizeof words)) == 0) {
      rc = 1;
      break;
    }
  }
  explicit_bzero(r.body, GF_AWS_CREDS_REPLY_MAX + 1);
  free(r.body);
  free_secret(auth);
  if (rc == 1) {
    gf_say(out->source, sizeof out->source, "container credentials endpoint %s",
           p->container_shown);
    return 1;
  }
  char tries[32] = "";
  if (attempts > 1)
    snprintf(tries, sizeof tries, " (%u tries)", attempts);
  gf_say(why, cap, "container credentials endpoint %s (%s): %s%s",
         p->container_shown, p->container_var, words, tries);
  return rc;
}

/* ---- the instance metadata service ---------------------------------------
 *
 * Returns 1, 0 (none: why says what was tried), or an error. */

typedef struct imds_call {
  const plan *p;
  unsigned timeout_s, attempts;
  reply r;
  char words[400];
} imds_call;

/* Asks base + path until a reply is wanted (want_body: a 200 with a body),
 * every try. Returns 0 (the last reply in x->r), or -ENOMEM or a URL's
 * error. */
static int imds_ask(imds_call *x, const char *path, bool put,
                    const char *const *headers, char *why, size_t cap) {
  CURLU *u;
  int rc = url_join(x->p->imds_base, path, &u, why, cap);
  if (rc < 0)
    return rc;
  for (unsigned i = 0; i < x->attempts; i++) {
    if ((rc = request(u, put, headers, x->timeout_s, &x->r)) < 0) {
      gf_say(why, cap, "out of memory");
      break;
    }
    if (reply_ok(&x->r) && x->r.len > 0)
      break;
    /* botocore's token request: these end it (the GETs go without). */
    if (put && x->r.rc == CURLE_OK &&
        (x->r.status == 400 || x->r.status == 403 || x->r.status == 404 ||
         x->r.status == 405))
      break;
    if (put && x->r.rc == CURLE_OPERATION_TIMEDOUT && x->r.connected)
      break;
  }
  curl_url_cleanup(u);
  return rc;
}

/* An IAM role name ([\w+=,.@-], 1 to 64 bytes): it goes into a path. */
static bool role_ok(const char *s, size_t n) {
  if (n < 1 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || strchr("+=,.@_-", c)))
      return false;
  }
  return true;
}

static int imds_steps(imds_call *x, gf_aws_fetched *out, char *why,
                      size_t cap) {
  const plan *p = x->p;
  const char *at = p->imds_shown;
  int rc;
  /* The session token (IMDSv2). */
  const char *ttl[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
  if ((rc = imds_ask(x, "latest/api/token", true, ttl, why, cap)) < 0)
    return rc;
  char *token = NULL;
  if (reply_ok(&x->r) && x->r.len > 0) {
    for (size_t i = 0; i < x->r.len; i++)
      if (x->r.body[i] <= 0x20 || x->r.body[i] >= 0x7f) {
        gf_say(why, cap,
               "instance metadata at %s: its session token holds a byte that "
               "cannot go into a header",
               at);
        return -EPROTO;
      }
    size_t n = sizeof "X-aws-ec2-metadata-token: " + x->r.len;
    if (!(token = malloc(n))) {
      gf_say(why, cap, "out of memory");
      return -ENOMEM;
    }
    snprintf(token, n, "X-aws-ec2-metadata-token: %s", x->r.body);
  } else if (!x->r.connected) {
    reply_failure(&x->r, x->timeout_s, x->words, sizeof x->words);
    gf_say(why, cap, "instance metadata at %s %s", at, x->words);
    return 0;
  } else if (x->r.too_big) {
    reply_failure(&x->r, x->timeout_s, x->words, sizeof x->words);
    gf_say(why, cap, "instance metadata at %s %s", at, x->words);
    return -EPROTO;
  } else if (x->r.rc == CURLE_OK && x->r.status == 400) {
    gf_say(why, cap,
           "instance metadata at %s answered HTTP 400 to the session token "
           "request",
           at);
    return 0;
  } else if (p->imds_v1_off) {
    rc = reply_failure(&x->r, x->timeout_s, x->words, sizeof x->words);
    gf_say(why, cap,
           "instance metadata at %s %s to the session token request (IMDSv2), "
           "and AWS_EC2_METADATA_V1_DISABLED is true",
           at, x->words);
    return rc == -ETIMEDOUT || rc == -EACCES ? rc : -EIO;
  }
  const char *with[] = {token, NULL};
  const char *const *headers = token ? with : ttl + 1;

  /* The role. */
  static const char list_path[] = "latest/meta-data/iam/security-credentials/";
  if ((rc = imds_ask(x, list_path, false, headers, why, cap)) < 0)
    goto out;
  if (!reply_ok(&x->r) || !x->r.len) {
    rc = reply_failure(&x->r, x->timeout_s, x->words, sizeof x->words);
    if (x->r.too_big)
      goto fail;
    if (reply_ok(&x->r) || x->r.status == 404)
      gf_say(why, cap, "instance metadata at %s gives no IAM role (%s)", at,
             reply_ok(&x->r) ? "an empty list" : "HTTP 404");
    else
      gf_say(why, cap, "instance metadata at %s %s for the IAM role", at,
             x->words);
    rc = 0;
    goto out;
  }
  size_t n = strcspn(x->r.body, "\r\n");
  if (n == 0) {
    gf_say(why, cap,
           "instance metadata at %s gives no IAM role (an empty list)", at);
    rc = 0;
    goto out;
  }
  if (!role_ok(x->r.body, n)) {
    gf_say(why, cap,
           "instance metadata at %s: its IAM role's name is not a role name",
           at);
    rc = -EPROTO;
    goto out;
  }
  char role[80], path[sizeof list_path + sizeof role];
  memcpy(role, x->r.body, n);
  role[n] = '\0';
  snprintf(path, sizeof path, "%s%s", list_path, role);

  /* The document. */
  if ((rc = imds_ask(x, path, false, headers, why, cap)) < 0)
    goto out;
  if (!reply_ok(&x->r) || !x->r.len) {
    rc = reply_failure(&x->r, x->timeout_s, x->words, sizeof x->words);
    if (x->r.too_big)
      goto fail;
    /* botocore: retries exceeded, no credentials. */
    gf_say(why, cap, "instance metadata at %s %s for role %s's credentials", at,
           reply_ok(&x->r) ? "sent nothing" : x->words, role);
    rc = 0;
    goto out;
  }
  if ((rc = gf_aws_creds_parse(x->r.body, x->r.len, out, x->words,
                               sizeof x->words)) < 0)
    goto fail;
  gf_say(out->source, sizeof out->source,
         "EC2 instance metadata (IMDS%s), role %s", token ? "v2" : "v1", role);
  rc = 1;
  goto out;
fail:
  gf_say(why, cap, "instance metadata at %s: %s", at, x->words);
out:
  free_secret(token);
  return rc;
}

static int imds_fetch(const plan *p, gf_aws_fetched *out, char *why,
                      size_t cap) {
  imds_call *x = calloc(1, sizeof *x);
  if (x)
    x->r.body = malloc(GF_AWS_CREDS_REPLY_MAX + 1);
  if (!x || !x->r.body) {
    free(x);
    gf_say(why, cap, "out of memory");
    return -ENOMEM;
  }
  x->p = p;
  x->timeout_s = p->timeout_s ? p->timeout_s : IMDS_TIMEOUT_S;
  x->attempts = p->attempts ? p->attempts : IMDS_ATTEMPTS;
  int rc = imds_steps(x, out, why, cap);
  explicit_bzero(x->r.body, GF_AWS_CREDS_REPLY_MAX + 1);
  free(x->r.body);
  explicit_bzero(x, sizeof *x);
  free(x);
  return rc;
}

/* ---- the chain ------------------------------------------------------------
 */

int gf_aws_creds_fetch(gf_aws_getenv getenv_fn, void *ctx, gf_aws_fetched *out,
                       char *why, size_t cap) {
  if (why && cap)
    why[0] = '\0';
  memset(out, 0, sizeof *out);
  plan *p = calloc(1, sizeof *p);
  if (!p) {
    gf_say(why, cap, "out of memory");
    return -ENOMEM;
  }
  p->getenv_fn = getenv_fn;
  p->ctx = ctx;
  int rc = make_plan(p, why, cap);
  if (rc == 0 && p->container)
    rc = container_fetch(p, out, why, cap);
  else if (rc == 0 && !p->imds)
    gf_say(why, cap,
           "no container credentials variable; instance metadata disabled "
           "(AWS_EC2_METADATA_DISABLED)");
  else if (rc == 0) {
    char *w = malloc(cap ? cap : 1);
    if (!w) {
      gf_say(why, cap, "out of memory");
      rc = -ENOMEM;
    } else {
      w[0] = '\0';
      rc = imds_fetch(p, out, w, cap);
      if (rc == 0)
        gf_say(why, cap, "no container credentials variable; %s", w);
      else
        gf_say(why, cap, "%s", w);
      free(w);
    }
  }
  plan_free(p);
  free(p);
  if (rc == 1)
    gf_log(GF_LOG_DEBUG, "aws credentials: from the %s", out->source);
  else {
    if (rc == 0)
      gf_log(GF_LOG_DEBUG, "aws credentials: none from a metadata service: %s",
             why && cap ? why : "");
    gf_aws_fetched_clear(out);
  }
  return rc;
}

#ifdef GPUFEED_TESTING
int gf_aws_creds__test_urls(gf_aws_getenv getenv_fn, void *ctx, char *container,
                            char *imds, size_t ucap, char *why, size_t cap) {
  if (why && cap)
    why[0] = '\0';
  container[0] = imds[0] = '\0';
  plan *p = calloc(1, sizeof *p);
  if (!p)
    return -ENOMEM;
  p->getenv_fn = getenv_fn;
  p->ctx = ctx;
  int rc = make_plan(p, why, cap);
  if (rc == 0 && p->container) {
    char *s = url_part(p->container, CURLUPART_URL);
    gf_say(container, ucap, "%s", s ? s : "?");
    curl_free(s);
  } else if (rc == 0 && p->imds)
    gf_say(imds, ucap, "%s", p->imds_base);
  plan_free(p);
  free(p);
  return rc;
}
#endif
