/* Source folder listing (format.h, gf_folder_scan): the ImageFolder
 * convention or a flat folder with a labels file. The listing's order is a
 * pure function of the names (never of the storage's order), and nothing
 * it returns lies outside the root: a labels file (which may come from
 * anywhere) cannot make a build read /etc/shadow. Folders are listed and
 * files looked at through the storage they lie in (io/storage.h). */
#include "format/format.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strcasecmp */

#define MAX_LINE 8192u /* bytes of one labels-file line */
#define MAX_DEPTH 64   /* folder nesting under a class folder */

typedef struct scan {
  gf_folder *f;
  uint64_t cap;
  gf_storage *st;
  const char *root; /* the storage's root, for messages */
  gf_folder_opts opts;
  uint64_t root_images; /* image files directly in an ImageFolder root */
  uint64_t *lines;      /* labels file: the line of each entry */
  uint64_t skipped_cap;
} scan;

/* Appends a malloc'd copy of s to the string list *list (*n entries, room
 * for *cap). Returns 0 or -ENOMEM. */
static int push_str(char ***list, uint64_t *n, uint64_t *cap, const char *s) {
  if (*n == *cap) {
    uint64_t c = *cap ? *cap * 2 : 16;
    if (c > SIZE_MAX / sizeof **list)
      return -ENOMEM;
    char **l = realloc(*list, (size_t)c * sizeof *l);
    if (!l)
      return -ENOMEM;
    *list = l;
    *cap = c;
  }
  if (!((*list)[*n] = strdup(s)))
    return -ENOMEM;
  (*n)++;
  return 0;
}

/* With skip_bad, turns the refusal just recorded (code rc) into a skipped
 * entry described as "PATH: why" and returns 0; else returns rc. */
static int skip_or_fail(scan *s, int rc) {
  if (rc != GF_EBADSOURCE || !s->opts.skip_bad)
    return rc;
  const gf_error_info *e = gf_last_error();
  char msg[sizeof e->path + sizeof e->message + 4];
  if (e->path[0] && !strstr(e->message, e->path))
    snprintf(msg, sizeof msg, "%s: %s", e->path, e->message);
  else
    snprintf(msg, sizeof msg, "%s", e->message);
  if (push_str(&s->f->skipped, &s->f->skipped_count, &s->skipped_cap, msg))
    return gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory listing files");
  gf_error_clear();
  return 0;
}

/* size and version: what the listing told (UINT64_MAX, NULL: nothing). */
static int add_entry(scan *s, const char *path, int64_t label, uint64_t size,
                     const char *version) {
  gf_folder *f = s->f;
  if (f->count == s->cap) {
    uint64_t n = s->cap ? s->cap * 2 : 256;
    if (n > SIZE_MAX / sizeof *f->entries)
      return gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                     "too many files");
    gf_folder_entry *e = realloc(f->entries, (size_t)n * sizeof *e);
    if (!e)
      return gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory listing %llu files",
                     (unsigned long long)f->count);
    f->entries = e;
    s->cap = n;
  }
  char *p = strdup(path), *v = version ? strdup(version) : NULL;
  if (!p || (version && !v)) {
    free(p);
    return gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory listing files");
  }
  f->entries[f->count].path = p;
  f->entries[f->count].size = size;
  f->entries[f->count].version = v;
  f->entries[f->count].label = label;
  f->entries[f->count].codec = gf_folder_name_codec(path);
  f->count++;
  return 0;
}

/* 0 when the file root/rel resolves (through any symlinks) to a regular
 * file inside the root; else GF_EBADSOURCE recorded against where_path,
 * the message led by `where` ("line N: ") and the file's path, or, with
 * `where` NULL, where_path being the file itself. A storage without links
 * holds nothing outside its root: the entry must be a file. */
