/* The pages of an index that cannot be mapped (its storage has no
 * descriptors: HTTP, S3), read on demand: a memory image of the object in
 * which each GF_PAGE_SIZE page is read once, with ranged reads, when
 * something first needs it, and then stays (so the image never holds more
 * than the index's size, as a mapped index's page cache would). Many
 * pages needed at once (a batch's records, a check of the whole index)
 * are read concurrently through the storage's engine. Only dataset.c
 * includes this.
 *
 * Threads: every call may be made from any number of threads at once,
 * but destroy. A page is read by one thread only: others that need it
 * meanwhile wait for that read, and read it themselves only when it
 * failed. */
#ifndef GF_FORMAT_PAGES_H
#define GF_FORMAT_PAGES_H

#include "common/common.h"
#include "io/storage.h"

/* A page: 4 KiB = 64 index records. Over a network a read of 4 KiB takes
 * about what a read of 64 bytes does (one round trip), and a shuffled
 * epoch touches records at random: smaller pages would save no round
 * trip, larger ones would fetch records that no batch near uses (a batch
 * of 256 random samples reads 1 MiB of 4 KiB pages, 16 MiB of 64 KiB
 * pages). It is also the page of the mapped index on a local disk. */
#define GF_PAGE_SIZE 4096u
/* The longest single read when adjacent pages are missing together (a
 * check of the whole index, a block order's run of records): 1 MiB, many
 * of them in flight, takes a 64 MiB index in one wave of reads. */
#define GF_PAGE_RUN_MAX (1u << 20)
/* Reads in flight at once for pages needed together: half a remote
 * storage's default connections (gf_remote_config.max_connections, 256),
 * so that the samples' reads keep the other half. */
#define GF_PAGE_READS_IN_FLIGHT 128u

typedef struct gf_pages gf_pages;

typedef struct gf_range {
  uint64_t off, len;
} gf_range;

/* An empty image of object o's first `size` bytes; o (which must outlive
 * it) is read for the pages, `path` names it in messages (copied).
 * Returns 0 or -ENOMEM/-errno (the image is reserved address space:
 * untouched pages take no memory) with context. */
int gf_pages_create(gf_object *o, uint64_t size, const char *path,
                    gf_pages **out);
/* Stops nothing (no read may be under way) and frees. NULL accepted. */
void gf_pages_destroy(gf_pages *p);
/* The image: bytes [off, off + len) are valid once gf_pages_ready() or
 * gf_pages_load() said so, and never change after. */
const uint8_t *gf_pages_image(const gf_pages *p);
/* Copies the object's first `len` bytes (read by the caller) into the
 * image and marks the pages they cover whole as read. Before any other
 * thread uses p. */
void gf_pages_fill(gf_pages *p, const void *src, uint64_t len);
/* Whether bytes [off, off + len) are in memory. Lock-free. */
bool gf_pages_ready(const gf_pages *p, uint64_t off, uint64_t len);
/* Makes the bytes of every range in memory: the pages not yet read are
 * read (adjacent ones together, up to GF_PAGE_RUN_MAX a read; several
 * reads at once through the storage's engine when there are several),
 * those another thread is reading are waited for. Returns 0, or the
 * first failed read's error naming the object, the byte range and why
 * (`sample` in the context: the sample that needed it, or GF_NO_INDEX).
 * The pages of a failed read are read again by the next call that needs
 * them. */
int gf_pages_load(gf_pages *p, const gf_range *r, size_t n, uint64_t sample);
/* What it read since create: reads, their bytes, pages in memory. */
void gf_pages_counters(const gf_pages *p, uint64_t *reads, uint64_t *bytes,
                       uint64_t *pages);

#endif
