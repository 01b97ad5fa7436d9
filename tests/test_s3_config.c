/* The AWS configuration chain (lib/io/s3_config.c), with an environment
 * of the test's own and shared files under the scratch folder:
 *  - each step of each order (credentials, region, endpoint) against the
 *    one after it, so that a reversed order fails here;
 *  - AWS_PROFILE choosing [NAME] in the credentials file and [profile
 *    NAME] in the config file (never the other spelling), [default]
 *    against [profile default], [DEFAULT]'s values, the credentials
 *    file's settings over the config file's;
 *  - the nested "s3 =" block, services sections, and
 *    AWS_IGNORE_CONFIGURED_ENDPOINT_URLS;
 *  - the INI reader: comments, blank lines, CRLF and lone CR, blanks,
 *    "key: value", keys lower-cased, duplicates, continued values;
 *  - every refusal (half the credentials, an unknown profile, a malformed
 *    line, a file over 1 MiB, a value over its field, a bad
 *    addressing_style, region or endpoint, a named file missing), and
 *    that no message or source string holds a secret. */
#include "testutil.h"

#include "io/s3_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Distinctive secrets, one set a source: found anywhere but in their
 * fields, they leaked. */
#define ENV_SECRET "envSECRETq7Zk/Wp+3xLm"
#define ENV_TOKEN "envTOKENr8Yj/Vo+4wKn"
#define CRED_SECRET "credSECRETs9Xh/Un+5vJo"
#define CRED_TOKEN "credTOKENt1Wg/Tm+6uIp"
#define CONF_SECRET "confSECRETu2Vf/Sl+7tHq"
#define CONF_TOKEN "confTOKENv3Ue/Rk+8sGr"
#define DEV_SECRET "devSECRETw4Td/Qj+9rFs"
static const char *const SECRETS[] = {ENV_SECRET, ENV_TOKEN,   CRED_SECRET,
                                      CRED_TOKEN, CONF_SECRET, CONF_TOKEN,
                                      DEV_SECRET};

/* ---- an environment of the test's own ------------------------------------ */

typedef struct envtab {
  const char *name[24];
  const char *value[24];
  int n;
} envtab;

static const char *tab_get(void *ctx, const char *name) {
  envtab *e = ctx;
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0)
      return e->value[i];
  return NULL;
}

/* Sets (value NULL: unsets) a variable. */
static void put_env(envtab *e, const char *name, const char *value) {
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->name[i], name) == 0) {
      e->name[i] = e->name[e->n - 1];
      e->value[i] = e->value[e->n - 1];
      e->n--;
      break;
    }
  if (value && e->n < 24) {
    e->name[e->n] = name;
    e->value[e->n++] = value;
  }
}

static char tmp[4096];
static char home[4200], aws[4300], cred_path[4400], conf_path[4400];

static void write_text(const char *path, const char *text) {
  CHECK_OK(gf_test_write_file(path, text, strlen(text)));
}

/* A fresh home with ~/.aws/credentials and ~/.aws/config (NULL: none). */
static void fresh_home(envtab *e, const char *name, const char *cred,
                       const char *conf) {
  snprintf(home, sizeof home, "%s/%s", tmp, name);
  snprintf(aws, sizeof aws, "%s/.aws", home);
  mkdir(home, 0700);
  mkdir(aws, 0700);
  snprintf(cred_path, sizeof cred_path, "%s/credentials", aws);
  snprintf(conf_path, sizeof conf_path, "%s/config", aws);
  unlink(cred_path);
  unlink(conf_path);
  if (cred)
    write_text(cred_path, cred);
  if (conf)
    write_text(conf_path, conf);
  memset(e, 0, sizeof *e);
  put_env(e, "HOME", home);
}

static char why[1024];

/* Resolves, and checks that no secret is outside its field. */
static int resolve(envtab *e, gf_aws_config *c) {
  memset(why, 'x', sizeof why);
  int rc = gf_aws_config_resolve(tab_get, e, c, why, sizeof why);
  CHECK(memchr(why, '\0', sizeof why) != NULL);
  for (size_t i = 0; i < sizeof SECRETS / sizeof SECRETS[0]; i++) {
    const char *s = SECRETS[i];
    bool leak = strstr(why, s) || strstr(c->cred_source, s) ||
                strstr(c->cred_note, s) || strstr(c->region_source, s) ||
                strstr(c->endpoint_source, s) || strstr(c->endpoint, s) ||
                strstr(c->region, s) || strstr(c->profile, s) ||
                strstr(c->access_key, s);
    if (leak)
      fprintf(stderr, "secret %s shown (why: %s)\n", s, why);
    CHECK(!leak);
  }
  if (rc < 0)
    CHECK(why[0] && !c->have_credentials && !c->secret_key[0] &&
          !c->session_token[0]);
  return rc;
}

