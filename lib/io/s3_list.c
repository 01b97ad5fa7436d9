/* An S3 prefix's listing (s3_list.h): ListObjectsV2's pages read one after
 * another (each names the next with its continuation token), parsed by
 * s3_xml.c, the objects kept with their size and ETag, sorted by name; the
 * folders a walk asks for are the names' prefixes. */
#include "io/s3_list.h"

#include "io/s3_sigv4.h" /* gf_sigv4_encode */
#include "io/s3_xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
  char *name; /* relative to the prefix */
  uint64_t size;
  char *etag; /* as listed ("" none) */
} entry;

struct gf_s3_listing {
  entry *e;
  uint64_t n, cap;
};

void gf_s3_listing_free(gf_s3_listing *l) {
  if (!l)
    return;
  for (uint64_t i = 0; i < l->n; i++) {
    free(l->e[i].name);
    free(l->e[i].etag);
  }
  free(l->e);
  free(l);
}

uint64_t gf_s3_listing_count(const gf_s3_listing *l) { return l->n; }

typedef struct page_ctx {
  gf_s3_listing *l;
  const char *prefix; /* "prefix/" asked, or "" */
  size_t plen;
  uint64_t outside; /* keys not under the prefix (a store's error) */
} page_ctx;

static int on_item(void *ctx, const gf_s3_list_item *it) {
  page_ctx *p = ctx;
  if (it->is_prefix)
    return 0; /* no delimiter asked: none come */
  if (it->key_len < p->plen || memcmp(it->key, p->prefix, p->plen) != 0) {
    p->outside++;
    return 0;
  }
  gf_s3_listing *l = p->l;
  if (l->n == l->cap) {
    uint64_t c = l->cap ? l->cap * 2 : 1024;
    entry *e = realloc(l->e, (size_t)c * sizeof *e);
    if (!e)
      return -ENOMEM;
    l->e = e;
    l->cap = c;
  }
  entry *e = &l->e[l->n];
  e->name = strdup(it->key + p->plen);
  e->etag = strdup(it->etag ? it->etag : "");
  e->size = it->size;
  if (!e->name || !e->etag) {
    free(e->name);
    free(e->etag);
    return -ENOMEM;
  }
  l->n++;
  return 0;
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* The query of the page after `token` ("" for the first), its values
 * encoded as S3 wants and its names in sorted order. malloc'd. */
static char *page_query(const char *prefix, const char *token) {
  size_t pl = gf_sigv4_encode(prefix, false, NULL, 0);
  size_t tl = gf_sigv4_encode(token, false, NULL, 0);
  char *pe = malloc(pl + 1), *te = malloc(tl + 1), *q = NULL;
  if (pe && te) {
    gf_sigv4_encode(prefix, false, pe, pl + 1);
    gf_sigv4_encode(token, false, te, tl + 1);
    if (asprintf(&q, "%s%s%sencoding-type=url&list-type=2&prefix=%s",
                 token[0] ? "continuation-token=" : "", te, token[0] ? "&" : "",
                 pe) < 0)
      q = NULL;
  }
  free(pe);
  free(te);
  return q;
}

int gf_s3_listing_fetch(gf_http_storage *st, gf_s3_client *c,
                        gf_s3_listing **out, uint64_t *pages, char *why,
                        size_t cap) {
  *out = NULL;
  if (pages)
    *pages = 0;
  gf_s3_listing *l = calloc(1, sizeof *l);
  char *prefix = NULL, *body = NULL, *url = NULL, *q = NULL;
  gf_s3_list_page *page = calloc(1, sizeof *page);
  char *token = calloc(1, sizeof page->next_token);
  int rc = -ENOMEM;
  if (!l || !page || !token ||
      asprintf(&prefix, "%s%s", c->prefix, c->prefix[0] ? "/" : "") < 0 ||
      !(body = malloc(GF_S3_XML_MAX))) {
    snprintf(why, cap, "out of memory for a listing");
    goto out;
  }
  page_ctx pc = {l, prefix, strlen(prefix), 0};
  for (uint64_t n = 1;; n++) {
    free(q);
    free(url);
    url = NULL;
    /* The bucket's own URL, as the SDKs send it: path-style "/bucket"
     * (moto refuses a signature over "/bucket/"), virtual-hosted "/". */
    if (!(q = page_query(prefix, token)) ||
        asprintf(&url, "%s%s?%s", c->bucket_url,
                 strchr(strstr(c->bucket_url, "://") + 3, '/') ? "" : "/",
                 q) < 0) {
      url = NULL;
      snprintf(why, cap, "out of memory for a listing");
      rc = -ENOMEM;
      goto out;
    }
    gf_http_xfer x;
    memset(&x, 0, sizeof x);
    x.url = url;
    x.headers = NULL;
    x.ask.whole = true;
    x.ask.len = GF_S3_XML_MAX;
    x.buf = (uint8_t *)body;
    char w[700];
    rc = gf_http_run(st, &x, w, sizeof w);
    if (pages)
      *pages = n;
    if (rc < 0) {
      snprintf(why, cap, "listing (ListObjectsV2, page %llu): %s",
               (unsigned long long)n, w);
      goto out;
    }
    memset(page, 0, sizeof *page);
    rc = gf_s3_xml_list(body, (size_t)x.got, on_item, &pc, page, w, sizeof w);
    if (rc < 0) {
      snprintf(why, cap, "listing (ListObjectsV2, page %llu): %s",
               (unsigned long long)n, rc == -ENOMEM ? "out of memory" : w);
      goto out;
    }
    if (!page->truncated)
      break;
    if (strcmp(page->next_token, token) == 0) {
      snprintf(why, cap,
               "listing (ListObjectsV2, page %llu): the store gave the same "
               "continuation token again (it would never end)",
               (unsigned long long)n);
      rc = GF_EREPLY;
      goto out;
    }
    memcpy(token, page->next_token, sizeof page->next_token);
  }
  if (pc.outside)
    gf_log(GF_LOG_WARN,
           "s3: %s: the listing held %llu keys outside the prefix asked "
           "(ignored)",
           c->display_root, (unsigned long long)pc.outside);
  if (l->n) /* an empty listing has no array to sort */
    qsort(l->e, (size_t)l->n, sizeof *l->e, cmp_entry);
  *out = l;
  l = NULL;
  rc = 0;
out:
  gf_s3_listing_free(l);
  free(prefix);
  free(body);
  free(url);
  free(q);
  free(page);
  free(token);
  return rc;
}

/* The first entry whose name is not below s. */
static uint64_t lower_bound(const gf_s3_listing *l, const char *s) {
  uint64_t lo = 0, hi = l->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (strcmp(l->e[mid].name, s) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int gf_s3_listing_dir(const gf_s3_listing *l, const char *dir, gf_list_fn fn,
                      void *ctx) {
  char *pfx = NULL;
  if (asprintf(&pfx, "%s%s", dir, dir[0] ? "/" : "") < 0)
    return -ENOMEM;
  size_t plen = strlen(pfx);
  uint64_t i = lower_bound(l, pfx);
  int rc = 0;
  bool any = false;
  const char *last_dir = NULL;
  size_t last_len = 0;
  for (; i < l->n && strncmp(l->e[i].name, pfx, plen) == 0; i++) {
    any = true;
    const char *rest = l->e[i].name + plen;
    const char *slash = strchr(rest, '/');
    size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
    if (!len)
      continue; /* the folder's own marker ("dir/"), or "dir//x" */
    char name[1025];
    if (len >= sizeof name)
      continue; /* longer than S3 allows a key */
    memcpy(name, rest, len);
    name[len] = '\0';
    gf_dirent d = {name, GF_ENTRY_FILE, l->e[i].size, l->e[i].etag};
    if (slash) {
      if (last_dir && last_len == len && memcmp(last_dir, rest, len) == 0)
        continue;
      last_dir = rest;
      last_len = len;
      d.type = GF_ENTRY_DIR;
      d.size = UINT64_MAX;
      d.version = NULL;
    }
    if ((rc = fn(ctx, &d)) != 0)
      break;
  }
  free(pfx);
  return rc ? rc : any || !dir[0] ? 0 : -ENOENT;
}

int gf_s3_listing_stat(const gf_s3_listing *l, const char *name, gf_stat *out) {
  memset(out, 0, sizeof *out);
  if (!name[0]) {
    out->type = GF_ENTRY_DIR;
    return 0;
  }
  uint64_t i = lower_bound(l, name);
  if (i < l->n && strcmp(l->e[i].name, name) == 0) {
    out->type = GF_ENTRY_FILE;
    out->size = l->e[i].size;
    gf_strlcpy(out->version, l->e[i].etag, sizeof out->version);
    return 0;
  }
  size_t n = strlen(name);
  for (; i < l->n && strncmp(l->e[i].name, name, n) == 0; i++)
    if (l->e[i].name[n] == '/') {
      out->type = GF_ENTRY_DIR;
      return 0;
    }
  return -ENOENT;
}
