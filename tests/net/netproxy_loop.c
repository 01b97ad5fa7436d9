/* netproxy: the listeners, the epoll loop, the timers, and the control
 * port's line protocol (one command a line, one reply line each; the
 * commands are in docs/TESTING.md). */
#include "netproxy.h"

#include <arpa/inet.h> /* inet_pton */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h> /* PR_SET_PDEATHSIG */
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h> /* the upstream as a unix socket */
#include <unistd.h>

static int listen_on(const char *host, int port, bool reuseport,
                     int *bound_port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
    fprintf(stderr, "netproxy: %s: want an IPv4 address\n", host);
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport)
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 1024) < 0) {
    fprintf(stderr, "netproxy: listen on %s:%d: %s\n", host, port,
            strerror(errno));
    close(fd);
    return -1;
  }
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  *bound_port = ntohs(a.sin_port);
  return fd;
}

static int ep_add(struct np_proxy *p, int fd, uint32_t events,
                  struct np_ep *e) {
  struct epoll_event ev;
  ev.events = events;
  ev.data.ptr = e;
  return epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void accept_all(struct np_proxy *p) {
  for (;;) {
    int fd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED)
        continue;
      if (errno != EAGAIN)
        fprintf(stderr, "netproxy: accept: %s\n", strerror(errno));
      return;
    }
    struct np_conn *c = np_conn_new(p, fd);
    if (c)
      np_conn_pump(p, c);
  }
}

static void reset_all(struct np_proxy *p) {
  while (p->conns)
    np_conn_close(p, p->conns, true);
}

/* ---- the control port ---- */

static void stats_line(const struct np_proxy *p, char *out, size_t cap) {
  const struct np_stats *s = &p->st;
  snprintf(out, cap,
           "ok conns=%" PRIu64 " active=%" PRIu64 " requests=%" PRIu64
           " forwarded=%" PRIu64 " responses=%" PRIu64 " bytes_up=%" PRIu64
           " bytes_down=%" PRIu64 " upstream_errors=%" PRIu64 " fired=%" PRIu64
           " status=%" PRIu64 " stall=%" PRIu64 " reset=%" PRIu64
           " truncate=%" PRIu64 " strip=%" PRIu64 " etag=%" PRIu64
           " flip=%" PRIu64 " delay=%" PRIu64 " latency_ms=%" PRId64
           " state=%s",
           s->conns, s->active, s->requests, s->forwarded, s->responses,
           s->bytes_up, s->bytes_down, s->upstream_errors, s->fired,
           s->f_status, s->f_stall, s->f_reset, s->f_truncate, s->f_strip,
           s->f_etag, s->f_flip, s->f_delay, p->latency_ms,
           p->refusing ? "refuse"
           : p->frozen ? "hang"
                       : "up");
}

static void rule_add(struct np_proxy *p, struct np_rule *r) {
  r->id = ++p->next_rule_id;
  struct np_rule **pp = &p->rules;
  while (*pp)
    pp = &(*pp)->next;
  *pp = r;
}

static void rules_free(struct np_rule *r) {
  while (r) {
    struct np_rule *next = r->next;
    free(r);
    r = next;
  }
}