static bool has(const char *s, const char *part) {
  if (strstr(s, part))
    return true;
  fprintf(stderr, "  '%s' lacks '%s'\n", s, part);
  return false;
}

static bool is(const char *s, const char *want) {
  if (strcmp(s, want) == 0)
    return true;
  fprintf(stderr, "  '%s', wanted '%s'\n", s, want);
  return false;
}

/* ---- credentials --------------------------------------------------------- */

static const char CRED_FILE[] =
    "[default]\n"
    "aws_access_key_id = AKIDCRED\n"
    "aws_secret_access_key = " CRED_SECRET "\n"
    "aws_session_token = " CRED_TOKEN "\n"
    "\n"
    "[dev]\n"
    "aws_access_key_id = AKIDDEV\n"
    "aws_secret_access_key = " DEV_SECRET "\n"
    "\n"
    "# the config file's spelling is not a profile here\n"
    "[profile conf-only]\n"
    "aws_access_key_id = AKIDWRONG1\n"
    "aws_secret_access_key = wrong\n";

static const char CONF_FILE[] =
    "[default]\n"
    "aws_access_key_id = AKIDCONF\n"
    "aws_secret_access_key = " CONF_SECRET "\n"
    "aws_session_token = " CONF_TOKEN "\n"
    "region = eu-west-1\n"
    "\n"
    "[profile dev]\n"
    "region = ap-south-1\n"
    "\n"
    "[profile conf-only]\n"
    "aws_access_key_id = AKIDCONFONLY\n"
    "aws_secret_access_key = conf-only-secret\n"
    "\n"
    "# the credentials file's spelling is not a profile here\n"
    "[dev2]\n"
    "aws_access_key_id = AKIDWRONG2\n"
    "aws_secret_access_key = wrong\n";

static void credentials_order(void) {
  envtab e;
  gf_aws_config c;
  fresh_home(&e, "creds", CRED_FILE, CONF_FILE);

  /* 1. The environment, over both files. */
  put_env(&e, "AWS_ACCESS_KEY_ID", "AKIDENV");
  put_env(&e, "AWS_SECRET_ACCESS_KEY", ENV_SECRET);
  put_env(&e, "AWS_SESSION_TOKEN", ENV_TOKEN);
  CHECK_OK(resolve(&e, &c));
  CHECK(c.have_credentials);
  CHECK(is(c.access_key, "AKIDENV") && is(c.secret_key, ENV_SECRET) &&
        is(c.session_token, ENV_TOKEN));
  CHECK(is(c.cred_source, "environment"));
  CHECK(is(c.profile, "default"));
  gf_aws_config_clear(&c);
  CHECK(!c.secret_key[0] && !c.session_token[0] && !c.have_credentials);

  /* Without a token; the legacy AWS_SECURITY_TOKEN when alone. */
  put_env(&e, "AWS_SESSION_TOKEN", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(c.session_token[0] == '\0');
  put_env(&e, "AWS_SECURITY_TOKEN", ENV_TOKEN);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.session_token, ENV_TOKEN));
  put_env(&e, "AWS_SECURITY_TOKEN", NULL);

  /* A variable set to "" is unset. */
  put_env(&e, "AWS_ACCESS_KEY_ID", "");
  put_env(&e, "AWS_SECRET_ACCESS_KEY", "");

  /* 2. The credentials file, over the config file. */
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.access_key, "AKIDCRED") && is(c.secret_key, CRED_SECRET) &&
        is(c.session_token, CRED_TOKEN));
  char want[8800];
  snprintf(want, sizeof want, "shared credentials file %s [profile default]",
           cred_path);
  CHECK(is(c.cred_source, want));

  /* 3. The config file, when the credentials file has none. */
  write_text(cred_path, "[default]\nregion = us-west-2\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.access_key, "AKIDCONF") && is(c.secret_key, CONF_SECRET) &&
        is(c.session_token, CONF_TOKEN));
  snprintf(want, sizeof want, "config file %s [profile default]", conf_path);
  CHECK(is(c.cred_source, want));

  /* None: not an error. */
  unlink(cred_path);
  write_text(conf_path, "[default]\nregion = eu-north-1\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.have_credentials && !c.access_key[0] && !c.cred_source[0]);
  CHECK(!c.cred_note[0]);
  /* ... and without either file or even HOME. */
  unlink(conf_path);
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.have_credentials && is(c.region, "us-east-1"));
  put_env(&e, "HOME", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.have_credentials && is(c.region_source, "default"));

  /* A profile of a kind not resolved here: a note says so. */
  fresh_home(&e, "note", NULL,
             "[profile sso]\nsso_session = corp\nregion = us-west-2\n"
             "[profile role]\nrole_arn = arn:aws:iam::1:role/r\n"
             "source_profile = default\n");
  put_env(&e, "AWS_PROFILE", "role");
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.have_credentials && has(c.cred_note, "profile role sets role_arn") &&
        has(c.cred_note, "line 5"));
  put_env(&e, "AWS_PROFILE", "sso");
  CHECK_OK(resolve(&e, &c));
  CHECK(has(c.cred_note, "sso_session") && is(c.region, "us-west-2"));
}

