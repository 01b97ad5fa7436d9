/* netproxy: a fault and latency proxy for the network tests (a test
 * helper, not part of the library). It listens on 127.0.0.1, forwards each
 * connection to one upstream (nginx), finds the HTTP/1.1 request and
 * response boundaries on the way, and applies the rules that match a
 * request: an injected status, a stall, a reset, a truncation, a stripped
 * Range header, a changed ETag, a flipped body byte, an added delay. The
 * rule syntax and the control protocol are in docs/TESTING.md.
 *
 * Files: netproxy.c parses the command line; netproxy_loop.c owns the
 * listeners, the epoll loop, the control port and the timers;
 * netproxy_conn.c forwards one connection (the bytes of a body go
 * socket -> pipe -> socket by splice unless a rule needs to see them);
 * netproxy_rules.c parses rules and decides what a request gets.
 * One thread. */
#ifndef GF_NETPROXY_H
#define GF_NETPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h> /* struct sockaddr_storage */

/* ---- rules (netproxy_rules.c) ---- */

enum np_action {
  NP_STATUS,   /* answer CODE instead of forwarding */
  NP_STALL,    /* send nothing more for ms (or forever) */
  NP_RESET,    /* RST the client */
  NP_TRUNCATE, /* close the client cleanly (FIN) */
  NP_STRIP,    /* remove the request's Range header */
  NP_ETAG,     /* change the response's ETag value */
  NP_FLIP,     /* XOR one body byte */
  NP_DELAY,    /* add ms to this request's round trip */
};

#define NP_TEXT_MAX 200

struct np_rule {
  struct np_rule *next;
  int id;
  enum np_action action;
  /* What it matches. */
  char path[NP_TEXT_MAX]; /* substring of the request target; "" any */
  char method[16];        /* "" any */
  uint64_t nth;           /* fire on the nth match only; 0: every match */
  uint64_t from;          /* fire on the matches from the from-th on; 0:
                             from the first */
  double prob;            /* fire with this probability; 1 default */
  uint64_t rng;           /* the rule's generator (seed=) */
  uint64_t times;         /* fire at most this often; 0 unlimited */
  uint64_t seen;          /* requests matched */
  uint64_t fired;         /* times it applied */
  /* What it does. */
  int status;             /* NP_STATUS */
  int retry_after;        /* NP_STATUS: Retry-After seconds, -1 none */
  bool close;             /* NP_STATUS: Connection: close, then close */
  char s3code[64];        /* NP_STATUS: an S3 XML error body with this
                             Code ("" the text body) */
  int64_t after;          /* STALL/RESET/TRUNCATE: body bytes first; -1 none */
  int64_t ms;             /* STALL: -1 forever; DELAY: added round trip */
  int64_t at;             /* FLIP: body offset */
  uint8_t mask;           /* FLIP: XOR mask */
  char etag[NP_TEXT_MAX]; /* ETAG: new value; "" the old one changed */
};

/* What one request gets: every rule that fires adds its part; where two
 * set the same thing (two statuses, two cuts) the earlier rule wins. */
enum np_cut { NP_CUT_NONE, NP_CUT_STALL, NP_CUT_RESET, NP_CUT_TRUNCATE };

struct np_txn {
  bool head_method; /* HEAD: the response has no body */
  int status;       /* injected status; 0 none */
  int retry_after;
  bool close;
  char s3code[64]; /* the status's S3 error Code, or "" */
  enum np_cut cut;
  int64_t cut_after; /* body bytes sent before the cut; -1 before any */
  int64_t stall_ms;  /* -1 forever */
  bool etag;
  char etag_value[NP_TEXT_MAX];
  int64_t flip_at; /* -1 none */
  uint8_t flip_mask;
  int64_t delay_ms; /* added to the round trip: half each way */
  bool strip_range;
};

struct np_stats {
  uint64_t conns, active, requests, forwarded, responses, bytes_up, bytes_down,
      upstream_errors, fired, f_status, f_stall, f_reset, f_truncate, f_strip,
      f_etag, f_flip, f_delay;
};

/* Parses one rule ("status 503 path=/a nth=2"); on error returns -1 with
 * a message in err. The rule is malloc'd; the caller frees it. */
struct np_rule *np_rule_parse(const char *text, char *err, size_t err_cap);
/* Writes the rule back as text (with its counters) into buf. */
void np_rule_format(const struct np_rule *r, char *buf, size_t cap);
/* Runs every rule over one request and fills txn; counts what fired. */
void np_rules_apply(struct np_rule *rules, const char *method,
                    const char *target, struct np_txn *txn,
                    struct np_stats *st);
/* The response for an injected status, for the request's method. Returns
 * its length (at most cap). */
size_t np_synth_response(const struct np_txn *txn, char *buf, size_t cap);

/* ---- the proxy (netproxy_loop.c, netproxy_conn.c) ---- */

struct np_config {
  const char *listen_host;
  int listen_port; /* 0: any free port */
  bool reuseport;  /* SO_REUSEPORT: several netproxy processes on one
                      port, the kernel spreading the connections */
  const char *upstream_host;
  int upstream_port;
  int control_port; /* 0: any free port */
  int64_t latency_ms;
  size_t pipe_bytes; /* per connection, server to client */
  const char *port_file;
  bool die_with_parent;
  int verbose;
  struct np_rule *rules; /* handed over to the proxy */
};

