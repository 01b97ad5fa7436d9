/* Helpers shared by the subcommands: messages, files, progress, JSON. */
#include "cli.h"

#include "common/common.h"
#include "common/fault.h" /* gf_sys_*: file access tests can fail */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void gfc_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gpufeed %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* The library's messages name its configuration's fields; the CLI user
 * sets them with these options. */
static const char *const cli_names[][2] = {
    {"max_sample_bytes", "--max-sample"},
    {"cache_bytes", "--cache"},
    {"fetch_bytes", "--fetch-bytes"},
    {"cache_dir_bytes", "--cache-dir-bytes"},
};

/* " (max_sample_bytes is --max-sample here)" for each field the message
 * names, into buf. */
static void cli_hint(const char *msg, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t k = 0; k < sizeof cli_names / sizeof cli_names[0]; k++) {
    const char *at = strstr(msg, cli_names[k][0]);
    size_t fl = strlen(cli_names[k][0]);
    /* the whole word: not cache_bytes inside disk_cache_bytes */
    while (at &&
           ((at > msg && (at[-1] == '_' || isalnum((unsigned char)at[-1]))) ||
            at[fl] == '_' || isalnum((unsigned char)at[fl])))
      at = strstr(at + 1, cli_names[k][0]);
    if (!at || strstr(msg, cli_names[k][1]))
      continue;
    int w = snprintf(buf + n, cap - n, " (%s is %s here)", cli_names[k][0],
                     cli_names[k][1]);
    if (w < 0 || (size_t)w >= cap - n)
      break;
    n += (size_t)w;
  }
}

void gfc_error_last(const char *cmd, int code) {
  const gf_error_info *e = gf_last_error();
  if (e->code != code || !e->message[0]) {
    gfc_error(cmd, "%s", gf_strerror(code));
    return;
  }
  char hint[256];
  cli_hint(e->message, hint, sizeof hint);
  /* gpufeed's own codes name the kind of failure ("file is truncated")
   * that a detailed message may leave implicit: add it. */
  const char *kind = gf_strerror(code);
  if (code < -1000 && !strstr(e->message, kind))
    gfc_error(cmd, "%s (%s)%s", e->message, kind, hint);
  else
    gfc_error(cmd, "%s%s", e->message, hint);
}

bool gfc_env_ok(const char *cmd) {
  int rc = gf_log_env_check();
  if (rc == 0)
    return true;
  gfc_error_last(cmd, rc);
  return false;
}

unsigned gfc_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1u;
}

double gfc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *gfc_shown(const char *location, const gf_remote_config *remote,
                      char *buf, size_t cap) {
  gf_location_display(location, remote, buf, cap);
  return buf;
}

const char *gfc_fmt_bytes(uint64_t n, char *buf, size_t cap) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (n < 1024) {
    snprintf(buf, cap, "%llu B", (unsigned long long)n);
    return buf;
  }
  double v = (double)n;
  unsigned u = 0;
  while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, cap, "%.*f %s", v < 10.0 ? 2 : 1, v, units[u]);
  return buf;
}

char *gfc_path_join(const char *dir, const char *name) {
  size_t dl = strlen(dir), nl = strlen(name);
  while (dl > 1 && dir[dl - 1] == '/')
    dl--;
  char *p = malloc(dl + 1 + nl + 1);
  if (!p)
    return NULL;
  memcpy(p, dir, dl);
  p[dl] = '/';
  memcpy(p + dl + 1, name, nl + 1);
  return p;
}

/* Interrupted calls tolerated in a row: real ones are rare and transient,
 * and a signal storm (or a sticky injected EINTR) must not hang the CLI. */
#define GFC_MAX_RETRIES 16

int gfc_read_file(const char *path, uint64_t max_len, void **data,
                  size_t *len) {
  *data = NULL;
  *len = 0;
  int fd = gf_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    return gf_fail(fd, path, GF_NO_INDEX, GF_NO_INDEX, "cannot open: %s",
                   gf_strerror(fd));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return gf_fail(-e, path, GF_NO_INDEX, GF_NO_INDEX, "cannot stat: %s",
                   strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return gf_fail(GF_EBADSOURCE, path, GF_NO_INDEX, GF_NO_INDEX,
                   "not a regular file");
  }
  if ((uint64_t)st.st_size > max_len) {
    close(fd);
    return gf_fail(GF_ELIMIT, path, GF_NO_INDEX, GF_NO_INDEX,
                   "file of %llu bytes exceeds the limit of %llu bytes",
                   (unsigned long long)st.st_size, (unsigned long long)max_len);
  }
  size_t want = (size_t)st.st_size;
  uint8_t *buf = malloc(want ? want : 1);
  if (!buf) {
    close(fd);
    return gf_fail(-ENOMEM, path, GF_NO_INDEX, GF_NO_INDEX,
                   "cannot allocate %zu bytes to read it", want);
  }
  size_t got = 0;
  int retries = 0;
  while (got < want) {
    ssize_t r = gf_sys_read(fd, buf + got, want - got);
    if (r == -EINTR && ++retries <= GFC_MAX_RETRIES)
      continue;
    if (r < 0) {
      free(buf);
      close(fd);
      return gf_fail((int)r, path, GF_NO_INDEX, (uint64_t)got,
                     "read failed: %s", gf_strerror((int)r));
    }
    if (r == 0)
      break; /* shrank while we read it: take what is there */
    retries = 0;
    got += (size_t)r;
  }
  close(fd);
  *data = buf;
  *len = got;
  return 0;
}