static void profiles(void) {
  envtab e;
  gf_aws_config c;
  char want[8800];
  fresh_home(&e, "profiles", CRED_FILE, CONF_FILE);

  /* [dev] in the credentials file, [profile dev] in the config file. */
  put_env(&e, "AWS_PROFILE", "dev");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.profile, "dev") && is(c.access_key, "AKIDDEV") &&
        is(c.secret_key, DEV_SECRET) && !c.session_token[0]);
  snprintf(want, sizeof want, "shared credentials file %s [profile dev]",
           cred_path);
  CHECK(is(c.cred_source, want));
  CHECK(is(c.region, "ap-south-1"));
  snprintf(want, sizeof want, "config file %s [profile dev]", conf_path);
  CHECK(is(c.region_source, want));

  /* [profile x] in the credentials file is no profile x; [profile
   * conf-only] in the config file is. */
  put_env(&e, "AWS_PROFILE", "conf-only");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.access_key, "AKIDCONFONLY"));
  CHECK(has(c.cred_source, "config file"));
  /* [dev2] in the config file is no profile dev2 (and nothing else
   * names one): an error naming the profile and both files. */
  put_env(&e, "AWS_PROFILE", "dev2");
  CHECK(resolve(&e, &c) == -EINVAL);
  CHECK(has(why, "AWS_PROFILE") && has(why, "dev2") && has(why, cred_path) &&
        has(why, conf_path));
  /* AWS_DEFAULT_PROFILE (older CLIs) when AWS_PROFILE is unset. */
  put_env(&e, "AWS_PROFILE", NULL);
  put_env(&e, "AWS_DEFAULT_PROFILE", "dev");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.profile, "dev") && is(c.access_key, "AKIDDEV"));
  put_env(&e, "AWS_PROFILE", "default");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.profile, "default") && is(c.access_key, "AKIDCRED"));

  /* An unknown profile is an error even when the environment gives
   * every value (botocore's ProfileNotFound). */
  put_env(&e, "AWS_PROFILE", "nope");
  put_env(&e, "AWS_ACCESS_KEY_ID", "AKIDENV");
  put_env(&e, "AWS_SECRET_ACCESS_KEY", ENV_SECRET);
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "nope"));
  /* An explicit "default" must exist too, the implicit one need not. */
  fresh_home(&e, "profiles-none", NULL, NULL);
  put_env(&e, "AWS_PROFILE", "default");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "default"));
  put_env(&e, "AWS_PROFILE", NULL);
  CHECK_OK(resolve(&e, &c));

  /* [profile default] over [default], whichever comes first; quotes and
   * spaces as botocore's shlex reads them. */
  fresh_home(&e, "profile-default", NULL,
             "[profile default]\nregion = eu-central-1\n"
             "[default]\nregion = eu-west-3\n"
             "[profile   \"my team\"  ]\nregion = sa-east-1\n"
             "[profilex]\nregion = us-west-1\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "eu-central-1"));
  write_text(conf_path, "[default]\nregion = eu-west-3\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "eu-west-3"));
  write_text(conf_path, "[profile   \"my team\"  ]\nregion = sa-east-1\n");
  put_env(&e, "AWS_PROFILE", "my team");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "sa-east-1"));
  write_text(conf_path, "[profilex]\nregion = us-west-1\n");
  put_env(&e, "AWS_PROFILE", "x");
  CHECK(resolve(&e, &c) == -EINVAL);

  /* A profile's setting in the credentials file lies over the config
   * file's (botocore merges them); [DEFAULT] fills what a section lacks
   * (configparser's defaults), but makes no profile by itself. */
  fresh_home(&e, "merge", "[dev]\nregion = us-west-2\n",
             "[DEFAULT]\nregion = ca-central-1\n"
             "endpoint_url = http://defaults:1\n"
             "[profile dev]\nregion = ap-south-1\n"
             "[profile plain]\n");
  put_env(&e, "AWS_PROFILE", "dev");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "us-west-2") && has(c.region_source, cred_path));
  CHECK(is(c.endpoint, "http://defaults:1"));
  put_env(&e, "AWS_PROFILE", "plain");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "ca-central-1") && has(c.region_source, conf_path));
  put_env(&e, "AWS_PROFILE", "DEFAULT");
  CHECK(resolve(&e, &c) == -EINVAL);
}