/* Runs the proxy until quit or SIGTERM/SIGINT. Returns the exit status. */
int np_run(struct np_config *cfg);

/* ---- internals shared by netproxy_loop.c and netproxy_conn.c ---- */

#define NP_BUF (32 * 1024)     /* bytes read to be looked at, a flow */
#define NP_OUT (NP_BUF + 1024) /* bytes made, waiting for the pipe */
#define NP_CHUNKS 256          /* delayed chunks in flight, a flow */
#define NP_TXNS 64             /* requests awaiting their response */

/* Bytes that entered a flow's pipe up to `end`, sendable from `ready_ns`. */
struct np_chunk {
  uint64_t end;
  int64_t ready_ns;
};

/* One direction of a connection: source socket -> pipe -> destination
 * socket. Bytes a rule must see or change pass through buf and out on the
 * way into the pipe; the rest are spliced in. pushed - sent bytes are in
 * the pipe, always in stream order. */
struct np_flow {
  int pipe_r, pipe_w;
  size_t pipe_cap;
  uint64_t pushed, sent;
  struct np_chunk chunks[NP_CHUNKS];
  unsigned ch_head, ch_count;
  uint64_t ready_end; /* sendable up to here while chunks wait */
  int64_t delay_ns;   /* one way, for the current request */
  char *buf;          /* read, not yet looked at: buf[boff, blen) */
  size_t boff, blen;
  char *out; /* made, not yet in the pipe: out[ooff, olen) */
  size_t ooff, olen;
  bool eof;           /* the source said EOF */
  bool done;          /* ... and nothing more can come of it */
  bool shut;          /* the destination was shut down for writing */
  bool pipe_full;     /* the last write into the pipe did not fit */
  bool dst_blocked;   /* the last splice out found no room */
  int state;          /* what the parser expects next */
  bool discard;       /* request body of an unforwarded request */
  uint64_t remaining; /* body (or chunk) bytes left; UINT64_MAX: to EOF */
  uint64_t body_pos;  /* body bytes so far of the current response */
  enum np_cut halt;   /* a cut waiting for the pipe to drain */
  int64_t halt_ms;
  int64_t stall_until; /* 0: not stalled yet; INT64_MAX: forever */
};

struct np_proxy;
struct np_conn;

/* What an epoll event points at. */
enum np_ep_kind {
  NP_EP_LISTEN,
  NP_EP_CONTROL,
  NP_EP_SIGNAL,
  NP_EP_CLIENT,
  NP_EP_UPSTREAM,
  NP_EP_CTLCONN
};
struct np_ep {
  enum np_ep_kind kind;
  void *obj;
};

struct np_conn {
  struct np_conn *next;
  uint64_t id;
  int cfd, ufd;     /* client, upstream */
  bool connected;   /* the upstream connect completed */
  bool dead;        /* closed; freed after this batch of events */
  bool again;       /* pump again without waiting for an event */
  bool close_after; /* an injected status with close: end after it */
  uint32_t cmask, umask;
  struct np_ep cep, uep;
  struct np_flow req, resp;
  struct np_txn txns[NP_TXNS];
  unsigned tq_head, tq_count;
  int64_t wake_ns; /* next timer; INT64_MAX none */
};

struct np_ctlconn {
  struct np_ctlconn *next;
  int fd;
  bool dead;
  struct np_ep ep;
  size_t len;
  char line[4096];
};

struct np_proxy {
  struct np_config *cfg;
  int ep, lfd, cfd, sfd;
  int port, cport;
  struct sockaddr_storage upstream;
  unsigned upstream_len;
  struct np_ep lep, cep, sep;
  struct np_conn *conns, *dead;
  struct np_ctlconn *ctls;
  struct np_rule *rules;
  int next_rule_id;
  struct np_stats st;
  int64_t latency_ms;
  bool frozen;   /* kill hang: nothing accepted or forwarded */
  bool refusing; /* kill refuse: no listener */
  bool quit;
  uint64_t serial;
};

int64_t np_now_ns(void);
/* Accepts one client: connects to the upstream, makes the pipes. The conn
 * is on p->conns; NULL (the client closed) when out of resources. */
struct np_conn *np_conn_new(struct np_proxy *p, int client_fd);
/* An epoll event on one of the conn's sockets. */
void np_conn_event(struct np_proxy *p, struct np_conn *c, bool upstream,
                   uint32_t events);
/* Moves every byte it can and applies what is due; sets c->wake_ns. */
void np_conn_pump(struct np_proxy *p, struct np_conn *c);
/* Closes both sockets (the client's with RST when rst) and moves the conn
 * to p->dead. */
void np_conn_close(struct np_proxy *p, struct np_conn *c, bool rst);
/* Frees a closed conn. */
void np_conn_free(struct np_conn *c);
/* Sets the epoll interest of the conn's sockets from its state. */
void np_conn_update_events(struct np_proxy *p, struct np_conn *c);

/* Sends one control command to 127.0.0.1:port and prints the reply line.
 * Returns 0 when the reply starts with "ok", else 1. */
int np_ctl(int port, const char *cmd);

#endif
