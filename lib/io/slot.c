/* One read's progress, the semantics both backends share: continue short
 * counts, retry EAGAIN/EINTR, end of file. */
#include "io/slot.h"

/* One operation reads at most this much: io_uring's length field is 32
 * bits and Linux caps one read at 2 GiB - 4 KiB; a power of two keeps
 * direct reads aligned. */
#define GF_IO_MAX_OP (1u << 30)

void gf_io_slot_next(const gf_io_slot *s, uint64_t *off, void **buf,
                     uint32_t *len) {
  uint64_t rest = s->req.length - s->done;
  *off = s->req.offset + s->done;
  *buf = (char *)s->req.buf + s->done;
  *len = rest > GF_IO_MAX_OP ? GF_IO_MAX_OP : (uint32_t)rest;
}

static bool slot_eof(gf_io_slot *s) {
  if (s->hiwater > s->done)
    s->done = s->hiwater;
  s->result = (s->req.flags & GF_READ_EOF_OK) ? (int64_t)s->done
                                              : (int64_t)GF_ETRUNCATED;
  return true;
}

bool gf_io_slot_step(gf_io_slot *s, int64_t res, uint32_t asked) {
  if (res < 0) {
    if ((res == -EAGAIN || res == -EINTR) && s->retries < GF_IO_MAX_RETRIES) {
      s->retries++;
      s->retried++;
      return false;
    }
    s->result = res;
    return true;
  }
  if ((uint64_t)res > asked) {
    s->result = GF_EINTERNAL;
    return true;
  }
  if (res == 0)
    return slot_eof(s);
  s->retries = 0;
  s->done += (uint64_t)res;
  if (s->done == s->req.length) {
    s->result = (int64_t)s->done;
    return true;
  }
  if (s->direct_align && s->done % s->direct_align) {
    /* O_DIRECT cannot continue at an unaligned offset: read again from the
     * aligned start below. The kernel returns unaligned counts only at end
     * of file, so a second unaligned end no further than the first one is
     * the end of the file. */
    if (s->done <= s->hiwater)
      return slot_eof(s);
    s->hiwater = s->done;
    s->done -= s->done % s->direct_align;
  }
  s->continued++;
  return false;
}
