/* The loader's position: set_epoch, resume state export and import, and
 * moving the cursors. */
#include "pipeline/loader_impl.h"

/* Restarts dispatch at (epoch, pos, k) with the next seq the consumer
 * expects. Under mu, after cancel_all. */
void restart_at(gf_loader *l, uint64_t epoch, uint64_t pos,
                       uint64_t k) {
  l->d_epoch = epoch;
  l->d_pos = pos;
  l->d_k = k;
  l->next_seq = l->c_seq;
  l->paused = false;
  pthread_cond_broadcast(&l->work_cv);
}

/* Moves both cursors to (epoch, pos, k). Under mu. */
static void seek(gf_loader *l, uint64_t epoch, uint64_t pos, uint64_t k) {
  cancel_all(l);
  l->c_epoch = epoch;
  l->c_pos = pos;
  l->c_k = k;
  restart_at(l, epoch, pos, k);
}

int gf_loader_set_epoch(gf_loader *l, uint64_t epoch) {
  if (!l)
    return cfg_fail("set_epoch", "needs a loader");
  pthread_mutex_lock(&l->mu);
  /* Already there (the usual call right after GF_EEPOCHEND): keep what the
   * workers prefetched. */
  if (!(l->c_epoch == epoch && l->c_pos == 0 && l->c_k == 0))
    seek(l, epoch, 0, 0);
  pthread_mutex_unlock(&l->mu);
  return 0;
}

int gf_loader_state_export(gf_loader *l, gf_loader_state *st) {
  if (!l || !st)
    return cfg_fail("state_export", "needs a loader and a state");
  pthread_mutex_lock(&l->mu);
  memset(st, 0, sizeof *st);
  st->version = GF_LOADER_STATE_VERSION;
  st->world = l->cfg.world;
  st->seed = l->cfg.seed;
  st->epoch = l->c_epoch;
  st->position = l->c_pos;
  st->batch = l->c_k;
  st->config_check = gf_sampler_config_check(&l->sampler);
  pthread_mutex_unlock(&l->mu);
  return 0;
}

int gf_loader_state_import(gf_loader *l, const gf_loader_state *st) {
  if (!l || !st)
    return cfg_fail("state_import", "needs a loader and a state");
  /* Under the lock: workers move the sampler's epoch while dispatching. */
  pthread_mutex_lock(&l->mu);
  uint64_t check = gf_sampler_config_check(&l->sampler);
  pthread_mutex_unlock(&l->mu);
  const char *bad = NULL;
  if (st->version != GF_LOADER_STATE_VERSION)
    bad = "version";
  else if (st->world != l->cfg.world)
    bad = "world";
  else if (st->seed != l->cfg.seed)
    bad = "seed";
  else if (st->config_check != check)
    bad = "config_check (dataset size, order, batch size, partition or "
          "drop_last differ)";
  else if (st->position > l->share)
    bad = "position";
  if (bad)
    return gf_fail(GF_ESTATE, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "resume state does not match this loader: %s differs", bad);
  pthread_mutex_lock(&l->mu);
  if (lent_count(l)) {
    pthread_mutex_unlock(&l->mu);
    return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "release every batch before importing a state");
  }
  seek(l, st->epoch, st->position, st->batch);
  pthread_mutex_unlock(&l->mu);
  return 0;
}
