/* netproxy: one connection, client <-> upstream. Each direction is a flow
 * (source socket -> kernel pipe -> destination socket). Request heads and
 * response heads are read into the flow's buffer, looked at, changed where
 * a rule says so, and written into the pipe; response bodies are spliced
 * from the upstream socket into the pipe without passing through this
 * process, unless a rule needs a body byte (a flip) or a cut falls inside
 * the body, and then only the bytes around that point are read. Bytes
 * leave the pipe by splice once their delay (if any) has passed. */
#include "netproxy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h> /* TCP_NODELAY */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/ioctl.h> /* FIONREAD */
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Request flow states. */
enum { RQ_HEAD, RQ_BODY };
/* Response flow states. */
enum {
  RS_HEAD,       /* waiting for a status line and headers */
  RS_BODY,       /* remaining body bytes (UINT64_MAX: until EOF) */
  RS_CHUNK_SIZE, /* chunked: a size line */
  RS_CHUNK_DATA, /* chunked: remaining data bytes of this chunk */
  RS_CHUNK_END,  /* chunked: the CRLF after a chunk's data */
  RS_TRAILER,    /* chunked: trailer lines up to an empty one */
};

int64_t np_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t min_sz(uint64_t a, uint64_t b) { return (size_t)(a < b ? a : b); }

static uint64_t flow_in_pipe(const struct np_flow *f) {
  return f->pushed - f->sent;
}

static bool flow_drained(const struct np_flow *f) {
  return f->pushed == f->sent && f->ooff == f->olen;
}

/* Records that n more bytes entered the pipe, sendable after delay_ns. */
static void flow_note(struct np_flow *f, size_t n, int64_t now) {
  int64_t delay = f->delay_ns;
  if (delay <= 0 && f->ch_count == 0) {
    f->pushed += n;
    return;
  }
  if (f->ch_count == 0)
    f->ready_end = f->pushed;
  f->pushed += n;
  int64_t ready = now + (delay > 0 ? delay : 0);
  if (f->ch_count > 0) {
    /* Bytes that arrive close together share a chunk: the ring covers a
     * long delay, and a merged byte is never sent early (the later time
     * wins). */
    struct np_chunk *last =
        &f->chunks[(f->ch_head + f->ch_count - 1) % NP_CHUNKS];
    int64_t window = delay / 128 > 1000000 ? delay / 128 : 1000000;
    if (ready - last->ready_ns < window || f->ch_count == NP_CHUNKS) {
      last->end = f->pushed;
      if (ready > last->ready_ns)
        last->ready_ns = ready;
      return;
    }
  }
  struct np_chunk *ch = &f->chunks[(f->ch_head + f->ch_count) % NP_CHUNKS];
  ch->end = f->pushed;
  ch->ready_ns = ready;
  f->ch_count++;
}

/* Bytes of the stream sendable now: up to here. */
static uint64_t flow_ready(struct np_flow *f, int64_t now) {
  while (f->ch_count > 0 && f->chunks[f->ch_head].ready_ns <= now) {
    f->ready_end = f->chunks[f->ch_head].end;
    f->ch_head = (f->ch_head + 1) % NP_CHUNKS;
    f->ch_count--;
  }
  return f->ch_count > 0 ? f->ready_end : f->pushed;
}

/* Writes out[ooff, olen) into the pipe. 1 progress, 0 none, -1 error. */
static int flow_push_out(struct np_flow *f, int64_t now) {
  int progress = 0;
  while (f->ooff < f->olen) {
    ssize_t n = write(f->pipe_w, f->out + f->ooff, f->olen - f->ooff);
    if (n > 0) {
      f->ooff += (size_t)n;
      flow_note(f, (size_t)n, now);
      progress = 1;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      f->pipe_full = true;
      return progress;
    }
    return -1;
  }
  f->ooff = f->olen = 0;
  return progress;
}

static bool out_append(struct np_flow *f, const void *p, size_t n) {
  if (f->olen + n > NP_OUT)
    return false;
  memcpy(f->out + f->olen, p, n);
  f->olen += n;
  return true;
}

/* Reads what the source has into buf. 1 read, 0 nothing now (or EOF,
 * f->eof set), -1 error. */
