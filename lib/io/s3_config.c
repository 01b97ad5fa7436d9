/* The AWS configuration chain (s3_config.h): the profile's values
 * gathered from the two files (read by s3_ini.c), then each setting's
 * sources in order. Every buffer is fixed or bounded by GF_AWS_FILE_MAX; every
 * one that held a file's bytes is wiped before it is let go. */
#include "io/s3_config.h"

#include "common/common.h" /* gf_say */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* explicit_bzero, memrchr (_GNU_SOURCE) */
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a profile's values, gathered from one file -------------------------- */

/* The keys read; the others are skipped. */
enum {
  K_ACCESS,
  K_SECRET,
  K_TOKEN,
  K_SECURITY_TOKEN, /* botocore's older name for the session token */
  K_REGION,
  K_ENDPOINT,
  K_SERVICES,
  K_IGNORE,
  K_S3_ENDPOINT,
  K_S3_ADDRESSING,
  K_N
};

/* One section's values: each key's last one, or that it was too long
 * for its field (refused only where used: a long value nobody asks for
 * breaks nothing). */
typedef struct slot {
  bool seen;   /* the section is in the file */
  bool has_s3; /* it has an s3 key (a nested block, taken whole) */
  bool have[K_N];
  bool over[K_N];
  unsigned line[K_N];
  char other[40]; /* the first key of a kind of credentials not resolved
                     here (role_arn...), for the note */
  unsigned other_line;
  char access[sizeof(((gf_aws_config *)0)->access_key)];
  char secret[sizeof(((gf_aws_config *)0)->secret_key)];
  char token[sizeof(((gf_aws_config *)0)->session_token)];
  char security_token[sizeof(((gf_aws_config *)0)->session_token)];
  char region[sizeof(((gf_aws_config *)0)->region)];
  char endpoint[sizeof(((gf_aws_config *)0)->endpoint)];
  char services[GF_AWS_INI_SECTION_MAX];
  char ignore[8];
  char s3_endpoint[sizeof(((gf_aws_config *)0)->endpoint)];
  char s3_addressing[16];
} slot;

#define SLOT_FIELD(f) offsetof(slot, f), sizeof(((slot *)0)->f)
static const struct {
  const char *key, *sub, *label; /* label: as messages name it */
  size_t off, cap;
} KEYS[K_N] = {
    [K_ACCESS] = {"aws_access_key_id", NULL, "aws_access_key_id",
                  SLOT_FIELD(access)},
    [K_SECRET] = {"aws_secret_access_key", NULL, "aws_secret_access_key",
                  SLOT_FIELD(secret)},
    [K_TOKEN] = {"aws_session_token", NULL, "aws_session_token",
                 SLOT_FIELD(token)},
    [K_SECURITY_TOKEN] = {"aws_security_token", NULL, "aws_security_token",
                          SLOT_FIELD(security_token)},
    [K_REGION] = {"region", NULL, "region", SLOT_FIELD(region)},
    [K_ENDPOINT] = {"endpoint_url", NULL, "endpoint_url", SLOT_FIELD(endpoint)},
    [K_SERVICES] = {"services", NULL, "services", SLOT_FIELD(services)},
    [K_IGNORE] = {"ignore_configured_endpoint_urls", NULL,
                  "ignore_configured_endpoint_urls", SLOT_FIELD(ignore)},
    [K_S3_ENDPOINT] = {"s3", "endpoint_url", "s3.endpoint_url",
                       SLOT_FIELD(s3_endpoint)},
    [K_S3_ADDRESSING] = {"s3", "addressing_style", "s3.addressing_style",
                         SLOT_FIELD(s3_addressing)},
};

/* Credentials this step does not resolve: worth a note when none is
 * found, so that "no credentials" is not a mystery. */
static const char *const OTHER_KINDS[] = {"role_arn", "credential_process",
                                          "web_identity_token_file",
                                          "sso_session", "sso_start_url"};

/* The sections a file may hold for the profile. */
enum {
  S_PROFILE,  /* [NAME] (credentials), [profile NAME] (config) */
  S_DEFAULT,  /* [default] in the config file, for the default profile */
  S_DEFAULTS, /* [DEFAULT]: configparser's defaults for every section */
  S_SERVICES, /* [services X] in the config file (a second pass) */
  S_N
};

