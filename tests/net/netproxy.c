/* netproxy's command line (the work is in netproxy_loop.c and
 * netproxy_conn.c; netproxy.h says what each file holds).
 *
 *   netproxy --upstream HOST:PORT [--listen HOST:PORT] [--control-port N]
 *            [--latency MS] [--rule RULE]... [--pipe-bytes N]
 *            [--port-file FILE] [--die-with-parent] [--reuseport] [-v]
 *   netproxy ctl CONTROL_PORT COMMAND...
 *
 * It prints GF_PROXY_URL=, GF_PROXY_PORT=, GF_PROXY_CONTROL_PORT= and
 * GF_PROXY_PID= lines once it listens (and writes them to FILE). Exit
 * status: 0 after quit or SIGTERM, 1 on an error, 2 on a usage error. */
#include "netproxy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fputs("usage: netproxy --upstream HOST:PORT [--listen HOST:PORT]\n"
        "                [--control-port N] [--latency MS] [--rule RULE]...\n"
        "                [--pipe-bytes N] [--port-file FILE]\n"
        "                [--die-with-parent] [--reuseport] [-v]\n"
        "       netproxy ctl CONTROL_PORT COMMAND...\n"
        "rules and commands: docs/TESTING.md\n",
        stderr);
}

/* "HOST:PORT" into host (static storage) and port. */
static int split_host_port(const char *s, char *host, size_t cap, int *port) {
  const char *colon = strrchr(s, ':');
  if (!colon || (size_t)(colon - s) >= cap)
    return -1;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = '\0';
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (end == colon + 1 || *end || p < 0 || p > 65535)
    return -1;
  *port = (int)p;
  return 0;
}

static long number(const char *s, long lo, long hi, bool *ok) {
  char *end;
  long v = strtol(s, &end, 10);
  *ok = end != s && !*end && v >= lo && v <= hi;
  return v;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "ctl") == 0) {
    if (argc < 4) {
      usage();
      return 2;
    }
    bool ok;
    int port = (int)number(argv[2], 1, 65535, &ok);
    if (!ok) {
      usage();
      return 2;
    }
    char cmd[4096];
    size_t n = 0;
    for (int i = 3; i < argc; i++) {
      int w =
          snprintf(cmd + n, sizeof cmd - n, "%s%s", i > 3 ? " " : "", argv[i]);
      if (w < 0 || (size_t)w >= sizeof cmd - n) {
        fputs("netproxy ctl: command too long\n", stderr);
        return 2;
      }
      n += (size_t)w;
    }
    return np_ctl(port, cmd);
  }
  static char listen_host[64] = "127.0.0.1", up_host[256];
  struct np_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.listen_host = listen_host;
  cfg.upstream_port = -1;
  cfg.pipe_bytes = 1 << 20;
  struct np_rule **tail = &cfg.rules;
  int status = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool ok = true;
    if (strcmp(a, "-v") == 0) {
      cfg.verbose++;
      continue;
    }
    if (strcmp(a, "--die-with-parent") == 0) {
      cfg.die_with_parent = true;
      continue;
    }
    if (strcmp(a, "--reuseport") == 0) {
      cfg.reuseport = true;
      continue;
    }
    if (!v) {
      usage();
      goto out;
    }
    i++;
    if (strcmp(a, "--upstream") == 0 && strncmp(v, "unix:", 5) == 0) {
      ok = strlen(v) < sizeof up_host;
      if (ok)
        strcpy(up_host, v);
      cfg.upstream_host = up_host;
    } else if (strcmp(a, "--upstream") == 0) {
      ok = split_host_port(v, up_host, sizeof up_host, &cfg.upstream_port) ==
               0 &&
           cfg.upstream_port > 0;
      cfg.upstream_host = up_host;
    } else if (strcmp(a, "--listen") == 0) {
      ok = split_host_port(v, listen_host, sizeof listen_host,
                           &cfg.listen_port) == 0;
    } else if (strcmp(a, "--control-port") == 0) {
      cfg.control_port = (int)number(v, 0, 65535, &ok);
    } else if (strcmp(a, "--latency") == 0) {
      cfg.latency_ms = number(v, 0, 3600000, &ok);
    } else if (strcmp(a, "--pipe-bytes") == 0) {
      cfg.pipe_bytes = (size_t)number(v, 65536, 1L << 30, &ok);
    } else if (strcmp(a, "--port-file") == 0) {
      cfg.port_file = v;
    } else if (strcmp(a, "--rule") == 0) {
      char err[256];
      struct np_rule *r = np_rule_parse(v, err, sizeof err);
      if (!r) {
        fprintf(stderr, "netproxy: --rule '%s': %s\n", v, err);
        goto out;
      }
      *tail = r;
      tail = &r->next;
    } else {
      ok = false;
    }
    if (!ok) {
      fprintf(stderr, "netproxy: bad %s %s\n", a, v);
      usage();
      goto out;
    }
  }
  if (!cfg.upstream_host) {
    usage();
    goto out;
  }
  status = np_run(&cfg);
out:
  while (cfg.rules) {
    struct np_rule *r = cfg.rules;
    cfg.rules = r->next;
    free(r);
  }
  return status;
}