int gfc_write_file_atomic(const char *dir, const char *name, const void *data,
                          size_t len) {
  char *final = gfc_path_join(dir, name);
  size_t tl = strlen(name) + 8;
  char *tname = malloc(tl);
  char *tmp = NULL;
  if (tname) {
    /* A hidden name: folder scans skip it if we die before the rename. */
    snprintf(tname, tl, ".%s.tmp", name);
    tmp = gfc_path_join(dir, tname);
  }
  free(tname);
  if (!final || !tmp) {
    free(final);
    free(tmp);
    return gf_fail(-ENOMEM, dir, GF_NO_INDEX, GF_NO_INDEX, "out of memory");
  }
  /* Errors name the final file: the temporary one is gone by the time the
   * user reads the message. */
  int rc = 0;
  int fd = gf_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = gf_fail(fd, final, GF_NO_INDEX, GF_NO_INDEX, "cannot create: %s",
                 gf_strerror(fd));
    goto out;
  }
  const uint8_t *p = data;
  size_t left = len;
  int retries = 0;
  while (left) {
    ssize_t w = gf_sys_write(fd, p, left);
    if (w == -EINTR && ++retries <= GFC_MAX_RETRIES)
      continue;
    if (w < 0) {
      rc = gf_fail((int)w, final, GF_NO_INDEX, (uint64_t)(len - left),
                   "write failed: %s", gf_strerror((int)w));
      break;
    }
    if (w == 0) {
      rc = gf_fail(-EIO, final, GF_NO_INDEX, (uint64_t)(len - left),
                   "write failed: the write made no progress");
      break;
    }
    retries = 0;
    p += w;
    left -= (size_t)w;
  }
  if (close(fd) != 0 && rc == 0) {
    int e = errno;
    rc = gf_fail(-e, final, GF_NO_INDEX, GF_NO_INDEX, "close failed: %s",
                 strerror(e));
  }
  if (rc == 0 && (rc = gf_sys_rename(tmp, final)) < 0)
    rc = gf_fail(rc, final, GF_NO_INDEX, GF_NO_INDEX,
                 "cannot rename the temporary file into place: %s",
                 gf_strerror(rc));
  if (rc != 0)
    unlink(tmp);
out:
  free(final);
  free(tmp);
  return rc;
}

int gfc_path_state(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return errno == ENOENT ? 0 : -errno;
  if (!S_ISDIR(st.st_mode))
    return 3;
  DIR *d = opendir(path);
  if (!d)
    return -errno;
  int state = 1;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
      state = 2;
      break;
    }
  }
  closedir(d);
  return state;
}

void gfc_progress_start(gfc_progress *p, const char *what, const char *unit,
                        uint64_t total, bool quiet) {
  p->enabled = !quiet && isatty(STDERR_FILENO);
  p->what = what;
  p->unit = unit;
  p->total = total;
  p->start = gfc_now();
  p->last = 0;
  p->note[0] = '\0';
}

static void fmt_duration(double s, char *buf, size_t cap) {
  if (s < 0 || s > 359999)
    s = 359999;
  unsigned t = (unsigned)(s + 0.5);
  snprintf(buf, cap, "%u:%02u:%02u", t / 3600, t / 60 % 60, t % 60);
}

void gfc_progress_update(gfc_progress *p, uint64_t done) {
  if (!p->enabled)
    return;
  double now = gfc_now();
  if (now - p->last < 0.1 && done < p->total)
    return;
  p->last = now;
  double el = now - p->start;
  double rate = el > 0 ? (double)done / el : 0;
  char eta[32] = "-:--:--";
  if (rate > 0 && done <= p->total)
    fmt_duration((double)(p->total - done) / rate, eta, sizeof eta);
  double pct = p->total ? 100.0 * (double)done / (double)p->total : 100.0;
  fprintf(stderr, "\r%s %llu/%llu %5.1f%% %8.0f %s/s ETA %s %s%s\033[K",
          p->what, (unsigned long long)done, (unsigned long long)p->total, pct,
          rate, p->unit, eta, p->note[0] ? "| " : "", p->note);
  fflush(stderr);
}

void gfc_progress_end(gfc_progress *p) {
  if (!p->enabled)
    return;
  fprintf(stderr, "\r\033[K");
  fflush(stderr);
  p->enabled = false; /* once: later output stays */
}

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0 when
 * none starts there: overlong forms, encoded surrogates (U+D800-DFFF),
 * code points above U+10FFFF and cut sequences are invalid, as for
 * Python's strict UTF-8 decoder. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  if (c < 0x80)
    return 1;
  size_t len;
  uint32_t cp, min;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2, cp = c & 0x1fu, min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, cp = c & 0x0fu, min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, cp = c & 0x07u, min = 0x10000;
  } else {
    return 0; /* a continuation byte, 0xc0/0xc1, or 0xf5-0xff */
  }
  if (n < len)
    return 0;
  for (size_t k = 1; k < len; k++) {
    if ((s[k] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[k] & 0x3fu);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return len;
}

void gfc_json_str(FILE *f, const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  for (size_t i = 0; i < len;) {
    unsigned char c = s[i];
    size_t n = utf8_len(s + i, len - i);
    if (n == 0) {
      /* Not UTF-8: the byte as a lone low surrogate U+DC80-DCFF, as
       * Python's os.fsdecode (surrogateescape) reads it. */
      fprintf(f, "\\udc%02x", c);
      i++;
      continue;
    }
    if (n > 1) {
      fwrite(s + i, 1, n, f); /* valid UTF-8 passes through */
      i += n;
      continue;
    }
    switch (c) {
    case '"':
      fputs("\\\"", f);
      break;
    case '\\':
      fputs("\\\\", f);
      break;
    case '\n':
      fputs("\\n", f);
      break;
    case '\t':
      fputs("\\t", f);
      break;
    case '\r':
      fputs("\\r", f);
      break;
    default:
      if (c < 0x20)
        fprintf(f, "\\u%04x", c);
      else
        fputc(c, f);
    }
    i++;
  }
}
