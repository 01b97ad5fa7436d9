/* The loader's position: set_epoch, resume state export and import, and
 * moving the cursors. */
#include "pipeline/loader_impl.h"

/* Restarts dispatch at (epoch, pos, k) with the next seq the consumer
 * expects. Under mu, after cancel_all. */
void gf_loader__restart_at(gf_loader *l, uint64_t epoch, uint64_t pos,
                           uint64_t k) {
  l->d_epoch = epoch;
  l->d_pos = pos;
  l->d_k = k;
  l->d_fseq = 0;
  if (l->fetch) /* no worker takes from it now (after cancel_all) */
    gf_fetch_restart(l->fetch, &l->sampler, epoch, pos);
  l->next_seq = l->c_seq;
  l->paused = false;
  pthread_cond_broadcast(&l->work_cv);
}

/* Moves both cursors to (epoch, pos, k), the epoch starting at global
 * position `start` (0: a full epoch; sampler.h section 4) in an order
 * dealt to `world` ranks (sampler.h section 3). Under mu. */
static void seek(gf_loader *l, uint64_t epoch, uint64_t start, uint32_t world,
                 uint64_t pos, uint64_t k) {
  gf_loader__cancel_all(l);
  /* Paused now: no worker dispatches from the sampler until restart_at. */
  gf_sampler_set_resume_world(&l->sampler, epoch, start, world);
  l->c_epoch = epoch;
  l->c_pos = pos;
  l->c_k = k;
  gf_loader__restart_at(l, epoch, pos, k);
}

int gf_loader_set_epoch(gf_loader *l, uint64_t epoch) {
  if (!l)
    return gf_loader__cfg_fail("set_epoch", "needs a loader");
  pthread_mutex_lock(&l->mu);
  /* Already there (the usual call right after GF_EEPOCHEND): keep what the
   * workers prefetched; a resumed epoch is not its beginning. */
  if (!(l->c_epoch == epoch && l->c_pos == 0 && l->c_k == 0 &&
        gf_sampler_epoch_start(&l->sampler, epoch) == 0))
    seek(l, epoch, 0, l->cfg.world ? l->cfg.world : 1, 0, 0);
  pthread_mutex_unlock(&l->mu);
  return 0;
}

static uint64_t fingerprint(gf_loader *l) {
  if (!l->have_fingerprint) {
    l->fingerprint = gf_source_fingerprint(l->src);
    l->have_fingerprint = true;
  }
  return l->fingerprint;
}

int gf_loader_state_export(gf_loader *l, gf_loader_state *st) {
  if (!l || !st)
    return gf_loader__cfg_fail("state_export", "needs a loader and a state");
  uint64_t fp = fingerprint(l);
  /* Under the lock: workers move the sampler's epoch while dispatching. */
  pthread_mutex_lock(&l->mu);
  gf_sampler s = l->sampler;
  uint64_t epoch = l->c_epoch, pos = l->c_pos, k = l->c_k;
  pthread_mutex_unlock(&l->mu);
  return gf_sampler_state_export(&s, fp, epoch, pos, k, st);
}

int gf_loader_state_import(gf_loader *l, const gf_loader_state *st) {
  if (!l || !st)
    return gf_loader__cfg_fail("state_import", "needs a loader and a state");
  uint64_t fp = fingerprint(l);
  pthread_mutex_lock(&l->mu);
  gf_sampler s = l->sampler;
  pthread_mutex_unlock(&l->mu);
  uint64_t pos, k;
  int rc = gf_sampler_state_import(&s, fp, st, &pos, &k);
  if (rc < 0)
    return rc;
  pthread_mutex_lock(&l->mu);
  if (gf_loader__lent_count(l)) {
    pthread_mutex_unlock(&l->mu);
    return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "release every batch before importing a state");
  }
  seek(l, gf_sampler_epoch(&s), gf_sampler_epoch_start(&s, st->epoch),
       s.resume_world, pos, k);
  pthread_mutex_unlock(&l->mu);
  return 0;
}