static int check_inside(scan *s, const char *rel, const char *where_path,
                        const char *where) {
  char full[PATH_MAX * 2], real[PATH_MAX];
  gf_storage_name_display(s->st, rel, full, sizeof full);
  gf_stat st;
  bool inside = true;
  int rc;
  if (gf_storage_caps(s->st) & GF_STORAGE_LINKS)
    rc = gf_storage_resolve(s->st, rel, &st, &inside, real, sizeof real);
  else
    rc = gf_storage_stat(s->st, rel, true, &st);
  if (rc < 0) {
    char why[512];
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    return gf_fail(GF_EBADSOURCE, where_path, GF_NO_INDEX, GF_NO_INDEX,
                   "%s%s: %s", where ? where : "", where ? full : "it",
                   rc == -ENOENT ? "no such file (or a broken symbolic link)"
                                 : why);
  }
  /* The message names the file unless the error's path already does. */
  const char *shown = where ? full : "it";
  if (!where)
    where = "";
  if (!inside && !s->opts.follow_symlinks)
    return gf_fail(GF_EBADSOURCE, where_path, GF_NO_INDEX, GF_NO_INDEX,
                   "%s%s resolves to %s, outside the source folder %s "
                   "(a symbolic link leading out is refused unless "
                   "--follow-symlinks)",
                   where, shown, real, s->root);
  if (st.type != GF_ENTRY_FILE)
    return gf_fail(GF_EBADSOURCE, where_path, GF_NO_INDEX, GF_NO_INDEX,
                   "%s%s is not a regular file", where, shown);
  return 0;
}

/* The codec an image file's name promises (format.h, gf_folder_entry):
 * GF_CODEC_PNG for .png, GF_CODEC_JPEG for .jpg and .jpeg (any case), else
 * GF_FOLDER_CODEC_UNKNOWN. */
int gf_folder_name_codec(const char *name) {
  size_t n = strlen(name);
  if (n > 4 && strcasecmp(name + n - 4, ".png") == 0)
    return GF_CODEC_PNG;
  if ((n > 4 && strcasecmp(name + n - 4, ".jpg") == 0) ||
      (n > 5 && strcasecmp(name + n - 5, ".jpeg") == 0))
    return GF_CODEC_JPEG;
  return GF_FOLDER_CODEC_UNKNOWN;
}

int gf_folder_file_codec(int name_codec, const char *name, const void *head,
                         size_t len) {
  static const uint8_t png_sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  const uint8_t *p = head;
  int codec = GF_FOLDER_CODEC_UNKNOWN;
  if (len >= 8 && memcmp(p, png_sig, 8) == 0)
    codec = GF_CODEC_PNG;
  else if (len >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF)
    codec = GF_CODEC_JPEG;
  if (codec == GF_FOLDER_CODEC_UNKNOWN) {
    char hex[3 * 8 + 1] = "";
    for (size_t i = 0; i < len && i < 8; i++)
      snprintf(hex + 3 * i, sizeof hex - 3 * i, "%s%02x", i ? " " : "", p[i]);
    return gf_fail(GF_EDECODE, name, GF_NO_INDEX, GF_NO_INDEX,
                   "%s%sneither a PNG nor a JPEG file: %s%s", name ? name : "",
                   name ? ": " : "", len ? "it starts with " : "it is empty",
                   hex);
  }
  if (name_codec != GF_FOLDER_CODEC_UNKNOWN && name_codec != codec)
    return gf_fail(GF_EDECODE, name, GF_NO_INDEX, GF_NO_INDEX,
                   "%s%snamed %s but holds %s data (rename it to match its "
                   "content)",
                   name ? name : "", name ? ": " : "",
                   name_codec == GF_CODEC_PNG ? ".png" : ".jpg/.jpeg",
                   codec == GF_CODEC_PNG ? "PNG" : "JPEG");
  return codec;
}

static bool is_image_name(const char *name) {
  return gf_folder_name_codec(name) != GF_FOLDER_CODEC_UNKNOWN;
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const gf_folder_entry *)a)->path,
                ((const gf_folder_entry *)b)->path);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One folder's entries, copied out of the storage's listing so that the
 * walk below can recurse while it holds them. */
