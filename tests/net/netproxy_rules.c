/* netproxy: the rules. A rule is one line, an action and then key=value
 * words (docs/TESTING.md has the list):
 *
 *   status 503 path=/shard-0001 nth=2 retry-after=1
 *   stall after=65536 ms=3000
 *   reset after=0 prob=0.1 seed=7
 *   flip at=100 mask=0x01 path=.bin
 *
 * Every rule sees every request: one that matches (path, method) counts
 * it, and fires on the nth match, or with probability prob, or always;
 * times= bounds how often. What fires is written into the request's
 * transaction (struct np_txn) for the connection code to carry out. */
#include "netproxy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const action_names[] = {
    [NP_STATUS] = "status",     [NP_STALL] = "stall",
    [NP_RESET] = "reset",       [NP_TRUNCATE] = "truncate",
    [NP_STRIP] = "strip-range", [NP_ETAG] = "etag",
    [NP_FLIP] = "flip",         [NP_DELAY] = "delay",
};

static bool parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (errno || end == s || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

#define FAIL(...)                                                              \
  do {                                                                         \
    snprintf(err, err_cap, __VA_ARGS__);                                       \
    free(r);                                                                   \
    return NULL;                                                               \
  } while (0)

struct np_rule *np_rule_parse(const char *text, char *err, size_t err_cap) {
  char copy[1024];
  if (strlen(text) >= sizeof copy) {
    snprintf(err, err_cap, "rule too long");
    return NULL;
  }
  strcpy(copy, text);
  struct np_rule *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, err_cap, "out of memory");
    return NULL;
  }
  r->prob = 1.0;
  r->rng = 1;
  r->retry_after = -1;
  r->after = -1;
  r->ms = -1;
  r->at = -1;
  r->mask = 0xff;
  char *save = NULL;
  char *tok = strtok_r(copy, " \t\r\n", &save);
  if (!tok)
    FAIL("empty rule");
  int action = -1;
  for (int i = 0; i < (int)(sizeof action_names / sizeof *action_names); i++)
    if (strcmp(tok, action_names[i]) == 0)
      action = i;
  if (action < 0)
    FAIL("unknown action '%s' (status, stall, reset, truncate, "
         "strip-range, etag, flip, delay)",
         tok);
  r->action = (enum np_action)action;
  bool have_at = false;
  int64_t v;
  while ((tok = strtok_r(NULL, " \t\r\n", &save))) {
    char *eq = strchr(tok, '=');
    const char *val = eq ? eq + 1 : "";
    if (eq)
      *eq = '\0';
    /* The positional argument of status and delay. */
    if (!eq && r->action == NP_STATUS && r->status == 0 &&
        parse_i64(tok, 100, 599, &v)) {
      r->status = (int)v;
    } else if (!eq && r->action == NP_DELAY && r->ms < 0 &&
               parse_i64(tok, 0, 3600000, &v)) {
      r->ms = v;
    } else if (strcmp(tok, "path") == 0 && eq) {
      if (strlen(val) >= sizeof r->path)
        FAIL("path too long");
      strcpy(r->path, val);
    } else if (strcmp(tok, "method") == 0 && eq) {
      if (strlen(val) >= sizeof r->method)
        FAIL("method too long");
      strcpy(r->method, val);
    } else if (strcmp(tok, "nth") == 0 && parse_i64(val, 1, INT64_MAX, &v)) {
      r->nth = (uint64_t)v;
    } else if (strcmp(tok, "from") == 0 && parse_i64(val, 1, INT64_MAX, &v)) {
      r->from = (uint64_t)v;
    } else if (strcmp(tok, "every") == 0 && !eq) {
      r->nth = 0;
    } else if (strcmp(tok, "prob") == 0 && eq) {
      char *end;
      r->prob = strtod(val, &end);
      if (end == val || *end || !(r->prob >= 0 && r->prob <= 1))
        FAIL("prob=%s: want a number from 0 to 1", val);
    } else if (strcmp(tok, "seed") == 0 && parse_i64(val, 0, INT64_MAX, &v)) {
      r->rng = (uint64_t)v;
    } else if (strcmp(tok, "times") == 0 && parse_i64(val, 1, INT64_MAX, &v)) {
      r->times = (uint64_t)v;
    } else if (strcmp(tok, "code") == 0 && r->action == NP_STATUS &&
               parse_i64(val, 100, 599, &v)) {
      r->status = (int)v;
    } else if (strcmp(tok, "retry-after") == 0 && r->action == NP_STATUS &&
               parse_i64(val, 0, 86400, &v)) {
      r->retry_after = (int)v;
    } else if (strcmp(tok, "s3code") == 0 && r->action == NP_STATUS && eq) {
      if (!val[0] || strlen(val) >= sizeof r->s3code)
        FAIL("s3code: 1 to %zu characters", sizeof r->s3code - 1);
      for (const char *c = val; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
              (*c >= '0' && *c <= '9')))
          FAIL("s3code=%s: letters and digits only", val);
      strcpy(r->s3code, val);
    } else if (strcmp(tok, "close") == 0 && r->action == NP_STATUS &&
               (!eq || strcmp(val, "1") == 0)) {
      r->close = true;
    } else if (strcmp(tok, "after") == 0 &&
               (r->action == NP_STALL || r->action == NP_RESET ||
                r->action == NP_TRUNCATE) &&
               parse_i64(val, 0, INT64_MAX, &v)) {
      r->after = v;
    } else if (strcmp(tok, "ms") == 0 &&
               (r->action == NP_STALL || r->action == NP_DELAY)) {
      if (r->action == NP_STALL && strcmp(val, "forever") == 0)
        r->ms = -1;
      else if (parse_i64(val, 0, 86400000, &v))
        r->ms = v;
      else
        FAIL("ms=%s: want milliseconds%s", val,
             r->action == NP_STALL ? " or forever" : "");
    } else if (strcmp(tok, "at") == 0 && r->action == NP_FLIP &&
               parse_i64(val, 0, INT64_MAX, &v)) {
      r->at = v;
      have_at = true;
    } else if (strcmp(tok, "mask") == 0 && r->action == NP_FLIP &&
               parse_i64(val, 1, 255, &v)) {
      r->mask = (uint8_t)v;
    } else if (strcmp(tok, "value") == 0 && r->action == NP_ETAG && eq) {
      if (!*val || strlen(val) >= sizeof r->etag)
        FAIL("value= wants 1 to %zu characters", sizeof r->etag - 1);
      strcpy(r->etag, val);
    } else {
      FAIL("'%s%s%s' is not something a %s rule takes", tok, eq ? "=" : "", val,
           action_names[r->action]);
    }
  }
  if (r->action == NP_STATUS && r->status == 0)
    FAIL("status wants a code (status 503)");
  if (r->action == NP_DELAY && r->ms < 0)
    FAIL("delay wants milliseconds (delay 100)");
  if (r->action == NP_FLIP && !have_at)
    FAIL("flip wants at=OFFSET (a body offset)");
  return r;
}

