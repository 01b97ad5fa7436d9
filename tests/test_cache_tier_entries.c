/* The disk cache tier's entries, through the storage calls (synchronous
 * reads and a reader's engine) over slow://: a read is served from one
 * entry, from part of one, or from several; the missing part of a read is
 * fetched alone; an object that changed (another version tag, another
 * size) never gets its old entries; a damaged entry (a flipped payload or
 * header byte, a truncated or empty file) is found, removed and fetched
 * again; what a crash leaves (a temporary file, a claim of a dead process,
 * an empty claim long left) is ignored and cleaned; a live process's claim
 * is waited for, within its bound only. */
#include "cache_testutil.h"
#include "slow_storage.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIZE ((3u << 20) + 123u)

static char src[4200], loc[4300], cache_dir[4200], file[4300];
static uint8_t *content; /* what file holds now */
static gf_remote_config remote;

static void write_content(uint64_t seed, size_t size) {
  free(content);
  content = malloc(size);
  for (size_t i = 0; i < size; i++)
    content[i] = (uint8_t)(gf_test_rand(&seed) >> 24);
  /* A new file renamed over the old: a new inode and mtime, so a new
   * version tag. */
  char tmp[4400];
  snprintf(tmp, sizeof tmp, "%s.new", file);
  CHECK(gf_test_write_file(tmp, content, size) == 0);
  CHECK(rename(tmp, file) == 0);
}

static gf_storage *open_st(void) {
  gf_storage *st = NULL;
  CHECK_OK(gf_storage_open(loc, &remote, &st));
  return st;
}

static gf_storage_cache_info info(gf_storage *st) {
  gf_storage_cache_info ci;
  CHECK(gf_storage_cache_info_get(st, &ci));
  return ci;
}

/* A synchronous read of [off, off + len) of "obj", checked against
 * content. */
static void sync_read(gf_storage *st, uint64_t off, uint64_t len) {
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  uint8_t *b = malloc(len);
  CHECK_OK(gf_object_read(o, b, off, len));
  CHECK(memcmp(b, content + off, len) == 0);
  free(b);
  gf_object_close(o);
}

/* The same through a reader (the engine). */
static void engine_read(gf_storage *st, uint64_t off, uint64_t len) {
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  uint8_t *b = malloc(len);
  int64_t r = cache_read_engine(st, o, off, len, b);
  CHECK(r == (int64_t)len);
  if (r != (int64_t)len)
    fprintf(stderr, "engine read: %lld (%s)\n", (long long)r,
            gf_last_error()->message);
  CHECK(memcmp(b, content + off, len) == 0);
  free(b);
  gf_object_close(o);
}

static uint64_t reads(void) { return slow_storage_reads; }

/* Hits and misses: whole entries, parts, chains, gaps. */
static void hits_and_misses(void) {
  gf_storage *st = open_st();
  gf_storage_cache_info ci = info(st);
  CHECK(!strncmp(ci.dir, cache_dir, strlen(cache_dir)));
  CHECK(!strcmp(gf_storage_display(st), loc));
  CHECK(gf_storage_caps(st) & GF_STORAGE_REMOTE);
  slow_storage_reset();
  sync_read(st, 1000, 5000); /* miss */
  CHECK(reads() == 1);
  sync_read(st, 1000, 5000); /* the entry */
  engine_read(st, 1000, 5000);
  sync_read(st, 2000, 100); /* part of it */
  CHECK(reads() == 1);
  engine_read(st, 6000, 3000); /* miss (the engine) */
  CHECK(reads() == 2 && slow_storage_engine_reads == 1);
  engine_read(st, 1000, 8000); /* two entries, one after the other */
  sync_read(st, 5000, 2000);   /* across them */
  CHECK(reads() == 2);
  engine_read(st, 8000, 4000); /* [8000, 9000) held: [9000, 12000) read */
  sync_read(st, 500, 1000);    /* [1000, 1500) held: [500, 1000) read */
  CHECK(reads() == 4);
  sync_read(st, 500, 11500);
  CHECK(reads() == 4);
  /* A large entry: a read of part of it checks the segments it touches. */
  engine_read(st, 100000, 3000000);
  CHECK(reads() == 5);
  sync_read(st, 100000 + (1u << 20) - 10, 20); /* across segments 0 and 1 */
  engine_read(st, 100000 + (2u << 20) + 5, 999);
  CHECK(reads() == 5);
  /* An entry the page cache does not hold: not read on the pushing
   * thread (it would wait for the disk), but by the engine's threads. */
  {
    gf_object *ob;
    CHECK_OK(gf_object_open(st, "obj", 0, &ob));
    char path[4400];
    cache_entry_file(cache_dir, ob, 100000, 3000000, path, sizeof path);
    gf_object_close(ob);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && fdatasync(fd) == 0);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
    close(fd);
    engine_read(st, 100000 + 5, 2000000);
    CHECK(reads() == 5);
  }
  ci = info(st);
  printf("hits %llu misses %llu served %llu fetched %llu written %llu\n",
         (unsigned long long)ci.hits, (unsigned long long)ci.misses,
         (unsigned long long)ci.hit_bytes, (unsigned long long)ci.fetched_bytes,
         (unsigned long long)ci.written_bytes);
  CHECK(ci.misses == 5 && ci.writes == 5 && ci.hits == 9);
  CHECK(ci.fetched_bytes == 5000 + 3000 + 3000 + 500 + 3000000);
  CHECK(ci.written_bytes == ci.fetched_bytes);
  /* What the reads at or past the end do: passed through. */
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  uint8_t b[64];
  CHECK(gf_object_read_upto(o, b, SIZE - 10, 64) == 10);
  CHECK(memcmp(b, content + SIZE - 10, 10) == 0);
  CHECK(gf_object_read_upto(o, b, SIZE, 64) == 0);
  gf_object_close(o);
  cache_census cs;
  cache_census_take(cache_dir, &cs);
  CHECK(cs.entries == 6 && cs.tmps == 0 && cs.claims == 0);
  gf_storage_close(st);
}

