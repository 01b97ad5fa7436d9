/* The streaming stage's arena (stream_impl.h): items in pages, taken
 * and given back under the stage's lock, and copies in and out of them. */
#include "pipeline/stream_impl.h"

#include <string.h>

/* ---- pages and items (under mu) ---------------------------------------- */

void gf_stream__free_item(gf_stream *s, uint32_t i) {
  item *it = &s->items[i];
  uint32_t p = it->page;
  for (uint32_t k = 0; k < it->npages; k++) {
    uint32_t nx = s->next[p];
    s->next[p] = s->free_page;
    s->free_page = p;
    s->free_pages++;
    p = nx;
  }
  it->kind = IT_FREE;
  it->npages = 0;
  it->page = NO_PAGE;
  it->next_free = s->free_item;
  s->free_item = i;
  if (s->lane_waiting)
    pthread_cond_broadcast(&s->lane_cv);
  if (s->emit_blocked && s->take_waiting) {
    s->emit_blocked = false;
    pthread_cond_broadcast(&s->take_cv);
  }
}

void gf_stream__wait_on(gf_stream *s, pthread_cond_t *cv, uint32_t *waiting) {
  (*waiting)++;
  pthread_cond_wait(cv, &s->mu);
  (*waiting)--;
}

uint32_t gf_stream__alloc_item(gf_stream *s, uint64_t bytes) {
  uint64_t n = gf_stream__pages_for(bytes ? bytes : 1);
  while (!s->stopping && (s->free_pages < n || s->free_item == UINT32_MAX))
    gf_stream__wait_on(s, &s->lane_cv, &s->lane_waiting);
  if (s->stopping)
    return UINT32_MAX;
  uint32_t i = s->free_item;
  item *it = &s->items[i];
  s->free_item = it->next_free;
  memset(it, 0, sizeof *it);
  it->npages = (uint32_t)n;
  /* Pages popped from the free list, chained in order. */
  uint32_t first = NO_PAGE, last = NO_PAGE;
  for (uint64_t k = 0; k < n; k++) {
    uint32_t p = s->free_page;
    s->free_page = s->next[p];
    s->free_pages--;
    if (last == NO_PAGE)
      first = p;
    else
      s->next[last] = p;
    last = p;
  }
  it->page = first;
  return i;
}

void gf_stream__item_io(gf_stream *s, const item *it, uint64_t off,
                        uint8_t *mem, uint64_t len, bool to_item) {
  uint32_t p = it->page;
  while (off >= GF_STREAM_PAGE) {
    p = s->next[p];
    off -= GF_STREAM_PAGE;
  }
  while (len) {
    uint64_t k = GF_STREAM_PAGE - off;
    if (k > len)
      k = len;
    uint8_t *pg = s->arena + (uint64_t)p * GF_STREAM_PAGE + off;
    if (to_item)
      memcpy(pg, mem, k);
    else
      memcpy(mem, pg, k);
    mem += k;
    len -= k;
    off = 0;
    p = s->next[p];
  }
}