void np_rule_format(const struct np_rule *r, char *buf, size_t cap) {
  size_t n = 0;
#define ADD(...)                                                               \
  do {                                                                         \
    if (n < cap)                                                               \
      n += (size_t)snprintf(buf + n, cap - n, __VA_ARGS__);                    \
  } while (0)
  ADD("%d %s", r->id, action_names[r->action]);
  switch (r->action) {
  case NP_STATUS:
    ADD(" %d", r->status);
    if (r->retry_after >= 0)
      ADD(" retry-after=%d", r->retry_after);
    if (r->s3code[0])
      ADD(" s3code=%s", r->s3code);
    if (r->close)
      ADD(" close");
    break;
  case NP_STALL:
  case NP_RESET:
  case NP_TRUNCATE:
    if (r->after >= 0)
      ADD(" after=%" PRId64, r->after);
    if (r->action == NP_STALL) {
      if (r->ms < 0)
        ADD(" ms=forever");
      else
        ADD(" ms=%" PRId64, r->ms);
    }
    break;
  case NP_ETAG:
    if (r->etag[0])
      ADD(" value=%s", r->etag);
    break;
  case NP_FLIP:
    ADD(" at=%" PRId64 " mask=0x%02x", r->at, r->mask);
    break;
  case NP_DELAY:
    ADD(" %" PRId64, r->ms);
    break;
  case NP_STRIP:
    break;
  }
  if (r->path[0])
    ADD(" path=%s", r->path);
  if (r->method[0])
    ADD(" method=%s", r->method);
  if (r->nth)
    ADD(" nth=%" PRIu64, r->nth);
  if (r->from)
    ADD(" from=%" PRIu64, r->from);
  if (r->prob < 1)
    ADD(" prob=%g", r->prob);
  if (r->times)
    ADD(" times=%" PRIu64, r->times);
  ADD(" seen=%" PRIu64 " fired=%" PRIu64, r->seen, r->fired);
#undef ADD
}

