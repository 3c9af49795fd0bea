/*
 * replicator.c - one board kept in step with a Redis board
 * (docs/DESIGN-NOTES.md, "The authority rule" and "The replicator").
 *
 * Threads: the replicator's own (run()), which alone talks to Redis and
 * writes the mirror; and a watcher (watch_local()) that sleeps on the
 * board's change log and pokes run() through a pipe when a local commit
 * happens. run() sleeps in poll(2) on that pipe and on the subscriber
 * connection's socket (our scripts' notices), with a timeout to the next
 * poll of Redis or keep-alive round.
 *
 * One per board: the lock is flock(2) on `sync.lock` in the board
 * directory, held for as long as the thread is elected. A standing-by
 * replicator tries it every second; a dead holder's lock is released by
 * the kernel.
 *
 * State lives in the board (what is published: the job flags; what Redis
 * holds: the mirrored jobs), so a restart resumes with one full pass:
 * publish every job still decided locally or marked and unconfirmed (in
 * board sequence order), then read the listings once.
 */
#include "remote.h"

#include "core/sync_hook.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_POLL_MS 1000
#define DEFAULT_BACKOFF_MIN_MS 100
#define DEFAULT_BACKOFF_MAX_MS 30000
#define DEFAULT_KEEPALIVE_MS JB_SYNC_KEEPALIVE_MS
/* A comparison in full (every listing and owner) this often, besides the
 * ones at connect, after new posts and after a data loss. */
#define DEFAULT_VERIFY_MS 30000
#define STANDBY_MS 1000
/* Jobs per mirror transaction / per pipeline. */
#define CHUNK 512
/* Jobs marked for publication per transaction. */
#define PUB_BATCH 32
/* Two expiries closer than this are the same (clocks and round trips). */
#define EXPIRY_SLACK_US 2000000
/* In a burst of local commits (the watcher found more after its pause),
 * the replicator waits this long before publishing (our notices still wake
 * it at once): the burst is handled in one pass, and a job claimed and
 * completed within it, decided locally, is never published. The watcher
 * pauses as long after each poke. The first commit after a quiet spell is
 * published at once: nothing is coming to batch it with, and a waiter on
 * another board is waiting for it. */
#define SETTLE_MS 1
/* What a poke says: the commit came after a quiet spell (publish now), or
 * in a burst (settle first). */
#define POKE_NOW 1
#define POKE_BURST 2
/* run()'s state for the watcher (run_state): asleep or about to sleep
 * (poke it through the pipe), in a pass, or in a pass that owes itself
 * another one (the watcher saw commits meanwhile: now or after a settle). */
#define RUN_IDLE 0
#define RUN_BUSY 1
#define RUN_OWED_NOW 2
#define RUN_OWED_BURST 3

struct jb_sync_replicator {
  char *path;
  jb_board_options bopts;
  jb_sync_replicator_options o;
  char *url, *ns;
  jb_board *b;       /* run()'s handle */
  jb_board *wb;      /* the watcher's handle */
  pthread_t thread, watcher;
  bool started, watcher_started;
  int pipe[2];
  atomic_bool stop;
  /* run()'s state */
  jb_sync_conn *cmd, *sub;
  jb__remote rm;
  bool rm_ready;
  bool online;
  int lock_fd;
  bool elected;
  bool standing_by; /* said so: another replicator held the lock */
  bool unsynced_said; /* said that the board is no longer synced so */
  bool need_full;
  uint64_t cursor;     /* change log: next event to look at */
  /* The cursor as the watcher may read it: the events before it were
   * looked at by a pass that ran after their commit, and the commits that
   * run() makes itself (mirror writes, publication marks) are behind it
   * by the end of the pass that made them. */
  _Atomic uint64_t handled;
  atomic_int run_state; /* RUN_* */
  _Atomic uint64_t owed_to; /* the watcher's cursor when it last owed */
  uint64_t seq_seen;   /* NS:sequence as last read (or followed) */
  /* The last jobs this replicator published and confirmed, with their
   * numbers: the notices of those posts ("post U n") are its own, and
   * reading the job back would only find what the board holds. */
  struct own_post {
    char uuid[JB_UUID_STRLEN];
    uint64_t seq;
  } own[2 * PUB_BATCH];
  size_t own_next;
  bool sub_readable;
  int64_t next_poll, next_keepalive; /* monotonic ms */
  /* The earliest due time (wall clock, us) of a delayed job not published
   * for not being due: Redis (taskflow) never sees a job it must not run
   * yet; at that time a full publication pass picks it up. 0: none. */
  int64_t next_due_us;
  int64_t status_written;            /* monotonic ms */
  struct bound *bound; /* keep_alive's last round */
  bool data_lost;      /* Redis lost its data (read_epoch) */
  bool in_full;        /* pull_full runs: only it acts on data_lost */
  bool recheck;        /* the last full pull saw NS:sequence move */
  char epoch[64];      /* the data set the board last saw (sync.epoch) */
  char epoch_now[64];  /* the one Redis holds now ("" when missing) */
  uint64_t changed;    /* jobs the current pull changed here */
  int64_t next_verify; /* monotonic ms: the next full comparison */
  char logged[512];    /* the last error logged, and when (mono ms) */
  int64_t logged_ms;
  size_t nbound;
  char **quarantined;  /* uuids already reported */
  size_t nquar;
  /* Jobs held back from publication while a process of this host holds
   * their claim (held_here), looked at again every round. */
  struct held_back {
    char uuid[JB_UUID_STRLEN];
    uint64_t seq;
  } *held;
  size_t nheld, capheld;
  /* shared with status callers */
  pthread_mutex_t mu;
  jb_sync_status st;
};

/* ---------------------------------------------------------------- time */

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ----------------------------------------------------------- logging */