typedef struct dir_meta {
  gf_entry_type type;
  uint64_t size; /* UINT64_MAX: not told */
  char *version; /* NULL: not told */
} dir_meta;
typedef struct dir_list {
  char **names;
  dir_meta *meta;
  uint64_t n, cap;
} dir_list;

static int list_one(void *ctx, const gf_dirent *e) {
  dir_list *d = ctx;
  if (e->name[0] == '.')
    return 0; /* hidden, and . and .. */
  uint64_t n = d->n, cap = d->cap;
  if (push_str(&d->names, &n, &cap, e->name))
    return -ENOMEM;
  if (cap != d->cap) {
    dir_meta *t = realloc(d->meta, (size_t)cap * sizeof *t);
    if (!t) {
      free(d->names[n - 1]);
      return -ENOMEM;
    }
    d->meta = t;
  }
  char *v = e->version ? strdup(e->version) : NULL;
  if (e->version && !v) {
    free(d->names[n - 1]);
    return -ENOMEM;
  }
  d->meta[d->n] = (dir_meta){e->type, e->size, v};
  d->n = n;
  d->cap = cap;
  return 0;
}

static void dir_list_free(dir_list *d) {
  for (uint64_t i = 0; i < d->n; i++)
    free(d->names[i]);
  free(d->names);
  for (uint64_t i = 0; i < d->n; i++)
    free(d->meta[i].version);
  free(d->meta);
}

/* Lists folder rel (relative to the root; "" the root) into *d. */
static int list_dir(scan *s, const char *rel, dir_list *d, const char *what) {
  memset(d, 0, sizeof *d);
  int rc = gf_storage_list(s->st, rel, list_one, d);
  if (rc == -ENOMEM && !gf_last_error()->code)
    rc = gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                 "out of memory listing %s", what);
  else if (rc < 0) {
    char why[512];
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    rc = gf_fail(rc, s->root, GF_NO_INDEX, GF_NO_INDEX, "%s %s: %s",
                 rel[0] ? "listing" : "cannot open the source folder:",
                 rel[0] ? rel : "", why);
  }
  if (rc < 0)
    dir_list_free(d);
  return rc;
}

/* Whether rel, a link, leads to a folder. */
static bool link_to_dir(scan *s, const char *rel) {
  gf_stat st;
  return gf_storage_stat(s->st, rel, true, &st) == 0 && st.type == GF_ENTRY_DIR;
}

/* Lists the image files (.png, .jpg, .jpeg) under rel (a folder relative
 * to root). */
static int walk(scan *s, char *rel, size_t rel_len, int depth, int64_t label) {
  dir_list d;
  int rc = list_dir(s, rel, &d, "files");
  if (rc < 0)
    return rc;
  for (uint64_t i = 0; rc == 0 && i < d.n; i++) {
    const char *name = d.names[i];
    size_t nlen = strlen(name);
    if (rel_len + 1 + nlen >= PATH_MAX) {
      rc = gf_fail(GF_EBADSOURCE, s->root, GF_NO_INDEX, GF_NO_INDEX,
                   "path %s/%s is longer than %d bytes", rel, name, PATH_MAX);
      break;
    }
    rel[rel_len] = '/';
    memcpy(rel + rel_len + 1, name, nlen + 1);
    size_t sub_len = rel_len + 1 + nlen;
    gf_entry_type type = d.meta[i].type;
    if (type == GF_ENTRY_DIR) {
      if (depth >= MAX_DEPTH)
        rc =
            gf_fail(GF_EBADSOURCE, s->root, GF_NO_INDEX, GF_NO_INDEX,
                    "%s: folders nested deeper than %d levels", rel, MAX_DEPTH);
      else
        rc = walk(s, rel, sub_len, depth + 1, label);
    } else if (type == GF_ENTRY_LINK) {
      /* Links to files are followed when they stay inside the root; links
       * to folders never (a listing must not loop). */
      char full[PATH_MAX * 2];
      gf_storage_name_display(s->st, rel, full, sizeof full);
      if (link_to_dir(s, rel))
        rc = gf_fail(GF_EBADSOURCE, full, GF_NO_INDEX, GF_NO_INDEX,
                     "symbolic link to a folder: not followed (copy or "
                     "bind-mount the folder instead)");
      else if (is_image_name(name) &&
               (rc = check_inside(s, rel, full, NULL)) == 0)
        rc = add_entry(s, rel, label, UINT64_MAX, NULL);
      rc = skip_or_fail(s, rc);
    } else if (is_image_name(name)) {
      if (type == GF_ENTRY_FILE) {
        rc = add_entry(s, rel, label, d.meta[i].size, d.meta[i].version);
      } else {
        char full[PATH_MAX * 2];
        gf_storage_name_display(s->st, rel, full, sizeof full);
        rc = skip_or_fail(s, gf_fail(GF_EBADSOURCE, full, GF_NO_INDEX,
                                     GF_NO_INDEX, "not a regular file"));
      }
    }
    rel[rel_len] = '\0';
  }
  dir_list_free(&d);
  return rc;
}