static bool rule_fires(struct np_rule *r, const char *method,
                       const char *target) {
  if (r->path[0] && !strstr(target, r->path))
    return false;
  if (r->method[0] && strcasecmp(r->method, method) != 0)
    return false;
  r->seen++;
  if (r->times && r->fired >= r->times)
    return false;
  if (r->nth && r->seen != r->nth)
    return false;
  if (r->from && r->seen < r->from)
    return false;
  if (r->prob < 1) {
    double u = (double)(rng_next(&r->rng) >> 11) * 0x1.0p-53;
    if (u >= r->prob)
      return false;
  }
  r->fired++;
  return true;
}

void np_rules_apply(struct np_rule *rules, const char *method,
                    const char *target, struct np_txn *t, struct np_stats *st) {
  for (struct np_rule *r = rules; r; r = r->next) {
    if (!rule_fires(r, method, target))
      continue;
    st->fired++;
    switch (r->action) {
    case NP_STATUS:
      st->f_status++;
      if (!t->status) {
        t->status = r->status;
        t->retry_after = r->retry_after;
        t->close = r->close;
        memcpy(t->s3code, r->s3code, sizeof t->s3code);
      }
      break;
    case NP_STALL:
    case NP_RESET:
    case NP_TRUNCATE:
      if (r->action == NP_STALL)
        st->f_stall++;
      else if (r->action == NP_RESET)
        st->f_reset++;
      else
        st->f_truncate++;
      if (t->cut == NP_CUT_NONE) {
        t->cut = r->action == NP_STALL   ? NP_CUT_STALL
                 : r->action == NP_RESET ? NP_CUT_RESET
                                         : NP_CUT_TRUNCATE;
        t->cut_after = r->after;
        t->stall_ms = r->ms;
      }
      break;
    case NP_STRIP:
      st->f_strip++;
      t->strip_range = true;
      break;
    case NP_ETAG:
      st->f_etag++;
      if (!t->etag) {
        t->etag = true;
        strcpy(t->etag_value, r->etag);
      }
      break;
    case NP_FLIP:
      st->f_flip++;
      if (t->flip_at < 0) {
        t->flip_at = r->at;
        t->flip_mask = r->mask;
      }
      break;
    case NP_DELAY:
      st->f_delay++;
      t->delay_ms += r->ms;
      break;
    }
  }
}

static const char *reason(int code) {
  switch (code) {
  case 400:
    return "Bad Request";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 408:
    return "Request Timeout";
  case 416:
    return "Range Not Satisfiable";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 502:
    return "Bad Gateway";
  case 503:
    return "Service Unavailable";
  case 504:
    return "Gateway Timeout";
  default:
    return "Injected";
  }
}

size_t np_synth_response(const struct np_txn *t, char *buf, size_t cap) {
  char body[256];
  int bl =
      t->s3code[0]
          ? snprintf(body, sizeof body,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<Error><Code>%s</Code><Message>netproxy: injected "
                     "%d %s</Message></Error>",
                     t->s3code, t->status, t->s3code)
          : snprintf(body, sizeof body, "netproxy: injected %d\n", t->status);
  char retry[48] = "";
  if (t->retry_after >= 0)
    snprintf(retry, sizeof retry, "Retry-After: %d\r\n", t->retry_after);
  int n = snprintf(buf, cap,
                   "HTTP/1.1 %d %s\r\nServer: netproxy\r\n"
                   "Content-Type: %s\r\nContent-Length: %d\r\n"
                   "%s%s\r\n%s",
                   t->status, reason(t->status),
                   t->s3code[0] ? "application/xml" : "text/plain", bl, retry,
                   t->close ? "Connection: close\r\n" : "",
                   t->head_method ? "" : body);
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