static void say(jb_sync_replicator *r, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(jb_sync_replicator *r, int level, const char *fmt, ...) {
  if (r->o.log == NULL) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  r->o.log(r->o.log_ctx, level, line);
}

/* Record an error (its message is jb_errmsg()) in the status and log it;
 * the same message again within a minute (a server down, retried with
 * back-off) is recorded but not logged again. */
static void note_error(jb_sync_replicator *r, int rc, const char *doing) {
  char msg[512];
  snprintf(msg, sizeof msg, "%s: %s", doing, jb_errmsg());
  pthread_mutex_lock(&r->mu);
  snprintf(r->st.last_error, sizeof r->st.last_error, "%s", msg);
  r->st.last_error_us = wall_us();
  pthread_mutex_unlock(&r->mu);
  int64_t now = mono_ms();
  if (strcmp(msg, r->logged) == 0 && now - r->logged_ms < 60000) return;
  snprintf(r->logged, sizeof r->logged, "%s", msg);
  r->logged_ms = now;
  say(r, rc == JB_EOFFLINE ? 1 : 2, "%s", msg);
}

/* ----------------------------------------------------- the status file */

static char *status_path(const char *board) {
  char *p = NULL;
  if (asprintf(&p, "%s/sync.status", board) < 0) return NULL;
  return p;
}

/* Write the status file (a temporary file renamed over it). */
static void write_status(jb_sync_replicator *r) {
  char *path = status_path(r->path), *tmp = NULL;
  if (path == NULL || asprintf(&tmp, "%s.%d", path, (int)getpid()) < 0) {
    free(path);
    return;
  }
  FILE *f = fopen(tmp, "w");
  if (f) {
    pthread_mutex_lock(&r->mu);
    jb_sync_status s = r->st;
    pthread_mutex_unlock(&r->mu);
    /* One value per line; the error last, as it may hold anything. */
    fprintf(f, "pid %d\nconnected %d\nurl %s\nns %s\ncursor %llu\n"
            "published %llu\npulled %llu\nlast_sync_us %lld\n"
            "last_full_us %lld\nlast_full_changed %llu\nlast_full_why %s\n"
            "last_full_took_us %lld\n"
            "repaired %llu\ndata_losses %llu\nlast_data_loss_us %lld\n"
            "verify_ms %d\npoll_ms %d\n"
            "last_error_us %lld\nserver %s\nlast_error %s\n",
            s.pid, s.connected ? 1 : 0, s.url, s.ns,
            (unsigned long long)r->cursor, (unsigned long long)s.published,
            (unsigned long long)s.pulled, (long long)s.last_sync_us,
            (long long)s.last_full_us,
            (unsigned long long)s.last_full_changed, s.last_full_why,
            (long long)s.last_full_took_us,
            (unsigned long long)s.repaired,
            (unsigned long long)s.data_losses,
            (long long)s.last_data_loss_us, s.verify_ms, s.poll_ms,
            (long long)s.last_error_us, s.server, s.last_error);
    if (fclose(f) == 0) rename(tmp, path);
    else unlink(tmp);
  }
  free(tmp);
  free(path);
  r->status_written = mono_ms();
}

/* ------------------------------------------------------------- waking */

static void poke(jb_sync_replicator *r, char c);

/*
 * The watcher's news of commits up to `from` (exclusive): nothing when a
 * pass has looked at them already (run()'s own commits, mostly: a mirror
 * write wakes the watcher as any commit does; returns false); else run()
 * owes itself another pass when it is in one, or is poked awake. A CAS
 * loop, so that a pass ending meanwhile (RUN_BUSY -> RUN_IDLE) gets the
 * poke instead; owed_to is written before the CAS, so the pass that finds
 * itself owed reads it.
 */
static bool tell_run(jb_sync_replicator *r, uint64_t from, char kind) {
  if (from <= atomic_load(&r->handled)) return false;
  uint64_t was = atomic_load(&r->owed_to);
  while (was < from &&
         !atomic_compare_exchange_weak(&r->owed_to, &was, from)) {
  }
  int st = atomic_load(&r->run_state);
  for (;;) {
    if (st == RUN_IDLE) {
      poke(r, kind);
      return true;
    }
    int want = kind == POKE_NOW || st == RUN_OWED_NOW ? RUN_OWED_NOW
                                                       : RUN_OWED_BURST;
    if (st == want ||
        atomic_compare_exchange_weak(&r->run_state, &st, want))
      return true;
  }
}

static void poke(jb_sync_replicator *r, char c) {
  ssize_t n = write(r->pipe[1], &c, 1);
  (void)n; /* a full pipe already says "wake up" */
}

/* Sleep up to ms, or until poked, a notice arrives or stop is asked. */
static void sleep_wake(jb_sync_replicator *r, int64_t ms) {
  if (ms < 0) ms = 0;
  struct pollfd p[2] = {{r->pipe[0], POLLIN, 0}, {-1, POLLIN, 0}};
  int n = 1;
  if (r->sub && jb__sync_fd(r->sub) >= 0) {
    p[1].fd = jb__sync_fd(r->sub);
    n = 2;
  }
  int got = poll(p, (nfds_t)n, (int)(ms > 600000 ? 600000 : ms));
  if (got <= 0) return;
  if (n == 2 && p[1].revents) r->sub_readable = true;
  if (p[0].revents) {
    bool now = false;
    char buf[64];
    ssize_t len;
    do {
      len = read(r->pipe[0], buf, sizeof buf);
      for (ssize_t i = 0; i < len && !now; i++) now = buf[i] != POKE_BURST;
    } while (len == (ssize_t)sizeof buf);
    if (!now && !r->sub_readable && !atomic_load(&r->stop)) {
      /* a burst of local commits: let it settle (a notice ends the wait) */
      struct pollfd q = {p[1].fd, POLLIN, 0};
      if (poll(&q, n == 2 ? 1 : 0, SETTLE_MS) > 0) r->sub_readable = true;
    }
  }
}

/* Sleep as sleep_wake, after turning what the watcher left owed during the
 * pass (events the pass did not reach) into a poke, through the pipe, so
 * that a burst still settles and any sleep ends for a local commit as it
 * did when every commit poked. */
static void rest(jb_sync_replicator *r, int64_t ms) {
  int owed = atomic_exchange(&r->run_state, RUN_IDLE);
  if ((owed == RUN_OWED_NOW || owed == RUN_OWED_BURST) &&
      atomic_load(&r->owed_to) > atomic_load(&r->handled))
    poke(r, owed == RUN_OWED_NOW ? POKE_NOW : POKE_BURST);
  sleep_wake(r, ms);
}

/* The watcher: one event read per commit batch, then a poke. After each
 * poke it pauses SETTLE_MS and looks once: commits found then are a burst
 * (POKE_BURST); found by a wait that slept, they came after a quiet spell
 * (POKE_NOW). Commits a pass has looked at already (run()'s own) neither
 * poke nor pause it. */
static void *watch_local(void *arg) {
  jb_sync_replicator *r = arg;
  uint64_t from = 0;
  bool paused = false; /* just back from the pause after a poke */
  jb_log_bounds(NULL, &from, r->wb);
  while (!atomic_load(&r->stop)) {
    jb_event ev[16];
    size_t n = 0;
    uint64_t first = 0;
    int rc = jb_log_wait(ev, &n, &first, r->wb, from, 16, paused ? 0 : 1000);
    if (rc == JB_EINTERRUPTED) break;
    if (rc == JB_ETRIMMED) {
      from = first;
      poke(r, POKE_NOW);
      paused = false;
    } else if (rc == JB_OK && n > 0) {
      from = ev[n - 1].seq + 1;
      /* Progress reports are this board's alone (Redis holds none): a
       * batch of nothing else gives a pass nothing to do. A worker
       * reports up to ten times a second per job; each would otherwise
       * cost a pass and its round trips to Redis. */
      size_t other = 0;
      for (size_t i = 0; i < n; i++)
        other += ev[i].type != JB_EVENT_PROGRESS;
      if (other == 0) {
        paused = false;
        continue;
      }
      if (!tell_run(r, from, paused ? POKE_BURST : POKE_NOW)) {
        paused = false;
        continue;
      }
      /* the commits of the next moment are read (and poked for) at once */
      struct timespec ts = {0, SETTLE_MS * 1000000L};
      nanosleep(&ts, NULL);
      paused = true;
    } else if (rc == JB_ETIMEDOUT || rc == JB_OK) {
      paused = false; /* nothing new: the next wait sleeps */
    } else if (rc != JB_OK) {
      struct timespec ts = {0, 100 * 1000000};
      nanosleep(&ts, NULL); /* a transient read failure: do not spin */
    }
  }
  return NULL;
}

/* --------------------------------------------------------- connections */

static void go_offline(jb_sync_replicator *r) {
  if (r->cmd) jb__sync_drop(r->cmd);
  jb_sync_close(r->sub);
  r->sub = NULL;
  r->sub_readable = false;
  if (r->online && !atomic_load(&r->stop))
    say(r, 1, "disconnected from redis");
  r->online = false;
  pthread_mutex_lock(&r->mu);
  r->st.connected = false;
  r->st.server[0] = '\0';
  pthread_mutex_unlock(&r->mu);
}

static int go_online(jb_sync_replicator *r) {
  jb_sync_options co = r->o.conn;
  co.url = r->url;
  co.ns = r->ns;
  int rc;
  if (r->cmd == NULL) {
    if ((rc = jb_sync_connect(&r->cmd, &co)) != JB_OK) return rc;
  } else if ((rc = jb_sync_ping(r->cmd)) != JB_OK) {
    return rc;
  }
  if (!r->rm_ready) {
    if ((rc = jb__remote_init(&r->rm, r->cmd, true)) != JB_OK) return rc;
    r->rm_ready = true;
  }
  if ((rc = jb_sync_connect(&r->sub, &co)) != JB_OK) return rc;
  char chan[JB_SYNC_NAMESPACE_MAX + 16];
  jb_sync_key(chan, sizeof chan, r->sub, "notices");
  if ((rc = jb__sync_subscribe(r->sub, chan)) != JB_OK) {
    jb_sync_close(r->sub);
    r->sub = NULL;
    return rc;
  }
  r->online = true;
  r->logged[0] = '\0'; /* the next failure is news again */
  pthread_mutex_lock(&r->mu);
  r->st.connected = true;
  snprintf(r->st.server, sizeof r->st.server, "%s", jb__sync_where(r->cmd));
  pthread_mutex_unlock(&r->mu);
  say(r, 0, "connected to redis at %s (redis %s), namespace %s",
      jb__sync_where(r->cmd), jb_sync_server_version(r->cmd), r->ns);
  return JB_OK;
}

/* ------------------------------------------------------------ publish */

typedef struct {
  char uuid[JB_UUID_STRLEN];
  uint64_t seq;
} pending;

static int by_seq(const void *a, const void *b) {
  const pending *x = a, *y = b;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool held_here(jb_sync_replicator *r, const jb_job *job);

/* Publish jobs uuids[0..n) (in that order): mark them, post each, then
 * confirm the posted ones. Stops at the first JB_EOFFLINE (the rest stay
 * marked: the next full pass resolves them). */
static int publish_batch(jb_sync_replicator *r, const char **uuids, size_t n) {
  int marked[PUB_BATCH];
  uint64_t seqs[PUB_BATCH];
  const char *done[PUB_BATCH], *local[PUB_BATCH];
  size_t ndone = 0, nlocal = 0;
  int rc = jb__board_set_published(r->b, uuids, n, JB_PUB_PENDING_UNHELD,
                                   NULL, marked);
  /* One job alone: its refusal is its result (marked[0]), not an error. */
  if (rc != JB_OK && rc != JB_ENOTFOUND && rc != JB_ECLAIMED &&
      rc != JB_ENOTDUE)
    return rc;
  rc = JB_OK;
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    if (marked[i] == JB_ECLAIMED) {
      /* Claimed here by a live process between the scan that chose it and
       * the mark: held back after all (the mark checks it in its own
       * transaction, so no claim slips in between). */
      jb_job *job = NULL;
      if (jb_job_get(&job, r->b, uuids[i]) == JB_OK) held_here(r, job);
      jb_job_free(job);
      continue;
    }
    if (marked[i] != JB_OK) continue; /* completed before publication */
    jb__remote_result res;
    char id[JB_UUID_STRLEN] = "";
    int prc = jb__sync_post_marked(&res, &r->rm, r->b, uuids[i],
                                   r->o.keepalive_ms, id);
    if (prc == JB_OK) {
      seqs[ndone] = res.sequence; /* its place in Redis's order */
      done[ndone++] = uuids[i];
      if (!res.again)
        say(r, 0, "published job %s as number %llu", uuids[i],
            (unsigned long long)res.sequence);
      if (res.sequence == r->seq_seen + 1) r->seq_seen = res.sequence;
    } else if (prc == JB_EEXISTS) {
      /* Its unique key is held in Redis by another live job (posted here
       * while Redis was away): to the dead letters, named why. */
      int brc = jb__sync_refuse_unique(r->b, uuids[i], &res);
      if (brc == JB_EEXISTS)
        say(r, 0, "%s", jb_errmsg());
      else if (brc != JB_ENOTFOUND)
        rc = brc;
    } else if (prc == JB_EINVAL) {
      /* Redis refuses this job for good (another posting under its
       * uuid): it stays decided here. */
      note_error(r, prc, "publishing");
      local[nlocal++] = uuids[i];
    } else if (prc == JB_ENOTFOUND) {
      continue; /* completed meanwhile */
    } else {
      rc = prc;
    }
  }
  int urc = JB_OK;
  if (ndone)
    urc = jb__board_set_published(r->b, done, ndone, JB_PUB_DONE, seqs, NULL);
  for (size_t i = 0; urc == JB_OK && i < ndone; i++) {
    struct own_post *o = &r->own[r->own_next++ % (2 * PUB_BATCH)];
    snprintf(o->uuid, sizeof o->uuid, "%s", done[i]);
    o->seq = seqs[i];
  }
  if (nlocal && urc == JB_OK)
    urc = jb__board_set_published(r->b, local, nlocal, JB_PUB_LOCAL, NULL,
                                  NULL);
  if (urc == JB_ENOTFOUND) urc = JB_OK;
  pthread_mutex_lock(&r->mu);
  r->st.published += ndone;
  pthread_mutex_unlock(&r->mu);
  return rc != JB_OK ? rc : urc;
}

static int publish_list(jb_sync_replicator *r, pending *p, size_t n) {
  const char *batch[PUB_BATCH];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    batch[k++] = p[i].uuid;
    if (k == PUB_BATCH || i + 1 == n) {
      int rc = publish_batch(r, batch, k);
      if (rc != JB_OK) return rc;
      k = 0;
    }
  }
  return JB_OK;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return JB_OK;
  size_t c = *cap ? *cap * 2 : 64;
  void *a = realloc(*arr, c * elem);
  if (a == NULL) return jb__err(JB_ENOMEM, "out of memory in the replicator");
  *arr = a;
  *cap = c;
  return JB_OK;
}

/*
 * Whether job `job`, not yet published, is held back: claimed by a live
 * process of this host (a `jobboard work` claim, bound to its process).
 * Published with that claim, the claim would live in Redis only while
 * someone renews it there: the holder, which may not be connected to Redis
 * (it claimed while Redis was away), or this replicator, which may die
 * first; the claim would then lapse in Redis under a live worker, and
 * another host would run the job a second time. Kept here, the claim ends
 * with its holder as every local claim does, and the job is published
 * once it does without completing it (abandoned, retried, the holder
 * dead). It is remembered in r->held and looked at every round.
 */
static bool held_here(jb_sync_replicator *r, const jb_job *job) {
  if (jb_job_state(job) != JB_STATE_CLAIMED || jb_job_holder_pid(job) == 0 ||
      !jb_job_holder_alive(job))
    return false;
  for (size_t i = 0; i < r->nheld; i++)
    if (strcmp(r->held[i].uuid, jb_job_uuid(job)) == 0) return true;
  if (r->nheld == r->capheld) {
    size_t c = r->capheld ? r->capheld * 2 : 16;
    struct held_back *h = realloc(r->held, c * sizeof *h);
    if (h == NULL) return true; /* looked at again by the next full pass */
    r->held = h;
    r->capheld = c;
  }
  snprintf(r->held[r->nheld].uuid, sizeof r->held[r->nheld].uuid, "%s",
           jb_job_uuid(job));
  r->held[r->nheld++].seq = jb_job_sequence(job);
  return true;
}

/* A delayed job that is not due: not published yet (r->next_due_us
 * remembers when to look again). */
static bool not_due_yet(jb_sync_replicator *r, const jb_job *job) {
  int64_t due = jb_job_not_before(job);
  if (due <= wall_us()) return false;
  if (r->next_due_us == 0 || due < r->next_due_us) r->next_due_us = due;
  return true;
}

/* Every job not yet published (decided locally, or marked and not
 * confirmed, and due), oldest first; the log cursor then starts from before the
 * scan, so nothing posted during it is missed. */
