/* Where an S3 request goes and who asks (s3_config.c; its files read by
 * s3_ini.c), between the files of lib/io only: credentials, region, endpoint
 * and addressing style, found the way the AWS CLI (botocore) and the SDKs find
 * them in the environment and the two shared files (~/.aws/credentials and
 * ~/.aws/config), so that a set-up that works for `aws s3` works here
 * unchanged. The metadata services (container and instance credentials)
 * come after these (s3_creds.c, asked by s3_client.c): "no credentials" is
 * a result here, not an error.
 *
 * The order, first found wins (docs/REMOTE.md has it for users):
 *   profile      AWS_PROFILE, else AWS_DEFAULT_PROFILE, else "default";
 *                one named must exist in one of the files
 *   credentials  AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
 *                AWS_SESSION_TOKEN, else AWS_SECURITY_TOKEN); then the
 *                credentials file's [NAME]; then the config file's
 *                [profile NAME] ([default] or [profile default] for the
 *                default profile; [profile default] wins when both are
 *                there); aws_access_key_id, aws_secret_access_key,
 *                aws_session_token (else aws_security_token)
 *   region       AWS_REGION, AWS_DEFAULT_REGION, the profile's region,
 *                "us-east-1"
 *   endpoint     AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the s3 block's
 *                endpoint_url of the [services X] section the profile's
 *                `services = X` names, the profile's own s3 block's
 *                endpoint_url, the profile's endpoint_url; none of them
 *                when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS (else the
 *                profile's ignore_configured_endpoint_urls) is "true"
 *   addressing   the profile's s3 block's addressing_style
 * "The profile's" setting is the credentials file's [NAME] value, else
 * the config file's, as botocore merges the two; in either file a key the
 * section lacks is taken from its [DEFAULT] section (configparser's
 * defaults). A variable set to "" counts as unset.
 *
 * The files are read as botocore's configloader reads them (Python's
 * RawConfigParser, then its nested blocks); gf_aws_ini_parse says how,
 * and where this differs (duplicates merge instead of failing).
 *
 * Secrets (the secret key, the session token) never reach a message or
 * a source string, and no message holds a value read from a file (a line
 * may be a secret pasted in the wrong place): messages name the file,
 * the line and the key. The buffers a file was read into are wiped;
 * gf_aws_config_clear wipes the result. */
#ifndef GF_IO_S3_CONFIG_H
#define GF_IO_S3_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* The largest shared file read (a bigger one is refused, not cut). */
#define GF_AWS_FILE_MAX (1u << 20)

/* How bucket and key go into a URL (the s3 block's addressing_style). */
enum {
  GF_AWS_ADDRESSING_AUTO = 0, /* "auto" or unset: the caller chooses */
  GF_AWS_ADDRESSING_PATH,     /* endpoint/bucket/key */
  GF_AWS_ADDRESSING_VIRTUAL   /* bucket.endpoint/key */
};

/* The environment: the value of `name`, or NULL when unset. NULL as a
 * callback means the process's getenv. Tests pass their own. */
typedef const char *(*gf_aws_getenv)(void *ctx, const char *name);

typedef struct gf_aws_config {
  char access_key[128];
  char secret_key[256];      /* a secret */
  char session_token[4096];  /* a secret; "" when none */
  bool have_credentials;     /* false: none found (not an error) */
  char cred_source[600];     /* "environment", "shared credentials file
                                PATH [profile x]" or "config file PATH
                                [profile x]"; "" without credentials */
  char cred_note[600];       /* without credentials, when the profile
                                sets one this step does not resolve (a
                                role, SSO, a process): which and where;
                                else "" */
  char region[64];           /* never "" */
  char region_source[600];   /* "AWS_REGION", "AWS_DEFAULT_REGION", "config
                                file PATH [profile x]" (or the credentials
                                file), or "default" */
  char endpoint[1024];       /* an http:// or https:// URL; "" when none is
                                configured (then AWS's own,
                                https://s3.REGION.amazonaws.com) */
  char endpoint_source[600]; /* the variable or "FILE PATH [section]
                                key", "none", or "ignored (...)" */
  int addressing;            /* GF_AWS_ADDRESSING_* */
  char profile[128];         /* the profile used */
} gf_aws_config;