static int flow_read(struct np_flow *f, int fd) {
  if (f->boff == f->blen)
    f->boff = f->blen = 0;
  if (f->blen == NP_BUF && f->boff > 0) {
    memmove(f->buf, f->buf + f->boff, f->blen - f->boff);
    f->blen -= f->boff;
    f->boff = 0;
  }
  if (f->blen == NP_BUF)
    return 0;
  for (;;) {
    ssize_t n = recv(fd, f->buf + f->blen, NP_BUF - f->blen, 0);
    if (n > 0) {
      f->blen += (size_t)n;
      return 1;
    }
    if (n == 0) {
      f->eof = true;
      return 0;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN)
      return 0;
    return -1;
  }
}

/* ---- heads ---- */

/* The value of header `name` in head[0, len) (the first one), trimmed; its
 * length in *vlen. NULL when absent. */
static const char *head_find(const char *head, size_t len, const char *name,
                             size_t *vlen) {
  size_t nl = strlen(name);
  const char *end = head + len;
  const char *line = memchr(head, '\n', len);
  while (line && line + 1 < end) {
    line++;
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    if (!eol)
      break;
    if ((size_t)(eol - line) > nl && line[nl] == ':' &&
        strncasecmp(line, name, nl) == 0) {
      const char *v = line + nl + 1;
      const char *ve = eol;
      while (v < ve && (*v == ' ' || *v == '\t'))
        v++;
      while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
        ve--;
      *vlen = (size_t)(ve - v);
      return v;
    }
    line = eol;
  }
  return NULL;
}

/* Copies head[0, len) into the flow's out, leaving out every header line
 * named `drop` and giving header `replace` the value `value` (added before
 * the blank line when absent). */
static bool head_rewrite(struct np_flow *f, const char *head, size_t len,
                         const char *drop, const char *replace,
                         const char *value) {
  const char *end = head + len;
  const char *line = head;
  bool replaced = false;
  bool first = true;
  while (line < end) {
    const char *eol = memchr(line, '\n', (size_t)(end - line));
    size_t ll = eol ? (size_t)(eol - line) + 1 : (size_t)(end - line);
    bool blank = ll <= 2 && (line[0] == '\r' || line[0] == '\n');
    if (!first && !blank) {
      if (drop && ll > strlen(drop) && line[strlen(drop)] == ':' &&
          strncasecmp(line, drop, strlen(drop)) == 0) {
        line += ll;
        continue;
      }
      if (replace && ll > strlen(replace) && line[strlen(replace)] == ':' &&
          strncasecmp(line, replace, strlen(replace)) == 0) {
        char tmp[NP_TEXT_MAX + 64];
        int n = snprintf(tmp, sizeof tmp, "%s: %s\r\n", replace, value);
        if (!out_append(f, tmp, (size_t)n))
          return false;
        replaced = true;
        line += ll;
        continue;
      }
    }
    if (blank && replace && !replaced) {
      char tmp[NP_TEXT_MAX + 64];
      int n = snprintf(tmp, sizeof tmp, "%s: %s\r\n", replace, value);
      if (!out_append(f, tmp, (size_t)n))
        return false;
    }
    if (!out_append(f, line, ll))
      return false;
    first = false;
    line += ll;
  }
  return true;
}

static uint64_t parse_u64(const char *v, size_t vl, bool *ok) {
  uint64_t x = 0;
  *ok = vl > 0;
  for (size_t i = 0; i < vl; i++) {
    if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10) {
      *ok = false;
      return 0;
    }
    x = x * 10 + (uint64_t)(v[i] - '0');
  }
  return x;
}

static struct np_txn *txn_front(struct np_conn *c) {
  return c->tq_count ? &c->txns[c->tq_head] : NULL;
}

static void txn_pop(struct np_conn *c) {
  c->tq_head = (c->tq_head + 1) % NP_TXNS;
  c->tq_count--;
}

/* A complete request head at buf[boff, boff+len): decides what the request
 * gets and forwards it (changed) or not. -1 on a request it cannot carry. */
