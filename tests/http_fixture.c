/* The HTTP tests' fixture (http_fixture.h). */
#include "http_fixture.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char cmd[16384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int rc = system(cmd);
  if (rc != 0)
    fprintf(stderr, "http_fixture: '%s' failed (%d)\n", cmd, rc);
  return rc == 0 ? 0 : -1;
}

int http_fixture_start(http_fixture *f, unsigned count, unsigned shard_kib,
                       unsigned flags) {
  memset(f, 0, sizeof *f);
  const char *tmp = gf_test_tmpdir();
  const char *cli = getenv("GPUFEED");
  if (!cli || !cli[0]) {
    fprintf(stderr, "http_fixture: GPUFEED (the CLI) is not set\n");
    return -1;
  }
  snprintf(f->root, sizeof f->root, "%s/root", tmp);
  snprintf(f->local, sizeof f->local, "%s/ds", f->root);
  if (sh("mkdir -p '%s' && '%s' synth '%s/src' --count %u --sizes 8-40 "
         "--classes 5 --seed 7 --quiet && '%s' build '%s/src' '%s' "
         "--shard-size %uK --threads 2 --quiet",
         f->root, cli, tmp, count, cli, tmp, f->local, shard_kib) < 0)
    return -1;
  char rundir[4200];
  snprintf(rundir, sizeof rundir, "%s/nginx", tmp);
  if (gf_net_nginx_start(f->root, rundir, (flags & HTTP_TLS) ? GF_NET_TLS : 0,
                         &f->ng) < 0)
    return -1;
  snprintf(f->url, sizeof f->url, "%s/ds", f->ng.url);
  if (flags & HTTP_TLS)
    snprintf(f->tls_url, sizeof f->tls_url, "%s/ds", f->ng.tls_url);
  if (flags & HTTP_PROXY) {
    snprintf(rundir, sizeof rundir, "%s/proxy", tmp);
    if (gf_net_proxy_start(&f->ng, rundir, NULL, &f->px) < 0) {
      gf_net_nginx_stop(&f->ng);
      return -1;
    }
    f->proxied = true;
    snprintf(f->proxy_url, sizeof f->proxy_url, "%s/ds", f->px.url);
  }
  return 0;
}

int http_fixture_stop(http_fixture *f) {
  int rc = 0;
  if (f->proxied && gf_net_proxy_stop(&f->px) != 0)
    rc = -1;
  f->proxied = false;
  gf_net_nginx_stop(&f->ng);
  return rc;
}

void http_ctl(http_fixture *f, const char *fmt, ...) {
  char cmd[512], reply[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  if (gf_net_proxy_ctl(&f->px, cmd, reply, sizeof reply) != 0) {
    fprintf(stderr, "http_ctl: '%s' answered '%s'\n", cmd, reply);
    gf_test_failures++;
  }
}

gf_remote_config http_test_remote(void) {
  gf_remote_config r = GF_REMOTE_CONFIG_INIT;
  r.max_attempts = 4;
  r.retry_ms = 20000;
  r.connect_timeout_ms = 2000;
  r.stall_ms = 1000;
  r.max_connections = 8;
  return r;
}

char *http_capture_stderr(void (*fn)(void *), void *arg) {
  char path[4200];
  snprintf(path, sizeof path, "%s/stderr.XXXXXX", gf_test_tmpdir());
  int fd = mkstemp(path);
  if (fd < 0)
    return NULL;
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  size_t len;
  char *text = gf_test_read_file(path, &len);
  unlink(path);
  if (!text)
    return NULL;
  char *z = realloc(text, len + 1);
  if (!z) {
    free(text);
    return NULL;
  }
  z[len] = '\0';
  return z;
}

bool http_leaks(const char *what, const char *text,
                const char *const *secrets) {
  bool leak = false;
  for (; *secrets; secrets++)
    if (text && strstr(text, *secrets)) {
      fprintf(stderr, "LEAK: %s holds the secret '%s':\n%s\n", what, *secrets,
              text);
      leak = true;
    }
  return leak;
}
