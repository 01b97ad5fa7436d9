/* One accepted read and its progress, between the files of lib/io only:
 * reader.c keeps the slots, the backends (uring.c, pread.c) run their
 * operations and step them with the calls below (slot.c), which both
 * backends share. Not thread-safe: a slot is worked on by one thread at a
 * time (the reader's, or the pread thread running it). */
#ifndef GF_IO_SLOT_H
#define GF_IO_SLOT_H

#include "io/io.h"

/* One accepted read and its progress. */
typedef struct gf_io_slot {
  gf_read_req req;
  uint64_t done;         /* bytes read so far */
  uint64_t hiwater;      /* direct: furthest unaligned end seen (end of file) */
  int64_t result;        /* final result once complete */
  uint32_t retries;      /* consecutive -EAGAIN/-EINTR */
  uint32_t direct_align; /* 0 when not direct */
  /* counters for gf_reader_stats, summed when the read is returned */
  uint32_t ops, continued, retried, fixed_ops;
  /* An engine's words for a failed read (gf_read_done.why): the object,
   * the range, what the server said, the retries made. Never a secret. */
  char why[256];
} gf_io_slot;

/* The next operation a slot needs: the rest of the read, at most 1 GiB. */
void gf_io_slot_next(const gf_io_slot *s, uint64_t *off, void **buf,
                     uint32_t *len);
/* Takes the result `res` of an operation of `asked` bytes for slot s.
 * Returns true when the read is complete (s->result set), false when it
 * needs another operation (continue or retry). */
bool gf_io_slot_step(gf_io_slot *s, int64_t res, uint32_t asked);

#endif /* GF_IO_SLOT_H */