static int request_head(struct np_proxy *p, struct np_conn *c, const char *head,
                        size_t len) {
  struct np_flow *f = &c->req;
  char method[16], target[2048];
  const char *sp = memchr(head, ' ', len);
  if (!sp || (size_t)(sp - head) >= sizeof method)
    return -1;
  memcpy(method, head, (size_t)(sp - head));
  method[sp - head] = '\0';
  const char *t0 = sp + 1;
  const char *t1 = memchr(t0, ' ', len - (size_t)(t0 - head));
  if (!t1 || (size_t)(t1 - t0) >= sizeof target)
    return -1;
  memcpy(target, t0, (size_t)(t1 - t0));
  target[t1 - t0] = '\0';
  size_t vl;
  if (head_find(head, len, "Transfer-Encoding", &vl))
    return -1; /* chunked request bodies: not needed by the tests */
  uint64_t body = 0;
  const char *v = head_find(head, len, "Content-Length", &vl);
  if (v) {
    bool ok;
    body = parse_u64(v, vl, &ok);
    if (!ok)
      return -1;
  }
  struct np_txn *t = &c->txns[(c->tq_head + c->tq_count) % NP_TXNS];
  memset(t, 0, sizeof *t);
  t->retry_after = -1;
  t->cut_after = -1;
  t->stall_ms = -1;
  t->flip_at = -1;
  t->head_method = strcmp(method, "HEAD") == 0;
  p->st.requests++;
  np_rules_apply(p->rules, method, target, t, &p->st);
  c->tq_count++;
  f->delay_ns = (p->latency_ms + t->delay_ms) * 1000000 / 2;
  f->discard = t->status != 0;
  if (!f->discard) {
    p->st.forwarded++;
    if (!head_rewrite(f, head, len, t->strip_range ? "Range" : NULL, NULL,
                      NULL))
      return -1;
  }
  char range[96] = "-";
  size_t rl;
  const char *rv = head_find(head, len, "Range", &rl);
  if (rv && rl < sizeof range) {
    memcpy(range, rv, rl);
    range[rl] = '\0';
  }
  if (p->cfg->verbose)
    fprintf(stderr,
            "netproxy: conn %" PRIu64 ": %s %s range=%s: %s%s%s%s%s%s%s\n",
            c->id, method, target, range, t->status ? "status" : "forward",
            t->strip_range ? " strip-range" : "",
            t->cut == NP_CUT_STALL      ? " stall"
            : t->cut == NP_CUT_RESET    ? " reset"
            : t->cut == NP_CUT_TRUNCATE ? " truncate"
                                        : "",
            t->etag ? " etag" : "", t->flip_at >= 0 ? " flip" : "",
            t->delay_ms ? " delay" : "", p->frozen ? " (frozen)" : "");
  f->remaining = body;
  f->state = body ? RQ_BODY : RQ_HEAD;
  return 0;
}

/* Client -> upstream: parses request heads, forwards (or drops) them and
 * their bodies. 1 progress, 0 none, -1 error. */
static int req_input(struct np_proxy *p, struct np_conn *c, int64_t now) {
  struct np_flow *f = &c->req;
  int progress = 0;
  for (;;) {
    if (f->ooff < f->olen) {
      int r = flow_push_out(f, now);
      if (r < 0)
        return -1;
      progress |= r;
      if (f->ooff < f->olen)
        break;
    }
    size_t avail = f->blen - f->boff;
    if (f->state == RQ_HEAD) {
      const char *b = f->buf + f->boff;
      const char *e = avail >= 4 ? memmem(b, avail, "\r\n\r\n", 4) : NULL;
      if (e) {
        if (c->tq_count == NP_TXNS)
          break; /* a pipelining client waits for earlier responses */
        size_t len = (size_t)(e - b) + 4;
        if (request_head(p, c, b, len) < 0)
          return -1;
        f->boff += len;
        progress = 1;
        continue;
      }
      if (avail == NP_BUF)
        return -1; /* a head larger than the buffer */
    } else if (f->remaining == 0) {
      f->state = RQ_HEAD;
      continue;
    } else if (avail > 0) {
      size_t n = min_sz(f->remaining, avail);
      if (!f->discard)
        out_append(f, f->buf + f->boff, n);
      f->boff += n;
      f->remaining -= n;
      progress = 1;
      continue;
    }
    if (f->eof) {
      f->done = true;
      break;
    }
    if (f->pipe_full || flow_in_pipe(f) >= f->pipe_cap)
      break;
    int r = flow_read(f, c->cfd);
    if (r < 0)
      return -1;
    if (r == 0) {
      if (f->eof)
        progress = 1;
      else
        break;
    }
  }
  return progress;
}