/* Fills *out from the environment (getenv_fn(ctx, name); NULL: the
 * process's) and the two files. Returns 0 (with or without credentials);
 * -EINVAL: half the credentials in the environment or a profile, a
 * profile named but in neither file, a malformed file, a value too long
 * for its field (only where it is used) or with a control byte, a bad
 * region, endpoint or addressing_style, a services section named but
 * absent; -ENOENT: a file named by its variable missing; -EFBIG: a file
 * larger than GF_AWS_FILE_MAX; another -errno: a file that cannot be
 * opened or read; -ENOMEM. The reason goes to why (cap bytes, cut to
 * fit; no secret, no value from a file). On failure *out is wiped. A
 * path that is not a regular file (AWS_CONFIG_FILE=/dev/null) is read as
 * no file, as botocore does. Reads the environment and the files at each
 * call; any thread, as long as getenv_fn may be called from it (the
 * process's getenv races with setenv). */
int gf_aws_config_resolve(gf_aws_getenv getenv_fn, void *ctx,
                          gf_aws_config *out, char *why, size_t cap);

/* Wipes *c (secrets and all), so that no copy of a secret outlives its
 * use. c may be NULL. */
void gf_aws_config_clear(gf_aws_config *c);

/* ---- the INI reader ------------------------------------------------------
 *
 * What RawConfigParser and botocore's configloader accept, line by line
 * (a line ends at "\n", "\r\n" or a lone "\r", as Python reads text):
 *   - a blank line, or one whose first non-blank byte is '#' or ';' (a
 *     comment; there are no comments after a value);
 *   - "[NAME]": a section; NAME is everything between the first '[' and
 *     the last ']', kept as written; a section given twice is one;
 *   - "key = value" or "key: value" (the first '=' or ':' splits): the key
 *     trimmed and lower-cased, the value trimmed, "" allowed; a key given
 *     twice in a section: the later wins;
 *   - a line indented deeper than the key line before it continues that
 *     key: under a key whose value was "" it is a "name = value" pair of
 *     the key's nested block (botocore's "s3 =" form: the name trimmed
 *     but kept in its case, '=' required); else it is appended to the
 *     value after a "\n" (blank lines between such lines kept).
 * Anything else is an error: a line before any section, a line without
 * '=' or ':' (or with nothing before it), a NUL byte. Whitespace is
 * space, tab, '\v' and '\f'. Where botocore differs: it refuses a section
 * or key given twice in one file (configparser's strict mode), which the
 * other SDKs accept as done here. */

/* The longest section name, key and value (with their NUL) a file may
 * hold; a longer one is refused. */
#define GF_AWS_INI_SECTION_MAX 256
#define GF_AWS_INI_KEY_MAX 128
#define GF_AWS_INI_VALUE_MAX 16384

/* One thing read. A section's header comes as key NULL (an empty section
 * still exists); a key's nested pairs come before the key itself, which
 * then has the value "". */
typedef struct gf_aws_ini_entry {
  const char *section; /* as written between the brackets */
  const char *key;     /* lower-cased; NULL for a section's header */
  const char *sub;     /* the nested pair's name, or NULL */
  const char *value;   /* "" for a header */
  unsigned line;       /* where the header, key or pair is (from 1) */
} gf_aws_ini_entry;

/* Called for each entry; returns 0 to go on, or a negative code (with
 * its reason in why, cap bytes) that ends the parse and is returned. */
typedef int (*gf_aws_ini_fn)(void *ctx, const gf_aws_ini_entry *e, char *why,
                             size_t cap);

/* (s3_ini.c) Parses len bytes of text (not NUL-terminated) as a shared file,
 * calling fn(ctx, ...) for each entry, in the order of the text. path names the
 * text in messages (NULL: "config"). Returns 0, -EINVAL with "PATH line
 * N: reason" in why (the line's bytes never in it: they may be a secret;
 * a key's name may be), -ENOMEM, or what fn returned. Its own buffers are
 * wiped before it returns. Any thread. The fuzz target's entry. */
int gf_aws_ini_parse(const char *text, size_t len, const char *path,
                     gf_aws_ini_fn fn, void *ctx, char *why, size_t cap);

#endif /* GF_IO_S3_CONFIG_H */