/* ---- region -------------------------------------------------------------- */

static void region_order(void) {
  envtab e;
  gf_aws_config c;
  fresh_home(&e, "region", NULL, "[default]\nregion = eu-west-1\n");
  put_env(&e, "AWS_REGION", "ap-northeast-1");
  put_env(&e, "AWS_DEFAULT_REGION", "us-west-2");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "ap-northeast-1") && is(c.region_source, "AWS_REGION"));
  put_env(&e, "AWS_REGION", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "us-west-2") && is(c.region_source, "AWS_DEFAULT_REGION"));
  put_env(&e, "AWS_DEFAULT_REGION", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "eu-west-1") && has(c.region_source, "config file") &&
        has(c.region_source, "[profile default]"));
  unlink(conf_path);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "us-east-1") && is(c.region_source, "default"));

  /* Not a region name: refused, named by where it came from. */
  put_env(&e, "AWS_REGION", "us-east-1/../x");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "AWS_REGION"));
  put_env(&e, "AWS_REGION", NULL);
  write_text(conf_path, "[default]\nregion = -bad\n");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, conf_path) &&
        has(why, "line 2"));
}

/* ---- endpoint and addressing --------------------------------------------- */

static const char ENDPOINT_CONF[] =
    "[default]\n"
    "services = local\n"
    "endpoint_url = http://profile-global:9000\n"
    "s3 =\n"
    "  endpoint_url = http://profile-s3:9000\n"
    "  addressing_style = path\n"
    "\n"
    "[services local]\n"
    "s3 =\n"
    "  endpoint_url = https://services-s3:9443\n"
    "sts =\n"
    "  endpoint_url = http://not-s3:1\n";