static int scan_image_folder(scan *s) {
  gf_folder *f = s->f;
  dir_list d;
  int rc = list_dir(s, "", &d, "classes");
  if (rc < 0)
    return rc;
  uint64_t cap = 0;
  for (uint64_t i = 0; rc == 0 && i < d.n; i++) {
    const char *name = d.names[i];
    gf_entry_type type = d.meta[i].type;
    if (type == GF_ENTRY_LINK) {
      if (link_to_dir(s, name))
        rc = skip_or_fail(
            s, gf_fail(GF_EBADSOURCE, s->root, GF_NO_INDEX, GF_NO_INDEX,
                       "class folder %s is a symbolic link: not followed "
                       "(copy or bind-mount the folder instead)",
                       name));
      else if (is_image_name(name))
        s->root_images++;
      continue;
    }
    if (type != GF_ENTRY_DIR) {
      /* Files beside the class folders belong to no class (counted for
       * the message of a flat folder given without a labels file). */
      if (is_image_name(name))
        s->root_images++;
      continue;
    }
    /* A gpufeed dataset (a build's OUT inside its SRC) is no class. */
    char idx[PATH_MAX];
    gf_stat ist;
    snprintf(idx, sizeof idx, "%s/%s", name, GF_INDEX_NAME);
    if (gf_storage_stat(s->st, idx, false, &ist) == 0) {
      /* Grows at each one: rare, and few. */
      uint64_t n = f->not_class_count, cap_n = n;
      if (push_str(&f->not_classes, &n, &cap_n, name) || n > UINT32_MAX) {
        rc = gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory listing classes");
        break;
      }
      f->not_class_count = (uint32_t)n;
      continue;
    }
    gf_error_clear(); /* the stat's "no such file" is no error */
    if (f->class_count == UINT32_MAX) {
      rc = gf_fail(GF_EBADSOURCE, s->root, GF_NO_INDEX, GF_NO_INDEX,
                   "too many class folders");
      break;
    }
    if (f->class_count == cap) {
      uint64_t n = cap ? cap * 2 : 64;
      char **c = realloc(f->classes, (size_t)n * sizeof *c);
      if (!c) {
        rc = gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory listing classes");
        break;
      }
      f->classes = c;
      cap = n;
    }
    if (!(f->classes[f->class_count] = strdup(name))) {
      rc = gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory listing classes");
      break;
    }
    f->class_count++;
  }
  dir_list_free(&d);
  if (rc < 0)
    return rc;
  if (f->class_count)
    qsort(f->classes, f->class_count, sizeof *f->classes, cmp_str);
  char *rel = malloc(PATH_MAX);
  if (!rel)
    return gf_fail(-ENOMEM, s->root, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  for (uint32_t c = 0; rc == 0 && c < f->class_count; c++) {
    snprintf(rel, PATH_MAX, "%s", f->classes[c]);
    uint64_t first = f->count;
    rc = walk(s, rel, strlen(rel), 1, (int64_t)c);
    if (rc == 0 && f->count - first > 1)
      qsort(f->entries + first, (size_t)(f->count - first), sizeof *f->entries,
            cmp_entry);
  }
  free(rel);
  return rc;
}

/* A relative path that never climbs above its start, lexically. */
static const char *path_escape(const char *p) {
  if (p[0] == '/')
    return "an absolute path";
  long depth = 0;
  while (*p) {
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      if (--depth < 0)
        return "a path leading out of the source folder with '..'";
    } else if (n && !(n == 1 && p[0] == '.')) {
      depth++;
    }
    p += n;
    while (*p == '/')
      p++;
  }
  return NULL;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* p with "." and empty components removed and ".." applied lexically
 * (path_escape has made sure it never climbs above the start), into dst
 * (at least strlen(p) + 1 bytes). */
static void normalize(const char *p, char *dst) {
  size_t len = 0;
  while (*p) {
    const char *end = strchr(p, '/');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      while (len && dst[len - 1] != '/')
        len--;
      if (len)
        len--; /* the '/' before the dropped component */
    } else if (n && !(n == 1 && p[0] == '.')) {
      if (len)
        dst[len++] = '/';
      memcpy(dst + len, p, n);
      len += n;
    }
    p += n;
    while (*p == '/')
      p++;
  }
  dst[len] = '\0';
}

