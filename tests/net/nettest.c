/* Network fixtures for C tests (nettest.h). nginx is started by
 * tests/net/nginx.sh, netproxy by fork and exec; the paths of both are
 * compiled in (tests/net.cmake). */
#include "nettest.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef GF_NET_NGINX_SH
#error "GF_NET_NGINX_SH: the path of tests/net/nginx.sh (tests/net.cmake)"
#endif
#ifndef GF_NET_NETPROXY
#error "GF_NET_NETPROXY: the path of the netproxy binary (tests/net.cmake)"
#endif

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* Runs argv, its stdout into out (NUL-terminated). Returns the exit
 * status, or -1. */
static int run_capture(char *const argv[], char *out, size_t cap) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fds[1], 1);
    execv(argv[0], argv);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fds[0], out + n, cap - 1 - n);
    if (r > 0 && n + (size_t)r < cap - 1) {
      n += (size_t)r;
      continue;
    }
    if (r > 0) {
      n += (size_t)r;
      char sink[256];
      while (read(fds[0], sink, sizeof sink) > 0) {
      }
    }
    if (r < 0 && errno == EINTR)
      continue;
    break;
  }
  out[n] = '\0';
  close(fds[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The value of "KEY=value" lines in text, into val. */
static int env_get(const char *text, const char *key, char *val, size_t cap) {
  size_t kl = strlen(key);
  for (const char *l = text; l && *l;
       l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    if (strncmp(l, key, kl) == 0 && l[kl] == '=') {
      const char *v = l + kl + 1;
      size_t vl = strcspn(v, "\n");
      if (vl >= cap)
        return -1;
      memcpy(val, v, vl);
      val[vl] = '\0';
      return 0;
    }
  }
  return -1;
}

static void need(const char *why) {
  const char *req = getenv("GPUFEED_REQUIRE_HTTP");
  if (req && strcmp(req, "1") == 0) {
    fprintf(stderr, "FAIL: GPUFEED_REQUIRE_HTTP=1 but %s\n", why);
    exit(1);
  }
  fprintf(stderr, "SKIP: %s\n", why);
  exit(77);
}

int gf_net_nginx_start(const char *root, const char *rundir, unsigned flags,
                       struct gf_net_nginx *ng) {
  memset(ng, 0, sizeof *ng);
  char out[4096];
  char *check[] = {"/bin/bash", GF_NET_NGINX_SH, "check", NULL};
  if (run_capture(check, out, sizeof out) != 0) {
    out[strcspn(out, "\n")] = '\0';
    need(out[0] ? out : "nginx cannot be run");
  }
  char owner[32];
  snprintf(owner, sizeof owner, "%ld", (long)getpid());
  char *argv[12];
  int a = 0;
  argv[a++] = "/bin/bash";
  argv[a++] = GF_NET_NGINX_SH;
  argv[a++] = "start";
  argv[a++] = (char *)root;
  argv[a++] = (char *)rundir;
  argv[a++] = "--owner";
  argv[a++] = owner;
  if (flags & GF_NET_TLS)
    argv[a++] = "--tls";
  if (flags & GF_NET_H2C)
    argv[a++] = "--h2c";
  argv[a] = NULL;
  if (run_capture(argv, out, sizeof out) != 0) {
    fprintf(stderr, "gf_net_nginx_start: nginx.sh start failed\n");
    return -1;
  }
  char port[16] = "", pid[32] = "";
  if (env_get(out, "GF_NGINX_URL", ng->url, sizeof ng->url) < 0 ||
      env_get(out, "GF_NGINX_PORT", port, sizeof port) < 0 ||
      env_get(out, "GF_NGINX_SOCK", ng->sock, sizeof ng->sock) < 0 ||
      env_get(out, "GF_NGINX_ACCESS_LOG", ng->access_log,
              sizeof ng->access_log) < 0 ||
      env_get(out, "GF_NGINX_RUNDIR", ng->rundir, sizeof ng->rundir) < 0 ||
      env_get(out, "GF_NGINX_PID", pid, sizeof pid) < 0) {
    fprintf(stderr, "gf_net_nginx_start: unexpected output:\n%s", out);
    return -1;
  }
  ng->port = atoi(port);
  ng->pid = atol(pid);
  if (flags & GF_NET_TLS) {
    if (env_get(out, "GF_NGINX_TLS_URL", ng->tls_url, sizeof ng->tls_url) < 0 ||
        env_get(out, "GF_NGINX_TLS_PORT", port, sizeof port) < 0 ||
        env_get(out, "GF_NGINX_CA", ng->ca, sizeof ng->ca) < 0)
      return -1;
    ng->tls_port = atoi(port);
  }
  if ((flags & GF_NET_H2C) &&
      env_get(out, "GF_NGINX_H2C_URL", ng->h2c_url, sizeof ng->h2c_url) < 0)
    return -1;
  return 0;
}

void gf_net_nginx_stop(struct gf_net_nginx *ng) {
  if (!ng || !ng->rundir[0])
    return;
  char out[1024];
  char *argv[] = {"/bin/bash", GF_NET_NGINX_SH, "stop", ng->rundir, NULL};
  if (run_capture(argv, out, sizeof out) != 0)
    fprintf(stderr, "gf_net_nginx_stop: nginx in %s did not stop\n",
            ng->rundir);
  ng->rundir[0] = '\0';
}

static int count_lines(const char *path, const char *text) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  char line[8192];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    /* Field 2 (tab-separated) is the request line. */
    char *req = strchr(line, '\t');
    if (!req)
      continue;
    char *end = strchr(req + 1, '\t');
    if (end)
      *end = '\0';
    if (strstr(req + 1, text))
      n++;
  }
  fclose(f);
  return n;
}