typedef struct file_scan {
  const char *kind;     /* "shared credentials file", "config file" */
  const char *named_by; /* the variable that named it, or NULL */
  bool config;          /* sections are "profile NAME" */
  bool present;         /* read (a missing default file is not) */
  const char *profile;
  const char *services; /* during the second pass: the X of [services X] */
  char path[4096];
  slot s[S_N];
} file_scan;

/* Python's shlex.split (POSIX mode) of a section name into at most three
 * words: whitespace separates; '...' is literal; "..." keeps \" and \\
 * escapes; a backslash outside quotes escapes the next byte. Returns the
 * word count (3: three or more), or -1 where shlex raises (an open quote,
 * a backslash at the end). */
static int shlex_words(const char *s, char w[3][GF_AWS_INI_SECTION_MAX]) {
  int nw = 0;
  size_t n = 0;
  bool in = false;
  char quote = 0;
  for (const char *c = s;; c++) {
    if (quote) {
      if (*c == '\0')
        return -1;
      if (*c == quote) {
        quote = 0;
        continue;
      }
      if (quote == '"' && *c == '\\' && (c[1] == '"' || c[1] == '\\'))
        c++;
      w[nw][n++] = *c;
      continue;
    }
    if (*c == '\0' || *c == ' ' || *c == '\t' || *c == '\r' || *c == '\n') {
      if (in) {
        w[nw++][n] = '\0';
        n = 0;
        in = false;
      }
      if (*c == '\0')
        return nw;
      continue;
    }
    if (!in) {
      if (nw == 2)
        return 3;
      in = true;
    }
    if (*c == '\'' || *c == '"') {
      quote = *c;
      continue;
    }
    if (*c == '\\' && *++c == '\0')
      return -1;
    w[nw][n++] = *c;
  }
}

/* True when section is "WORD NAME" as botocore's build_profile_map reads
 * it ("profile x", "profile \"x y\"", "services s"). */
static bool section_is(const char *section, const char *word,
                       const char *name) {
  char w[3][GF_AWS_INI_SECTION_MAX];
  return strncmp(section, word, strlen(word)) == 0 &&
         shlex_words(section, w) == 2 && strcmp(w[0], word) == 0 &&
         strcmp(w[1], name) == 0;
}

static slot *slot_of(file_scan *f, const char *section) {
  if (strcmp(section, "DEFAULT") == 0)
    return &f->s[S_DEFAULTS];
  if (f->services)
    return section_is(section, "services", f->services) ? &f->s[S_SERVICES]
                                                        : NULL;
  if (!f->config)
    return strcmp(section, f->profile) == 0 ? &f->s[S_PROFILE] : NULL;
  if (strcmp(f->profile, "default") == 0 && strcmp(section, "default") == 0)
    return &f->s[S_DEFAULT];
  return section_is(section, "profile", f->profile) ? &f->s[S_PROFILE] : NULL;
}

static int capture(void *ctx, const gf_aws_ini_entry *e, char *why,
                   size_t cap) {
  (void)why;
  (void)cap;
  file_scan *f = ctx;
  slot *s = slot_of(f, e->section);
  if (!s)
    return 0;
  if (!e->key) {
    s->seen = true;
    return 0;
  }
  if (!e->sub && strcmp(e->key, "s3") == 0)
    s->has_s3 = true;
  for (int k = 0; k < K_N; k++) {
    if (strcmp(e->key, KEYS[k].key) != 0 || !e->sub != !KEYS[k].sub ||
        (e->sub && strcmp(e->sub, KEYS[k].sub) != 0))
      continue;
    char *dst = (char *)s + KEYS[k].off;
    size_t n = strlen(e->value);
    s->have[k] = true;
    s->line[k] = e->line;
    s->over[k] = n >= KEYS[k].cap;
    if (s->over[k])
      n = 0;
    memcpy(dst, e->value, n);
    dst[n] = '\0';
    return 0;
  }
  for (size_t i = 0; i < sizeof OTHER_KINDS / sizeof OTHER_KINDS[0]; i++)
    if (!e->sub && !s->other[0] && strcmp(e->key, OTHER_KINDS[i]) == 0) {
      snprintf(s->other, sizeof s->other, "%s", OTHER_KINDS[i]);
      s->other_line = e->line;
    }
  return 0;
}

