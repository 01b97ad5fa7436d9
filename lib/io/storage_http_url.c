/* URLs of the HTTP(S) storage: the root's parts, each object's request
 * URL, and the display forms, which never hold the user information or
 * the query. */
#include "io/storage_http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hex[] = "0123456789ABCDEF";

static bool unreserved(unsigned char c) {
  return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* What may stand in a path as written (RFC 3986's pchar and '/'); '%'
 * starts an escape already made. */
static bool path_char(unsigned char c) {
  return unreserved(c) || strchr("!$&'()*+,;=:@/%", c) != NULL;
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = (unsigned char)tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

size_t gf_http_encode_name(const char *name, char *buf, size_t cap) {
  size_t need = 0, len = 0;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    char e[3];
    size_t n = 1;
    e[0] = (char)*p;
    if (!unreserved(*p) && *p != '/') {
      e[0] = '%';
      e[1] = hex[*p >> 4];
      e[2] = hex[*p & 15];
      n = 3;
    }
    need += n;
    if (len + n < cap) {
      memcpy(buf + len, e, n);
      len += n;
    }
  }
  if (cap)
    buf[len] = '\0';
  return need;
}

/* A malloc'd copy of s[0..n) percent-decoded; NULL when out of memory or
 * when an escape is malformed or decodes to NUL (*bad set). */
static char *decode(const char *s, size_t n, bool *bad) {
  char *out = malloc(n + 1);
  if (!out)
    return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '%') {
      out[k++] = s[i];
      continue;
    }
    int hi = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
    int lo = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      *bad = true;
      free(out);
      return NULL;
    }
    out[k++] = (char)(hi * 16 + lo);
    i += 2;
  }
  out[k] = '\0';
  return out;
}

void gf_http_url_free(gf_http_url *u) {
  free(u->host);
  free(u->path);
  free(u->query);
  free(u->user);
  free(u->password);
  memset(u, 0, sizeof *u);
}

static int bad(char *why, size_t cap, const char *what) {
  snprintf(why, cap, "%s", what);
  return -EINVAL;
}

/* The host part [h, h + n): a name or an IPv4 address (letters, digits,
 * '-', '.', '_', '~'), or an IPv6 literal in brackets. */
static bool host_ok(const char *h, size_t n) {
  if (!n)
    return false;
  if (h[0] == '[') {
    if (n < 3 || h[n - 1] != ']')
      return false;
    for (size_t i = 1; i + 1 < n; i++)
      if (!isxdigit((unsigned char)h[i]) && h[i] != ':' && h[i] != '.')
        return false;
    return true;
  }
  for (size_t i = 0; i < n; i++)
    if (!unreserved((unsigned char)h[i]))
      return false;
  return true;
}