static int publish_all(jb_sync_replicator *r) {
  uint64_t next = 0;
  int rc = jb_log_bounds(NULL, &next, r->b);
  if (rc != JB_OK) return rc;
  r->next_due_us = 0;
  r->nheld = 0; /* this pass finds them all again */
  jb_iter *it = NULL;
  if ((rc = jb_iter_open(&it, r->b, 0)) != JB_OK) return rc;
  pending *p = NULL;
  size_t n = 0, cap = 0;
  const jb_job *job;
  for (;;) {
    rc = jb_iter_next(&job, it);
    if (rc == JB_ECORRUPT) continue; /* check's business */
    if (rc != JB_OK || job == NULL) break;
    if (jb_job_remote(job) && !jb__job_publishing(job)) continue;
    if (not_due_yet(r, job)) continue;
    if (!jb__job_publishing(job) && held_here(r, job)) continue;
    if ((rc = grow((void **)&p, &cap, n, sizeof *p)) != JB_OK) break;
    snprintf(p[n].uuid, sizeof p[n].uuid, "%s", jb_job_uuid(job));
    p[n++].seq = jb_job_sequence(job);
  }
  jb_iter_close(it);
  if (rc == JB_OK && n) {
    qsort(p, n, sizeof *p, by_seq);
    rc = publish_list(r, p, n);
  }
  free(p);
  if (rc == JB_OK) {
    r->cursor = next;
    atomic_store(&r->handled, next);
  }
  return rc;
}

/* The jobs held back (held_here) whose claim here ended: published now,
 * in posting order; the others stay held back. */
static int publish_held(jb_sync_replicator *r) {
  if (r->nheld == 0) return JB_OK;
  pending *p = malloc(r->nheld * sizeof *p);
  if (p == NULL) return jb__err(JB_ENOMEM, "out of memory in the replicator");
  size_t n = 0, keep = 0, total = r->nheld;
  for (size_t i = 0; i < total; i++) {
    jb_job *job = NULL;
    int rc = jb_job_get(&job, r->b, r->held[i].uuid);
    bool still = rc == JB_OK && !jb_job_remote(job) &&
                 jb_job_state(job) == JB_STATE_CLAIMED &&
                 jb_job_holder_pid(job) != 0 && jb_job_holder_alive(job);
    if (still) {
      r->held[keep++] = r->held[i];
    } else if (rc == JB_OK && (!jb_job_remote(job) || jb__job_publishing(job)) &&
               !not_due_yet(r, job)) {
      snprintf(p[n].uuid, sizeof p[n].uuid, "%s", r->held[i].uuid);
      p[n++].seq = r->held[i].seq;
    }
    jb_job_free(job);
    if (rc != JB_OK && rc != JB_ENOTFOUND) { /* try again next round */
      for (size_t j = i; j < total; j++) r->held[keep++] = r->held[j];
      break;
    }
  }
  r->nheld = keep;
  int rc = JB_OK;
  if (n) {
    qsort(p, n, sizeof *p, by_seq);
    rc = publish_list(r, p, n);
  }
  free(p);
  return rc;
}

/* The jobs posted since the cursor, in log order. */
static int publish_new(jb_sync_replicator *r) {
  for (;;) {
    jb_event ev[256];
    size_t n = 0;
    uint64_t first = 0;
    int rc = jb_log_read(ev, &n, &first, r->b, r->cursor, 256);
    if (rc == JB_ETRIMMED) return publish_all(r);
    if (rc != JB_OK) return rc;
    if (n == 0) return JB_OK;
    pending p[256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      if (ev[i].type != JB_EVENT_POSTED) continue;
      jb_job *job = NULL;
      if (jb_job_get(&job, r->b, ev[i].uuid) == JB_OK &&
          (!jb_job_remote(job) || jb__job_publishing(job)) &&
          !not_due_yet(r, job) &&
          (jb__job_publishing(job) || !held_here(r, job))) {
        snprintf(p[k].uuid, sizeof p[k].uuid, "%s", ev[i].uuid);
        p[k++].seq = ev[i].job_seq;
      }
      jb_job_free(job);
    }
    if ((rc = publish_list(r, p, k)) != JB_OK) return rc;
    r->cursor = ev[n - 1].seq + 1;
    atomic_store(&r->handled, r->cursor);
  }
}

/* --------------------------------------------------------------- pull */

bool jb__sync_is_uuid(const char *s, size_t len) {
  if (len != 36) return false;
  for (size_t i = 0; i < 36; i++) {
    char c = s[i];
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  }
  return true;
}

static void key_of(char *buf, size_t size, jb_sync_replicator *r,
                   const char *uuid, const char *suffix) {
  char piece[64];
  snprintf(piece, sizeof piece, "%s%s", uuid, suffix);
  jb_sync_key(buf, size, r->cmd, piece);
}

/* What Redis holds of one job, read for the mirror. */
typedef struct {
  char uuid[JB_UUID_STRLEN];
  redisReply *posting;   /* borrowed from a reply, or owned (see owns) */
  bool owns;
  bool listed, trashed;
  char owner[JB_WHO_MAX + 1];
  bool owned;
  int64_t pttl;
  /* local_remote(with_claims): the board's own claim of the job */
  int64_t lease_us; /* its lease's expiry (UTC us), 0: none */
  int holder_pid;   /* the process of this host it is bound to, 0: none */
} seen;

/* Length of the longest prefix of s[0..len) that is whole UTF-8 with no
 * NUL, or (size_t)-1 when a byte before that is not UTF-8 at all. */
static size_t utf8_prefix(const unsigned char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
             : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (c == 0 || n == 0 || (n == 2 && c < 0xc2) || c > 0xf4)
      return (size_t)-1;
    if (i + n > len) return i; /* cut inside a character */
    for (size_t k = 1; k < n; k++)
      if ((s[i + k] & 0xc0) != 0x80) return (size_t)-1;
    unsigned char d = s[i + 1 < len ? i + 1 : i];
    if ((c == 0xe0 && d < 0xa0) || (c == 0xed && d >= 0xa0) || /* overlong, */
        (c == 0xf0 && d < 0x90) || (c == 0xf4 && d >= 0x90))  /* surrogate, */
      return (size_t)-1;                                        /* > U+10FFFF */
    i += n;
  }
  return i;
}

/* The owner named by an owner key's bytes, as the board can hold it: cut
 * to JB_WHO_MAX bytes on a character boundary; bytes that are not UTF-8
 * (taskflow does not check) become "invalid-owner:" and their hex, so a
 * bad key shows as claimed by someone rather than stopping the mirror. */
void jb__sync_owner_text(char out[JB_WHO_MAX + 1], const char *b,
                         size_t len) {
  size_t cut = len > JB_WHO_MAX ? JB_WHO_MAX : len;
  size_t ok = utf8_prefix((const unsigned char *)b, cut);
  if (ok != (size_t)-1 && ok > 0) {
    memcpy(out, b, ok);
    out[ok] = '\0';
    return;
  }
  static const char hex[] = "0123456789abcdef";
  size_t o = (size_t)snprintf(out, JB_WHO_MAX + 1, "invalid-owner:");
  for (size_t i = 0; i < len && o + 2 <= JB_WHO_MAX; i++) {
    out[o++] = hex[(unsigned char)b[i] >> 4];
    out[o++] = hex[(unsigned char)b[i] & 15];
  }
  out[o] = '\0';
}

/* The next reply of a pipeline. Any failure, an error reply included,
 * drops the connection (the next command reconnects): the replies still
 * queued behind it must never be read as the answers to later commands. */
static int next_reply(jb_sync_replicator *r, redisReply **out,
                      const char *what) {
  int rc = jb__sync_read(out, r->cmd, what);
  if (rc != JB_OK) jb__sync_drop(r->cmd);
  return rc;
}

/* Reading a batch of jobs is split in two halves, send and take, so that
 * several kinds of read go out in one pipeline: one round trip for all. */

/* Owner and PTTL of seen[0..n): the commands. */
static int send_owners(jb_sync_replicator *r, const seen *s, size_t n) {
  char key[JB_SYNC_NAMESPACE_MAX + 64];
  int rc = JB_OK;
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    key_of(key, sizeof key, r, s[i].uuid, ".owned");
    const char *get[2] = {"GET", key}, *pttl[2] = {"PTTL", key};
    if ((rc = jb__sync_append(r->cmd, 2, get, NULL)) == JB_OK)
      rc = jb__sync_append(r->cmd, 2, pttl, NULL);
  }
  return rc;
}

/* Owner and PTTL of seen[0..n): the replies. */
static int take_owners(jb_sync_replicator *r, seen *s, size_t n) {
  int rc = JB_OK;
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    redisReply *a = NULL, *b = NULL;
    if ((rc = next_reply(r, &a, "GET")) == JB_OK &&
        (rc = next_reply(r, &b, "PTTL")) == JB_OK) {
      s[i].owned = a->type == REDIS_REPLY_STRING && a->len > 0 &&
                   b->type == REDIS_REPLY_INTEGER && b->integer != -2;
      if (s[i].owned) {
        jb__sync_owner_text(s[i].owner, a->str, a->len);
        s[i].pttl = b->integer;
      }
    }
    freeReplyObject(a);
    freeReplyObject(b);
  }
  return rc;
}

/* Owner and PTTL of seen[0..n), one pipeline. */
static int read_owners(jb_sync_replicator *r, seen *s, size_t n) {
  int rc = send_owners(r, s, n);
  return rc == JB_OK ? take_owners(r, s, n) : rc;
}

/* HEXISTS NS:piece for each of seen[0..n): the commands. */
static int send_hexists(jb_sync_replicator *r, const seen *s, size_t n,
                        const char *piece) {
  char hash[JB_SYNC_NAMESPACE_MAX + 16];
  jb_sync_key(hash, sizeof hash, r->cmd, piece);
  int rc = JB_OK;
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    const char *argv[3] = {"HEXISTS", hash, s[i].uuid};
    rc = jb__sync_append(r->cmd, 3, argv, NULL);
  }
  return rc;
}

/* HEXISTS NS:piece for each of seen[0..n): the replies, into ->trashed
 * or ->listed. */
static int take_hexists(jb_sync_replicator *r, seen *s, size_t n,
                        const char *piece) {
  bool trash = strcmp(piece, "trash") == 0;
  int rc = JB_OK;
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    redisReply *a = NULL;
    if ((rc = next_reply(r, &a, "HEXISTS")) == JB_OK) {
      bool yes = a->type == REDIS_REPLY_INTEGER && a->integer == 1;
      if (trash)
        s[i].trashed = yes;
      else
        s[i].listed = yes;
    }
    freeReplyObject(a);
  }
  return rc;
}

/* Listed, owner and PTTL of seen[0..n), one pipeline. */
static int read_state(jb_sync_replicator *r, seen *s, size_t n) {
  int rc = send_hexists(r, s, n, "listings");
  if (rc == JB_OK) rc = send_owners(r, s, n);
  if (rc == JB_OK) rc = take_hexists(r, s, n, "listings");
  return rc == JB_OK ? take_owners(r, s, n) : rc;
}

static void note_quarantine(jb_sync_replicator *r, const char *uuid) {
  for (size_t i = 0; i < r->nquar; i++)
    if (strcmp(r->quarantined[i], uuid) == 0) return;
  char **q = realloc(r->quarantined, (r->nquar + 1) * sizeof *q);
  if (q == NULL) return;
  r->quarantined = q;
  if ((q[r->nquar] = strdup(uuid)) != NULL) r->nquar++;
  say(r, 1, "job %s listed in redis does not decode: quarantined here (see "
      "`jobboard check`), left in redis", uuid);
}