/* Runs one command line; the reply (no newline) in out. */
static void control(struct np_proxy *p, char *line, char *out, size_t cap) {
  char *arg = line + strcspn(line, " \t");
  if (*arg)
    *arg++ = '\0';
  arg += strspn(arg, " \t");
  int64_t v;
  char *end;
  if (strcmp(line, "add") == 0) {
    char err[256];
    struct np_rule *r = np_rule_parse(arg, err, sizeof err);
    if (!r) {
      snprintf(out, cap, "err %s", err);
      return;
    }
    rule_add(p, r);
    snprintf(out, cap, "ok %d", r->id);
  } else if (strcmp(line, "del") == 0) {
    long id = strtol(arg, &end, 10);
    for (struct np_rule **pp = &p->rules; *pp; pp = &(*pp)->next) {
      if ((*pp)->id == id && end != arg) {
        struct np_rule *r = *pp;
        *pp = r->next;
        free(r);
        snprintf(out, cap, "ok");
        return;
      }
    }
    snprintf(out, cap, "err no rule %s", arg);
  } else if (strcmp(line, "clear") == 0) {
    rules_free(p->rules);
    p->rules = NULL;
    snprintf(out, cap, "ok");
  } else if (strcmp(line, "rules") == 0) {
    size_t n = (size_t)snprintf(out, cap, "ok");
    for (struct np_rule *r = p->rules; r && n + 4 < cap; r = r->next) {
      n += (size_t)snprintf(out + n, cap - n, n > 2 ? "; " : " ");
      if (n < cap) {
        np_rule_format(r, out + n, cap - n);
        n += strlen(out + n);
      }
    }
  } else if (strcmp(line, "latency") == 0) {
    v = strtoll(arg, &end, 10);
    if (end == arg || *end || v < 0 || v > 3600000) {
      snprintf(out, cap, "err latency wants milliseconds");
      return;
    }
    p->latency_ms = v;
    snprintf(out, cap, "ok");
  } else if (strcmp(line, "stats") == 0) {
    stats_line(p, out, cap);
  } else if (strcmp(line, "zero") == 0) {
    uint64_t active = p->st.active;
    memset(&p->st, 0, sizeof p->st);
    p->st.active = active;
    snprintf(out, cap, "ok");
  } else if (strcmp(line, "kill") == 0) {
    bool hang = strcmp(arg, "hang") == 0;
    if (!hang && *arg && strcmp(arg, "refuse") != 0) {
      snprintf(out, cap, "err kill [refuse|hang]");
      return;
    }
    if (hang) {
      /* Connections wait in the listen queue; open ones hear nothing. */
      if (!p->frozen && p->lfd >= 0)
        epoll_ctl(p->ep, EPOLL_CTL_DEL, p->lfd, NULL);
      p->frozen = true;
      for (struct np_conn *c = p->conns; c; c = c->next)
        np_conn_update_events(p, c);
    } else {
      /* The server is gone: connects are refused, open ones reset. */
      reset_all(p);
      if (p->lfd >= 0)
        close(p->lfd);
      p->lfd = -1;
      p->refusing = true;
    }
    snprintf(out, cap, "ok");
  } else if (strcmp(line, "resume") == 0) {
    if (p->refusing) {
      int port;
      p->lfd =
          listen_on(p->cfg->listen_host, p->port, p->cfg->reuseport, &port);
      if (p->lfd < 0) {
        snprintf(out, cap, "err cannot listen on port %d again", p->port);
        return;
      }
      p->refusing = false;
      p->frozen = false;
      ep_add(p, p->lfd, EPOLLIN, &p->lep);
    } else if (p->frozen) {
      p->frozen = false;
      if (p->lfd >= 0)
        ep_add(p, p->lfd, EPOLLIN, &p->lep);
      for (struct np_conn *c = p->conns; c; c = c->next)
        c->again = true;
    }
    snprintf(out, cap, "ok");
  } else if (strcmp(line, "quit") == 0) {
    p->quit = true;
    snprintf(out, cap, "ok");
  } else if (line[0] == '\0') {
    snprintf(out, cap, "err empty command");
  } else {
    snprintf(out, cap,
             "err unknown command '%s' (add, del, clear, rules, latency, "
             "stats, zero, kill, resume, quit)",
             line);
  }
}

static void ctl_close(struct np_ctlconn *k) {
  if (k->dead)
    return;
  close(k->fd);
  k->dead = true;
}

static void ctl_read(struct np_proxy *p, struct np_ctlconn *k) {
  for (;;) {
    ssize_t n = recv(k->fd, k->line + k->len, sizeof k->line - 1 - k->len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      ctl_close(k);
      return;
    }
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    k->len += (size_t)n;
    char *nl;
    while ((nl = memchr(k->line, '\n', k->len))) {
      *nl = '\0';
      if (nl > k->line && nl[-1] == '\r')
        nl[-1] = '\0';
      char reply[8192];
      control(p, k->line, reply, sizeof reply - 1);
      size_t rl = strlen(reply);
      reply[rl++] = '\n';
      /* A reply fits the socket's buffer; a client that does not read
       * its replies loses the connection. */
      if (send(k->fd, reply, rl, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)rl) {
        ctl_close(k);
        return;
      }
      size_t used = (size_t)(nl - k->line) + 1;
      memmove(k->line, nl + 1, k->len - used);
      k->len -= used;
    }
    if (k->len == sizeof k->line - 1) {
      ctl_close(k); /* a line longer than any command */
      return;
    }
  }
}