typedef struct listed {
  char *path; /* normalized */
  uint64_t line;
  int64_t label;
} listed;

static int cmp_listed(const void *a, const void *b) {
  const listed *x = a, *y = b;
  int c = strcmp(x->path, y->path);
  return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Refuses a labels file that lists one file twice, naming both lines (the
 * first two of the first path, in path order). */
static int check_duplicates(scan *s, const char *labels) {
  gf_folder *f = s->f;
  if (f->count < 2)
    return 0;
  listed *v = calloc((size_t)f->count, sizeof *v);
  if (!v)
    return gf_fail(-ENOMEM, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory checking the labels file");
  int rc = 0;
  for (uint64_t i = 0; i < f->count && rc == 0; i++) {
    if (!(v[i].path = malloc(strlen(f->entries[i].path) + 1))) {
      rc = gf_fail(-ENOMEM, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "out of memory checking the labels file");
      break;
    }
    normalize(f->entries[i].path, v[i].path);
    v[i].line = s->lines[i];
    v[i].label = f->entries[i].label;
  }
  if (rc == 0)
    qsort(v, (size_t)f->count, sizeof *v, cmp_listed);
  for (uint64_t i = 1; i < f->count && rc == 0; i++) {
    if (strcmp(v[i - 1].path, v[i].path) != 0)
      continue;
    if (v[i - 1].label != v[i].label)
      rc = gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "lines %llu and %llu both list %s, with different labels "
                   "(%lld and %lld): a file may be listed once",
                   (unsigned long long)v[i - 1].line,
                   (unsigned long long)v[i].line, v[i].path,
                   (long long)v[i - 1].label, (long long)v[i].label);
    else
      rc = gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "lines %llu and %llu both list %s (label %lld): a file "
                   "may be listed once (it would be a sample twice)",
                   (unsigned long long)v[i - 1].line,
                   (unsigned long long)v[i].line, v[i].path,
                   (long long)v[i].label);
  }
  for (uint64_t i = 0; i < f->count; i++)
    free(v[i].path);
  free(v);
  return rc;
}

/* A labels file read through its storage a buffer at a time. */
typedef struct text_in {
  gf_object *o;
  uint8_t buf[65536];
  uint64_t off; /* of buf[0] in the file */
  size_t len, pos;
  int err; /* a read failed (with context) */
} text_in;

/* The next byte, or EOF at the end or after an error (t->err). */
static int text_getc(text_in *t) {
  if (t->pos == t->len) {
    if (t->err)
      return EOF;
    t->off += t->len;
    t->pos = t->len = 0;
    int64_t n = gf_object_read_upto(t->o, t->buf, t->off, sizeof t->buf);
    if (n <= 0) {
      t->err = n < 0 ? (int)n : 0;
      return EOF;
    }
    t->len = (size_t)n;
  }
  return t->buf[t->pos++];
}