int gf_net_requests(const struct gf_net_nginx *ng, const char *text, int want) {
  int n = 0;
  for (int i = 0; i < 20; i++) {
    n = count_lines(ng->access_log, text);
    if (n >= want)
      break;
    sleep_ms(50);
  }
  return n;
}

int gf_net_proxy_start(const struct gf_net_nginx *ng, const char *rundir,
                       const char *const *args, struct gf_net_proxy *px) {
  memset(px, 0, sizeof *px);
  px->pid = -1;
  mkdir(rundir, 0755);
  char pf[GF_NET_PATH + 32], up[GF_NET_PATH + 8];
  snprintf(pf, sizeof pf, "%s/proxy.env", rundir);
  snprintf(px->err_path, sizeof px->err_path, "%s/proxy.err", rundir);
  snprintf(up, sizeof up, "unix:%s", ng->sock);
  unlink(pf);
  const char *argv[64];
  int a = 0;
  argv[a++] = GF_NET_NETPROXY;
  argv[a++] = "--upstream";
  argv[a++] = up;
  argv[a++] = "--port-file";
  argv[a++] = pf;
  argv[a++] = "--die-with-parent";
  for (int i = 0; args && args[i] && a < 63; i++)
    argv[a++] = args[i];
  argv[a] = NULL;
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    int err = open(px->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (devnull >= 0)
      dup2(devnull, 1);
    if (err >= 0)
      dup2(err, 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  px->pid = pid;
  char text[1024];
  for (int i = 0; i < 200; i++) {
    FILE *f = fopen(pf, "r");
    if (f) {
      size_t n = fread(text, 1, sizeof text - 1, f);
      fclose(f);
      text[n] = '\0';
      char port[16], cport[16];
      if (env_get(text, "GF_PROXY_URL", px->url, sizeof px->url) == 0 &&
          env_get(text, "GF_PROXY_PORT", port, sizeof port) == 0 &&
          env_get(text, "GF_PROXY_CONTROL_PORT", cport, sizeof cport) == 0) {
        px->port = atoi(port);
        px->control_port = atoi(cport);
        return 0;
      }
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      px->pid = -1;
      break;
    }
    sleep_ms(50);
  }
  fprintf(stderr, "gf_net_proxy_start: netproxy did not start (%s)\n",
          px->err_path);
  gf_net_proxy_stop(px);
  return -1;
}

int gf_net_proxy_ctl(const struct gf_net_proxy *px, const char *cmd,
                     char *reply, size_t cap) {
  if (cap)
    reply[0] = '\0';
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)px->control_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  size_t len = strlen(cmd);
  if (send(fd, cmd, len, MSG_NOSIGNAL) != (ssize_t)len ||
      send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
    close(fd);
    return -1;
  }
  size_t got = 0;
  while (got + 1 < cap) {
    ssize_t n = recv(fd, reply + got, cap - 1 - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
    if (memchr(reply, '\n', got))
      break;
  }
  close(fd);
  if (cap == 0)
    return -1;
  reply[got] = '\0';
  reply[strcspn(reply, "\n")] = '\0';
  return strncmp(reply, "ok", 2) == 0 ? 0 : -1;
}

long long gf_net_proxy_stat(const struct gf_net_proxy *px, const char *name) {
  char reply[2048], key[64];
  if (gf_net_proxy_ctl(px, "stats", reply, sizeof reply) < 0)
    return -1;
  snprintf(key, sizeof key, " %s=", name);
  const char *p = strstr(reply, key);
  return p ? atoll(p + strlen(key)) : -1;
}

int gf_net_proxy_stop(struct gf_net_proxy *px) {
  if (!px->err_path[0])
    return 0;  /* never started, or stopped already */
  int rc = -1; /* an exit we did not see (it died in start) is a failure */
  if (px->pid > 0) {
    kill(px->pid, SIGTERM);
    int st = 0;
    pid_t r = -1;
    for (int i = 0; i < 200; i++) {
      r = waitpid(px->pid, &st, WNOHANG);
      if (r == px->pid || (r < 0 && errno != EINTR))
        break;
      sleep_ms(25);
    }
    if (r != px->pid) {
      kill(px->pid, SIGKILL);
      waitpid(px->pid, &st, 0);
      fprintf(stderr, "gf_net_proxy_stop: netproxy ignored SIGTERM\n");
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
      rc = 0;
    }
    px->pid = -1;
  }
  FILE *f = fopen(px->err_path, "r");
  if (f) {
    char line[1024];
    int report = 0;
    while (fgets(line, sizeof line, f))
      if (strstr(line, "Sanitizer") || strstr(line, "runtime error"))
        report = 1;
    if (report || rc) {
      rewind(f);
      fprintf(stderr, "netproxy's stderr (%s):\n",
              rc ? "it did not exit 0" : "a sanitizer report");
      while (fgets(line, sizeof line, f))
        fprintf(stderr, "  netproxy| %s", line);
      rc = -1;
    }
    fclose(f);
  }
  px->err_path[0] = '\0';
  return rc;
}