/*
 * Of the jobs Redis no longer lists (gone[0..*n)), keep those to remove
 * here: Redis-decided and confirmed on the board, each removed as
 * consumed, trashed (trashed[i]) or lost (lost[i], set here). Only after
 * Redis lost its data (r->data_lost: another epoch, or a sequence that
 * went back) is a job that left no trace (not in the trash, and its
 * publication marker gone too) taken for lost rather than consumed: one
 * published from this board is published again, with its claim as the
 * board holds it (Redis losing its data must not lose a posted job), and
 * another's leaves the board as lost (history end "lost", not
 * "consumed"), to come back when its poster publishes it again.
 */
static int sort_gone(jb_sync_replicator *r, const char **gone, bool *trashed,
                     bool *lost, size_t *n) {
  size_t keep = 0, nl = 0, nrep = 0;
  const char **cand = calloc(*n, sizeof *cand);
  pending *rep = calloc(*n, sizeof *rep);
  uint64_t *seqs = calloc(*n, sizeof *seqs);
  bool *ours = calloc(*n, sizeof *ours);
  int rc = JB_OK;
  if (!cand || !rep || !seqs || !ours) {
    rc = jb__err(JB_ENOMEM, "out of memory");
    goto out;
  }
  char key[JB_SYNC_NAMESPACE_MAX + 64];
  for (size_t i = 0; i < *n && rc == JB_OK; i++) {
    jb_job *job = NULL;
    if (jb_job_get(&job, r->b, gone[i]) != JB_OK || !jb_job_remote(job) ||
        jb__job_publishing(job)) {
      jb_job_free(job);
      continue;
    }
    if (r->data_lost && r->in_full && !trashed[i]) {
      seqs[nl] = jb_job_sequence(job);
      ours[nl] = jb__job_ours(job);
      cand[nl++] = gone[i];
      key_of(key, sizeof key, r, gone[i], ".posted");
      const char *argv[2] = {"EXISTS", key};
      rc = jb__sync_append(r->cmd, 2, argv, NULL);
    } else {
      gone[keep] = gone[i];
      lost[keep] = false;
      trashed[keep++] = trashed[i];
    }
    jb_job_free(job);
  }
  for (size_t i = 0; i < nl && rc == JB_OK; i++) {
    redisReply *a = NULL;
    if ((rc = next_reply(r, &a, "EXISTS")) != JB_OK) break;
    if (a->type == REDIS_REPLY_INTEGER && a->integer == 1) {
      gone[keep] = cand[i]; /* consumed: the marker outlives the listing */
      lost[keep] = false;
      trashed[keep++] = false;
    } else if (ours[i]) {
      snprintf(rep[nrep].uuid, sizeof rep[nrep].uuid, "%s", cand[i]);
      rep[nrep++].seq = seqs[i];
    } else {
      gone[keep] = cand[i];
      lost[keep] = true;
      trashed[keep++] = false;
    }
    freeReplyObject(a);
  }
  if (rc == JB_OK && nrep) {
    say(r, 1, "redis lost %zu job%s published from this board (no listing, "
        "no trace): publishing again", nrep, nrep == 1 ? "" : "s");
    qsort(rep, nrep, sizeof *rep, by_seq);
    rc = publish_list(r, rep, nrep);
    if (rc == JB_OK) r->changed += nrep;
  }
  *n = keep;
out:
  free(cand);
  free(rep);
  free(seqs);
  free(ours);
  return rc;
}

/*
 * How each of the jobs gone[0..n) (lost ones skipped) ended, as the board
 * that completed it wrote into NS:<uuid>.outcome (remote.h): one pipeline
 * of GETs. out[i].end stays 0 where there is no record (a plain consume
 * or trash, taskflow's, or one older than its expiry) or it does not
 * decode; the replies kept in rep[i] hold the bytes out[i] points into.
 */
static int read_outcomes(jb_sync_replicator *r, const char **gone,
                         const bool *lost, size_t n, jb_remote_outcome *out,
                         char (*owners)[JB_WHO_MAX + 1], redisReply **rep) {
  char key[JB_SYNC_NAMESPACE_MAX + 64];
  int rc = JB_OK;
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    if (lost[i]) continue;
    key_of(key, sizeof key, r, gone[i], ".outcome");
    const char *argv[2] = {"GET", key};
    rc = jb__sync_append(r->cmd, 2, argv, NULL);
  }
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    if (lost[i]) continue;
    if ((rc = next_reply(r, &rep[i], "GET")) != JB_OK) break;
    if (rep[i]->type != REDIS_REPLY_STRING) continue;
    if (jb__remote_outcome_parse(&out[i], owners[i], rep[i]->str,
                                 rep[i]->len) != JB_OK) {
      say(r, 1, "job %s: its outcome record in redis does not decode (%s): "
          "recorded as its plain ending", gone[i], jb_errmsg());
      memset(&out[i], 0, sizeof out[i]);
    }
  }
  return rc;
}

/* Mirror the listed ones of s[0..n) and remove the gone ones. */
static int apply(jb_sync_replicator *r, seen *s, size_t n, int64_t read_us) {
  jb_remote_listing *l = calloc(n ? n : 1, sizeof *l);
  int *res = calloc(n ? n : 1, sizeof *res);
  const char **gone = calloc(n ? n : 1, sizeof *gone);
  bool *trashed = calloc(n ? n : 1, sizeof *trashed);
  bool *lost = calloc(n ? n : 1, sizeof *lost);
  jb_remote_outcome *how = calloc(n ? n : 1, sizeof *how);
  char (*owners)[JB_WHO_MAX + 1] = calloc(n ? n : 1, sizeof *owners);
  redisReply **how_rep = calloc(n ? n : 1, sizeof *how_rep);
  int rc = JB_OK;
  if (!l || !res || !gone || !trashed || !lost || !how || !owners ||
      !how_rep) {
    rc = jb__err(JB_ENOMEM, "out of memory mirroring %zu jobs", n);
    goto out;
  }
  size_t nl = 0, ng = 0;
  int64_t now = wall_us();
  for (size_t i = 0; i < n; i++) {
    if (s[i].listed) {
      l[nl] = (jb_remote_listing){
          .uuid = s[i].uuid,
          .posting = s[i].posting->str,
          .posting_len = s[i].posting->len,
          .owner = s[i].owned ? s[i].owner : NULL,
          .expires_us = s[i].owned && s[i].pttl > 0
                            ? now + s[i].pttl * 1000
                            : 0};
      nl++;
    } else {
      gone[ng] = s[i].uuid;
      trashed[ng++] = s[i].trashed;
    }
  }
  if (ng) rc = sort_gone(r, gone, trashed, lost, &ng);
  if (rc != JB_OK) goto out;
  uint64_t pulled = 0;
  if (nl) {
    rc = jb__board_mirror_listings(r->b, l, nl, read_us, res);
    for (size_t i = 0; rc == JB_OK && i < nl; i++) {
      if (res[i] == JB_MIRROR_NEW || res[i] == JB_MIRROR_UPDATED) pulled++;
      if (res[i] == JB_MIRROR_QUARANTINED) note_quarantine(r, l[i].uuid);
    }
  }
  if (rc == JB_OK && ng) {
    size_t removed = 0, nlost = 0;
    for (size_t i = 0; i < ng; i++) nlost += lost[i];
    char why[300];
    snprintf(why, sizeof why, "redis no longer listed it after losing its "
             "data (its data set %s, now %s), and kept no trace of a "
             "completion (not in the trash, no publication marker)",
             r->epoch[0] ? r->epoch : "unknown",
             r->epoch_now[0] ? r->epoch_now : "missing");
    rc = read_outcomes(r, gone, lost, ng, how, owners, how_rep);
    if (rc == JB_OK)
      rc = jb__board_mirror_gone_x(r->b, gone, trashed, lost, why, how, ng,
                                   &removed);
    pulled += removed;
    if (rc == JB_OK && nlost)
      say(r, 1, "%zu job%s redis no longer lists after losing its data "
          "(no trace of a completion): taken off this board as lost from "
          "redis (history: lost); back when published again", nlost,
          nlost == 1 ? "" : "s");
  }
  r->changed += pulled;
  pthread_mutex_lock(&r->mu);
  r->st.pulled += pulled;
  pthread_mutex_unlock(&r->mu);
out:
  free(l);
  free(res);
  free(gone);
  free(trashed);
  free(lost);
  for (size_t i = 0; how_rep && i < n; i++) freeReplyObject(how_rep[i]);
  free(how_rep);
  free(how);
  free(owners);
  return rc;
}

/*
 * The data set's epoch: NS:epoch, a random id the first replicator to find
 * it missing writes (SET NX), and which the board remembers (setting
 * sync.epoch). A board that remembers another epoch than Redis holds now
 * has seen Redis lose its data (a restart without persistence, a flush, a
 * namespace whose keys were deleted): a random id of 122 bits does not
 * come back by chance, whatever the other keys hold again by then (a
 * sequence that climbed back to the value last read). So does a sequence
 * lower than the one last read (a server restored from an older copy,
 * which holds the old epoch too): then this replicator writes a new epoch,
 * so that every other board sees the loss as well. Only after a loss are
 * the board's jobs that Redis no longer lists and that left no trace
 * published again (ours) or taken off as lost (others'): a job merely
 * consumed more than 30 days after its publication (its marker expired) is
 * not taken for lost.
 */
static int read_epoch(jb_sync_replicator *r, bool went_back) {
  char key[JB_SYNC_NAMESPACE_MAX + 16];
  jb_sync_key(key, sizeof key, r->cmd, "epoch");
  char fresh[JB_UUID_STRLEN];
  int rc = jb__remote_claim_id(fresh);
  if (rc != JB_OK) return rc;
  const char *set[4] = {"SET", key, fresh, "NX"};
  const char *get[2] = {"GET", key};
  redisReply *a = NULL;
  char mine[64] = "";
  if (went_back)
    jb__board_setting_get(r->b, "sync.epoch", mine, sizeof mine, NULL);
  /* A sequence that went back: a new epoch for everyone, but only over the
   * one this board remembers (compare and set, in one script): another
   * replicator that signalled the loss first has written its own, and
   * writing over it would make it see a second loss. */
  const char *cas[6] = {
      "EVAL",
      "local cur = redis.call('GET', KEYS[1]) "
      "if cur == false or cur == ARGV[1] then "
      "redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0",
      "1", key, mine, fresh};
  if ((rc = went_back ? jb__sync_command(&a, r->cmd, 6, cas, NULL)
                      : jb__sync_command(&a, r->cmd, 4, set, NULL)))
    return rc;
  freeReplyObject(a);
  if ((rc = jb__sync_command(&a, r->cmd, 2, get, NULL)) != JB_OK) return rc;
  snprintf(r->epoch_now, sizeof r->epoch_now, "%.*s",
           a->type == REDIS_REPLY_STRING ? (int)a->len : 0,
           a->type == REDIS_REPLY_STRING ? a->str : "");
  freeReplyObject(a);
  rc = jb__board_setting_get(r->b, "sync.epoch", r->epoch, sizeof r->epoch,
                             NULL);
  if (rc == JB_ENOTFOUND) {
    snprintf(r->epoch, sizeof r->epoch, "%s", r->epoch_now);
    return jb__board_setting_set(r->b, "sync.epoch", r->epoch_now);
  }
  if (rc != JB_OK) return rc;
  if (strcmp(r->epoch, r->epoch_now) != 0) {
    if (!r->data_lost) {
      say(r, 1, "redis holds another data set than this board last saw "
          "(%s): it lost its data; comparing the board with it in full (jobs "
          "of this board it no longer lists are published again, others' "
          "taken off as lost)",
          went_back ? "its sequence went back" : "a new epoch");
      pthread_mutex_lock(&r->mu);
      r->st.data_losses++;
      r->st.last_data_loss_us = wall_us();
      pthread_mutex_unlock(&r->mu);
    }
    r->data_lost = true;
  }
  return JB_OK;
}