/* A complete response head at buf[boff, boff+len) for the front request:
 * sets up the body and writes the head (changed) to out. */
static int response_head(struct np_proxy *p, struct np_conn *c,
                         struct np_txn *t, const char *head, size_t len) {
  struct np_flow *f = &c->resp;
  if (len < 12 || memcmp(head, "HTTP/1.", 7) != 0)
    return -1;
  int code = atoi(head + 9);
  size_t vl;
  const char *v;
  bool chunked = false;
  uint64_t clen = UINT64_MAX;
  if ((v = head_find(head, len, "Transfer-Encoding", &vl)) && vl >= 7 &&
      strncasecmp(v + vl - 7, "chunked", 7) == 0)
    chunked = true;
  else if ((v = head_find(head, len, "Content-Length", &vl))) {
    bool ok;
    clen = parse_u64(v, vl, &ok);
    if (!ok)
      return -1;
  }
  bool interim = code >= 100 && code < 200 && code != 101;
  if (!interim)
    p->st.responses++;
  char etag[NP_TEXT_MAX + 16] = "";
  const char *replace = NULL;
  if (t->etag && !interim) {
    replace = "ETag";
    if (t->etag_value[0]) {
      snprintf(etag, sizeof etag, "%s", t->etag_value);
    } else if ((v = head_find(head, len, "ETag", &vl)) && vl >= 2 &&
               v[vl - 1] == '"' && vl < NP_TEXT_MAX) {
      /* "6b09df3e-f4240" -> "6b09df3e-f4240-changed" */
      snprintf(etag, sizeof etag, "%.*s-changed\"", (int)(vl - 1), v);
    } else {
      snprintf(etag, sizeof etag, "\"changed\"");
    }
  }
  if (!head_rewrite(f, head, len, NULL, replace, etag))
    return -1;
  f->body_pos = 0;
  if (interim) {
    f->state = RS_HEAD;
  } else if (t->head_method || code == 204 || code == 304) {
    f->state = RS_BODY;
    f->remaining = 0;
  } else if (chunked) {
    f->state = RS_CHUNK_SIZE;
  } else {
    f->state = RS_BODY;
    f->remaining = clen; /* UINT64_MAX without a length: until EOF */
  }
  return 0;
}

/* The body bytes the front request's rules let through before one of them
 * must act, from body_pos: a cut at cut_after, a flip at flip_at. Sets
 * *inspect when the next byte is the one to flip. */
static uint64_t body_limit(struct np_flow *f, struct np_txn *t, uint64_t limit,
                           bool *inspect) {
  *inspect = false;
  if (!t)
    return limit;
  if (t->cut != NP_CUT_NONE && t->cut_after >= 0 &&
      (uint64_t)t->cut_after >= f->body_pos) {
    uint64_t left = (uint64_t)t->cut_after - f->body_pos;
    if (left == 0)
      return 0; /* the cut comes first: a flip at the same byte is moot */
    if (left < limit)
      limit = left;
  }
  if (t->flip_at >= 0 && (uint64_t)t->flip_at >= f->body_pos) {
    uint64_t left = (uint64_t)t->flip_at - f->body_pos;
    if (left == 0)
      *inspect = true;
    else if (left < limit)
      limit = left;
  }
  return limit;
}

/* Moves up to n body bytes from buf to out, flipping the first when
 * inspect (the flip is then done). */
static void body_copy(struct np_flow *f, struct np_txn *t, size_t n,
                      bool inspect) {
  size_t at = f->olen;
  out_append(f, f->buf + f->boff, n);
  if (inspect && n > 0) {
    f->out[at] = (char)(f->out[at] ^ t->flip_mask);
    t->flip_at = -1;
  }
  f->boff += n;
  f->body_pos += n;
}

static void halt_at(struct np_flow *f, struct np_txn *t) {
  f->halt = t->cut;
  f->halt_ms = t->stall_ms;
  f->stall_until = 0;
  t->cut = NP_CUT_NONE;
}