/* The profile's own section in f: in the config file, [profile default]
 * before [default] for the default profile (the SDKs' rule; botocore
 * takes whichever comes last). */
static const slot *profile_slot(const file_scan *f) {
  if (f->config && !f->s[S_PROFILE].seen && f->s[S_DEFAULT].seen)
    return &f->s[S_DEFAULT];
  return &f->s[S_PROFILE];
}

/* Where section s's value of key k comes from: s itself, else f's
 * [DEFAULT] (configparser's defaults); an s3 block is taken whole from
 * one of them. NULL when neither has it or s is not in the file. */
static const slot *view(const file_scan *f, const slot *s, int k) {
  if (!f->present || !s->seen)
    return NULL;
  const slot *d = &f->s[S_DEFAULTS], *from;
  if (KEYS[k].sub)
    from = s->has_s3 ? s : d->has_s3 ? d : NULL;
  else
    from = s->have[k] ? s : d->have[k] ? d : NULL;
  return from && from->have[k] ? from : NULL;
}

/* ---- the chain ----------------------------------------------------------- */

typedef struct chain {
  gf_aws_getenv getenv_fn;
  void *ctx;
  const char *profile_var; /* the variable that named the profile, or NULL */
  file_scan files[2];      /* the credentials file, then the config file */
} chain;

/* A variable's value; set to "" is unset. */
static const char *env(const chain *c, const char *name) {
  const char *v = c->getenv_fn ? c->getenv_fn(c->ctx, name) : getenv(name);
  return v && v[0] ? v : NULL;
}

/* A value found: where from, for the source strings and messages. */
typedef struct found {
  const char *value;
  const file_scan *f;  /* NULL: the environment */
  const char *var;     /* the variable, from the environment */
  const char *section; /* "profile", "services" */
  const char *name;    /* the section's name */
  const char *key;     /* "region", "s3.endpoint_url"... (a label) */
  unsigned line;
  bool over;
} found;

static bool from_file(const file_scan *f, const slot *s, int k,
                      const char *section, const char *name, found *out) {
  const slot *from = view(f, s, k);
  if (!from)
    return false;
  *out = (found){.value = (const char *)from + KEYS[k].off,
                 .f = f,
                 .section = section,
                 .name = name,
                 .key = KEYS[k].label,
                 .line = from->line[k],
                 .over = from->over[k]};
  return true;
}

/* The profile's setting k: the credentials file's, else the config
 * file's (botocore lays the first over the second). An s3 block is taken
 * whole from the first file that has one. */
static bool setting(const chain *c, int k, found *out) {
  for (int i = 0; i < 2; i++) {
    const file_scan *f = &c->files[i];
    const slot *s = profile_slot(f);
    if (KEYS[k].sub) {
      const slot *d = &f->s[S_DEFAULTS];
      if (!f->present || !s->seen || (!s->has_s3 && !d->has_s3))
        continue;
    }
    if (from_file(f, s, k, "profile", c->files[0].profile, out))
      return true;
    if (KEYS[k].sub)
      return false;
  }
  return false;
}

/* "config file PATH [profile x]" (and the key, with_key), or the
 * variable's name. */
static void source_of(const found *v, bool with_key, char *dst, size_t cap) {
  if (!v->f)
    gf_say(dst, cap, "%s", v->var);
  else
    gf_say(dst, cap, "%s %s [%s %s]%s%s", v->f->kind, v->f->path, v->section,
           v->name, with_key ? " " : "", with_key ? v->key : "");
}

/* Where a value is, for a message: the variable, or "FILE PATH line N
 * (key)". */
static void where(const found *v, char *dst, size_t cap) {
  if (!v->f)
    gf_say(dst, cap, "%s", v->var);
  else
    gf_say(dst, cap, "%s %s line %u (%s)", v->f->kind, v->f->path, v->line,
           v->key);
}

/* Copies a found value into its field, refusing one too long or holding
 * a control byte (it would end up in a header). */