/* Read NS:sequence, and NS:epoch into r->epoch_now, in one round trip. */
static int read_sequence(jb_sync_replicator *r, uint64_t *seq) {
  char key[JB_SYNC_NAMESPACE_MAX + 16], ekey[JB_SYNC_NAMESPACE_MAX + 16];
  jb_sync_key(key, sizeof key, r->cmd, "sequence");
  jb_sync_key(ekey, sizeof ekey, r->cmd, "epoch");
  const char *argv[3] = {"MGET", key, ekey};
  redisReply *a = NULL;
  int rc = jb__sync_command(&a, r->cmd, 3, argv, NULL);
  if (rc != JB_OK) return rc;
  *seq = 0;
  r->epoch_now[0] = '\0';
  if (a->type == REDIS_REPLY_ARRAY && a->elements == 2) {
    const redisReply *s = a->element[0], *e = a->element[1];
    if (s->type == REDIS_REPLY_STRING) *seq = strtoull(s->str, NULL, 10);
    if (e->type == REDIS_REPLY_STRING)
      snprintf(r->epoch_now, sizeof r->epoch_now, "%.*s", (int)e->len,
               e->str);
  }
  freeReplyObject(a);
  return JB_OK;
}

/* The Redis-decided jobs on the board (published, not pending). */
static int local_remote(jb_sync_replicator *r, seen **out, size_t *nout,
                        bool with_claims) {
  *out = NULL;
  *nout = 0;
  jb_iter *it = NULL;
  int rc = jb_iter_open(&it, r->b, 0);
  if (rc != JB_OK) return rc;
  seen *s = NULL;
  size_t n = 0, cap = 0;
  const jb_job *job;
  for (;;) {
    rc = jb_iter_next(&job, it);
    if (rc == JB_ECORRUPT) continue;
    if (rc != JB_OK || job == NULL) break;
    if (!jb_job_remote(job) || jb__job_publishing(job)) continue;
    if ((rc = grow((void **)&s, &cap, n, sizeof *s)) != JB_OK) break;
    memset(&s[n], 0, sizeof s[n]);
    snprintf(s[n].uuid, sizeof s[n].uuid, "%s", jb_job_uuid(job));
    if (with_claims && jb_job_owner(job)) {
      s[n].owned = true;
      snprintf(s[n].owner, sizeof s[n].owner, "%s", jb_job_owner(job));
      s[n].lease_us = jb_job_lease_expires(job);
      s[n].holder_pid = jb_job_holder_pid(job);
    }
    n++;
  }
  jb_iter_close(it);
  if (rc != JB_OK) {
    free(s);
    return rc;
  }
  *out = s;
  *nout = n;
  return JB_OK;
}

static int cmp_uuid(const void *a, const void *b) {
  return strcmp(((const seen *)a)->uuid, ((const seen *)b)->uuid);
}

/*
 * Read what Redis holds now of s[0..n) (listing, owner, trash; one
 * pipeline each) and bring it into the board: the listed ones mirrored,
 * the others removed (when Redis-decided on the board).
 */
static int pull_some(jb_sync_replicator *r, seen *s, size_t n) {
  int64_t read_us = wall_us();
  char key[JB_SYNC_NAMESPACE_MAX + 16];
  jb_sync_key(key, sizeof key, r->cmd, "listings");
  int rc = JB_OK;
  /* Listing, owner, PTTL and trash of every job in one pipeline: a notice
   * costs one round trip before the mirror writes. */
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    const char *argv[3] = {"HGET", key, s[i].uuid};
    rc = jb__sync_append(r->cmd, 3, argv, NULL);
  }
  if (rc == JB_OK) rc = send_owners(r, s, n);
  if (rc == JB_OK) rc = send_hexists(r, s, n, "trash");
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    redisReply *a = NULL;
    rc = next_reply(r, &a, "HGET");
    if (rc != JB_OK) break;
    s[i].listed = a->type == REDIS_REPLY_STRING;
    s[i].owned = false;
    if (s[i].listed) {
      s[i].posting = a;
      s[i].owns = true;
    } else {
      freeReplyObject(a);
    }
  }
  if (rc == JB_OK) rc = take_owners(r, s, n);
  if (rc == JB_OK) rc = take_hexists(r, s, n, "trash");
  if (rc == JB_OK) rc = apply(r, s, n, read_us);
  for (size_t i = 0; i < n; i++) {
    if (s[i].owns) freeReplyObject(s[i].posting);
    s[i].owns = false;
    s[i].posting = NULL;
  }
  return rc;
}

/*
 * Prune NS:unique of the reservations that ran out: a schedule's run keeps
 * its key for the outcome record's lifetime after it ends (lib.lua,
 * jb_unique_free), and a post that died after reserving leaves one, so the
 * hash would only grow. One pass of HSCAN over it (run with the comparison
 * on schedule, every --verify-every); each entry "<uuid> <until-ms>[ p]"
 * whose until is a minute or more behind the server's clock, or whose job
 * ended on this board unpublished, is given back through reserve.lua,
 * which deletes it only if it still names that uuid and the uuid is not
 * listed (a key taken over meanwhile stays). Best
 * effort: an error ends the pass (the next one goes on). Returns how many
 * were given back.
 */
static size_t prune_unique(jb_sync_replicator *r) {
  char key[JB_SYNC_NAMESPACE_MAX + 16];
  jb_sync_key(key, sizeof key, r->cmd, "unique");
  const char *targv[1] = {"TIME"};
  redisReply *t = NULL;
  if (jb__sync_command(&t, r->cmd, 1, targv, NULL) != JB_OK) return 0;
  long long now_ms = -1;
  if (t->type == REDIS_REPLY_ARRAY && t->elements == 2 &&
      t->element[0]->type == REDIS_REPLY_STRING)
    now_ms = strtoll(t->element[0]->str, NULL, 10) * 1000;
  freeReplyObject(t);
  if (now_ms < 0) return 0;
  size_t pruned = 0;
  char cursor[32] = "0";
  do {
    const char *argv[5] = {"HSCAN", key, cursor, "COUNT", "500"};
    redisReply *rep = NULL;
    if (jb__sync_command(&rep, r->cmd, 5, argv, NULL) != JB_OK) break;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_ARRAY) {
      freeReplyObject(rep);
      break;
    }
    snprintf(cursor, sizeof cursor, "%s", rep->element[0]->str);
    redisReply *kv = rep->element[1];
    for (size_t i = 0; i + 1 < kv->elements; i += 2) {
      redisReply *f = kv->element[i], *v = kv->element[i + 1];
      if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
          f->len == 0 || f->len > JB_UNIQUE_MAX || memchr(f->str, 0, f->len) ||
          v->len < 38 || v->str[36] != ' ' ||
          !jb__sync_is_uuid(v->str, 36))
        continue; /* a live post's "<uuid>", or not ours */
      long long until = strtoll(v->str + 37, NULL, 10);
      char uuid[JB_UUID_STRLEN];
      memcpy(uuid, v->str, 36);
      uuid[36] = '\0';
      if (until > now_ms - 60000) {
        /* Not run out: given back all the same when its job ended on this
         * board before it was ever published (completed as soon as it was
         * posted), which no script saw. A run's key is meant to stay. */
        jb_completion *c = NULL;
        bool ended = strncmp(f->str, "schedule:", 9) != 0 &&
                     jb_job_completion(&c, r->b, uuid) == JB_OK;
        jb_completion_free(c);
        if (!ended) continue;
      }
      jb__remote_result res;
      if (jb__remote_reserve(&res, &r->rm, f->str, uuid, 0) == JB_OK) pruned++;
    }
    freeReplyObject(rep);
  } while (strcmp(cursor, "0") != 0);
  return pruned;
}

/*
 * Every listing Redis holds (one HGETALL), into *out[0..*nout) with its
 * posting (borrowed from *all: free it after *out) and its owner and PTTL
 * (read_owners, CHUNK at a time). A field that is not a job uuid is logged
 * and left out. On error nothing is left to free.
 */
static int read_listings(jb_sync_replicator *r, redisReply **all, seen **out,
                         size_t *nout) {
  *all = NULL;
  *out = NULL;
  *nout = 0;
  char key[JB_SYNC_NAMESPACE_MAX + 16];
  jb_sync_key(key, sizeof key, r->cmd, "listings");
  const char *argv[2] = {"HGETALL", key};
  int rc = jb__sync_command(all, r->cmd, 2, argv, NULL);
  if (rc != JB_OK) return rc;
  size_t n = (*all)->type == REDIS_REPLY_ARRAY ? (*all)->elements / 2 : 0;
  seen *s = calloc(n ? n : 1, sizeof *s);
  if (s == NULL) {
    freeReplyObject(*all);
    *all = NULL;
    return jb__err(JB_ENOMEM, "out of memory reading %zu listings", n);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    redisReply *f = (*all)->element[2 * i], *v = (*all)->element[2 * i + 1];
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
        !jb__sync_is_uuid(f->str, f->len)) {
      if (f->type == REDIS_REPLY_STRING)
        say(r, 1, "listing field \"%.*s\" is not a job uuid: ignored",
            (int)(f->len > 64 ? 64 : f->len), f->str);
      continue;
    }
    memcpy(s[k].uuid, f->str, 36);
    s[k].uuid[36] = '\0';
    s[k].posting = v;
    s[k].listed = true;
    k++;
  }
  for (size_t i = 0; i < k && rc == JB_OK; i += CHUNK)
    rc = read_owners(r, s + i, k - i < CHUNK ? k - i : CHUNK);
  if (rc != JB_OK) {
    free(s);
    freeReplyObject(*all);
    *all = NULL;
    return rc;
  }
  *out = s;
  *nout = k;
  return JB_OK;
}

/*
 * The full pull: every listing (HGETALL), its owner, into the board; and
 * the board's Redis-decided jobs no longer listed out of it (checked once
 * more by HEXISTS, so that a job published by another process after the
 * read is not taken for gone).
 */