int gf_http_url_parse(const char *location, gf_http_url *out, char *why,
                      size_t cap) {
  memset(out, 0, sizeof *out);
  const char *p;
  if (strncasecmp(location, "https://", 8) == 0) {
    out->tls = true;
    p = location + 8;
  } else if (strncasecmp(location, "http://", 7) == 0) {
    p = location + 7;
  } else {
    return bad(why, cap, "not an http:// or https:// URL");
  }
  for (const char *c = location; *c; c++)
    if ((unsigned char)*c <= 0x20 || *c == 0x7f)
      return bad(why, cap,
                 "a URL may not hold spaces or control characters "
                 "(percent-encode them)");

  size_t alen = strcspn(p, "/?#");
  const char *at = NULL;
  for (size_t i = 0; i < alen; i++)
    if (p[i] == '@')
      at = p + i;
  const char *host = p;
  if (at) {
    size_t ulen = (size_t)(at - p);
    const char *colon = memchr(p, ':', ulen);
    size_t nlen = colon ? (size_t)(colon - p) : ulen;
    bool b = false;
    out->user = decode(p, nlen, &b);
    if (!b && out->user && colon)
      out->password = decode(colon + 1, ulen - nlen - 1, &b);
    if (b)
      return bad(why, cap, "the user information holds a bad %-escape");
    if (!out->user || (colon && !out->password))
      return -ENOMEM;
    host = at + 1;
  }
  const char *end = p + alen;
  const char *port = NULL;
  size_t hlen;
  if (host < end && host[0] == '[') {
    const char *rb = memchr(host, ']', (size_t)(end - host));
    if (!rb)
      return bad(why, cap, "an IPv6 address without its closing ']'");
    hlen = (size_t)(rb - host) + 1;
    if (rb + 1 < end) {
      if (rb[1] != ':')
        return bad(why, cap, "something other than :port after ']'");
      port = rb + 2;
    }
  } else {
    const char *colon = memchr(host, ':', (size_t)(end - host));
    hlen = colon ? (size_t)(colon - host) : (size_t)(end - host);
    if (colon)
      port = colon + 1;
  }
  if (!host_ok(host, hlen))
    return bad(why, cap,
               "no host, or a host name with characters other than "
               "letters, digits, '-', '.', '_' and '~'");
  if (port && port < end) {
    unsigned long v = 0;
    for (const char *c = port; c < end; c++) {
      if (!isdigit((unsigned char)*c) ||
          (v = v * 10 + (unsigned)(*c - '0')) > 65535)
        return bad(why, cap, "the port is not a number from 1 to 65535");
    }
    if (v == 0)
      return bad(why, cap, "the port is not a number from 1 to 65535");
    out->port = (unsigned)v;
  }
  if (!(out->host = strndup(host, hlen)))
    return -ENOMEM;
  for (char *c = out->host; *c; c++)
    *c = (char)tolower((unsigned char)*c);

  /* The path, percent-encoding what may not stand there as written. */
  const char *path = end;
  size_t plen = strcspn(path, "?#");
  while (plen && path[plen - 1] == '/')
    plen--;
  size_t need = 0;
  for (size_t i = 0; i < plen; i++)
    need += path_char((unsigned char)path[i]) ? 1 : 3;
  if (!(out->path = malloc(need + 1)))
    return -ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < plen; i++) {
    unsigned char c = (unsigned char)path[i];
    if (c == '%' && (i + 2 >= plen || hexval((unsigned char)path[i + 1]) < 0 ||
                     hexval((unsigned char)path[i + 2]) < 0))
      return bad(why, cap, "the path holds a '%' that starts no %-escape");
    if (path_char(c)) {
      out->path[k++] = (char)c;
    } else {
      out->path[k++] = '%';
      out->path[k++] = hex[c >> 4];
      out->path[k++] = hex[c & 15];
    }
  }
  out->path[k] = '\0';
  const char *q = path + strcspn(path, "?#");
  if (*q == '?' && q[1] && q[1] != '#') {
    if (!(out->query = strndup(q + 1, strcspn(q + 1, "#"))))
      return -ENOMEM;
  }
  return 0;
}

/* scheme://host[:port]path into buf (cap > 0, cut to fit): the start of
 * every request URL and display form. */
static size_t put_root(const gf_http_url *u, char *buf, size_t cap) {
  char port[12] = "";
  if (u->port)
    snprintf(port, sizeof port, ":%u", u->port);
  int n = snprintf(buf, cap, "%s://%s%s%s", u->tls ? "https" : "http", u->host,
                   port, u->path);
  return n < 0 ? 0 : (size_t)n;
}

char *gf_http_url_request(const gf_http_url *u, const char *name) {
  size_t root = put_root(u, NULL, 0) + 1;
  size_t enc = gf_http_encode_name(name ? name : "", NULL, 0);
  size_t q = u->query ? strlen(u->query) + 1 : 0;
  size_t cap = root + 1 + enc + q + 2;
  char *url = malloc(cap);
  if (!url)
    return NULL;
  size_t len = put_root(u, url, cap);
  if (name && name[0]) {
    url[len++] = '/';
    gf_http_encode_name(name, url + len, cap - len);
    len += enc;
  } else if (!u->path[0]) {
    url[len++] = '/';
    url[len] = '\0';
  }
  if (u->query)
    snprintf(url + len, cap - len, "?%s", u->query);
  return url;
}

char *gf_http_url_display(const gf_http_url *u, const char *name, bool insecure,
                          char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  if (insecure)
    len = (size_t)snprintf(buf, cap, "%s", GF_TLS_UNVERIFIED_MARK);
  if (len < cap)
    len += put_root(u, buf + len, cap - len);
  if (name && name[0] && len + 1 < cap) {
    buf[len++] = '/';
    gf_http_encode_name(name, buf + len, cap - len);
  }
  return buf;
}