/* The line ending at the first LF of buf[boff, blen): its length with the
 * LF, or 0 when incomplete. */
static size_t line_len(const struct np_flow *f) {
  const char *b = f->buf + f->boff;
  const char *e = memchr(b, '\n', f->blen - f->boff);
  return e ? (size_t)(e - b) + 1 : 0;
}

/* Upstream -> client. 1 progress, 0 none, -1 error. */
static int resp_input(struct np_proxy *p, struct np_conn *c, int64_t now) {
  struct np_flow *f = &c->resp;
  int progress = 0;
  for (;;) {
    if (f->halt != NP_CUT_NONE)
      break;
    if (f->ooff < f->olen) {
      int r = flow_push_out(f, now);
      if (r < 0)
        return -1;
      progress |= r;
      if (f->ooff < f->olen)
        break;
    }
    struct np_txn *t = txn_front(c);
    size_t avail = f->blen - f->boff;
    bool need = false; /* more bytes from upstream needed */
    bool inspect = false;
    switch (f->state) {
    case RS_HEAD: {
      if (c->close_after)
        return progress;
      if (t && t->status) {
        f->delay_ns = (p->latency_ms + t->delay_ms) * 1000000;
        f->olen = np_synth_response(t, f->out, NP_OUT);
        f->ooff = 0;
        c->close_after = t->close;
        txn_pop(c);
        progress = 1;
        continue;
      }
      if (t && t->cut != NP_CUT_NONE && t->cut_after < 0) {
        halt_at(f, t);
        return 1;
      }
      const char *b = f->buf + f->boff;
      const char *e = avail >= 4 ? memmem(b, avail, "\r\n\r\n", 4) : NULL;
      if (!e) {
        if (avail == NP_BUF)
          return -1;
        need = true;
        break;
      }
      if (!t)
        return -1; /* a response nobody asked for */
      size_t len = (size_t)(e - b) + 4;
      f->delay_ns = (p->latency_ms + t->delay_ms) * 1000000 / 2;
      if (response_head(p, c, t, b, len) < 0)
        return -1;
      f->boff += len;
      progress = 1;
      continue;
    }
    case RS_BODY:
    case RS_CHUNK_DATA: {
      if (f->remaining == 0) {
        if (f->state == RS_CHUNK_DATA) {
          f->state = RS_CHUNK_END;
        } else {
          f->state = RS_HEAD;
          if (t)
            txn_pop(c);
        }
        continue;
      }
      uint64_t limit = body_limit(f, t, f->remaining, &inspect);
      if (limit == 0 && !inspect) {
        halt_at(f, t); /* the cut's point */
        return 1;
      }
      if (avail > 0) {
        size_t n = min_sz(limit, avail);
        body_copy(f, t, n, inspect);
        if (f->remaining != UINT64_MAX)
          f->remaining -= n;
        progress = 1;
        continue;
      }
      if (inspect || f->state == RS_CHUNK_DATA) {
        need = true;
        break;
      }
      /* Nothing to look at: straight from the socket into the pipe. */
      if (f->eof || !c->connected) {
        need = true;
        break;
      }
      uint64_t room = f->pipe_cap - flow_in_pipe(f);
      if (room == 0 || f->pipe_full)
        return progress;
      ssize_t n = splice(c->ufd, NULL, f->pipe_w, NULL, min_sz(limit, room),
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        flow_note(f, (size_t)n, now);
        f->body_pos += (uint64_t)n;
        if (f->remaining != UINT64_MAX)
          f->remaining -= (uint64_t)n;
        progress = 1;
        continue;
      }
      if (n == 0) {
        f->eof = true;
        need = true;
        break;
      }
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN) {
        /* The socket empty, or the pipe out of slots though not of bytes
         * (spliced pages need not be full). */
        int queued = 0;
        if (flow_in_pipe(f) > 0 && ioctl(c->ufd, FIONREAD, &queued) == 0 &&
            queued > 0)
          f->pipe_full = true;
        return progress;
      }
      return -1;
    }
    case RS_CHUNK_SIZE:
    case RS_CHUNK_END:
    case RS_TRAILER: {
      size_t ll = line_len(f);
      if (!ll) {
        if (avail == NP_BUF)
          return -1;
        need = true;
        break;
      }
      const char *line = f->buf + f->boff;
      if (f->state == RS_CHUNK_SIZE) {
        char *endp;
        unsigned long long size = strtoull(line, &endp, 16);
        if (endp == line)
          return -1;
        f->remaining = size;
        f->state = size ? RS_CHUNK_DATA : RS_TRAILER;
      } else if (f->state == RS_CHUNK_END) {
        f->state = RS_CHUNK_SIZE;
      } else if (ll <= 2) {
        f->state = RS_HEAD; /* the empty line: the response is complete */
        if (t)
          txn_pop(c);
      }
      out_append(f, line, ll);
      f->boff += ll;
      progress = 1;
      continue;
    }
    }
    if (!need)
      break;
    if (f->eof) {
      f->done = true;
      break;
    }
    if (!c->connected || f->pipe_full || flow_in_pipe(f) >= f->pipe_cap)
      break;
    int r = flow_read(f, c->ufd);
    if (r < 0)
      return -1;
    if (r == 0) {
      if (f->eof)
        progress = 1;
      else
        break;
    }
  }
  return progress;
}