static int pull_full(jb_sync_replicator *r, const char *why) {
  int64_t read_us = wall_us();
  uint64_t seq = 0;
  int rc = read_sequence(r, &seq);
  if (rc == JB_OK) rc = read_epoch(r, seq < r->seq_seen);
  if (rc != JB_OK) return rc;
  r->changed = 0;
  redisReply *all = NULL;
  seen *s = NULL;
  size_t k = 0;
  if ((rc = read_listings(r, &all, &s, &k)) != JB_OK) return rc;
  /* A loss is acted on (jobs taken for lost, published again) inside this
   * comparison only: a pull of a few jobs on a notice, while a loss found
   * by a failed comparison waits for the next one, removes as before. */
  r->in_full = true;
  for (size_t i = 0; i < k && rc == JB_OK; i += CHUNK)
    rc = apply(r, s + i, k - i < CHUNK ? k - i : CHUNK, read_us);
  /* Gone: on the board as Redis-decided, not in the listings read. */
  seen *mine = NULL;
  size_t nm = 0;
  if (rc == JB_OK) rc = local_remote(r, &mine, &nm, false);
  if (rc == JB_OK && nm) {
    qsort(s, k, sizeof *s, cmp_uuid);
    size_t ng = 0;
    for (size_t i = 0; i < nm; i++)
      if (!bsearch(&mine[i], s, k, sizeof *s, cmp_uuid)) mine[ng++] = mine[i];
    rc = JB_OK;
    for (size_t i = 0; i < ng && rc == JB_OK; i += CHUNK) {
      size_t m = ng - i < CHUNK ? ng - i : CHUNK;
      rc = pull_some(r, mine + i, m);
    }
  }
  free(mine);
  free(s);
  freeReplyObject(all);
  if (rc == JB_OK) {
    /* taskflow posts in two commands (INCR, then HSETNX): a read between
     * them sees the number moved and no listing yet. So after a pull that
     * found the number moved, the next poll pulls once more. */
    r->recheck = seq != r->seq_seen;
    r->seq_seen = seq;
  }
  r->in_full = false;
  bool lost = r->data_lost;
  if (rc == JB_OK && r->data_lost) {
    /* Republished: from now on this data set is the one to compare with. */
    rc = jb__board_setting_set(r->b, "sync.epoch", r->epoch_now);
    if (rc == JB_OK) {
      snprintf(r->epoch, sizeof r->epoch, "%s", r->epoch_now);
      r->data_lost = false;
    }
  }
  if (rc == JB_OK) {
    /* Whatever the trigger, this was a comparison in full. A difference
     * found on schedule or after a loss is one the notices and polls did
     * not bring: counted as repaired. */
    bool repair = lost || strcmp(why, "schedule") == 0;
    pthread_mutex_lock(&r->mu);
    r->st.last_full_us = read_us;
    r->st.last_full_changed = r->changed;
    r->st.last_full_took_us = wall_us() - read_us;
    snprintf(r->st.last_full_why, sizeof r->st.last_full_why, "%s",
             lost ? "data loss" : why);
    if (repair) r->st.repaired += r->changed;
    pthread_mutex_unlock(&r->mu);
    if (repair && r->changed)
      say(r, 1, "compared with redis in full (%s): %llu job%s differed and "
          "%s repaired", lost ? "after a data loss" : "on schedule",
          (unsigned long long)r->changed, r->changed == 1 ? "" : "s",
          r->changed == 1 ? "was" : "were");
    if (r->o.verify_ms > 0) r->next_verify = mono_ms() + r->o.verify_ms;
  }
  return rc;
}

/*
 * A poll, for the changes of peers that send no notice (taskflow): when
 * NS:sequence moved, someone posted: the full pull. Otherwise only the
 * Redis-decided jobs on the board are looked at (listed? owner? expiry?),
 * one pipeline per CHUNK, and those that differ are pulled.
 */
static int poll_redis(jb_sync_replicator *r) {
  uint64_t seq = 0;
  int rc = read_sequence(r, &seq);
  if (rc != JB_OK) return rc;
  /* Another data set (a new or missing epoch), or a sequence that went
   * back: Redis lost data. Checked at every poll, so a wipe is found
   * within one poll interval, whatever the sequence has climbed back to. */
  if (strcmp(r->epoch_now, r->epoch) != 0 || seq < r->seq_seen)
    return pull_full(r, "epoch");
  if (seq != r->seq_seen || r->recheck) return pull_full(r, "posts");
  seen *mine = NULL;
  size_t n = 0;
  if ((rc = local_remote(r, &mine, &n, true)) != JB_OK) return rc;
  seen *red = calloc(n ? n : 1, sizeof *red);
  if (red == NULL) {
    free(mine);
    return jb__err(JB_ENOMEM, "out of memory polling %zu jobs", n);
  }
  for (size_t i = 0; i < n; i++) memcpy(red[i].uuid, mine[i].uuid, sizeof red[i].uuid);
  for (size_t i = 0; i < n && rc == JB_OK; i += CHUNK) {
    size_t m = n - i < CHUNK ? n - i : CHUNK;
    rc = read_state(r, red + i, m);
  }
  size_t nc = 0;
  int64_t now = wall_us();
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    const seen *l = &mine[i], *x = &red[i];
    bool differs = !x->listed || l->owned != x->owned ||
                   (x->owned && strcmp(l->owner, x->owner) != 0);
    if (!differs && x->owned && l->holder_pid == 0) {
      int64_t want = x->pttl > 0 ? now + x->pttl * 1000 : 0;
      int64_t have = l->lease_us;
      differs = (want == 0) != (have == 0) ||
                (want && (want - have > EXPIRY_SLACK_US ||
                          have - want > EXPIRY_SLACK_US));
    }
    if (differs) {
      memset(&red[nc], 0, sizeof red[nc]);
      memcpy(red[nc].uuid, l->uuid, sizeof red[nc].uuid);
      nc++;
    }
  }
  for (size_t i = 0; i < nc && rc == JB_OK; i += CHUNK)
    rc = pull_some(r, red + i, nc - i < CHUNK ? nc - i : CHUNK);
  free(red);
  free(mine);
  return rc;
}

/* ---------------------------------------------------------- notices */

bool jb__sync_notice_parse(char uuid[JB_UUID_STRLEN], bool *post,
                           uint64_t *num, const redisReply *m) {
  *post = false;
  *num = 0;
  if (m->type != REDIS_REPLY_ARRAY || m->elements != 3 ||
      m->element[2]->type != REDIS_REPLY_STRING)
    return false;
  const char *p = m->element[2]->str;
  const char *sp = strchr(p, ' ');
  if (!sp || strnlen(sp + 1, 37) < 36 || !jb__sync_is_uuid(sp + 1, 36) ||
      (sp[37] != '\0' && sp[37] != ' '))
    return false;
  if (strncmp(p, "post ", 5) == 0 && sp[37] == ' ') {
    *post = true;
    *num = strtoull(sp + 38, NULL, 10);
  }
  memcpy(uuid, sp + 1, 36);
  uuid[36] = '\0';
  return true;
}

/* Whether "post U n" announces a post this replicator made and confirmed
 * (the board holds the job as published under n already). */
static bool own_post(const jb_sync_replicator *r, const char *uuid,
                     uint64_t num) {
  for (size_t i = 0; i < 2 * PUB_BATCH; i++)
    if (r->own[i].seq == num && num != 0 &&
        memcmp(r->own[i].uuid, uuid, 36) == 0)
      return true;
  return false;
}

/*
 * Our scripts' notices ("post U n", "claim U f", "abandon U", "consume U",
 * "trash U", "extend U ms"): the jobs named are pulled at once, in one
 * batch. A post numbered just after the last sequence seen moves it on,
 * so the next poll does not take our own posts for a peer's. The notices
 * of our own posts are not pulled: on a board of a fleet, each post would
 * otherwise cost its publisher one more round trip and read, in the very
 * moment the other boards pull it.
 */
static int take_notices(jb_sync_replicator *r) {
  if (r->sub == NULL) return JB_OK;
  seen *s = NULL;
  size_t n = 0, cap = 0;
  int rc = JB_OK;
  bool readable = r->sub_readable;
  r->sub_readable = false;
  for (;;) {
    redisReply *m = NULL;
    rc = jb__sync_message(&m, r->sub, readable);
    readable = false;
    if (rc != JB_OK || m == NULL) break;
    char uuid[JB_UUID_STRLEN];
    bool post;
    uint64_t num;
    if (jb__sync_notice_parse(uuid, &post, &num, m)) {
      if (post && num == r->seq_seen + 1) r->seq_seen = num;
      bool dup = post && own_post(r, uuid, num);
      for (size_t i = 0; i < n && !dup; i++)
        dup = memcmp(s[i].uuid, uuid, 36) == 0;
      if (!dup && (rc = grow((void **)&s, &cap, n, sizeof *s)) == JB_OK) {
        memset(&s[n], 0, sizeof s[n]);
        memcpy(s[n].uuid, uuid, sizeof s[n].uuid);
        n++;
      }
    }
    freeReplyObject(m);
    if (rc != JB_OK || n >= CHUNK) break;
  }
  if (rc == JB_OK && n) rc = pull_some(r, s, n);
  if (rc == JB_OK && n >= CHUNK) r->sub_readable = true; /* more to read */
  free(s);
  return rc;
}

/* --------------------------------------------------------- keep-alive */

/* A claim bound to a process of this host that the last round renewed. */
typedef struct bound {
  char uuid[JB_UUID_STRLEN];
  char owner[JB_WHO_MAX + 1];
  int pid;
} bound;

static int cmp_bound(const void *a, const void *b) {
  return strcmp(((const bound *)a)->uuid, ((const bound *)b)->uuid);
}

/*
 * Claims bound to a process of this host, with no lease, on Redis-decided
 * jobs: their owner keys get keepalive_ms more while the process lives.
 * A claim renewed last round that the board no longer shows (its holder
 * died: the board reads such a claim as lapsed; or it was released) is
 * abandoned in Redis by owner name, so that the job is free at once
 * rather than when the expiry runs out; a claim that was released or
 * taken by another owner meanwhile makes Redis refuse, harmlessly.
 */
static int keep_alive(jb_sync_replicator *r) {
  seen *mine = NULL;
  size_t nm = 0;
  int rc = local_remote(r, &mine, &nm, true);
  if (rc != JB_OK) return rc;
  bound *now = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < nm; i++) {
    const seen *m = &mine[i];
    if (!m->owned || m->holder_pid == 0 || m->lease_us != 0) continue;
    if ((rc = grow((void **)&now, &cap, n, sizeof *now)) != JB_OK) break;
    snprintf(now[n].uuid, sizeof now[n].uuid, "%s", m->uuid);
    snprintf(now[n].owner, sizeof now[n].owner, "%s", m->owner);
    now[n++].pid = m->holder_pid;
  }
  free(mine);
  for (size_t i = 0; i < n && rc == JB_OK; i++) {
    jb__remote_result res;
    int xrc = jb__remote_extend(&res, &r->rm, now[i].uuid, now[i].owner, NULL,
                                r->o.keepalive_ms);
    if (xrc == JB_EOFFLINE) rc = xrc;
    /* Refused (no longer its owner's): the mirror brings the board in
     * line at the next poll. */
  }
  if (n) qsort(now, n, sizeof *now, cmp_bound);
  for (size_t i = 0; i < r->nbound && rc == JB_OK; i++) {
    bound *was = &r->bound[i];
    bound *still = n ? bsearch(was, now, n, sizeof *now, cmp_bound) : NULL;
    if (still && !strcmp(still->owner, was->owner)) continue;
    jb_job *j = NULL;
    bool gone_here = jb_job_get(&j, r->b, was->uuid) != JB_OK ||
                     !jb_job_remote(j) || jb_job_owner(j) != NULL;
    jb_job_free(j);
    if (gone_here) continue; /* completed, or claimed again: not ours */
    jb__remote_result res;
    int xrc = jb__remote_release(&res, &r->rm, JB__REMOTE_ABANDON, was->uuid,
                                 was->owner, NULL);
    if (xrc == JB_OK)
      say(r, 0, "abandoned job %s in redis: its holder %s (pid %d) is gone",
          was->uuid, was->owner, was->pid);
    else if (xrc == JB_EOFFLINE)
      rc = xrc;
  }
  if (rc == JB_OK) {
    free(r->bound);
    r->bound = now;
    r->nbound = n;
  } else {
    free(now);
  }
  return rc;
}

/* ---------------------------------------------------------- the thread */

static bool try_lock(jb_sync_replicator *r) {
  if (r->lock_fd < 0) {
    char *p = NULL;
    if (asprintf(&p, "%s/sync.lock", r->path) < 0) return false;
    r->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(p);
    if (r->lock_fd < 0) return false;
  }
  return flock(r->lock_fd, LOCK_EX | LOCK_NB) == 0;
}