static int take(const found *v, const char *what, char *dst, size_t dcap,
                char *why, size_t cap) {
  char at[4800];
  where(v, at, sizeof at);
  size_t n = strlen(v->value);
  if (v->over || n >= dcap) {
    gf_say(why, cap, "%s: %s is longer than %zu bytes", at, what, dcap - 1);
    return -EINVAL;
  }
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)v->value[i] < 0x20 || v->value[i] == 0x7f) {
      gf_say(why, cap, "%s: %s holds a control character", at, what);
      return -EINVAL;
    }
  memcpy(dst, v->value, n + 1);
  return 0;
}

/* The file's path: the variable's ("~" and "~/" as the user's home, as
 * botocore's expanduser), else ~/.aws/NAME (none without HOME). */
static int file_path(const chain *c, file_scan *f, const char *var,
                     const char *name, char *why, size_t cap) {
  const char *v = env(c, var), *home = env(c, "HOME");
  int n = 0;
  f->path[0] = '\0';
  f->named_by = v ? var : NULL;
  if (v && v[0] == '~' && (v[1] == '/' || v[1] == '\0') && home)
    n = snprintf(f->path, sizeof f->path, "%s%s", home, v + 1);
  else if (v)
    n = snprintf(f->path, sizeof f->path, "%s", v);
  else if (home)
    n = snprintf(f->path, sizeof f->path, "%s/.aws/%s", home, name);
  if (n < 0 || (size_t)n >= sizeof f->path) {
    gf_say(why, cap, "the path of the %s (from %s) is longer than %zu bytes",
           f->kind, v ? var : "HOME", sizeof f->path - 1);
    return -EINVAL;
  }
  return 0;
}

/* Reads f's file into a malloc'd buffer (*text, *len: NULL, 0 when the
 * file is absent or not a regular file). */
static int read_file(file_scan *f, char **text, size_t *len, char *why,
                     size_t cap) {
  *text = NULL;
  *len = 0;
  f->present = false;
  if (!f->path[0])
    return 0;
  /* O_NONBLOCK: a FIFO named by a variable must not hang the open (it
   * is then skipped as not a regular file). */
  int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if ((err == ENOENT || err == ENOTDIR) && !f->named_by)
      return 0;
    if (err == ENOENT || err == ENOTDIR)
      gf_say(why, cap, "%s names %s, which does not exist", f->named_by,
             f->path);
    else
      gf_say(why, cap, "cannot open the %s %s: %s", f->kind, f->path,
             strerror(err));
    return -err;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    gf_say(why, cap, "cannot stat the %s %s: %s", f->kind, f->path,
           strerror(err));
    return -err;
  }
  /* /dev/null, a folder, a FIFO: botocore's os.path.isfile says no
   * file. */
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return 0;
  }
  if (st.st_size > (off_t)GF_AWS_FILE_MAX) {
    close(fd);
    gf_say(why, cap, "the %s %s is larger than %u bytes: refused", f->kind,
           f->path, GF_AWS_FILE_MAX);
    return -EFBIG;
  }
  /* Room for one byte more than allowed, to see a file that grew since
   * fstat; pages never written are never touched. */
  size_t room = (size_t)GF_AWS_FILE_MAX + 1, got = 0;
  char *buf = malloc(room);
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
      gf_say(why, cap, "cannot read the %s %s: %s", f->kind, f->path,
             strerror(err));
      return -err;
    }
    if (r == 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  if (got > GF_AWS_FILE_MAX) {
    explicit_bzero(buf, got);
    free(buf);
    gf_say(why, cap, "the %s %s is larger than %u bytes: refused", f->kind,
           f->path, GF_AWS_FILE_MAX);
    return -EFBIG;
  }
  f->present = true;
  *text = buf;
  *len = got;
  return 0;
}

/* Reads f and gathers the profile's sections (services: the [services
 * X] section's instead). */
static int scan(file_scan *f, const char *services, char *why, size_t cap) {
  char *text;
  size_t len;
  int rc = read_file(f, &text, &len, why, cap);
  if (rc < 0 || !f->present)
    return rc;
  f->services = services;
  rc = gf_aws_ini_parse(text, len, f->path, capture, f, why, cap);
  f->services = NULL;
  explicit_bzero(text, len);
  free(text);
  return rc;
}