/* A changed object: its old entries are never served. */
static void changed_object(void) {
  gf_storage *st = open_st();
  slow_storage_reset();
  sync_read(st, 1000, 5000);
  CHECK(reads() == 0);
  write_content(2, SIZE); /* same size, other bytes: another version */
  sync_read(st, 1000, 5000);
  engine_read(st, 6000, 3000);
  CHECK(reads() == 2);
  sync_read(st, 1000, 5000);
  CHECK(reads() == 2);
  write_content(3, SIZE + 10); /* another size */
  engine_read(st, 1000, 5000);
  sync_read(st, SIZE, 10);
  CHECK(reads() == 4);
  gf_storage_close(st);
}

/* Damage one entry in some way: each is found, removed and fetched
 * again (one read of slow://), and the entry is good again after. */
typedef enum { FLIP_PAYLOAD, FLIP_HEADER, FLIP_KEY, TRUNCATE, EMPTY } damage;

static void damaged(damage how, bool engine) {
  gf_storage *st = open_st();
  sync_read(st, 20000, 7000); /* makes sure the entry is there */
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  char path[4400];
  cache_entry_file(cache_dir, o, 20000, 7000, path, sizeof path);
  gf_object_close(o);
  int fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  uint8_t x;
  off_t at = how == FLIP_PAYLOAD  ? GF_DCACHE_HEADER_BYTES + 6000
             : how == FLIP_HEADER ? 30
                                  : 60; /* FLIP_KEY: the display */
  if (how == TRUNCATE)
    CHECK(ftruncate(fd, GF_DCACHE_HEADER_BYTES + 6999) == 0);
  else if (how == EMPTY)
    CHECK(ftruncate(fd, 0) == 0);
  else {
    CHECK(pread(fd, &x, 1, at) == 1);
    x ^= 0x10;
    CHECK(pwrite(fd, &x, 1, at) == 1);
  }
  close(fd);
  gf_storage_cache_info before = info(st);
  slow_storage_reset();
  if (engine)
    engine_read(st, 20000, 7000);
  else
    sync_read(st, 20000, 7000);
  gf_storage_cache_info after = info(st);
  CHECK(reads() == 1);
  CHECK(after.corrupt == before.corrupt + 1);
  sync_read(st, 20000, 7000); /* written again, good */
  CHECK(reads() == 1);
  gf_storage_close(st);
}