static int64_t backoff_wait(jb_sync_replicator *r, int attempt) {
  int64_t d = r->o.backoff_min_ms;
  for (int i = 0; i < attempt && d < r->o.backoff_max_ms; i++) d *= 2;
  if (d > r->o.backoff_max_ms) d = r->o.backoff_max_ms;
  uint32_t x = 0;
  if (getrandom(&x, sizeof x, GRND_NONBLOCK) != (ssize_t)sizeof x)
    x = (uint32_t)mono_ms();
  return d / 2 + (int64_t)(x % (uint32_t)(d / 2 + 1));
}

/* One pass: what is due. */
static int pass(jb_sync_replicator *r) {
  int rc = JB_OK;
  if (r->need_full) {
    /* The pull first: jobs Redis lost (a server restarted empty) go out
     * again before the board's newer ones. */
    int prc = pull_full(r, "connect");
    if (prc == JB_EOFFLINE) return prc;
    /* A pull that fails otherwise (a listing the board refuses) must not
     * stop the publication of the board's own jobs. */
    if ((rc = publish_all(r)) != JB_OK) return rc;
    if (prc != JB_OK) return prc; /* need_full stays: the pull is retried */
    r->need_full = false;
    r->next_poll = mono_ms() + r->o.poll_ms;
  }
  if ((rc = take_notices(r)) != JB_OK) return rc;
  if ((rc = publish_new(r)) != JB_OK) return rc;
  if ((rc = publish_held(r)) != JB_OK) return rc;
  if (r->next_due_us && wall_us() >= r->next_due_us &&
      (rc = publish_all(r)) != JB_OK) /* delayed jobs now due */
    return rc;
  int64_t now = mono_ms();
  if (now >= r->next_poll) {
    if ((rc = poll_redis(r)) != JB_OK) return rc;
    r->next_poll = mono_ms() + r->o.poll_ms;
  }
  if (r->o.verify_ms > 0 && now >= r->next_verify) {
    /* A poll first, so that what a poll finds (a taskflow post or claim
     * of the last interval) is not counted as a divergence; if it
     * compared in full itself, the schedule starts again from there. */
    if ((rc = poll_redis(r)) != JB_OK) return rc;
    r->next_poll = mono_ms() + r->o.poll_ms;
    if (mono_ms() >= r->next_verify &&
        (rc = pull_full(r, "schedule")) != JB_OK)
      return rc;
    size_t pruned = prune_unique(r);
    if (pruned)
      say(r, 0, "gave back %zu unique-key reservations in redis (run out, "
          "or their jobs ended here unpublished)", pruned);
  }
  if (now >= r->next_keepalive) {
    if ((rc = keep_alive(r)) != JB_OK) return rc;
    r->next_keepalive = mono_ms() + r->o.keepalive_ms / 3;
  }
  pthread_mutex_lock(&r->mu);
  r->st.last_sync_us = wall_us();
  pthread_mutex_unlock(&r->mu);
  return JB_OK;
}

/* Standing by (once, until elected): which process holds the board, as
 * its status file says. */
static void standby_say(jb_sync_replicator *r) {
  jb_sync_status st;
  char who[48] = "";
  if (jb_sync_status_read(&st, r->b) == JB_OK && st.running && st.pid > 0)
    snprintf(who, sizeof who, " (pid %d)", st.pid);
  r->standing_by = true;
  say(r, 0, "standing by: another replicator%s syncs board %s; this one "
      "takes over within a second when it stops", who, r->path);
}

/* Elected after standing by: the board must still be synced under the
 * namespace this replicator started with (it may have been detached, or
 * detached and synced under another, meanwhile): else it is not synced
 * from here, said once. */
static bool still_synced(jb_sync_replicator *r) {
  char ns[JB_SYNC_NAMESPACE_MAX + 1];
  if (jb__board_setting_get(r->b, JB_SETTING_SYNC_NAMESPACE, ns, sizeof ns,
                            NULL) == JB_OK &&
      strcmp(ns, r->ns) == 0) {
    r->unsynced_said = false;
    return true;
  }
  if (!r->unsynced_said)
    say(r, 2, "board %s is no longer synced with namespace %s (detached "
        "while this replicator stood by): it does not sync it; stop it, "
        "and run `jobboard sync` again to sync the board", r->path, r->ns);
  r->unsynced_said = true;
  return false;
}

static void *run(void *arg) {
  jb_sync_replicator *r = arg;
  int attempt = 0;
  while (!atomic_load(&r->stop)) {
    /* In a pass from here; what the watcher left owed by a pass that went
     * on without resting (a notice was waiting) stays owed, for the next
     * rest() to turn into a poke. */
    int idle = RUN_IDLE;
    atomic_compare_exchange_strong(&r->run_state, &idle, RUN_BUSY);
    if (!r->elected) {
      if (!try_lock(r)) {
        if (!r->standing_by) standby_say(r);
        rest(r, STANDBY_MS);
        continue;
      }
      if (!still_synced(r)) {
        flock(r->lock_fd, LOCK_UN);
        rest(r, STANDBY_MS);
        continue;
      }
      r->elected = true;
      pthread_mutex_lock(&r->mu);
      r->st.running = true;
      r->st.pid = (int)getpid();
      pthread_mutex_unlock(&r->mu);
      if (r->standing_by)
        say(r, 0, "taking over: the other replicator stopped; this process "
            "syncs board %s now", r->path);
      else
        say(r, 0, "elected: this process syncs board %s", r->path);
      r->standing_by = false;
      /* The first expiry of claims bound to a process (sync/attach.c). */
      char ka[32];
      snprintf(ka, sizeof ka, "%d", r->o.keepalive_ms);
      if (jb__board_setting_set(r->b, "sync.keepalive_ms", ka) != JB_OK)
        note_error(r, JB_EIO, "recording the keep-alive");
      write_status(r);
    }
    if (!r->online) {
      int rc = go_online(r);
      if (rc != JB_OK) {
        note_error(r, rc, "connecting");
        go_offline(r);
        write_status(r);
        rest(r, backoff_wait(r, attempt++));
        continue;
      }
      attempt = 0;
      r->need_full = true;
      write_status(r);
    }
    int rc = pass(r);
    if (rc == JB_EOFFLINE) {
      note_error(r, rc, "syncing");
      go_offline(r);
      write_status(r);
      rest(r, backoff_wait(r, attempt++));
      continue;
    }
    if (rc != JB_OK) {
      note_error(r, rc, "syncing");
      r->need_full = true;
      write_status(r);
      rest(r, backoff_wait(r, attempt++));
      continue;
    }
    attempt = 0;
    int64_t now = mono_ms();
    if (now - r->status_written >= 1000) write_status(r);
    int64_t until = r->next_poll < r->next_keepalive ? r->next_poll
                                                      : r->next_keepalive;
    if (r->o.verify_ms > 0 && r->next_verify < until) until = r->next_verify;
    if (r->next_due_us) {
      int64_t due = now + (r->next_due_us - wall_us() + 999) / 1000;
      if (due < until) until = due;
    }
    /* Notices still to read: the next pass runs now, and reads the log to
     * its end, so what the watcher left owed is done by it. */
    if (!r->sub_readable) rest(r, until - now);
  }
  go_offline(r);
  if (r->elected) {
    pthread_mutex_lock(&r->mu);
    r->st.running = false;
    r->st.pid = 0;
    pthread_mutex_unlock(&r->mu);
    write_status(r);
    flock(r->lock_fd, LOCK_UN);
  }
  return NULL;
}

/* ------------------------------------------------------------------ API */

static void destroy(jb_sync_replicator *r) {
  if (r == NULL) return;
  jb_sync_close(r->sub);
  jb_sync_close(r->cmd);
  if (r->lock_fd >= 0) close(r->lock_fd);
  if (r->pipe[0] >= 0) close(r->pipe[0]);
  if (r->pipe[1] >= 0) close(r->pipe[1]);
  jb_board_close(r->wb);
  jb_board_close(r->b);
  free(r->bound);
  free(r->held);
  for (size_t i = 0; i < r->nquar; i++) free(r->quarantined[i]);
  free(r->quarantined);
  pthread_mutex_destroy(&r->mu);
  free(r->path);
  free(r->url);
  free(r->ns);
  free(r);
}

int jb_sync_replicator_start(jb_sync_replicator **out, const char *path,
                             const jb_board_options *bopts,
                             const jb_sync_replicator_options *o) {
  if (out == NULL || path == NULL || o == NULL)
    return jb__err(JB_EINVAL, "jb_sync_replicator_start: NULL argument");
  *out = NULL;
  if (o->poll_ms < 0 || o->backoff_min_ms < 0 || o->backoff_max_ms < 0 ||
      o->keepalive_ms < 0)
    return jb__err(JB_EINVAL, "replicator options: negative time (poll %d, "
                   "back-off %d..%d, keep-alive %d ms)", o->poll_ms,
                   o->backoff_min_ms, o->backoff_max_ms, o->keepalive_ms);
  if (o->keepalive_ms && o->keepalive_ms < 300)
    return jb__err(JB_EINVAL, "replicator options: keep-alive %d ms is too "
                   "short (at least 300 ms: it is refreshed every third)",
                   o->keepalive_ms);
  jb_sync_replicator *r = calloc(1, sizeof *r);
  if (r == NULL) return jb__err(JB_ENOMEM, "out of memory for a replicator");
  r->lock_fd = r->pipe[0] = r->pipe[1] = -1;
  pthread_mutex_init(&r->mu, NULL);
  r->o = *o;
  if (!r->o.poll_ms) r->o.poll_ms = DEFAULT_POLL_MS;
  if (!r->o.backoff_min_ms) r->o.backoff_min_ms = DEFAULT_BACKOFF_MIN_MS;
  if (!r->o.backoff_max_ms) r->o.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
  if (r->o.backoff_max_ms < r->o.backoff_min_ms)
    r->o.backoff_max_ms = r->o.backoff_min_ms;
  if (!r->o.keepalive_ms) r->o.keepalive_ms = DEFAULT_KEEPALIVE_MS;
  if (!r->o.verify_ms) r->o.verify_ms = DEFAULT_VERIFY_MS;
  r->st.verify_ms = r->o.verify_ms;
  r->st.poll_ms = r->o.poll_ms;
  if (bopts) r->bopts = *bopts;
  else r->bopts = (jb_board_options)JB_BOARD_OPTIONS_INIT;
  r->bopts.flags &= ~(unsigned)JB_OPEN_CREATE;
  int rc;
  if ((r->path = strdup(path)) == NULL) {
    rc = jb__err(JB_ENOMEM, "out of memory for a replicator");
    goto fail;
  }
  if ((rc = jb_board_open(&r->b, path, &r->bopts)) != JB_OK) goto fail;
  if ((rc = jb_sync_board_configure(&r->url, &r->ns, r->b, o->conn.url,
                                    o->conn.ns)) != JB_OK)
    goto fail;
  if (r->url == NULL) {
    rc = jb__err(JB_EINVAL, "board %s is not synced with any redis: give "
                 "the redis URL", path);
    goto fail;
  }
  jb_sync_url *u = NULL;
  if ((rc = jb_sync_url_parse(&u, r->url)) != JB_OK) goto fail;
  jb_sync_url_free(u);
  if ((rc = jb_board_open(&r->wb, path, &r->bopts)) != JB_OK) goto fail;
  if (pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    rc = jb__err_errno(errno, "pipe (replicator wake-up)");
    goto fail;
  }
  jb__sync_url_redact(r->st.url, sizeof r->st.url, r->url);
  snprintf(r->st.ns, sizeof r->st.ns, "%s", r->ns);
  r->next_keepalive = mono_ms() + r->o.keepalive_ms / 3;
  if (pthread_create(&r->watcher, NULL, watch_local, r) != 0) {
    rc = jb__err(JB_EIO, "cannot start the replicator's watcher thread");
    goto fail;
  }
  r->watcher_started = true;
  if (pthread_create(&r->thread, NULL, run, r) != 0) {
    rc = jb__err(JB_EIO, "cannot start the replicator thread");
    goto fail;
  }
  r->started = true;
  *out = r;
  return JB_OK;
fail:
  if (r->watcher_started) {
    atomic_store(&r->stop, true);
    jb_board_interrupt(r->wb);
    pthread_join(r->watcher, NULL);
  }
  destroy(r);
  return rc;
}