static void endpoint_order(void) {
  envtab e;
  gf_aws_config c;
  fresh_home(&e, "endpoint", NULL, ENDPOINT_CONF);
  put_env(&e, "AWS_ENDPOINT_URL_S3", "http://env-s3:1");
  put_env(&e, "AWS_ENDPOINT_URL", "http://env-global:2");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.endpoint, "http://env-s3:1") &&
        is(c.endpoint_source, "AWS_ENDPOINT_URL_S3"));
  CHECK(c.addressing == GF_AWS_ADDRESSING_PATH);
  put_env(&e, "AWS_ENDPOINT_URL_S3", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.endpoint, "http://env-global:2") &&
        is(c.endpoint_source, "AWS_ENDPOINT_URL"));
  put_env(&e, "AWS_ENDPOINT_URL", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.endpoint, "https://services-s3:9443") &&
        has(c.endpoint_source, "[services local] s3.endpoint_url"));
  /* Without the services line: the profile's s3 block, then its own. */
  char text[1024];
  snprintf(text, sizeof text, "%s", ENDPOINT_CONF);
  memcpy(strstr(text, "services = local"), "#ervices = local", 16);
  write_text(conf_path, text);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.endpoint, "http://profile-s3:9000") &&
        has(c.endpoint_source, "[profile default] s3.endpoint_url"));
  write_text(conf_path, "[default]\n"
                        "endpoint_url = http://profile-global:9000\n"
                        "s3 =\n"
                        "  addressing_style = virtual\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.endpoint, "http://profile-global:9000") &&
        has(c.endpoint_source, "[profile default] endpoint_url"));
  CHECK(c.addressing == GF_AWS_ADDRESSING_VIRTUAL);
  write_text(conf_path, "[default]\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.endpoint[0] && is(c.endpoint_source, "none") &&
        c.addressing == GF_AWS_ADDRESSING_AUTO);

  /* AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true (any case) skips every
   * source; another value does not, and overrides the profile's. */
  write_text(conf_path, ENDPOINT_CONF);
  put_env(&e, "AWS_ENDPOINT_URL_S3", "http://env-s3:1");
  put_env(&e, "AWS_ENDPOINT_URL", "http://env-global:2");
  put_env(&e, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "TRUE");
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.endpoint[0] && has(c.endpoint_source, "ignored") &&
        has(c.endpoint_source, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"));
  CHECK(c.addressing == GF_AWS_ADDRESSING_PATH); /* not an endpoint */
  put_env(&e, "AWS_ENDPOINT_URL_S3", NULL);
  put_env(&e, "AWS_ENDPOINT_URL", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.endpoint[0]);
  write_text(conf_path, "[default]\nignore_configured_endpoint_urls = true\n"
                        "endpoint_url = http://profile-global:9000\n");
  put_env(&e, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", NULL);
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.endpoint[0] && has(c.endpoint_source, "ignored") &&
        has(c.endpoint_source, "ignore_configured_endpoint_urls"));
  put_env(&e, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "false");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.endpoint, "http://profile-global:9000"));
  put_env(&e, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", NULL);

  /* Refusals: a services section missing, an endpoint not http(s)
   * (never echoed: it may hold a password), a bad addressing_style. */
  write_text(conf_path, "[default]\nservices = gone\n");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, conf_path) &&
        has(why, "services"));
  write_text(conf_path, "[default]\nendpoint_url = ftp://user:pw@host\n");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "line 2") &&
        !strstr(why, "pw@host"));
  put_env(&e, "AWS_ENDPOINT_URL", "localhost:9000");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "AWS_ENDPOINT_URL"));
  put_env(&e, "AWS_ENDPOINT_URL", NULL);
  write_text(conf_path, "[default]\ns3 =\n  addressing_style = auto\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(c.addressing == GF_AWS_ADDRESSING_AUTO);
  write_text(conf_path, "[default]\n\ns3 =\n  addressing_style = Path\n");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, conf_path) &&
        has(why, "line 4") && has(why, "addressing_style"));
}

/* ---- the INI reader ------------------------------------------------------ */

typedef struct dump {
  char text[4096];
  size_t len;
} dump;

static int dump_entry(void *ctx, const gf_aws_ini_entry *en, char *w,
                      size_t cap) {
  (void)w;
  (void)cap;
  dump *d = ctx;
  int n;
  if (!en->key)
    n = snprintf(d->text + d->len, sizeof d->text - d->len, "%u [%s]\n",
                 en->line, en->section);
  else
    n = snprintf(d->text + d->len, sizeof d->text - d->len, "%u %s%s%s=%s|\n",
                 en->line, en->key, en->sub ? "." : "", en->sub ? en->sub : "",
                 en->value);
  if (n > 0 && (size_t)n < sizeof d->text - d->len)
    d->len += (size_t)n;
  return 0;
}

static int parse(const char *text, dump *d) {
  d->len = 0;
  d->text[0] = '\0';
  return gf_aws_ini_parse(text, strlen(text), "f.ini", dump_entry, d, why,
                          sizeof why);
}