/* Pipe -> destination, the bytes whose time has come. */
static int flow_output(struct np_proxy *p, struct np_flow *f, int dst,
                       bool to_client, int64_t now) {
  int progress = 0;
  uint64_t limit = flow_ready(f, now);
  while (limit > f->sent) {
    ssize_t n =
        splice(f->pipe_r, NULL, dst, NULL, min_sz(limit - f->sent, SIZE_MAX),
               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      f->sent += (uint64_t)n;
      if (to_client)
        p->st.bytes_down += (uint64_t)n;
      else
        p->st.bytes_up += (uint64_t)n;
      f->pipe_full = false;
      f->dst_blocked = false;
      progress = 1;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      f->dst_blocked = true;
      break;
    }
    return -1;
  }
  return progress;
}

/* What is due once bytes have moved: a cut whose point has been sent, an
 * EOF to pass on, a connection with nothing left to do. 1 progress, 0
 * none, -1 the conn was closed. */
static int conn_settle(struct np_proxy *p, struct np_conn *c, int64_t now) {
  struct np_flow *rq = &c->req, *rs = &c->resp;
  if (rs->halt != NP_CUT_NONE && flow_drained(rs)) {
    switch (rs->halt) {
    case NP_CUT_RESET:
      np_conn_close(p, c, true);
      return -1;
    case NP_CUT_TRUNCATE:
      shutdown(c->cfd, SHUT_WR);
      np_conn_close(p, c, false);
      return -1;
    case NP_CUT_STALL:
      if (rs->stall_until == 0)
        rs->stall_until =
            rs->halt_ms < 0 ? INT64_MAX : now + rs->halt_ms * 1000000;
      if (now >= rs->stall_until) {
        rs->halt = NP_CUT_NONE;
        rs->stall_until = 0;
        return 1;
      }
      break;
    case NP_CUT_NONE:
      break;
    }
  }
  /* The upstream is done: pass its EOF on, and the conn ends. */
  if (rs->done && flow_drained(rs) && rs->halt == NP_CUT_NONE) {
    shutdown(c->cfd, SHUT_WR);
    np_conn_close(p, c, false);
    return -1;
  }
  if (c->close_after && rs->state == RS_HEAD && flow_drained(rs)) {
    shutdown(c->cfd, SHUT_WR);
    np_conn_close(p, c, false);
    return -1;
  }
  /* The client is done: nothing outstanding (or a stalled answer nobody
   * waits for any more) ends the conn; else the upstream hears the EOF. */
  if (rq->done && flow_drained(rq) && !rq->shut) {
    if (rs->halt != NP_CUT_NONE ||
        (c->tq_count == 0 && rs->state == RS_HEAD && flow_drained(rs))) {
      np_conn_close(p, c, false);
      return -1;
    }
    if (c->connected) {
      shutdown(c->ufd, SHUT_WR);
      rq->shut = true;
      return 1;
    }
  }
  return 0;
}

static int64_t flow_wake(const struct np_flow *f) {
  int64_t w = INT64_MAX;
  if (f->ch_count > 0)
    w = f->chunks[f->ch_head].ready_ns;
  if (f->halt == NP_CUT_STALL && f->stall_until > 0 && f->stall_until < w)
    w = f->stall_until;
  return w;
}