void jb_sync_replicator_stop(jb_sync_replicator *r) {
  if (r == NULL) return;
  atomic_store(&r->stop, true);
  poke(r, POKE_NOW);
  jb_board_interrupt(r->wb);
  if (r->started) pthread_join(r->thread, NULL);
  if (r->watcher_started) pthread_join(r->watcher, NULL);
  destroy(r);
}

/* Jobs waiting to be published and the age of the oldest. */
static int count_unpublished(jb_board *b, jb_sync_status *st) {
  jb_iter *it = NULL;
  int rc = jb_iter_open(&it, b, 0);
  if (rc != JB_OK) return rc;
  int64_t oldest = 0;
  const jb_job *job;
  st->unpublished = 0;
  for (;;) {
    rc = jb_iter_next(&job, it);
    if (rc == JB_ECORRUPT) continue;
    if (rc != JB_OK || job == NULL) break;
    if (jb_job_remote(job) && !jb__job_publishing(job)) continue;
    st->unpublished++;
    if (oldest == 0 || jb_job_created(job) < oldest) oldest = jb_job_created(job);
  }
  jb_iter_close(it);
  st->lag_seconds = oldest ? (double)(wall_us() - oldest) / 1e6 : 0;
  if (st->lag_seconds < 0) st->lag_seconds = 0;
  return rc;
}

int jb_sync_replicator_status_read(jb_sync_status *st,
                                   jb_sync_replicator *r) {
  if (r == NULL || st == NULL)
    return jb__err(JB_EINVAL, "jb_sync_replicator_status_read: NULL argument");
  pthread_mutex_lock(&r->mu);
  *st = r->st;
  pthread_mutex_unlock(&r->mu);
  uint64_t next = 0;
  int rc = jb_log_bounds(NULL, &next, r->wb);
  if (rc != JB_OK) return rc;
  st->lag_events = next > r->cursor && st->running ? next - r->cursor : 0;
  return count_unpublished(r->wb, st);
}

bool jb__sync_replicator_runs(const char *path) {
  return jb__board_replicator_runs(path);
}

int jb_sync_status_read(jb_sync_status *st, jb_board *b) {
  if (st == NULL || b == NULL)
    return jb__err(JB_EINVAL, "jb_sync_status_read: NULL argument");
  memset(st, 0, sizeof *st);
  const char *path = jb_board_path(b);
  st->running = jb__sync_replicator_runs(path);
  uint64_t cursor = 0;
  char *sp = status_path(path);
  FILE *f = sp ? fopen(sp, "r") : NULL;
  free(sp);
  if (f) {
    char line[1024];
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = '\0';
      char *v = strchr(line, ' ');
      if (v == NULL) continue;
      *v++ = '\0';
      if (!strcmp(line, "pid")) st->pid = atoi(v);
      else if (!strcmp(line, "connected")) st->connected = atoi(v) != 0;
      else if (!strcmp(line, "url")) snprintf(st->url, sizeof st->url, "%s", v);
      else if (!strcmp(line, "ns")) snprintf(st->ns, sizeof st->ns, "%s", v);
      else if (!strcmp(line, "cursor")) cursor = strtoull(v, NULL, 10);
      else if (!strcmp(line, "published")) st->published = strtoull(v, NULL, 10);
      else if (!strcmp(line, "pulled")) st->pulled = strtoull(v, NULL, 10);
      else if (!strcmp(line, "last_sync_us")) st->last_sync_us = strtoll(v, NULL, 10);
      else if (!strcmp(line, "last_full_us")) st->last_full_us = strtoll(v, NULL, 10);
      else if (!strcmp(line, "last_full_took_us"))
        st->last_full_took_us = strtoll(v, NULL, 10);
      else if (!strcmp(line, "last_full_changed"))
        st->last_full_changed = strtoull(v, NULL, 10);
      else if (!strcmp(line, "last_full_why"))
        snprintf(st->last_full_why, sizeof st->last_full_why, "%s", v);
      else if (!strcmp(line, "repaired")) st->repaired = strtoull(v, NULL, 10);
      else if (!strcmp(line, "data_losses")) st->data_losses = strtoull(v, NULL, 10);
      else if (!strcmp(line, "last_data_loss_us"))
        st->last_data_loss_us = strtoll(v, NULL, 10);
      else if (!strcmp(line, "verify_ms")) st->verify_ms = atoi(v);
      else if (!strcmp(line, "poll_ms")) st->poll_ms = atoi(v);
      else if (!strcmp(line, "last_error_us")) st->last_error_us = strtoll(v, NULL, 10);
      else if (!strcmp(line, "server"))
        snprintf(st->server, sizeof st->server, "%s", v);
      else if (!strcmp(line, "last_error"))
        snprintf(st->last_error, sizeof st->last_error, "%s", v);
    }
    fclose(f);
  }
  if (!st->running) {
    st->connected = false;
    st->pid = 0;
    st->server[0] = '\0';
  }
  /* The board's own word on what it is synced with. */
  char url[4096], ns[JB_SYNC_NAMESPACE_MAX + 1];
  if (jb__board_setting_get(b, "sync.url", url, sizeof url, NULL) == JB_OK) {
    /* The password is not in the board (only an older release put it
     * there): "***" says one is configured, which anyone may learn from
     * the credentials file's existence, without the right to read it. */
    char *shown = NULL;
    if (!jb__sync_url_has_password(url) && jb__sync_cred_exists(path, NULL) &&
        jb__sync_url_add_password(&shown, url, "***") == JB_OK)
      snprintf(st->url, sizeof st->url, "%s", shown);
    else
      jb__sync_url_redact(st->url, sizeof st->url, url);
    free(shown);
  }
  if (jb__board_setting_get(b, "sync.namespace", ns, sizeof ns, NULL) == JB_OK)
    snprintf(st->ns, sizeof st->ns, "%s", ns);
  uint64_t next = 0;
  int rc = jb_log_bounds(NULL, &next, b);
  if (rc != JB_OK) return rc;
  st->lag_events = st->running && next > cursor ? next - cursor : 0;
  return count_unpublished(b, st);
}

/* ---------------------------------------------------------------- verify */

/* One side's view of a job, for jb_sync_compare. */
typedef struct {
  bool listed;      /* Redis: listed; board: on the board, Redis-decided */
  bool owned;
  char owner[JB_WHO_MAX + 1];
} side;

static void board_side(jb_board *b, const char *uuid, side *out) {
  memset(out, 0, sizeof *out);
  jb_job *job = NULL;
  if (jb_job_get(&job, b, uuid) == JB_OK && jb_job_remote(job)) {
    out->listed = true;
    if (jb_job_owner(job)) {
      out->owned = true;
      snprintf(out->owner, sizeof out->owner, "%s", jb_job_owner(job));
    }
  }
  jb_job_free(job);
}

/* What differs between Redis's view `x` and the board's `l` (NULL: none). */
static const char *difference(const side *x, const side *l) {
  if (x->listed && !l->listed) return "listed in redis, not on this board";
  if (!x->listed && l->listed) return "on this board, not listed in redis";
  if (!x->listed) return NULL;
  if (x->owned != l->owned)
    return x->owned ? "claimed in redis, unclaimed on this board"
                    : "unclaimed in redis, claimed on this board";
  if (x->owned && strcmp(x->owner, l->owner) != 0)
    return "claimed by another owner in redis than on this board";
  return NULL;
}

int jb_sync_compare(jb_sync_verify_result *res, jb_board *b, jb_sync_conn *c,
                    int settle_ms, jb_sync_diff_cb fn, void *ctx) {
  if (b == NULL || c == NULL || res == NULL)
    return jb__err(JB_EINVAL, "jb_sync_compare: NULL argument");
  if (settle_ms < 0 || settle_ms > 60000)
    return jb__err(JB_EINVAL, "jb_sync_compare: settle time %d ms is not in "
                   "0..60000", settle_ms);
  memset(res, 0, sizeof *res);
  /* The replicator's readers, on this connection and board. */
  jb_sync_replicator r;
  memset(&r, 0, sizeof r);
  r.b = b;
  r.cmd = c;
  redisReply *all = NULL;
  seen *s = NULL, *mine = NULL, *cand = NULL;
  size_t k = 0, nm = 0, nc = 0;
  int rc = read_listings(&r, &all, &s, &k);
  if (rc != JB_OK) return rc;
  res->redis_listed = k;
  rc = local_remote(&r, &mine, &nm, true);
  if (rc != JB_OK) goto out;
  res->board_remote = nm;
  /* qsort wants an array even for none: an empty side may be NULL. */
  if (k) qsort(s, k, sizeof *s, cmp_uuid);
  if (nm) qsort(mine, nm, sizeof *mine, cmp_uuid);
  /* Merge the two sorted views; every uuid that differs is a candidate. */
  if ((cand = calloc(k + nm ? k + nm : 1, sizeof *cand)) == NULL) {
    rc = jb__err(JB_ENOMEM, "out of memory comparing %zu jobs", k + nm);
    goto out;
  }
  for (size_t i = 0, j = 0; i < k || j < nm;) {
    int cmp = i == k ? 1 : j == nm ? -1 : strcmp(s[i].uuid, mine[j].uuid);
    side x = {0}, l = {0};
    const char *u = cmp <= 0 ? s[i].uuid : mine[j].uuid;
    if (cmp <= 0) {
      x.listed = true;
      x.owned = s[i].owned;
      snprintf(x.owner, sizeof x.owner, "%s", s[i].owner);
    }
    if (cmp >= 0) {
      l.listed = true;
      l.owned = mine[j].owned;
      snprintf(l.owner, sizeof l.owner, "%s", mine[j].owner);
    }
    if (difference(&x, &l))
      snprintf(cand[nc++].uuid, sizeof cand[0].uuid, "%s", u);
    if (cmp <= 0) i++;
    if (cmp >= 0) j++;
  }
  /* A change under way (a claim recorded here a moment after Redis, a job
   * being published, a replicator's next poll) is not a divergence: the
   * candidates are read again on both sides after settle_ms, and only
   * those that still differ are reported. */
  if (nc && settle_ms > 0) {
    struct timespec ts = {settle_ms / 1000, (long)(settle_ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  for (size_t i = 0; i < nc && rc == JB_OK; i += CHUNK) {
    size_t m = nc - i < CHUNK ? nc - i : CHUNK;
    rc = read_state(&r, cand + i, m);
    for (size_t j = i; rc == JB_OK && j < i + m; j++) {
      side x = {.listed = cand[j].listed, .owned = cand[j].listed &&
                                                  cand[j].owned};
      if (x.owned) snprintf(x.owner, sizeof x.owner, "%s", cand[j].owner);
      side l;
      board_side(b, cand[j].uuid, &l);
      const char *what = difference(&x, &l);
      if (what == NULL) continue;
      if (x.listed && !l.listed) res->missing_here++;
      else if (!x.listed) res->extra_here++;
      else res->owner_differs++;
      if (fn) fn(cand[j].uuid, what, ctx);
    }
  }
out:
  free(cand);
  free(mine);
  free(s);
  freeReplyObject(all);
  return rc;
}