static int scan_labels(scan *s, const char *labels) {
  text_in *in = calloc(1, sizeof *in);
  if (!in)
    return gf_fail(-ENOMEM, labels, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  int orc = gf_object_open_path(labels, 0, &in->o);
  if (orc == -EISDIR) {
    free(in);
    return gf_fail(-EISDIR, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "the labels argument is a folder; expected a labels file "
                   "(lines 'relative/path.png LABEL')");
  }
  if (orc < 0) {
    char why[512];
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    free(in);
    return gf_fail(orc, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot open the labels file: %s", why);
  }
  uint64_t lines_cap = 0;
  char *line = malloc(MAX_LINE + 1);
  if (!line) {
    gf_object_close(in->o);
    free(in);
    return gf_fail(-ENOMEM, labels, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  int rc = 0;
  uint64_t lineno = 0;
  char where[64];
  for (;;) {
    size_t n = 0;
    bool too_long = false, has_nul = false;
    int c;
    while ((c = text_getc(in)) != EOF && c != '\n') {
      if (c == 0)
        has_nul = true;
      if (n < MAX_LINE)
        line[n++] = (char)c;
      else
        too_long = true;
    }
    if (in->err) {
      char why[512];
      gf_strlcpy(why, gf_last_error()->message, sizeof why);
      rc = gf_fail(in->err, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "reading the labels file failed: %s", why);
      break;
    }
    if (c == EOF && n == 0 && !too_long)
      break;
    lineno++;
    snprintf(where, sizeof where, "line %llu: ", (unsigned long long)lineno);
    if (too_long) {
      rc = gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "%sline longer than %u bytes", where, MAX_LINE);
      break;
    }
    if (has_nul) {
      rc = gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "%scontains a NUL byte (not a text file?)", where);
      break;
    }
    while (n && (line[n - 1] == '\r' || is_blank(line[n - 1])))
      n--;
    line[n] = '\0';
    size_t lead = 0;
    while (lead < n && is_blank(line[lead]))
      lead++;
    if (lead == n || line[0] == '#')
      continue;
    /* The label is after the last run of blanks, so paths may hold
     * spaces. */
    size_t sep = n;
    while (sep && !is_blank(line[sep - 1]))
      sep--;
    if (sep == 0) {
      rc = gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "%sexpected \"relative/path.png label\", found \"%s\"",
                   where, line);
      break;
    }
    const char *tok = line + sep;
    size_t pend = sep;
    while (pend && is_blank(line[pend - 1]))
      pend--;
    line[pend] = '\0';
    char *endp;
    errno = 0;
    long long label = strtoll(tok, &endp, 10);
    if (errno || *endp || endp == tok) {
      rc =
          gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                  "%slabel \"%s\" is not a 64-bit decimal integer", where, tok);
      break;
    }
    if (pend == 0) {
      rc = gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "%sno path before the label", where);
      break;
    }
    const char *why = path_escape(line);
    if (why) {
      rc = gf_fail(GF_EBADSOURCE, labels, GF_NO_INDEX, GF_NO_INDEX,
                   "%s\"%s\" is %s: paths must stay inside %s", where, line,
                   why, s->root);
      break;
    }
    if ((rc = check_inside(s, line, labels, where)) < 0) {
      if ((rc = skip_or_fail(s, rc)) < 0)
        break;
      continue; /* skipped */
    }
    if (s->f->count == lines_cap) {
      uint64_t ncap = lines_cap ? lines_cap * 2 : 256;
      uint64_t *l = ncap <= SIZE_MAX / sizeof *l
                        ? realloc(s->lines, (size_t)ncap * sizeof *l)
                        : NULL;
      if (!l) {
        rc = gf_fail(-ENOMEM, labels, GF_NO_INDEX, GF_NO_INDEX,
                     "out of memory listing files");
        break;
      }
      s->lines = l;
      lines_cap = ncap;
    }
    s->lines[s->f->count] = lineno;
    if ((rc = add_entry(s, line, (int64_t)label, UINT64_MAX, NULL)) < 0)
      break;
  }
  free(line);
  gf_object_close(in->o);
  free(in);
  if (rc == 0)
    rc = check_duplicates(s, labels);
  return rc;
}