/* The credentials of the profile's section in f, if it has any. */
static int file_credentials(const file_scan *f, gf_aws_config *out, char *why,
                            size_t cap) {
  const slot *s = profile_slot(f);
  found a, k, t;
  bool ha = from_file(f, s, K_ACCESS, "profile", f->profile, &a) &&
            (a.value[0] || a.over);
  bool hk = from_file(f, s, K_SECRET, "profile", f->profile, &k) &&
            (k.value[0] || k.over);
  if (!ha && !hk)
    return 0;
  if (ha != hk) {
    const found *have = ha ? &a : &k;
    gf_say(why, cap, "%s %s [profile %s]: %s (line %u) without %s", f->kind,
           f->path, f->profile, have->key, have->line,
           ha ? KEYS[K_SECRET].key : KEYS[K_ACCESS].key);
    return -EINVAL;
  }
  int rc;
  if ((rc = take(&a, "the access key", out->access_key, sizeof out->access_key,
                 why, cap)) < 0 ||
      (rc = take(&k, "the secret key", out->secret_key, sizeof out->secret_key,
                 why, cap)) < 0)
    return rc;
  if ((from_file(f, s, K_TOKEN, "profile", f->profile, &t) &&
       (t.value[0] || t.over)) ||
      (from_file(f, s, K_SECURITY_TOKEN, "profile", f->profile, &t) &&
       (t.value[0] || t.over)))
    if ((rc = take(&t, "the session token", out->session_token,
                   sizeof out->session_token, why, cap)) < 0)
      return rc;
  out->have_credentials = true;
  source_of(&a, false, out->cred_source, sizeof out->cred_source);
  return 0;
}

static int env_value(const chain *c, const char *var, const char *what,
                     char *dst, size_t dcap, char *why, size_t cap) {
  found v = {0};
  v.value = env(c, var);
  v.var = var;
  return v.value ? take(&v, what, dst, dcap, why, cap) : 0;
}