static void ctl_accept(struct np_proxy *p) {
  for (;;) {
    int fd = accept4(p->cfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    struct np_ctlconn *k = calloc(1, sizeof *k);
    if (!k) {
      close(fd);
      continue;
    }
    k->fd = fd;
    k->ep.kind = NP_EP_CTLCONN;
    k->ep.obj = k;
    if (ep_add(p, fd, EPOLLIN, &k->ep) < 0) {
      close(fd);
      free(k);
      continue;
    }
    k->next = p->ctls;
    p->ctls = k;
  }
}

static void free_dead(struct np_proxy *p) {
  while (p->dead) {
    struct np_conn *c = p->dead;
    p->dead = c->next;
    np_conn_free(c);
  }
  for (struct np_ctlconn **kk = &p->ctls; *kk;) {
    if ((*kk)->dead) {
      struct np_ctlconn *k = *kk;
      *kk = k->next;
      free(k);
    } else {
      kk = &(*kk)->next;
    }
  }
}

static int write_port_file(struct np_proxy *p) {
  char text[512];
  snprintf(text, sizeof text,
           "GF_PROXY_URL=http://%s:%d\nGF_PROXY_PORT=%d\n"
           "GF_PROXY_CONTROL_PORT=%d\nGF_PROXY_PID=%ld\n",
           p->cfg->listen_host, p->port, p->port, p->cport, (long)getpid());
  fputs(text, stdout);
  fflush(stdout);
  if (!p->cfg->port_file)
    return 0;
  /* Written whole, then renamed: a reader never sees half of it. */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", p->cfg->port_file);
  FILE *f = fopen(tmp, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0 ||
      rename(tmp, p->cfg->port_file) < 0) {
    fprintf(stderr, "netproxy: %s: %s\n", p->cfg->port_file, strerror(errno));
    return -1;
  }
  return 0;
}

static int resolve_upstream(struct np_proxy *p) {
  if (strncmp(p->cfg->upstream_host, "unix:", 5) == 0) {
    struct sockaddr_un *un = (struct sockaddr_un *)&p->upstream;
    const char *path = p->cfg->upstream_host + 5;
    if (strlen(path) >= sizeof un->sun_path) {
      fprintf(stderr, "netproxy: upstream %s: path too long\n", path);
      return -1;
    }
    un->sun_family = AF_UNIX;
    strcpy(un->sun_path, path);
    p->upstream_len = (unsigned)sizeof *un;
    return 0;
  }
  char port[16];
  snprintf(port, sizeof port, "%d", p->cfg->upstream_port);
  struct addrinfo hints, *res;
  memset(&hints, 0, sizeof hints);
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(p->cfg->upstream_host, port, &hints, &res);
  if (rc) {
    fprintf(stderr, "netproxy: upstream %s: %s\n", p->cfg->upstream_host,
            gai_strerror(rc));
    return -1;
  }
  memcpy(&p->upstream, res->ai_addr, res->ai_addrlen);
  p->upstream_len = (unsigned)res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

int np_run(struct np_config *cfg) {
  struct np_proxy px;
  struct np_proxy *p = &px;
  memset(p, 0, sizeof *p);
  p->cfg = cfg;
  p->lfd = p->cfd = p->sfd = p->ep = -1;
  p->latency_ms = cfg->latency_ms;
  while (cfg->rules) {
    struct np_rule *r = cfg->rules;
    cfg->rules = r->next;
    r->next = NULL;
    rule_add(p, r);
  }
  int status = 1;
  if (cfg->die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
      goto out; /* the parent is already gone */
  }
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  sigprocmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  if (resolve_upstream(p) < 0)
    goto out;
  p->ep = epoll_create1(EPOLL_CLOEXEC);
  p->sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  p->lfd =
      listen_on(cfg->listen_host, cfg->listen_port, cfg->reuseport, &p->port);
  p->cfd = listen_on("127.0.0.1", cfg->control_port, false, &p->cport);
  if (p->ep < 0 || p->sfd < 0 || p->lfd < 0 || p->cfd < 0)
    goto out;
  p->lep.kind = NP_EP_LISTEN;
  p->cep.kind = NP_EP_CONTROL;
  p->sep.kind = NP_EP_SIGNAL;
  if (ep_add(p, p->lfd, EPOLLIN, &p->lep) < 0 ||
      ep_add(p, p->cfd, EPOLLIN, &p->cep) < 0 ||
      ep_add(p, p->sfd, EPOLLIN, &p->sep) < 0)
    goto out;
  if (write_port_file(p) < 0)
    goto out;
  struct epoll_event evs[128];
  while (!p->quit) {
    int timeout = -1;
    int64_t now = np_now_ns();
    if (!p->frozen) {
      for (struct np_conn *c = p->conns; c; c = c->next) {
        if (c->again) {
          timeout = 0;
          break;
        }
        if (c->wake_ns != INT64_MAX) {
          int64_t ms =
              c->wake_ns <= now ? 0 : (c->wake_ns - now + 999999) / 1000000;
          if (timeout < 0 || ms < timeout)
            timeout = (int)(ms > 60000 ? 60000 : ms);
        }
      }
    }
    int n = epoll_wait(p->ep, evs, 128, timeout);
    if (n < 0 && errno != EINTR) {
      fprintf(stderr, "netproxy: epoll_wait: %s\n", strerror(errno));
      goto out;
    }
    for (int i = 0; i < n; i++) {
      struct np_ep *e = evs[i].data.ptr;
      switch (e->kind) {
      case NP_EP_LISTEN:
        if (!p->frozen && p->lfd >= 0)
          accept_all(p);
        break;
      case NP_EP_CONTROL:
        ctl_accept(p);
        break;
      case NP_EP_SIGNAL: {
        struct signalfd_siginfo si;
        while (read(p->sfd, &si, sizeof si) == (ssize_t)sizeof si)
          if (si.ssi_signo != SIGHUP)
            p->quit = true;
        break;
      }
      case NP_EP_CLIENT:
      case NP_EP_UPSTREAM:
        np_conn_event(p, e->obj, e->kind == NP_EP_UPSTREAM, evs[i].events);
        break;
      case NP_EP_CTLCONN: {
        struct np_ctlconn *k = e->obj;
        if (!k->dead)
          ctl_read(p, k);
        break;
      }
      }
    }
    /* Timers due and conns that had more to do. */
    if (!p->frozen) {
      now = np_now_ns();
      for (struct np_conn *c = p->conns, *next; c; c = next) {
        next = c->next;
        if (c->again || c->wake_ns <= now)
          np_conn_pump(p, c);
      }
    }
    free_dead(p);
  }
  status = 0;
out:
  reset_all(p);
  for (struct np_ctlconn *k = p->ctls; k; k = k->next)
    ctl_close(k);
  free_dead(p);
  rules_free(p->rules);
  if (p->lfd >= 0)
    close(p->lfd);
  if (p->cfd >= 0)
    close(p->cfd);
  if (p->sfd >= 0)
    close(p->sfd);
  if (p->ep >= 0)
    close(p->ep);
  return status;
}

int np_ctl(int port, const char *cmd) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    fprintf(stderr, "netproxy ctl: 127.0.0.1:%d: %s\n", port, strerror(errno));
    if (fd >= 0)
      close(fd);
    return 1;
  }
  size_t len = strlen(cmd);
  char reply[8192];
  size_t got = 0;
  if (write(fd, cmd, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
    close(fd);
    return 1;
  }
  while (got < sizeof reply - 1) {
    ssize_t n = read(fd, reply + got, sizeof reply - 1 - got);
    if (n <= 0)
      break;
    got += (size_t)n;
    if (memchr(reply, '\n', got))
      break;
  }
  close(fd);
  reply[got] = '\0';
  fputs(reply, stdout);
  return strncmp(reply, "ok", 2) == 0 ? 0 : 1;
}