int gf_folder_scan(const char *root, const char *labels_file, gf_folder **out) {
  return gf_folder_scan_with(root, labels_file, NULL, out);
}

int gf_folder_scan_with(const char *root, const char *labels_file,
                        const gf_folder_opts *opts, gf_folder **out) {
  if (!root || !root[0] || !out)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "gf_folder_scan: root and out are required");
  *out = NULL;
  gf_storage *st;
  int rc = gf_storage_open(root, NULL, &st);
  if (rc < 0)
    return rc;
  rc = gf_folder_scan_in(st, labels_file, opts, out);
  gf_storage_close(st);
  return rc;
}

int gf_folder_scan_in(gf_storage *st, const char *labels_file,
                      const gf_folder_opts *opts, gf_folder **out) {
  *out = NULL;
  const char *root = gf_storage_display(st);
  gf_stat rst;
  if (gf_storage_stat(st, "", true, &rst) != 0) {
    int e = gf_last_error()->code;
    char why[512];
    gf_strlcpy(why, gf_last_error()->message, sizeof why);
    return gf_fail(e, root, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot use the source folder: %s", why);
  }
  if (rst.type != GF_ENTRY_DIR)
    return gf_fail(-ENOTDIR, root, GF_NO_INDEX, GF_NO_INDEX,
                   "the source is not a folder");
  gf_folder *f = calloc(1, sizeof *f);
  scan s = {.f = f, .st = st};
  if (opts)
    s.opts = *opts;
  if (!f || !(f->root = strdup(root))) {
    gf_folder_free(f);
    return gf_fail(-ENOMEM, root, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  s.root = f->root;
  int rc = labels_file ? scan_labels(&s, labels_file) : scan_image_folder(&s);
  if (rc == 0 && f->count == 0) {
    if (labels_file)
      rc = gf_fail(GF_EBADSOURCE, labels_file, GF_NO_INDEX, GF_NO_INDEX,
                   "the labels file lists no %sfiles",
                   f->skipped_count ? "usable " : "");
    else if (s.root_images && !f->class_count)
      rc = gf_fail(GF_EBADSOURCE, root, GF_NO_INDEX, GF_NO_INDEX,
                   "%s holds %llu image file%s (.png, .jpg, .jpeg) but no "
                   "class folders: a flat folder needs a labels file "
                   "(--labels FILE, lines 'relative/path.png LABEL'), or %s "
                   "must hold one folder per class "
                   "(%s/<class>/<file>.png or .jpg)",
                   root, (unsigned long long)s.root_images,
                   s.root_images == 1 ? "" : "s", root, root);
    else
      rc = gf_fail(GF_EBADSOURCE, root, GF_NO_INDEX, GF_NO_INDEX,
                   "no .png, .jpg or .jpeg files found under %s (expected "
                   "%s/<class>/<file>.png or .jpg, or a labels file)",
                   root, root);
  }
  free(s.lines);
  gf_storage_list_done(st); /* an object store's listing, kept for the walk */
  if (rc < 0) {
    gf_folder_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void gf_folder_free(gf_folder *f) {
  if (!f)
    return;
  for (uint64_t i = 0; i < f->count; i++) {
    free(f->entries[i].path);
    free(f->entries[i].version);
  }
  free(f->entries);
  for (uint32_t i = 0; i < f->class_count; i++)
    free(f->classes[i]);
  free(f->classes);
  for (uint32_t i = 0; i < f->not_class_count; i++)
    free(f->not_classes[i]);
  free(f->not_classes);
  for (uint64_t i = 0; i < f->skipped_count; i++)
    free(f->skipped[i]);
  free(f->skipped);
  free(f->root);
  free(f);
}