static void ini_reader(void) {
  dump d;
  /* Comments, blank lines, blanks around everything, ':' as well as
   * '=', keys lower-cased (configparser's optionxform), values kept as
   * written, "#" inside a value is no comment. */
  CHECK_OK(parse("# top\n; also\n\n  [a]  \n"
                 "\tKey_One\t=  v 1  \n"
                 "two:x=y\n"
                 "three =\n"
                 "url = http://h:1/p#frag ; not a comment\n"
                 "   # indented comment\n",
                 &d));
  CHECK(is(d.text, "4 [a]\n5 key_one=v 1|\n6 two=x=y|\n7 three=|\n"
                   "8 url=http://h:1/p#frag ; not a comment|\n"));
  /* CRLF and lone CR end lines as LF does. */
  CHECK_OK(parse("[a]\r\nk = 1\r\n\r\ns3 =\r\n  p = q\r\n[b]\rk=2\r", &d));
  CHECK(is(d.text, "1 [a]\n2 k=1|\n5 s3.p=q|\n4 s3=|\n6 [b]\n7 k=2|\n"));
  /* Duplicates: a later key wins, a section again is the same one (the
   * reader reports both; the chain keeps the last). */
  envtab e;
  gf_aws_config c;
  fresh_home(&e, "dups", NULL,
             "[default]\nregion = us-west-1\n[other]\nregion = x\n"
             "[default]\nregion = us-west-2\n"
             "s3 =\n  addressing_style = virtual\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "us-west-2") && has(c.region_source, "config file") &&
        c.addressing == GF_AWS_ADDRESSING_VIRTUAL);
  write_text(conf_path, "[default]\r\nregion = us-west-1\r\n\r\n"
                        "s3 =\r\n    addressing_style = path\r\n"
                        "    endpoint_url = http://crlf:1\r\n");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "us-west-1") && is(c.endpoint, "http://crlf:1") &&
        c.addressing == GF_AWS_ADDRESSING_PATH);

  /* Nested blocks: only under a key with "", deeper than it; blank
   * lines and comments inside; names keep their case; the block ends at
   * a line as shallow as the key. A deeper line under a key with a value
   * continues the value. */
  CHECK_OK(parse("[p]\n  region = r\n  s3 =\n\n    # c\n"
                 "    Addressing_Style = path\n      x = 1 = 2\n"
                 "  multi = a\n     b\n\n     c\n\n"
                 "  next = n\n",
                 &d));
  CHECK(is(d.text, "1 [p]\n2 region=r|\n6 s3.Addressing_Style=path|\n"
                   "7 s3.x=1 = 2|\n3 s3=|\n8 multi=a\nb\n\nc|\n13 next=n|\n"));
  /* A "[x]" deeper than a key is not a section. */
  CHECK(parse("[p]\nk = v\n  [x]\n", &d) == 0 &&
        is(d.text, "1 [p]\n2 k=v\n[x]|\n"));
  /* "[a]b]": the name runs to the last ']' (Python's greedy match). */
  CHECK(parse("[a]b] trailing\n", &d) == 0 && is(d.text, "1 [a]b]\n"));

  /* Malformed lines: the file and the line, never the line's bytes. */
  CHECK(parse("k = v\n", &d) == -EINVAL && has(why, "f.ini line 1"));
  CHECK(parse("[a]\nk = v\n" CRED_SECRET "\n", &d) == -EINVAL &&
        has(why, "f.ini line 3") && !strstr(why, CRED_SECRET));
  CHECK(parse("[a]\n= " CRED_SECRET "\n", &d) == -EINVAL &&
        has(why, "line 2") && !strstr(why, CRED_SECRET));
  CHECK(parse("[a]\ns3 =\n  " CRED_SECRET "\n", &d) == -EINVAL &&
        has(why, "line 3") && has(why, "s3") && !strstr(why, CRED_SECRET));
  CHECK(parse("[]\n", &d) == -EINVAL);
  CHECK(gf_aws_ini_parse("[a]\nk = v\0w\n", 11, "f.ini", dump_entry, &d, why,
                         sizeof why) == -EINVAL &&
        has(why, "line 2") && has(why, "NUL"));
  /* Names longer than the reader's buffers. */
  char big[GF_AWS_INI_VALUE_MAX + 64];
  memset(big, 'k', sizeof big);
  big[0] = '[';
  memcpy(big + 1 + GF_AWS_INI_SECTION_MAX, "]\n", 3);
  CHECK(parse(big, &d) == -EINVAL && has(why, "section name longer"));
  memcpy(big, "[a]\n", 4);
  memcpy(big + 4 + GF_AWS_INI_KEY_MAX, "=v\n", 4);
  CHECK(parse(big, &d) == -EINVAL && has(why, "key name longer") &&
        has(why, "line 2"));
  memset(big, 'k', sizeof big);
  memcpy(big, "[a]\nk=", 6);
  big[6 + GF_AWS_INI_VALUE_MAX] = '\0';
  CHECK(parse(big, &d) == -EINVAL && has(why, "value of k is longer") &&
        !strstr(why, "kkkk"));
  /* Nothing at all is an empty file. */
  CHECK(parse("", &d) == 0 && d.len == 0);
}

/* ---- refusals ------------------------------------------------------------ */

