/* The loader's position: set_epoch, resume state export and import, and
 * moving the cursors. */
#include "pipeline/loader_impl.h"

#include <stdio.h>

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
  if (l->stream) /* likewise: replays the epoch unless already there */
    gf_stream_seek(l->stream, epoch, pos);
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

/* A streaming source's state: where this rank stands in its own stream
 * (positions are each rank's: samples 0 says so), and what its order
 * depends on. */
static void stream_export(gf_loader *l, uint64_t fp, uint64_t epoch,
                          uint64_t pos, uint64_t k, gf_loader_state *st) {
  gf_loader_state t;
  memset(&t, 0, sizeof t);
  t.struct_size = (uint32_t)sizeof t;
  t.version = GF_LOADER_STATE_VERSION;
  t.epoch = epoch;
  t.batch = k;
  t.position = pos;
  t.rank_position = pos;
  t.samples = 0;
  t.fingerprint = fp;
  t.seed = l->cfg.seed;
  t.batch_size = l->cfg.batch_size;
  t.order = l->cfg.order;
  t.partition = l->cfg.partition;
  t.drop_last = l->cfg.drop_last;
  t.world = l->cfg.world ? l->cfg.world : 1;
  t.rank = l->cfg.rank;
  t.order_world = t.world;
  t.check = gf_sampler_state_check(&t);
  *st = t;
}

/* Checks a state for a streaming source: the same stream (fingerprint,
 * seed, order, batch size, drop_last) read by the same rank of the same
 * world, since a rank's positions are its own stream's. */
static int stream_import_check(gf_loader *l, uint64_t fp,
                               const gf_loader_state *st) {
  const char *why = NULL;
  char buf[200];
  if (st->struct_size != sizeof *st || st->version != GF_LOADER_STATE_VERSION)
    why = "not a state of this version";
  else if (st->check != gf_sampler_state_check(st))
    why = "its check does not match (damaged or edited)";
  else if (st->samples != 0)
    why = "it was made by a loader over an indexed source (streaming mode "
          "follows its own order)";
  else if (st->fingerprint != fp)
    why = "it was made for other shards or stream options";
  else if (st->seed != l->cfg.seed || st->order != l->cfg.order ||
           st->batch_size != l->cfg.batch_size ||
           st->drop_last != l->cfg.drop_last)
    why = "its seed, order, batch size or drop_last differ";
  else if (st->world != (l->cfg.world ? l->cfg.world : 1) ||
           st->rank != l->cfg.rank) {
    snprintf(buf, sizeof buf,
             "it is rank %u of %u's and this is rank %u of %u: in "
             "streaming mode each rank resumes its own stream, with the "
             "same world (index the shards for an elastic resume)",
             st->rank, st->world, l->cfg.rank, l->cfg.world);
    why = buf;
  }
  if (why)
    return gf_fail(-EINVAL, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "resume state does not fit this loader: %s", why);
  return 0;
}

int gf_loader_state_export(gf_loader *l, gf_loader_state *st) {
  if (!l || !st)
    return gf_loader__cfg_fail("state_export", "needs a loader and a state");
  uint64_t fp = fingerprint(l);
  if (l->stream) {
    pthread_mutex_lock(&l->mu);
    uint64_t epoch = l->c_epoch, pos = l->c_pos, k = l->c_k;
    pthread_mutex_unlock(&l->mu);
    stream_export(l, fp, epoch, pos, k, st);
    return 0;
  }
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
  /* Where to go: a stream's own position, or the sampler's reading. */
  uint64_t epoch, start = 0, pos, k;
  uint32_t world = l->cfg.world ? l->cfg.world : 1;
  int rc;
  if (l->stream) {
    if ((rc = stream_import_check(l, fp, st)) < 0)
      return rc;
    epoch = st->epoch;
    pos = st->rank_position;
    k = st->batch;
  } else {
    pthread_mutex_lock(&l->mu);
    gf_sampler s = l->sampler;
    pthread_mutex_unlock(&l->mu);
    if ((rc = gf_sampler_state_import(&s, fp, st, &pos, &k)) < 0)
      return rc;
    epoch = gf_sampler_epoch(&s);
    start = gf_sampler_epoch_start(&s, st->epoch);
    world = s.resume_world;
  }
  pthread_mutex_lock(&l->mu);
  if (gf_loader__lent_count(l)) {
    pthread_mutex_unlock(&l->mu);
    return gf_fail(-EBUSY, NULL, GF_NO_INDEX, GF_NO_INDEX,
                   "release every batch before importing a state");
  }
  seek(l, epoch, start, world, pos, k);
  pthread_mutex_unlock(&l->mu);
  return 0;
}