/* What a crash leaves behind. */
static void leftovers(void) {
  gf_storage *st = open_st();
  sync_read(st, 0, 10); /* the object's folder exists */
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  char dir[4300], path[4500];
  cache_object_dir(cache_dir, o, dir, sizeof dir);
  int dead = cache_dead_pid();
  /* A temporary file of a dead writer, of the very range read next. */
  char suffix[64];
  snprintf(suffix, sizeof suffix, ".tmp.%d.0.1", dead);
  gf_dcache_entry_path(dir, 40000, 5000, suffix, path, sizeof path);
  CHECK(gf_test_write_file(path, "garbage", 7) == 0);
  /* A claim of a dead process on another range. */
  char claim[4500], pidtext[64];
  gf_dcache_entry_path(dir, 50000, 5000, ".claim", claim, sizeof claim);
  int n = snprintf(pidtext, sizeof pidtext, "%d 0\n", dead);
  CHECK(gf_test_write_file(claim, pidtext, (size_t)n) == 0);
  /* An empty claim (its owner died before writing its pid) a minute old. */
  char empty[4500];
  gf_dcache_entry_path(dir, 60000, 5000, ".claim", empty, sizeof empty);
  CHECK(gf_test_write_file(empty, "", 0) == 0);
  struct timespec old[2] = {{time(NULL) - 60, 0}, {time(NULL) - 60, 0}};
  CHECK(utimensat(AT_FDCWD, empty, old, 0) == 0);
  gf_object_close(o);

  gf_storage_cache_info before = info(st);
  slow_storage_reset();
  uint64_t t0 = gf_dcache_now_ns();
  sync_read(st, 40000, 5000);
  engine_read(st, 50000, 5000);
  sync_read(st, 60000, 5000);
  uint64_t ms = (gf_dcache_now_ns() - t0) / 1000000;
  gf_storage_cache_info after = info(st);
  printf("leftovers: 3 reads in %llu ms, %llu waits\n", (unsigned long long)ms,
         (unsigned long long)(after.claim_waits - before.claim_waits));
  CHECK(reads() == 3);
  CHECK(after.claim_waits == before.claim_waits); /* no wait on the dead */
  CHECK(after.writes == before.writes + 3);
  struct stat sb;
  CHECK(stat(claim, &sb) < 0 && stat(empty, &sb) < 0);
  sync_read(st, 40000, 5000); /* the entry, not the tmp */
  CHECK(reads() == 3);
  CHECK(stat(path, &sb) == 0); /* the tmp waits for a walk */
  gf_storage_close(st);
  /* A walk (the state file lost: the next open counts the folder) removes
   * the dead writer's temporary file. */
  char state[4300];
  snprintf(state, sizeof state, "%s/%s/state", cache_dir, GF_DCACHE_FOLDER);
  CHECK(unlink(state) == 0);
  st = open_st();
  CHECK(stat(path, &sb) < 0);
  cache_census cs;
  cache_census_take(cache_dir, &cs);
  CHECK(cs.tmps == 0 && cs.claims == 0);
  gf_storage_close(st);
}

/* A live process's claim: the read waits for it, until its bound, then
 * reads the inner storage itself. */
static void live_claim(bool engine) {
  gf_storage *st = open_st();
  sync_read(st, 0, 10);
  gf_object *o;
  CHECK_OK(gf_object_open(st, "obj", 0, &o));
  char dir[4300], claim[4500], pidtext[64];
  cache_object_dir(cache_dir, o, dir, sizeof dir);
  gf_object_close(o);
  uint64_t off = engine ? 70000 : 80000;
  gf_dcache_entry_path(dir, off, 5000, ".claim", claim, sizeof claim);
  pid_t child = fork();
  if (child == 0) {
    sleep(30);
    _exit(0);
  }
  int n = snprintf(pidtext, sizeof pidtext, "%d 0\n", (int)child);
  CHECK(gf_test_write_file(claim, pidtext, (size_t)n) == 0);
  gf_storage_cache_info before = info(st);
  slow_storage_reset();
  uint64_t t0 = gf_dcache_now_ns();
  if (engine)
    engine_read(st, off, 5000);
  else
    sync_read(st, off, 5000);
  uint64_t ms = (gf_dcache_now_ns() - t0) / 1000000;
  gf_storage_cache_info after = info(st);
  printf("a live claim (%s): waited %llu ms (bound %u ms)\n",
         engine ? "engine" : "sync", (unsigned long long)ms,
         remote.retry_ms + remote.stall_ms);
  CHECK(ms >= remote.retry_ms + remote.stall_ms);
  CHECK(ms < 5000);
  CHECK(reads() == 1);
  CHECK(after.claim_waits == before.claim_waits + 1);
  CHECK(after.claim_timeouts == before.claim_timeouts + 1);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  unlink(claim);
  gf_storage_close(st);
}

int main(void) {
  CHECK_OK(slow_storage_register());
  snprintf(src, sizeof src, "%s/src", gf_test_tmpdir());
  snprintf(loc, sizeof loc, "slow://%s", src);
  snprintf(file, sizeof file, "%s/obj", src);
  snprintf(cache_dir, sizeof cache_dir, "%s/cache/in/here", gf_test_tmpdir());
  CHECK(mkdir(src, 0755) == 0);
  write_content(1, SIZE);
  remote = (gf_remote_config)GF_REMOTE_CONFIG_INIT;
  remote.cache_dir = cache_dir;
  remote.retry_ms = 150; /* a claim's bound: 200 ms */
  remote.stall_ms = 50;
  hits_and_misses();
  changed_object();
  damaged(FLIP_PAYLOAD, false);
  damaged(FLIP_PAYLOAD, true);
  damaged(FLIP_HEADER, false);
  damaged(FLIP_KEY, true);
  damaged(TRUNCATE, true);
  damaged(EMPTY, false);
  leftovers();
  live_claim(false);
  live_claim(true);
  free(content);
  return gf_test_finish();
}