static void refusals(void) {
  envtab e;
  gf_aws_config c;
  fresh_home(&e, "refuse", CRED_FILE, CONF_FILE);

  /* Half the credentials in the environment: the missing one named. */
  put_env(&e, "AWS_ACCESS_KEY_ID", "AKIDENV");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "AWS_SECRET_ACCESS_KEY is not"));
  put_env(&e, "AWS_ACCESS_KEY_ID", NULL);
  put_env(&e, "AWS_SECRET_ACCESS_KEY", ENV_SECRET);
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "AWS_ACCESS_KEY_ID is not"));
  put_env(&e, "AWS_SECRET_ACCESS_KEY", NULL);
  /* ... and in a file. */
  write_text(cred_path, "[default]\naws_secret_access_key = " CRED_SECRET "\n");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, cred_path) &&
        has(why, "without aws_access_key_id"));

  /* A malformed line: file and line, not the line. */
  write_text(cred_path, "[default]\naws_access_key_id = AKID\n"
                        "aws_secret_access_key " CRED_SECRET "\n");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, cred_path) &&
        has(why, "line 3"));

  /* A value longer than its field: file, line and key, not the value;
   * refused only when used. */
  static char text[8192];
  for (int used = 0; used < 2; used++) {
    char *p = text + sprintf(text,
                             "[default]\naws_access_key_id = AKID\n"
                             "aws_secret_access_key = " CRED_SECRET "\n"
                             "\n[%s]\naws_session_token = ",
                             used ? "default" : "unused");
    memset(p, 'T', 5000);
    strcpy(p + 5000, "\n");
    write_text(cred_path, text);
    if (!used)
      CHECK_OK(resolve(&e, &c));
    else
      CHECK(resolve(&e, &c) == -EINVAL && has(why, cred_path) &&
            has(why, "line 6") && has(why, "aws_session_token") &&
            !strstr(why, "TTTT"));
  }

  /* A file over 1 MiB, named; one of exactly 1 MiB is read. */
  static char huge[GF_AWS_FILE_MAX + 1];
  memset(huge, '#', sizeof huge);
  memcpy(huge, "[default]\nregion = eu-west-2\n#", 30);
  CHECK_OK(gf_test_write_file(cred_path, huge, GF_AWS_FILE_MAX));
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "eu-west-2"));
  CHECK_OK(gf_test_write_file(cred_path, huge, sizeof huge));
  CHECK(resolve(&e, &c) == -EFBIG && has(why, cred_path) && has(why, "larger"));

  /* Files named by the variables: missing is an error, /dev/null is
   * empty, "~/" is HOME. The default files may be missing. */
  unlink(cred_path);
  CHECK_OK(resolve(&e, &c));
  put_env(&e, "AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/gf-credentials");
  CHECK(resolve(&e, &c) == -ENOENT && has(why, "AWS_SHARED_CREDENTIALS_FILE") &&
        has(why, "/nonexistent/gf-credentials"));
  put_env(&e, "AWS_SHARED_CREDENTIALS_FILE", "/dev/null");
  put_env(&e, "AWS_CONFIG_FILE", "/dev/null");
  CHECK_OK(resolve(&e, &c));
  CHECK(!c.have_credentials && is(c.region, "us-east-1"));
  /* A FIFO with no writer: skipped, not waited on. */
  char fifo[4300];
  snprintf(fifo, sizeof fifo, "%s/fifo", tmp);
  CHECK(mkfifo(fifo, 0600) == 0);
  put_env(&e, "AWS_CONFIG_FILE", fifo);
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.region, "us-east-1"));
  write_text(conf_path, CONF_FILE);
  put_env(&e, "AWS_CONFIG_FILE", "~/.aws/config");
  CHECK_OK(resolve(&e, &c));
  CHECK(is(c.access_key, "AKIDCONF") && has(c.cred_source, conf_path));

  /* A control byte in a secret (a continued value): refused, unshown. */
  write_text(conf_path, "[default]\naws_access_key_id = AKID\n"
                        "aws_secret_access_key = " CONF_SECRET "\n"
                        "  more\n");
  CHECK(resolve(&e, &c) == -EINVAL && has(why, "control"));
}

int main(void) {
  snprintf(tmp, sizeof tmp, "%s", gf_test_tmpdir());
  credentials_order();
  profiles();
  region_order();
  endpoint_order();
  ini_reader();
  refusals();
  return gf_test_finish();
}