void np_conn_pump(struct np_proxy *p, struct np_conn *c) {
  if (c->dead || p->frozen)
    return;
  c->again = false;
  int64_t now = np_now_ns();
  int round;
  for (round = 0; round < 16; round++) {
    int prog = 0, r;
    if ((r = req_input(p, c, now)) < 0)
      goto fail;
    prog |= r;
    if (c->connected) {
      if ((r = flow_output(p, &c->req, c->ufd, false, now)) < 0)
        goto fail;
      prog |= r;
    }
    if ((r = resp_input(p, c, now)) < 0)
      goto fail;
    prog |= r;
    if ((r = flow_output(p, &c->resp, c->cfd, true, now)) < 0)
      goto fail;
    prog |= r;
    if ((r = conn_settle(p, c, now)) < 0)
      return;
    prog |= r;
    if (!prog)
      break;
    if (c->req.ch_count || c->resp.ch_count || c->resp.halt)
      now = np_now_ns();
  }
  /* Still moving after 16 rounds: let the other conns have a turn. */
  if (round == 16)
    c->again = true;
  int64_t w = flow_wake(&c->req);
  int64_t w2 = flow_wake(&c->resp);
  c->wake_ns = w < w2 ? w : w2;
  np_conn_update_events(p, c);
  return;
fail:
  if (!c->connected)
    p->st.upstream_errors++;
  np_conn_close(p, c, true);
}

void np_conn_update_events(struct np_proxy *p, struct np_conn *c) {
  if (c->dead)
    return;
  struct np_flow *rq = &c->req, *rs = &c->resp;
  uint32_t cm = 0, um = 0;
  if (!p->frozen) {
    if (!rq->eof && rq->ooff == rq->olen && !rq->pipe_full &&
        flow_in_pipe(rq) < rq->pipe_cap && c->tq_count < NP_TXNS)
      cm |= EPOLLIN;
    if (rs->dst_blocked)
      cm |= EPOLLOUT;
    if (!c->connected) {
      um |= EPOLLOUT;
    } else {
      if (!rs->eof && rs->halt == NP_CUT_NONE && rs->ooff == rs->olen &&
          !rs->pipe_full && flow_in_pipe(rs) < rs->pipe_cap && !c->close_after)
        um |= EPOLLIN;
      if (rq->dst_blocked)
        um |= EPOLLOUT;
    }
  }
  struct epoll_event ev;
  if (cm != c->cmask) {
    ev.events = cm;
    ev.data.ptr = &c->cep;
    epoll_ctl(p->ep, EPOLL_CTL_MOD, c->cfd, &ev);
    c->cmask = cm;
  }
  if (um != c->umask) {
    ev.events = um;
    ev.data.ptr = &c->uep;
    epoll_ctl(p->ep, EPOLL_CTL_MOD, c->ufd, &ev);
    c->umask = um;
  }
}

void np_conn_event(struct np_proxy *p, struct np_conn *c, bool upstream,
                   uint32_t events) {
  if (c->dead)
    return;
  if (upstream && !c->connected) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err ||
        (events & (EPOLLERR | EPOLLHUP))) {
      if (p->cfg->verbose)
        fprintf(stderr, "netproxy: conn %" PRIu64 ": upstream: %s\n", c->id,
                strerror(err ? err : ECONNREFUSED));
      p->st.upstream_errors++;
      np_conn_close(p, c, true);
      return;
    }
    c->connected = true;
  }
  /* An error or hang-up on a socket we wait on for nothing (a frozen conn,
   * a stall) would be reported again and again: end the conn. */
  uint32_t mask = upstream ? c->umask : c->cmask;
  if ((events & EPOLLERR) ||
      ((events & EPOLLHUP) && !(mask & (EPOLLIN | EPOLLOUT)))) {
    np_conn_close(p, c, true);
    return;
  }
  np_conn_pump(p, c);
}