static int credentials(const chain *c, gf_aws_config *out, char *why,
                       size_t cap) {
  const char *ak = env(c, "AWS_ACCESS_KEY_ID"),
             *sk = env(c, "AWS_SECRET_ACCESS_KEY");
  if (ak || sk) {
    if (!ak || !sk) {
      gf_say(why, cap, "%s is set but %s is not",
             ak ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
             ak ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
      return -EINVAL;
    }
    int rc;
    const char *tv = env(c, "AWS_SESSION_TOKEN") ? "AWS_SESSION_TOKEN"
                                                 : "AWS_SECURITY_TOKEN";
    if ((rc = env_value(c, "AWS_ACCESS_KEY_ID", "the access key",
                        out->access_key, sizeof out->access_key, why, cap)) <
            0 ||
        (rc = env_value(c, "AWS_SECRET_ACCESS_KEY", "the secret key",
                        out->secret_key, sizeof out->secret_key, why, cap)) <
            0 ||
        (rc = env_value(c, tv, "the session token", out->session_token,
                        sizeof out->session_token, why, cap)) < 0)
      return rc;
    out->have_credentials = true;
    snprintf(out->cred_source, sizeof out->cred_source, "environment");
    return 0;
  }
  for (int i = 0; i < 2 && !out->have_credentials; i++) {
    int rc = file_credentials(&c->files[i], out, why, cap);
    if (rc < 0)
      return rc;
  }
  if (out->have_credentials)
    return 0;
  for (int i = 0; i < 2; i++) {
    const file_scan *f = &c->files[i];
    const slot *s = profile_slot(f);
    if (f->present && s->seen && s->other[0]) {
      gf_say(out->cred_note, sizeof out->cred_note,
             "profile %s sets %s (%s %s line %u), which is not resolved "
             "here",
             f->profile, s->other, f->kind, f->path, s->other_line);
      break;
    }
  }
  return 0;
}

/* botocore's validate_region_name: [A-Za-z0-9] at both ends, '-' inside,
 * at most 63 bytes. */
static bool region_ok(const char *r) {
  size_t n = strlen(r);
  if (n == 0 || n > 63 || r[0] == '-' || r[n - 1] == '-')
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= 'A' && r[i] <= 'Z') ||
          (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
      return false;
  return true;
}

static int region(const chain *c, gf_aws_config *out, char *why, size_t cap) {
  found v = {0};
  if ((v.value = env(c, "AWS_REGION")))
    v.var = "AWS_REGION";
  else if ((v.value = env(c, "AWS_DEFAULT_REGION")))
    v.var = "AWS_DEFAULT_REGION";
  else if (!setting(c, K_REGION, &v) || (!v.value[0] && !v.over)) {
    snprintf(out->region, sizeof out->region, "us-east-1");
    snprintf(out->region_source, sizeof out->region_source, "default");
    return 0;
  }
  int rc = take(&v, "the region", out->region, sizeof out->region, why, cap);
  if (rc < 0)
    return rc;
  if (!region_ok(out->region)) {
    char at[4800];
    where(&v, at, sizeof at);
    gf_say(why, cap, "%s: not a region name (letters, digits and '-')", at);
    return -EINVAL;
  }
  source_of(&v, false, out->region_source, sizeof out->region_source);
  return 0;
}

/* "true" in any case turns it on (botocore's ensure_boolean). */
static bool ignore_endpoints(const chain *c, char *src, size_t cap) {
  const char *v = env(c, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
  if (v) {
    gf_say(src, cap, "ignored (AWS_IGNORE_CONFIGURED_ENDPOINT_URLS)");
    return strcasecmp(v, "true") == 0;
  }
  found f;
  if (setting(c, K_IGNORE, &f) && strcasecmp(f.value, "true") == 0) {
    char at[700];
    source_of(&f, true, at, sizeof at);
    gf_say(src, cap, "ignored (%s)", at);
    return true;
  }
  return false;
}

static int endpoint(chain *c, gf_aws_config *out, char *why, size_t cap) {
  char ignored[600];
  if (ignore_endpoints(c, ignored, sizeof ignored)) {
    gf_say(out->endpoint_source, sizeof out->endpoint_source, "%s", ignored);
    return 0;
  }
  found v = {0}, svc;
  char svc_name[GF_AWS_INI_SECTION_MAX]; /* v.name may point here */
  int rc;
  if ((v.value = env(c, "AWS_ENDPOINT_URL_S3")))
    v.var = "AWS_ENDPOINT_URL_S3";
  else if ((v.value = env(c, "AWS_ENDPOINT_URL")))
    v.var = "AWS_ENDPOINT_URL";
  /* botocore's services sections: the profile's `services = X` names
   * [services X] of the config file, whose s3 block may hold one. */
  else if (setting(c, K_SERVICES, &svc) && (svc.value[0] || svc.over)) {
    file_scan *f = &c->files[1];
    if ((rc = take(&svc, "the services section's name", svc_name,
                   sizeof svc_name, why, cap)) < 0 ||
        (rc = scan(f, svc_name, why, cap)) < 0)
      return rc;
    if (!f->present || !f->s[S_SERVICES].seen) {
      char at[4800];
      where(&svc, at, sizeof at);
      gf_say(why, cap,
             "%s: the profile names a services section that the config file "
             "%s does not have",
             at, f->path[0] ? f->path : "(none)");
      return -EINVAL;
    }
    if (!from_file(f, &f->s[S_SERVICES], K_S3_ENDPOINT, "services", svc_name,
                   &v) ||
        (!v.value[0] && !v.over))
      v.value = NULL;
  }
  if (!v.value && (!setting(c, K_S3_ENDPOINT, &v) || (!v.value[0] && !v.over)))
    v.value = NULL;
  if (!v.value && (!setting(c, K_ENDPOINT, &v) || (!v.value[0] && !v.over))) {
    snprintf(out->endpoint_source, sizeof out->endpoint_source, "none");
    return 0;
  }
  if ((rc = take(&v, "the endpoint", out->endpoint, sizeof out->endpoint, why,
                 cap)) < 0)
    return rc;
  source_of(&v, true, out->endpoint_source, sizeof out->endpoint_source);
  /* The URL may hold user information: it is never shown. */
  const char *u = out->endpoint;
  size_t skip = strncasecmp(u, "https://", 8) == 0  ? 8
                : strncasecmp(u, "http://", 7) == 0 ? 7
                                                    : 0;
  bool ok = skip && u[skip];
  for (const char *p = u; ok && *p; p++)
    ok = *p != ' ';
  if (!ok) {
    char at[4800];
    where(&v, at, sizeof at);
    gf_say(why, cap, "%s: the endpoint is not an http:// or https:// URL", at);
    return -EINVAL;
  }
  return 0;
}

static int addressing(const chain *c, gf_aws_config *out, char *why,
                      size_t cap) {
  found v;
  out->addressing = GF_AWS_ADDRESSING_AUTO;
  if (!setting(c, K_S3_ADDRESSING, &v))
    return 0;
  if (strcmp(v.value, "path") == 0 && !v.over)
    out->addressing = GF_AWS_ADDRESSING_PATH;
  else if (strcmp(v.value, "virtual") == 0 && !v.over)
    out->addressing = GF_AWS_ADDRESSING_VIRTUAL;
  else if (strcmp(v.value, "auto") != 0 || v.over) {
    gf_say(why, cap,
           "%s %s line %u: s3.addressing_style must be path, virtual or auto",
           v.f->kind, v.f->path, v.line);
    return -EINVAL;
  }
  return 0;
}

static int resolve(chain *c, gf_aws_config *out, char *why, size_t cap) {
  const char *name = env(c, "AWS_PROFILE");
  c->profile_var = name ? "AWS_PROFILE" : NULL;
  if (!name && (name = env(c, "AWS_DEFAULT_PROFILE")))
    c->profile_var = "AWS_DEFAULT_PROFILE";
  if (!name)
    name = "default";
  if (strlen(name) >= sizeof out->profile) {
    gf_say(why, cap, "%s is longer than %zu bytes", c->profile_var,
           sizeof out->profile - 1);
    return -EINVAL;
  }
  snprintf(out->profile, sizeof out->profile, "%s", name);
  file_scan *cred = &c->files[0], *conf = &c->files[1];
  cred->kind = "shared credentials file";
  conf->kind = "config file";
  conf->config = true;
  cred->profile = conf->profile = out->profile;
  int rc;
  if ((rc = file_path(c, cred, "AWS_SHARED_CREDENTIALS_FILE", "credentials",
                      why, cap)) < 0 ||
      (rc = file_path(c, conf, "AWS_CONFIG_FILE", "config", why, cap)) < 0 ||
      (rc = scan(cred, NULL, why, cap)) < 0 ||
      (rc = scan(conf, NULL, why, cap)) < 0)
    return rc;
  /* A profile asked for by name must exist (botocore's ProfileNotFound),
   * even when the environment gives everything. */
  if (c->profile_var && !(cred->present && profile_slot(cred)->seen) &&
      !(conf->present && profile_slot(conf)->seen)) {
    gf_say(why, cap,
           "%s names profile %s, which is neither in the shared credentials "
           "file %s nor in the config file %s",
           c->profile_var, out->profile, cred->path[0] ? cred->path : "(none)",
           conf->path[0] ? conf->path : "(none)");
    return -EINVAL;
  }
  if ((rc = credentials(c, out, why, cap)) < 0 ||
      (rc = region(c, out, why, cap)) < 0 ||
      (rc = endpoint(c, out, why, cap)) < 0 ||
      (rc = addressing(c, out, why, cap)) < 0)
    return rc;
  return 0;
}

int gf_aws_config_resolve(gf_aws_getenv getenv_fn, void *ctx,
                          gf_aws_config *out, char *why, size_t cap) {
  if (why && cap)
    why[0] = '\0';
  memset(out, 0, sizeof *out);
  chain *c = calloc(1, sizeof *c);
  if (!c) {
    gf_say(why, cap, "out of memory");
    return -ENOMEM;
  }
  c->getenv_fn = getenv_fn;
  c->ctx = ctx;
  int rc = resolve(c, out, why, cap);
  explicit_bzero(c, sizeof *c);
  free(c);
  if (rc < 0)
    gf_aws_config_clear(out);
  return rc;
}

void gf_aws_config_clear(gf_aws_config *c) {
  if (c)
    explicit_bzero(c, sizeof *c);
}