static int flow_init(struct np_flow *f, size_t pipe_bytes) {
  int fds[2];
  memset(f, 0, sizeof *f);
  f->pipe_r = f->pipe_w = -1;
  f->buf = malloc(NP_BUF);
  f->out = malloc(NP_OUT);
  if (!f->buf || !f->out || pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
    return -1;
  f->pipe_r = fds[0];
  f->pipe_w = fds[1];
  /* The largest pipe allowed, halving down: an unprivileged user's pipes
   * are limited (pipe-max-size, pipe-user-pages-soft). */
  for (size_t want = pipe_bytes; want >= 65536; want /= 2)
    if (fcntl(f->pipe_w, F_SETPIPE_SZ, (int)want) >= 0)
      break;
  int got = fcntl(f->pipe_w, F_GETPIPE_SZ);
  f->pipe_cap = got > 0 ? (size_t)got : 65536;
  return 0;
}

static void flow_free(struct np_flow *f) {
  if (f->pipe_r >= 0)
    close(f->pipe_r);
  if (f->pipe_w >= 0)
    close(f->pipe_w);
  f->pipe_r = f->pipe_w = -1;
  free(f->buf);
  free(f->out);
  f->buf = f->out = NULL;
}

struct np_conn *np_conn_new(struct np_proxy *p, int client_fd) {
  struct np_conn *c = calloc(1, sizeof *c);
  if (!c) {
    close(client_fd);
    return NULL;
  }
  c->cfd = client_fd;
  c->ufd = -1;
  c->id = ++p->serial;
  c->wake_ns = INT64_MAX;
  c->cep.kind = NP_EP_CLIENT;
  c->cep.obj = c;
  c->uep.kind = NP_EP_UPSTREAM;
  c->uep.obj = c;
  c->req.pipe_r = c->req.pipe_w = c->resp.pipe_r = c->resp.pipe_w = -1;
  int one = 1;
  if (flow_init(&c->req, 65536) < 0 ||
      flow_init(&c->resp, p->cfg->pipe_bytes) < 0)
    goto fail;
  c->ufd = socket(p->upstream.ss_family,
                  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->ufd < 0)
    goto fail;
  /* Heads are small writes: Nagle would hold them for the peer's ACK. */
  setsockopt(c->cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int rc, tries = 0;
  /* A unix socket answers EAGAIN while the server's backlog is full (a
   * loaded machine, nginx slow to accept): try again for up to a second
   * rather than reset a client the server would have taken. */
  while ((rc = connect(c->ufd, (struct sockaddr *)&p->upstream,
                       p->upstream_len)) < 0 &&
         errno == EAGAIN && tries++ < 200) {
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
  }
  if (rc < 0) {
    if (errno != EINPROGRESS) {
      p->st.upstream_errors++;
      goto fail;
    }
  } else {
    c->connected = true;
  }
  struct epoll_event ev;
  ev.events = 0;
  ev.data.ptr = &c->cep;
  if (epoll_ctl(p->ep, EPOLL_CTL_ADD, c->cfd, &ev) < 0)
    goto fail;
  ev.data.ptr = &c->uep;
  if (epoll_ctl(p->ep, EPOLL_CTL_ADD, c->ufd, &ev) < 0) {
    epoll_ctl(p->ep, EPOLL_CTL_DEL, c->cfd, NULL);
    goto fail;
  }
  c->next = p->conns;
  p->conns = c;
  p->st.conns++;
  p->st.active++;
  np_conn_update_events(p, c);
  return c;
fail : {
  /* The client sees a reset, as from a server that is not there. */
  struct linger lg = {1, 0};
  setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
}
  close(c->cfd);
  if (c->ufd >= 0)
    close(c->ufd);
  flow_free(&c->req);
  flow_free(&c->resp);
  free(c);
  return NULL;
}

void np_conn_close(struct np_proxy *p, struct np_conn *c, bool rst) {
  if (c->dead)
    return;
  if (rst) {
    struct linger lg = {1, 0};
    setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }
  /* close() takes the sockets out of the epoll set. */
  close(c->cfd);
  close(c->ufd);
  c->cfd = c->ufd = -1;
  flow_free(&c->req);
  flow_free(&c->resp);
  c->dead = true;
  p->st.active--;
  for (struct np_conn **pp = &p->conns; *pp; pp = &(*pp)->next) {
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  }
  c->next = p->dead;
  p->dead = c;
}

void np_conn_free(struct np_conn *c) { free(c); }
