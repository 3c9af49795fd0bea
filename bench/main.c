/*
 * main.c - jobboard-bench: job cycles per second for each durability
 * mode, beside a raw LMDB loop doing the same writes.
 *
 * A program of its own, apart from jobboard(1): it links SQLite (--peers)
 * and hiredis (--redis) directly, drives LMDB itself for its floors, and
 * defines its own mdb_txn_commit to time commits (bench_wake.c). None of
 * that belongs in the installed command or the library.
 *
 * A cycle is what a job costs on the board: post, claim-next, consume, three
 * write transactions. The same process runs the library's cycle and two
 * raw floors (bench_raw.c: the same writes, and the same writes plus
 * the change log) on boards of its own, round after round in turns, so all
 * meet the same machine state; each figure is the median of the rounds.
 * Then N processes race the same cycle on one board (mode none), beside N
 * processes racing each raw loop.
 *
 * It reports; it asserts nothing about speed. It does fail when a cycle
 * fails or when jobs are left behind, since then the figure means nothing.
 */
#include "config.h"
#include "bench_raw.h"
#include "bench_util.h"
#include "bench_peers.h"
#include "bench_threads.h"
#include "bench_batch.h"
#include "bench_wake.h"
#include "bench_names.h"
#include "bench_pages.h"
#include "bench_worker.h"
#ifdef JB_WITH_REDIS
#include "bench_redis.h"
#include "bench_sync.h"
#include "bench_fleet.h"
#endif
#include "tools/cli_getopt.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Defaults: `jobboard-bench` should finish in about a minute and a half on
 * a 2-core machine where a flushed commit takes about a millisecond (3
 * flushed commits per cycle: ~1,000 cycles/s in full and normal) and an
 * unflushed cycle about 70 microseconds (no MDB_WRITEMAP: every commit
 * writes its pages with pwrite). */
#define DEFAULT_JOBS 20000u
#define DEFAULT_SYNC_JOBS 500u
/* --procs 4,16, --threads 1,8 and --batch 100,1000: a few racers and
 * many, a small batch and a large one. */
#define DEFAULT_PROCS {4, 16}
#define DEFAULT_NPROCS 2
#define DEFAULT_THREADS {1, 8}
#define DEFAULT_NTHREADS 2
#define DEFAULT_BATCH {100, 1000}
#define DEFAULT_NBATCH 2
/* Jobs per round and kind of the posting part in mode none. */
#define DEFAULT_POST_JOBS 20000u
#define DEFAULT_WAKES 2000u
#define DEFAULT_REDIS_JOBS 2000u
#define DEFAULT_REDIS_WAKES 300u
#define DEFAULT_POLL_WAKES 40u
#define DEFAULT_SYNC_CYCLES 20000u
#define MAX_POLLS 8u
#define DEFAULT_FLEET {2, 8}
#define DEFAULT_NFLEET 2
#define DEFAULT_FLEET_WAKES 300u
#define MAX_FLEET_HOSTS 16u
#define DEFAULT_ROUNDS 3u
#define MAX_PROCS 64u
/* Untimed cycles before the rounds: the first ones fault in pages, grow
 * the file and fill LMDB's free list, which no later cycle pays for. */
#define WARMUP_JOBS 2000u
#define WARMUP_SYNC_JOBS 20u
/* The library keeps a 24-byte header beside each posting in `jobs`
 * (store/store.h, jb_jobhdr); the raw value is posting + header long. */
#define JOB_HEADER_LEN 24u

static const char bench_help[] =
    "Usage: jobboard-bench [OPTIONS]\n"
    "       jobboard-bench --redis URL [OPTIONS]\n"
    "       jobboard-bench --help\n"
    "\n"
    "jobboard-bench measures what jobs cost on boards of its own, made with\n"
    "the library it was built with, beside bare LMDB and, if asked, SQLite.\n"
    "It is built by make beside jobboard(1) and not installed: run it from\n"
    "the build directory (./jobboard-bench). It never touches a board of\n"
    "yours. One run measures, in this order (each part is described below):\n"
    "  single process      the cycle in each mode beside two raw LMDB floors\n"
    "  worker path         the plain API beside the fused and batched loops\n"
    "  kinds of claim      plain, lease, process-bound, both (mode none)\n"
    "  threads             --threads LIST threads sharing one board handle\n"
    "  processes           --procs LIST processes racing on one board\n"
    "  posting             single posts beside --batch LIST batches\n"
    "  wake-up             how soon a waiter in another process wakes\n"
    "  SQLite              with --peers, SQLite (WAL) beside each figure\n"
    "With --redis URL it measures instead the operations through Redis\n"
    "(\"Through Redis\" below). Figures go to stdout as text, or with --json\n"
    "as one JSON object per line; errors are one line on stderr,\n"
    "'jobboard-bench: <message>'.\n"
    "\n"
    "The cycle (post, claim-next, consume: three write transactions per\n"
    "job) is measured for each durability mode, and in the same run two raw\n"
    "LMDB floors:\n"
    "  raw LMDB        the same three write transactions per job on bare\n"
    "                  LMDB, with the environment flags the library uses for\n"
    "                  the mode and records of the same sizes (the job under\n"
    "                  its 16-byte uuid, a ready-index entry put at post and\n"
    "                  taken with a cursor at claim-next, a claim record put\n"
    "                  at claim and deleted at consume), and nothing else: no\n"
    "                  change log, no checks, no posting encoding;\n"
    "  raw LMDB + log  the same, plus one change-log event appended in each\n"
    "                  transaction (every change is logged in its own\n"
    "                  transaction: docs/DESIGN-NOTES.md, \"Storage\n"
    "                  layout\"), to one log table (the library appends to\n"
    "                  a one-page tail table, moved to the log 24 events at\n"
    "                  a time, so it may beat this floor).\n"
    "It prints cycles per second and microseconds per cycle for all three,\n"
    "and jobboard's ratio to each floor (1.00: as fast as bare LMDB). The\n"
    "first ratio is what the library costs on top of LMDB; the second, what\n"
    "it costs beyond the log it must write.\n"
    "\n"
    "With --peers, SQLite doing the same job is measured beside each of\n"
    "these figures (see \"SQLite\" below), in the same rounds.\n"
    "\n"
    "Single process: for each mode, a fresh board and fresh raw\n"
    "environments; untimed warm-up cycles (2000; 20 for full and normal),\n"
    "then --rounds timed rounds of each, taken in turns; each figure is the\n"
    "median round.\n"
    "  mode     LMDB flags (the library's for the mode, used by both floors)\n"
    "  full     MDB_NOTLS                (two flushes per commit)\n"
    "  normal   MDB_NOMETASYNC|MDB_NOTLS (one flush per commit)\n"
    "  none     MDB_NOSYNC|MDB_NOTLS     (no flush; pages written with\n"
    "                                     pwrite/writev, no MDB_WRITEMAP)\n"
    "\n"
    "Worker path: after each mode's figures, in that mode, one process, on\n"
    "boards of its own, rounds in turns, the same jobs three ways:\n"
    "  plain API           post, claim-next, consume (3 commits per job)\n"
    "  consume+claim-next  the jobs posted with jb_job_post_batch, 64 per\n"
    "                      commit, then claim-next once and\n"
    "                      jb_consume_and_claim_next to the end of them\n"
    "                      (1 commit per job)\n"
    "  claim/consume x64   the same posts, then jb_claim_next_many(64)\n"
    "                      and jb_consume_many of those (2 commits per\n"
    "                      64 jobs)\n"
    "The posts are timed (each 64 are posted when the last 64 are done, so\n"
    "the board holds at most 64 jobs, as a worker keeping up with its\n"
    "producers sees it). --jobs / 4 jobs per round in mode none, --sync-jobs\n"
    "in full and normal; jobs per second (median round), and each loop's\n"
    "ratio to the plain API's.\n"
    "\n"
    "Kinds of claim: in mode none, one process, the library's cycle with\n"
    "each kind of claim side by side, on fresh boards, rounds in turns:\n"
    "  plain     claim-next as above (the claim lives until its owner acts)\n"
    "  lease     claim-next with a 30 s lease (indexed by expiry)\n"
    "  process   claim-next bound to this process (indexed by process)\n"
    "  both      a lease and bound to this process\n"
    "with each one's cost per cycle beyond plain, in microseconds.\n"
    "\n"
    "Threads (--threads LIST, default 1,8): for each mode and each count T,\n"
    "T threads of this process share ONE board handle and race the cycle on\n"
    "one board (the library may gather the writes of threads that arrive\n"
    "together into one LMDB transaction: group commit); --jobs cycles in all\n"
    "in mode none, --sync-jobs in full and normal, split evenly over the\n"
    "threads, all started together. With --peers, T threads race SQLite's\n"
    "cycle, each with its own connection. Each mode has a fresh board (and\n"
    "database) and untimed warm-up cycles; each round runs every count on\n"
    "both, in turns; median round. Columns: cycles/s of all threads\n"
    "together, us/cycle (wall time over all cycles), scaling (cycles/s over\n"
    "those of the list's first count, 1 by default), and with --peers\n"
    "SQLite's cycles/s and scaling and the ratio jobboard/SQLite.\n"
    "\n"
    "Multiple processes (--procs LIST, default 4,16): for each count N, N\n"
    "processes race the same cycle on one board in mode none, or the mode\n"
    "--procs-mode names (each opens the board itself after fork and warms\n"
    "up; all start together), then as many race each raw loop on one\n"
    "environment with the mode's flags, and with --peers SQLite's cycle on\n"
    "one database (synchronous OFF for none, else as for the mode; a\n"
    "connection per process). --jobs cycles in all (--sync-jobs in full and\n"
    "normal). The figure is all their cycles over the wall time\n"
    "from the common start to the last one's end; us/cycle is that wall\n"
    "time over all cycles.\n"
    "\n"
    "Posting: for each mode, jobs per second of single posts (jb_job_post,\n"
    "one write transaction per job) and of batches (jb_job_post_batch of\n"
    "each --batch size, default 100,1000: one transaction per batch), and\n"
    "gain, their jobs/s over single posts'. Jobs per round and kind: in mode\n"
    "none --post-jobs (default 20000, rounded up to whole batches); in full\n"
    "and normal, --sync-jobs single posts and at least 10 batches of each\n"
    "size. Each round posts every kind on a fresh board (removed after it)\n"
    "after one untimed commit; median round. Beside each, the raw LMDB\n"
    "floor (raw): bare LMDB with the mode's flags writing the same records\n"
    "(the job, its ready entry, one change-log event) per job, in the same\n"
    "transactions, each put with MDB_APPEND at its table's end, with no\n"
    "posting to encode; ratio: jobboard's jobs/s over raw's. With --peers,\n"
    "SQLite posts the same jobs: one INSERT per transaction, or BEGIN\n"
    "IMMEDIATE, a batch of INSERTs, COMMIT. (`jobboard post --batch` posts\n"
    "in chunks of 1000 per transaction.)\n"
    "\n"
    "SQLite (--peers; only in a build with libsqlite3: configure\n"
    "--with-sqlite): SQLite in WAL mode doing the same job, so that jobboard\n"
    "can be weighed against \"a table in SQLite\". A table of jobs (seq\n"
    "INTEGER PRIMARY KEY AUTOINCREMENT: the board sequence, never reused; a\n"
    "unique 16-byte uuid blob; name; a details blob sized so that name and\n"
    "details are as many bytes as our posting; priority, state, owner,\n"
    "token, times), a partial index on (priority, seq) over unclaimed jobs\n"
    "(claim-next order), and a history table with one row per completion\n"
    "(by its sequence only, as ours; the oldest beyond 10,000 deleted 64 at\n"
    "a time, as ours). Per job, each its own transaction, prepared\n"
    "statements:\n"
    "  post        INSERT INTO jobs\n"
    "  claim-next  BEGIN IMMEDIATE; UPDATE jobs SET state, owner, token,\n"
    "              times WHERE seq = (SELECT seq ... WHERE state = 0 ORDER\n"
    "              BY priority, seq LIMIT 1) RETURNING uuid; COMMIT\n"
    "  consume     BEGIN IMMEDIATE; INSERT INTO history SELECT ... FROM\n"
    "              jobs WHERE uuid = ? AND the claim is the owner's; DELETE\n"
    "              the job; COMMIT\n"
    "SQLite has no change log to keep; its token is the claim's time, not a\n"
    "board-wide counter (both in its favour). Threads and processes each\n"
    "open their own connection with busy_timeout 10 s; an operation that\n"
    "still meets SQLITE_BUSY is rolled back and run again (counted).\n"
    "journal_mode=WAL, and synchronous by mode:\n"
    "  mode     SQLite      SQLite flushes             jobboard flushes\n"
    "  full     FULL        the WAL, once per commit   twice per commit (the\n"
    "                                                  pages, then the meta\n"
    "                                                  page)\n"
    "  normal   NORMAL      never at commit; the WAL   once per commit (the\n"
    "                       at checkpoints             pages)\n"
    "  none     OFF         never                      never\n"
    "In normal SQLite flushes less than jobboard: a power loss may lose its\n"
    "last commits (ours: the last one), neither corrupts.\n"
    "\n"
    "Wake-up: how soon a waiter learns of a post made by another process.\n"
    "One process sleeps in `jb_board_wait` on a board (mode none); the other\n"
    "posts a job once the waiter is asleep. The wake-up runs from the\n"
    "post's commit (when LMDB's mdb_txn_commit returned in the poster: the\n"
    "job is on the board) to the waiter's return: the commit's signal, the\n"
    "futex wake, the waiter's scheduling and its re-check of the board.\n"
    "(The bench times the commit with its own mdb_txn_commit, which the\n"
    "dynamic linker puts before liblmdb's.) A second row runs from just\n"
    "before the post call, adding the post's transaction and commit; p50,\n"
    "p99 and max over --wakes samples. Beside them, the floor: the same\n"
    "hand-off between two processes with nothing but a futex in shared\n"
    "memory (increment, FUTEX_WAKE; the sleeper's FUTEX_WAIT returns).\n"
    "The post call's own duration is shown too.\n"
    "\n"
    "Through Redis (--redis URL; only these are measured then): on a fresh\n"
    "board (mode none unless --modes names one mode) attached to that server\n"
    "under a namespace of the bench's own, through the public API, --jobs\n"
    "jobs (default 2000) after 50 untimed ones:\n"
    "  round trip      jb_sync_ping: one PING and its reply\n"
    "  local commit    jb_claim, then jb_abandon, of a job never\n"
    "                  published: one write transaction each, no Redis\n"
    "  PING + local    a PING, then one local commit (claim and abandon in\n"
    "    commit        turns), timed together: a claim's floor, in the\n"
    "                  same pattern as a claim (a round trip, then a commit)\n"
    "  post + publish  jb_job_post, then jb_sync_publish (marks the job\n"
    "                  Redis-decided, then runs our post script)\n"
    "  claim           jb_claim of each published job: our claim script\n"
    "                  in Redis, then the local commit\n"
    "  consume         jb_consume of each: our consume script, then the\n"
    "                  local commit\n"
    "  claim-next      jb_claim_next of each of --jobs published jobs (a\n"
    "                  round trip each); then, on twice as many,\n"
    "                  jb_claim_next_many of 64 jobs a call, one call one\n"
    "                  by one (JOBBOARD_SYNC_CLAIM_MANY=0: a round trip per\n"
    "                  job), the next in one script call (one round trip),\n"
    "                  in turns; per job: a call's time over 64\n"
    "all jobs posted, then all claimed, then all consumed. Per operation\n"
    "p50, p99 and max, and the phase's operations per second; and the claim's\n"
    "p50 over (round trip p50 + local claim p50), and over the p50 of PING +\n"
    "local commit; and the per-job p50 of claim-next x64 over claim-next's. It leaves in Redis the namespace's counters and one\n"
    "publication marker per job (expiring after 30 days): use a server of\n"
    "its own (bench/bench-redis.sh starts one, and runs taskflow's client\n"
    "beside it). Needs a build with Redis sync.\n"
    "\n"
    "Then, with a replicator (jb_sync_replicator_start) in the bench process:\n"
    "  wake-up         a waiter thread sleeps in jb_board_wait on board B,\n"
    "                  whose replicator runs here; a job is posted to Redis\n"
    "                  and the sample runs from just before the post call to\n"
    "                  the waiter's return (it then claims and consumes the\n"
    "                  job through Redis, untimed). Posters: publish\n"
    "                  (jb_job_post + jb_sync_publish on a board A: our post\n"
    "                  script and its notice), replicated (jb_job_post on A,\n"
    "                  whose own replicator publishes it), --wakes samples\n"
    "                  each (default 300 with --redis), B polling at the\n"
    "                  default 1000 ms; and taskflow (INCR + HSETNX on a raw\n"
    "                  connection, no notice, at a random point of the poll\n"
    "                  interval: found by B's next poll), --poll-wakes\n"
    "                  samples for each --poll interval\n"
    "  sync on         the local cycle (post, claim-next, consume) on one\n"
    "                  board: plain, attached (jb_sync_attach), and attached\n"
    "                  with a replicator running on it; --cycles cycles per\n"
    "                  setting and round, --rounds rounds, median round. The\n"
    "                  replicator publishes the jobs it reaches before their\n"
    "                  consume: its cycles are also shown split by where the\n"
    "                  job went (kept local, or through Redis)\n"
    "\n"
    "Then the fleet lag (--fleet LIST, default 2,8; 0 skips it): how soon a\n"
    "job posted on one host is seen on the others when each host runs its\n"
    "own `jobboard sync`, as a deployment does. A fleet of N hosts is N\n"
    "fresh boards (mode as above), each with a `jobboard sync --board DIR\n"
    "--redis URL --namespace NS --durability MODE` process of its own (the\n"
    "jobboard program beside jobboard-bench, or --jobboard PATH), all under\n"
    "one namespace of the fleet's own (NS-fleet-N-MODE), and on each host\n"
    "but the first a waiter process asleep in jb_log_wait, as `jobboard\n"
    "watch` sleeps. Once every daemon is connected and the fleet has been\n"
    "quiet for 3 ms, the bench posts one job on host 1 (jb_job_post: host\n"
    "1's daemon publishes it); a sample runs from just before the post\n"
    "call to the return of a waiter's jb_log_wait with the job's POSTED\n"
    "event, one sample per other host (CLOCK_MONOTONIC, one clock for all\n"
    "processes). The job is then claimed and consumed through Redis from\n"
    "host 1 (untimed), and the next post waits until every waiter has seen\n"
    "it leave. 5 untimed posts, then --fleet-wakes posts (default 300) for\n"
    "each size and each daemon mode of --fleet-sync (default none,full).\n"
    "Columns: p50, p99, max and mean over every (post, other host) pair,\n"
    "and the p50 and p99 of the last host to see each post. Each daemon's\n"
    "log is DIR.log beside its board (kept with --keep). The boards are\n"
    "fresh unless --fleet-history N fills each one's history first (the\n"
    "mirror looks up every new job in the recent history).\n"
    "\n"
    "Benchmarks report, they do not promise: figures depend on the machine,\n"
    "its load and its disk. The first lines name the machine and the file\n"
    "system of the boards (on tmpfs a flush costs nothing, so full and\n"
    "normal would not measure a disk). bench fails only when a cycle fails\n"
    "or jobs are left behind, since then a figure would mean nothing.\n"
    "\n"
    "Options:\n"
    "  --jobs N        cycles per round in mode none, and the total of the\n"
    "                  threads' and the processes' races (default 20000)\n"
    "  --sync-jobs N   cycles per round in modes full and normal, which\n"
    "                  flush the disk on every commit (default 500)\n"
    "  --modes LIST    comma-separated modes to measure, among full, normal,\n"
    "                  interval, none (default: all four); --durability LIST\n"
    "                  is the same\n"
    "  --procs LIST    comma-separated counts of racing processes, each 1 to\n"
    "                  64, at most 8 counts (default 4,16; 0 skips the race)\n"
    "  --procs-mode MODE\n"
    "                  the durability of the racing processes: full, normal,\n"
    "                  interval or none (default none); in full and normal\n"
    "                  --sync-jobs cycles in all, else --jobs\n"
    "  --procs-steady  make the race's board in interval first, so that its\n"
    "                  flushed-state records are on and every racer takes\n"
    "                  part whatever its mode (full and normal racers then\n"
    "                  share flushes: docs/DESIGN-NOTES.md, \"Durability\n"
    "                  interval\")\n"
    "  --threads LIST  comma-separated counts of threads sharing one handle,\n"
    "                  each 1 to 64, at most 8; the first is the base of\n"
    "                  \"scaling\" (default 1,8; 0 skips the part)\n"
    "  --batch LIST    comma-separated batch sizes of the posting part, each\n"
    "                  2 to 100000, at most 8 (default 100,1000; 0 skips the\n"
    "                  part)\n"
    "  --post-jobs N   jobs per round and kind of the posting part in mode\n"
    "                  none (default 20000)\n"
    "  --flush-interval MS  durability interval's flush period for the\n"
    "                  library's boards (default: the library's, 1000)\n"
    "  --peers         measure SQLite doing the same job beside each figure\n"
    "                  (see \"SQLite\" above); a build without SQLite refuses\n"
    "                  it (exit 2) and says how to get one\n"
    "  --rounds N      timed rounds per figure, median reported (default 3)\n"
    "  --wakes N       samples of the wake-up latency (default 2000; 0\n"
    "                  skips it); see \"Wake-up\" above. With --redis:\n"
    "                  samples per notice poster (default 300)\n"
    "  --names N       only claim-next by job name: a board of --names-jobs\n"
    "                  jobs (default 1,000,000) over N names, behind 100,000\n"
    "                  of a name posted first; p50/p99 of --names-claims\n"
    "                  claims (default 20,000) by one, three names, a prefix,\n"
    "                  every name, and every name with names paused; SQLite\n"
    "                  beside it when built with it (bench/bench_names.h)\n"
    "  --controls N    only what a cap and a rate limit add to a claim-next +\n"
    "                  consume cycle of one name: p50/p99 of N cycles each,\n"
    "                  with no control, a cap, a rate limit, in turns\n"
    "                  (bench/bench_names.h)\n"
    "  --pages N       only the reads of `jobboard web`'s pages on a board\n"
    "                  of N jobs: the overview's counts, the first page, a\n"
    "                  deep page at a cursor, a page of one name, a page of\n"
    "                  one name's delayed jobs; SQLite beside it when built\n"
    "                  with it (bench/bench_pages.h)\n"
    "  --no-claims     skip the kinds of claim (they run when none is\n"
    "                  measured)\n"
    "  --board DIR     make the boards under DIR, which must be empty or\n"
    "                  missing (default: a new directory under $TMPDIR or\n"
    "                  /tmp). The boards are removed at the end unless --keep\n"
    "                  is given.\n"
    "  --keep          keep the boards (and the directory bench made)\n"
    "  --redis URL     measure the operations through Redis instead (see\n"
    "                  \"Through Redis\" above); URL as redis://host:port/db\n"
    "                  or unix:///path/to.sock\n"
    "  --namespace NS  with --redis: the key namespace (default\n"
    "                  jobboard-bench-PID-USEC, new each run)\n"
    "  --poll LIST     with --redis: poll intervals in ms for the taskflow\n"
    "                  poster (default 1000,100)\n"
    "  --poll-wakes N  with --redis: samples per poll interval (default 40;\n"
    "                  0 skips the taskflow poster)\n"
    "  --cycles N      with --redis: local cycles per setting and round for\n"
    "                  the sync-on comparison (default 20000; 0 skips it)\n"    "  --fleet LIST    with --redis: comma-separated fleet sizes (hosts), each\n"
    "                  2 to 16, at most 8 (default 2,8; 0 skips the fleet)\n"
    "  --fleet-wakes N with --redis: timed posts per fleet size and daemon\n"
    "                  mode (default 300; 0 skips the fleet)\n"
    "  --fleet-sync LIST  with --redis: the daemons' durability modes, in\n"
    "                  the order given (default none,full)\n"
    "  --fleet-history N  with --redis: before a fleet's daemons start, post,\n"
    "                  claim and consume N jobs on each of its boards, then\n"
    "                  wait 13 s, so that each board has a history of N\n"
    "                  records older than the mirror's look-back, as a\n"
    "                  board in service has (it keeps 10,000 by default;\n"
    "                  default 0: fresh boards)\n"
    "  --jobboard PATH with --redis: the jobboard program that runs the\n"
    "                  fleet's daemons (default: the one beside\n"
    "                  jobboard-bench, in the build directory)\n"

    "  --json          print one JSON object per line on stdout: a \"setup\"\n"
    "                  line (machine, sizes, the procs, threads and batch\n"
    "                  lists, post_jobs, sqlite: SQLite's version with\n"
    "                  --peers or else null, sqlite_details_bytes), one\n"
    "                  \"single\" line per mode\n"
    "                  and one \"multi\" line per count of --procs, each with\n"
    "                  mode, procs, cycles, rounds,\n"
    "                  raw_flags, jobboard_cycles_per_s,\n"
    "                  jobboard_us_per_cycle, raw_cycles_per_s,\n"
    "                  raw_us_per_cycle, raw_log_cycles_per_s,\n"
    "                  raw_log_us_per_cycle, ratio (to raw) and\n"
    "                  ratio_to_raw_log, and with --peers\n"
    "                  sqlite_synchronous, sqlite_cycles_per_s,\n"
    "                  sqlite_us_per_cycle and ratio_to_sqlite (jobboard's\n"
    "                  over SQLite's); one \"threads\" line per mode and\n"
    "                  count with mode, threads, cycles, rounds, base_threads,\n"
    "                  jobboard_cycles_per_s, jobboard_us_per_cycle,\n"
    "                  jobboard_scaling, and with --peers sqlite_synchronous,\n"
    "                  sqlite_cycles_per_s, sqlite_us_per_cycle,\n"
    "                  sqlite_scaling, sqlite_busy_retries and\n"
    "                  ratio_to_sqlite; one \"batch\" line per mode and kind\n"
    "                  with mode, batch (1: single posts), jobs, rounds,\n"
    "                  jobboard_jobs_per_s, jobboard_us_per_job,\n"
    "                  jobboard_ratio_to_single, raw_jobs_per_s,\n"
    "                  raw_us_per_job, raw_ratio_to_single,\n"
    "                  ratio_to_raw, and with --peers\n"
    "                  sqlite_synchronous, sqlite_jobs_per_s,\n"
    "                  sqlite_us_per_job, sqlite_ratio_to_single and\n"
    "                  ratio_to_sqlite; after each \"single\" line a\n"
    "                  \"worker\" line (mode, jobs, rounds, batch,\n"
    "                  post_batch, posts: \"timed\", plain_, fused_ and\n"
    "                  many_jobs_per_s and _us_per_job, fused_ratio,\n"
    "                  many_ratio); a \"claims\" line with\n"
    "                  cycles_per_s and us_per_cycle of plain, lease,\n"
    "                  process and both; and a \"wake\" line with samples,\n"
    "                  p50_us, p99_us, max_us of board (from the commit),\n"
    "                  from_call (from the post call) and floor,\n"
    "                  post_call_p50_us and ratio_p50 (board over floor);\n"
    "                  with --redis, a \"redis\" line with\n"
    "                  url, namespace, server, mode, jobs, claim_ratio,\n"
    "                  floor_ratio and, for ping, local_claim,\n"
    "                  local_abandon, floor, post, publish,\n"
    "                  post_publish, claim, consume, claim_next,\n"
    "                  many_one_by_one and many_one_call (per job),\n"
    "                  many_batch, many_ratio, loop_ratio, NAME_p50_us,\n"
    "                  NAME_p99_us, NAME_max_us and NAME_per_s; then one\n"
    "                  \"redis_wake\" line per poster (poster, poll_ms,\n"
    "                  samples, min_us, p50_us, p99_us, max_us, mean_us,\n"
    "                  post_call_p50_us) and a \"redis_cycles\" line (cycles,\n"
    "                  rounds, published, claim_waits, and for plain,\n"
    "                  attached and replicator NAME_cycles_per_s,\n"
    "                  NAME_us_per_cycle, NAME_p50_us, NAME_p99_us,\n"
    "                  NAME_max_us; replicator_kept_local_* and\n"
    "                  replicator_via_redis_*: cycles, mean_us, p50_us,\n"
    "                  p99_us); with --fleet, one \"redis_fleet\" line per\n"
    "                  size and daemon mode (hosts, mode, sync_mode,\n"
    "                  posts, samples: posts x other hosts, min_us,\n"
    "                  p50_us, p99_us, max_us, mean_us over the pairs,\n"
    "                  last_p50_us, last_p99_us of the last host per post,\n"
    "                  post_call_p50_us, history: --fleet-history)\n"
    "  -h, --help      print this help and exit\n"
    "\n"
    "Durability modes, in short (see jobboard(1)): full flushes every commit\n"
    "and survives power loss; normal flushes once per commit, and a power\n"
    "loss may undo the last commit, never corrupt; none leaves writing to the\n"
    "OS: it survives any process crash (kill -9 too) but a POWER LOSS OR\n"
    "KERNEL CRASH CAN LOSE RECENT COMMITS AND CORRUPT THE BOARD.\n"
    "\n"
    "Environment:\n"
    "  TMPDIR          where the temporary directory is made (default /tmp)\n"
    "  JOBBOARD_DIR    not used: bench never touches a board of yours\n"
    "\n"
    "Run time: the defaults take about a minute and a half on a 2-core\n"
    "machine whose flush costs about a millisecond (84 s on this project's\n"
    "machine, load 1.3; most of it the unflushed parts: --jobs); --peers\n"
    "adds about half (126 s).\n"
    "\n"
    "Exit status:\n"
    "  0  every measurement ran (whatever the figures)\n"
    "  1  a cycle failed, a racing process or thread failed, or jobs were\n"
    "     left behind (or, posting, missing)\n"
    "  2  usage error (also --peers in a build without SQLite)\n"
    "\n"
    "Examples:\n"
    "  jobboard-bench\n"
    "  jobboard-bench --modes none --jobs 1000000 --procs 2\n"
    "  jobboard-bench --peers --threads 1,8 --procs 4,16\n"
    "  jobboard-bench --peers --modes full --threads 1,8 --procs 0 --batch 0\n"
    "  jobboard-bench --json | jq 'select(.type != \"setup\") | .ratio'\n"
    "  jobboard-bench --redis unix:///tmp/redis.sock --jobs 5000\n"
    "\n"
    "See also: jobboard(1); docs/BENCHMARKS.md (the figures measured on this\n"
    "project's machine, each with its command); bench/bench-life (a job's\n"
    "life: claim-next beside a million delayed jobs); bench/bench-redis.sh\n"
    "(--redis beside taskflow's own client); bench/bench-python.py (the\n"
    "Python binding beside the C API).\n";

typedef struct {
  size_t jobs, sync_jobs;
  unsigned rounds;
  bool mode[BENCH_NMODES]; /* by jb_durability */
  const char *board;
  bool keep, json;
  bool claims; /* the kinds of claim (mode none) */
  size_t wakes; /* wake-up latency samples (0: skip) */
  const char *redis, *ns; /* --redis URL, --namespace */
  bool jobs_given, modes_given, wakes_given;
  int polls[MAX_POLLS];   /* --poll LIST (ms) */
  size_t npolls;
  size_t poll_wakes;      /* --poll-wakes N */
  size_t sync_cycles;     /* --cycles N */
  bool redis_only_given;  /* one of the three above */
  size_t fleet[BENCH_MAX_LIST]; /* --fleet LIST: hosts (none: skipped) */
  size_t nfleet;
  size_t fleet_wakes;     /* --fleet-wakes N */
  size_t fleet_history;   /* --fleet-history N */
  jb_durability fleet_sync[BENCH_NMODES]; /* --fleet-sync LIST */
  size_t nfleet_sync;
  const char *jobboard;   /* --jobboard PATH (NULL: beside this program) */
  bool fleet_given;       /* one of the four above */
  unsigned procs[BENCH_MAX_LIST]; /* --procs LIST (none: the race skipped) */
  size_t nprocs;
  jb_durability procs_mode; /* --procs-mode (default none) */
  bool procs_steady;        /* --procs-steady */
  bool peers;             /* --peers: SQLite beside each figure */
  unsigned threads[BENCH_MAX_LIST]; /* --threads LIST (none: skipped) */
  size_t nthreads;
  size_t batch[BENCH_MAX_LIST];     /* --batch LIST (none: skipped) */
  size_t nbatch;
  size_t post_jobs;       /* --post-jobs N */
  size_t names;           /* --names N: claim-next by name (0: skipped) */
  size_t names_jobs;      /* --names-jobs J */
  size_t names_claims;    /* --names-claims C */
  size_t controls;        /* --controls N: a cap's and a rate's cost */
  size_t pages;           /* --pages N: the web pages' reads (0: skipped) */
} bench_opts;

/* One side's figure: the median round. */
typedef struct {
  size_t cycles;
  double secs;
} bench_fig;

typedef struct {
  char root[4096];
  bool made_root;  /* we created root (remove it too) */
  char made[48][64]; /* subdirectories we created, to remove at the end */
  size_t nmade;
  size_t posting_len, value_len;
  size_t details_len; /* SQLite's details blob: name + it = our posting */
  int nsides;         /* sides measured: NSIDES with --peers, else 3 */
} bench_ctx;

/* ------------------------------------------------------------- helpers */

static double rate(const bench_fig *f) {
  return f->secs > 0 ? (double)f->cycles / f->secs : 0;
}

static double us_per(const bench_fig *f) {
  return f->cycles ? f->secs * 1e6 / (double)f->cycles : 0;
}

static int parse_count(size_t *out, const char *opt, const char *text,
                       size_t min, size_t max) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || *end != '\0' || errno != 0 ||
      v < min || v > max)
    return bench_usage_error("%s: '%s' is not a number from %zu to %zu "
                             "(try 'jobboard-bench --help')", opt, text, min,
                             max);
  *out = (size_t)v;
  return 0;
}

/* A comma-separated LIST of durability modes for option `opt`, in the
 * order given, into out[0..*n-1]; a mode given twice is refused unless
 * `dups`. */
static int parse_mode_list(jb_durability out[BENCH_NMODES], size_t *n,
                           const char *opt, const char *text, bool dups) {
  char buf[256];
  *n = 0;
  if (strlen(text) >= sizeof buf || text[0] == '\0')
    return bench_usage_error("%s: '%.64s' is not a list of modes "
                             "(full, normal, interval, none)", opt, text);
  strcpy(buf, text);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    jb_durability d;
    if (jb_durability_parse(&d, t) != JB_OK)
      return bench_usage_error("%s: unknown mode '%s' (expected "
                               "full, normal, interval or none, "
                               "comma-separated)", opt, t);
    bool again = false;
    for (size_t i = 0; i < *n; i++) again = again || out[i] == d;
    if (again && !dups)
      return bench_usage_error("%s: mode '%s' given twice", opt, t);
    if (!again) out[(*n)++] = d;
  }
  if (*n == 0) return bench_usage_error("%s: '%s' names no mode", opt, text);
  return 0;
}

static int parse_modes(bool mode[BENCH_NMODES], const char *text) {
  jb_durability v[BENCH_NMODES];
  size_t n = 0;
  int rc = parse_mode_list(v, &n, "--modes", text, true);
  memset(mode, 0, BENCH_NMODES * sizeof *mode);
  for (size_t i = 0; rc == 0 && i < n; i++) mode[v[i]] = true;
  return rc;
}

/* A comma-separated LIST of numbers from min to max for option `opt`, at
 * most `cap` of them, into out[0..*n-1] in the order given. With
 * `zero_skips`, the list "0" is the empty list (the part is skipped). */
static int parse_list(size_t *out, size_t *n, size_t cap, const char *opt,
                      const char *text, size_t min, size_t max,
                      bool zero_skips) {
  char buf[256];
  if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf)
    return bench_usage_error("%s: list too long", opt);
  *n = 0;
  if (zero_skips && strcmp(text, "0") == 0) return 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == cap)
      return bench_usage_error("%s: at most %zu values", opt, cap);
    int rc = parse_count(&out[*n], opt, t, min, max);
    if (rc) return rc;
    (*n)++;
  }
  if (*n == 0)
    return bench_usage_error("%s: give at least one value%s", opt,
                             zero_skips ? " (0 skips the part)" : "");
  return 0;
}

/* --poll LIST: comma-separated intervals in ms, 1..60000, at most
 * MAX_POLLS of them. */
static int parse_polls(bench_opts *o, const char *text) {
  size_t v[MAX_POLLS];
  int rc = parse_list(v, &o->npolls, MAX_POLLS, "--poll", text, 1, 60000,
                      false);
  for (size_t i = 0; rc == 0 && i < o->npolls; i++) o->polls[i] = (int)v[i];
  return rc;
}

/* --threads and --procs: counts of 1..max, or 0 to skip. */
static int parse_counts(unsigned out[BENCH_MAX_LIST], size_t *n,
                        const char *opt, const char *text, size_t max) {
  size_t v[BENCH_MAX_LIST];
  int rc = parse_list(v, n, BENCH_MAX_LIST, opt, text, 1, max, true);
  for (size_t i = 0; rc == 0 && i < *n; i++) out[i] = (unsigned)v[i];
  return rc;
}

enum { OPT_JOBS = 256, OPT_SYNC_JOBS, OPT_MODES, OPT_PROCS, OPT_PROCS_MODE,
       OPT_PROCS_STEADY, OPT_ROUNDS,
       OPT_BOARD, OPT_KEEP, OPT_JSON, OPT_NO_CLAIMS, OPT_WAKES, OPT_REDIS,
       OPT_NAMESPACE, OPT_POLL, OPT_POLL_WAKES, OPT_CYCLES, OPT_PEERS,
       OPT_FLUSH_INTERVAL,
       OPT_THREADS, OPT_BATCH, OPT_POST_JOBS, OPT_FLEET, OPT_FLEET_WAKES,
       OPT_FLEET_SYNC, OPT_FLEET_HISTORY, OPT_JOBBOARD, OPT_NAMES,
       OPT_NAMES_JOBS, OPT_NAMES_CLAIMS, OPT_CONTROLS, OPT_PAGES };


/* Returns -1 to go on, else the exit code. */
static int parse_args(bench_opts *o, int argc, char **argv) {
  static const struct option longopts[] = {
      {"jobs", required_argument, NULL, OPT_JOBS},
      {"sync-jobs", required_argument, NULL, OPT_SYNC_JOBS},
      {"modes", required_argument, NULL, OPT_MODES},
      {"durability", required_argument, NULL, OPT_MODES},
      {"procs", required_argument, NULL, OPT_PROCS},
      {"procs-mode", required_argument, NULL, OPT_PROCS_MODE},
      {"procs-steady", no_argument, NULL, OPT_PROCS_STEADY},
      {"rounds", required_argument, NULL, OPT_ROUNDS},
      {"board", required_argument, NULL, OPT_BOARD},
      {"keep", no_argument, NULL, OPT_KEEP},
      {"no-claims", no_argument, NULL, OPT_NO_CLAIMS},
      {"wakes", required_argument, NULL, OPT_WAKES},
      {"json", no_argument, NULL, OPT_JSON},
      {"redis", required_argument, NULL, OPT_REDIS},
      {"namespace", required_argument, NULL, OPT_NAMESPACE},
      {"poll", required_argument, NULL, OPT_POLL},
      {"poll-wakes", required_argument, NULL, OPT_POLL_WAKES},
      {"cycles", required_argument, NULL, OPT_CYCLES},
      {"peers", no_argument, NULL, OPT_PEERS},
      {"flush-interval", required_argument, NULL, OPT_FLUSH_INTERVAL},
      {"threads", required_argument, NULL, OPT_THREADS},
      {"batch", required_argument, NULL, OPT_BATCH},
      {"post-jobs", required_argument, NULL, OPT_POST_JOBS},
      {"fleet", required_argument, NULL, OPT_FLEET},
      {"fleet-wakes", required_argument, NULL, OPT_FLEET_WAKES},
      {"fleet-sync", required_argument, NULL, OPT_FLEET_SYNC},
      {"fleet-history", required_argument, NULL, OPT_FLEET_HISTORY},
      {"jobboard", required_argument, NULL, OPT_JOBBOARD},
      {"names", required_argument, NULL, OPT_NAMES},
      {"names-jobs", required_argument, NULL, OPT_NAMES_JOBS},
      {"names-claims", required_argument, NULL, OPT_NAMES_CLAIMS},
      {"controls", required_argument, NULL, OPT_CONTROLS},
      {"pages", required_argument, NULL, OPT_PAGES},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  *o = (bench_opts){.jobs = DEFAULT_JOBS,
                    .sync_jobs = DEFAULT_SYNC_JOBS,
                    .rounds = DEFAULT_ROUNDS,
                    .mode = {true, true, true, true},
                    .claims = true,
                    .wakes = DEFAULT_WAKES,
                    .polls = {1000, 100},
                    .npolls = 2,
                    .poll_wakes = DEFAULT_POLL_WAKES,
                    .sync_cycles = DEFAULT_SYNC_CYCLES,
                    .procs = DEFAULT_PROCS,
                    .nprocs = DEFAULT_NPROCS,
                    .procs_mode = JB_DURABILITY_NONE,
                    .threads = DEFAULT_THREADS,
                    .nthreads = DEFAULT_NTHREADS,
                    .batch = DEFAULT_BATCH,
                    .nbatch = DEFAULT_NBATCH,
                    .post_jobs = DEFAULT_POST_JOBS,
                    .names_jobs = 1000000,
                    .names_claims = 20000,
                    .fleet = DEFAULT_FLEET,
                    .nfleet = DEFAULT_NFLEET,
                    .fleet_wakes = DEFAULT_FLEET_WAKES,
                    .fleet_sync = {JB_DURABILITY_NONE, JB_DURABILITY_FULL},
                    .nfleet_sync = 2};
  bool local_given = false; /* --threads, --batch, --post-jobs */
  optind = 0;
  opterr = 0;
  int c, rc;
  size_t v;
  while ((c = cli_getopt_long(argc, argv, ":h", longopts)) != -1) {
    switch (c) {
    case CLI_OPT_ABBREVIATED:
      return bench_usage_error("%s (try 'jobboard-bench --help')",
                               cli_abbreviation_text());
    case 'h': fputs(bench_help, stdout); return BENCH_EXIT_OK;
    case OPT_JOBS:
      if ((rc = parse_count(&o->jobs, "--jobs", optarg, 1, 1000000000)))
        return rc;
      o->jobs_given = true;
      break;
    case OPT_SYNC_JOBS:
      if ((rc = parse_count(&o->sync_jobs, "--sync-jobs", optarg, 1, 100000000)))
        return rc;
      break;
    case OPT_MODES:
      if ((rc = parse_modes(o->mode, optarg))) return rc;
      o->modes_given = true;
      break;
    case OPT_PROCS:
      if ((rc = parse_counts(o->procs, &o->nprocs, "--procs", optarg,
                             MAX_PROCS)))
        return rc;
      break;
    case OPT_PROCS_MODE: {
      if (jb_durability_parse(&o->procs_mode, optarg) != JB_OK)
        return bench_usage_error("--procs-mode: '%s' is not a mode (full, "
                                 "normal, interval or none)", optarg);
      break;
    }
    case OPT_PROCS_STEADY: o->procs_steady = true; break;
    case OPT_FLUSH_INTERVAL: {
      char *end = NULL;
      errno = 0;
      long long ms = strtoll(optarg, &end, 10);
      if (errno || end == optarg || *end || ms < 1 || ms > 86400000)
        return bench_usage_error("--flush-interval: '%s' is not a number of "
                                 "milliseconds from 1 to 86400000", optarg);
      bench_flush_ms = ms;
      break;
    }
    case OPT_PEERS:
      if (!BENCH_PEER_BUILT)
        return bench_usage_error("--peers: %s", BENCH_PEER_MISSING);
      o->peers = true;
      break;
    case OPT_THREADS:
      if ((rc = parse_counts(o->threads, &o->nthreads, "--threads", optarg,
                             BENCH_MAX_THREADS)))
        return rc;
      local_given = true;
      break;
    case OPT_BATCH:
      if ((rc = parse_list(o->batch, &o->nbatch, BENCH_MAX_LIST, "--batch",
                           optarg, 2, 100000, true)))
        return rc;
      local_given = true;
      break;
    case OPT_POST_JOBS:
      if ((rc = parse_count(&o->post_jobs, "--post-jobs", optarg, 1,
                            100000000)))
        return rc;
      local_given = true;
      break;
    case OPT_ROUNDS:
      if ((rc = parse_count(&v, "--rounds", optarg, 1, BENCH_MAX_ROUNDS))) return rc;
      o->rounds = (unsigned)v;
      break;
    case OPT_BOARD: o->board = optarg; break;
    case OPT_KEEP: o->keep = true; break;
    case OPT_NO_CLAIMS: o->claims = false; break;
    case OPT_WAKES:
      if ((rc = parse_count(&o->wakes, "--wakes", optarg, 0, 10000000))) return rc;
      o->wakes_given = true;
      break;
    case OPT_POLL:
      if ((rc = parse_polls(o, optarg))) return rc;
      o->redis_only_given = true;
      break;
    case OPT_POLL_WAKES:
      if ((rc = parse_count(&o->poll_wakes, "--poll-wakes", optarg, 0,
                            1000000)))
        return rc;
      o->redis_only_given = true;
      break;
    case OPT_CYCLES:
      if ((rc = parse_count(&o->sync_cycles, "--cycles", optarg, 0,
                            100000000)))
        return rc;
      o->redis_only_given = true;
      break;
    case OPT_FLEET:
      if ((rc = parse_list(o->fleet, &o->nfleet, BENCH_MAX_LIST, "--fleet",
                           optarg, 2, MAX_FLEET_HOSTS, true)))
        return rc;
      o->fleet_given = true;
      break;
    case OPT_FLEET_WAKES:
      if ((rc = parse_count(&o->fleet_wakes, "--fleet-wakes", optarg, 0,
                            1000000)))
        return rc;
      o->fleet_given = true;
      break;
    case OPT_FLEET_SYNC:
      if ((rc = parse_mode_list(o->fleet_sync, &o->nfleet_sync,
                                 "--fleet-sync", optarg, false)))
        return rc;
      o->fleet_given = true;
      break;
    case OPT_FLEET_HISTORY:
      if ((rc = parse_count(&o->fleet_history, "--fleet-history", optarg, 0,
                            1000000)))
        return rc;
      o->fleet_given = true;
      break;
    case OPT_NAMES:
      if ((rc = parse_count(&o->names, "--names", optarg, 1, 100000)))
        return rc;
      break;
    case OPT_NAMES_JOBS:
      if ((rc = parse_count(&o->names_jobs, "--names-jobs", optarg, 1,
                            100000000)))
        return rc;
      break;
    case OPT_NAMES_CLAIMS:
      if ((rc = parse_count(&o->names_claims, "--names-claims", optarg, 1,
                            10000000)))
        return rc;
      break;
    case OPT_CONTROLS:
      if ((rc = parse_count(&o->controls, "--controls", optarg, 4,
                            10000000)))
        return rc;
      break;
    case OPT_PAGES:
      if ((rc = parse_count(&o->pages, "--pages", optarg, 100, 100000000)))
        return rc;
      break;
    case OPT_JOBBOARD:
      if (optarg[0] == '\0')
        return bench_usage_error("--jobboard: the path must not be empty");
      o->jobboard = optarg;
      o->fleet_given = true;
      break;
    case OPT_JSON: o->json = true; break;
    case OPT_REDIS: o->redis = optarg; break;
    case OPT_NAMESPACE: o->ns = optarg; break;
    case ':':
      return bench_usage_error("option '%s' needs an argument (try "
                               "'jobboard-bench --help')", argv[optind - 1]);
    default:
      return bench_usage_error("unknown option '%s' (try 'jobboard-bench "
                               "--help')", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return bench_usage_error("unexpected argument '%s' (try "
                             "'jobboard-bench --help')", argv[optind]);
  if (o->board != NULL && o->board[0] == '\0')
    return bench_usage_error("--board: the directory must not be empty");
  if (o->ns != NULL && o->redis == NULL)
    return bench_usage_error("--namespace needs --redis");
  if (o->redis_only_given && o->redis == NULL)
    return bench_usage_error("--poll, --poll-wakes and --cycles need "
                             "--redis");
  if (o->fleet_given && o->redis == NULL)
    return bench_usage_error("--fleet, --fleet-wakes, --fleet-sync, "
                             "--fleet-history and --jobboard need --redis");
  if (o->redis != NULL && (o->peers || local_given))
    return bench_usage_error("--peers, --threads, --batch and --post-jobs "
                             "do not go with --redis (it measures only the "
                             "operations through Redis)");
  if (o->redis != NULL) {
    if (o->modes_given && o->mode[0] + o->mode[1] + o->mode[2] + o->mode[3] != 1)
      return bench_usage_error("with --redis, --modes names one mode");
    if (!o->modes_given) o->mode[0] = o->mode[1] = o->mode[3] = false;
    if (!o->jobs_given) o->jobs = DEFAULT_REDIS_JOBS;
    if (!o->wakes_given) o->wakes = DEFAULT_REDIS_WAKES;
    if (o->jobs > 10000000)
      return bench_usage_error("with --redis, --jobs is at most "
                               "10000000");
  }
  return -1;
}

/* ------------------------------------------------------ directories */

/* Is `dir` an empty directory? 1 yes, 0 no (not empty), -1 error. */
static int dir_is_empty(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL) return -1;
  struct dirent *e;
  int empty = 1;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      empty = 0;
      break;
    }
  closedir(d);
  return empty;
}

static int make_root(bench_ctx *x, const bench_opts *o) {
  if (o->board == NULL) {
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0') tmp = "/tmp";
    snprintf(x->root, sizeof x->root, "%s/jobboard-bench.XXXXXX", tmp);
    if (mkdtemp(x->root) == NULL) {
      fprintf(stderr, "jobboard-bench: cannot make a directory under %s: "
              "%s\n", tmp, strerror(errno));
      return BENCH_EXIT_ERROR;
    }
    x->made_root = true;
    return 0;
  }
  if (strlen(o->board) >= sizeof x->root - 64)
    return bench_usage_error("--board: path too long");
  strcpy(x->root, o->board);
  if (mkdir(x->root, 0775) == 0) {
    x->made_root = true;
    return 0;
  }
  if (errno != EEXIST) {
    fprintf(stderr, "jobboard-bench: cannot make %s: %s\n", x->root,
            strerror(errno));
    return BENCH_EXIT_ERROR;
  }
  int e = dir_is_empty(x->root);
  if (e == 1) return 0;
  if (e == 0)
    return bench_usage_error("--board: %s is not empty (bench makes its "
                             "own boards there and removes them: give an "
                             "empty or missing directory)", x->root);
  return bench_usage_error("--board: %s is not a directory (%s)",
                           x->root, strerror(errno));
}

/* Make root/name, fresh; its path in `out`. */
static int make_sub(bench_ctx *x, const char *name, char *out, size_t len) {
  snprintf(out, len, "%s/%s", x->root, name);
  if (mkdir(out, 0775) != 0) {
    fprintf(stderr, "jobboard-bench: cannot make %s: %s\n", out,
            strerror(errno));
    return BENCH_EXIT_ERROR;
  }
  if (x->nmade < sizeof x->made / sizeof x->made[0])
    snprintf(x->made[x->nmade++], sizeof x->made[0], "%s", name);
  else if (!x->made_root) {
    /* Cleanup could not find it again in a directory of the user's. */
    bench_remove_dir(out);
    return bench_fail(name, "too many directories to keep track of");
  }
  return 0;
}

/* A root bench made goes whole; in a directory of the user's (--board),
 * only what bench made there. */
static void cleanup(bench_ctx *x, const bench_opts *o) {
  if (o->keep) return;
  if (x->made_root) {
    bench_remove_dir(x->root);
    return;
  }
  char path[4200];
  for (size_t i = 0; i < x->nmade; i++) {
    snprintf(path, sizeof path, "%s/%s", x->root, x->made[i]);
    bench_remove_dir(path);
  }
}

/* ------------------------------------------------------------ the sides */

/* What is measured: the library, two raw LMDB floors, and with --peers
 * SQLite doing the same job (bench_peers.h). */
typedef enum { SIDE_LIB, SIDE_RAW, SIDE_RAWLOG, SIDE_SQL, NSIDES } bench_side;
static const char *const side_label[NSIDES] = {"jobboard", "raw LMDB",
                                               "raw LMDB + log", "SQLite"};
static const char *const side_key[NSIDES] = {"jobboard", "raw", "raw_log",
                                             "sqlite"};
static const char *const side_dir[NSIDES] = {"", "raw-", "rawlog-",
                                             "sqlite-"};

/* An open board, raw environment or SQLite connection. */
typedef struct {
  bench_side side;
  jb_board *board;
  bench_raw *raw;
  bench_peer *peer;
} bench_target;

static void target_close(bench_target *t) {
  jb_board_close(t->board);
  bench_raw_close(t->raw);
  bench_peer_close(t->peer);
  t->board = NULL;
  t->raw = NULL;
  t->peer = NULL;
}

/* Open side `s` in `dir` (made fresh, or opened again). Tag 0 is the
 * process that makes it (SQLite's schema); racing processes have their
 * own tags. Returns 0, or -1 with the reason in err. */
static int target_open(bench_target *t, bench_side s, const char *dir,
                       jb_durability d, const bench_ctx *x, unsigned tag,
                       char *err, size_t errlen) {
  *t = (bench_target){s, NULL, NULL, NULL};
  if (s == SIDE_LIB) return bench_lib_open(&t->board, dir, d, err, errlen);
  if (s == SIDE_SQL)
    return bench_peer_open(&t->peer, dir, d, x->details_len, tag, tag == 0,
                           err, errlen);
  int rc = bench_raw_open(&t->raw, dir, d, BENCH_MAP_SIZE, x->value_len, tag,
                          s == SIDE_RAWLOG ? BENCH_RAW_LOG : 0);
  if (rc == 0) return 0;
  snprintf(err, errlen, "raw LMDB in %s: %s", dir, bench_raw_strerror(rc));
  return -1;
}

/* Run n cycles, claiming with `co` (NULL: plain claims; the library's side
 * only). Returns 0, or -1 with the reason in err. */
static int target_cycles_as(bench_target *t, size_t n,
                            const jb_claim_options *co, char *err, size_t errlen) {
  if (t->side == SIDE_LIB) return bench_lib_cycles(t->board, n, co, err, errlen);
  if (t->side == SIDE_SQL) return bench_peer_cycles(t->peer, n, err, errlen);
  int rc = bench_raw_cycles(t->raw, n, NULL);
  if (rc == 0) return 0;
  snprintf(err, errlen, "raw LMDB cycle: %s", bench_raw_strerror(rc));
  return -1;
}

static int target_cycles(bench_target *t, size_t n, char *err, size_t errlen) {
  return target_cycles_as(t, n, NULL, err, errlen);
}

/* Jobs left on it: 0 after whole cycles; (size_t)-1 when unreadable. */
static size_t target_left(bench_target *t) {
  if (t->side == SIDE_SQL) return bench_peer_left(t->peer);
  if (t->side != SIDE_LIB) return bench_raw_count(t->raw);
  size_t n;
  return jb_board_count(&n, t->board, 0) == JB_OK ? n : (size_t)-1;
}

/* The size of the bench's posting on a real board: post one, read it back,
 * take it off again. */
static int measure_posting(size_t *len, jb_board *b) {
  jb_post p = bench_post();
  char uuid[JB_UUID_STRLEN];
  jb_job *job = NULL;
  int rc;
  if ((rc = jb_job_post(uuid, b, &p)) != JB_OK ||
      (rc = jb_job_get(&job, b, uuid)) != JB_OK)
    return rc;
  jb_job_posting(job, len);
  jb_job_free(job);
  if ((rc = jb_claim(NULL, b, uuid, BENCH_WHO, NULL)) != JB_OK) return rc;
  return jb_consume(b, uuid, BENCH_WHO, 0, NULL);
}

/* Learn the posting's size (once) from a scratch board. */
static int learn_sizes(bench_ctx *x) {
  if (x->posting_len != 0) return 0;
  char dir[4200], err[600];
  int rc = make_sub(x, "size", dir, sizeof dir);
  if (rc) return rc;
  bench_target t;
  if (target_open(&t, SIDE_LIB, dir, JB_DURABILITY_NONE, x, 0, err,
                  sizeof err))
    return bench_fail("open", err);
  rc = measure_posting(&x->posting_len, t.board);
  if (rc != JB_OK) snprintf(err, sizeof err, "%s", jb_errmsg());
  target_close(&t);
  if (rc != JB_OK) return bench_fail("posting size", err);
  x->value_len = x->posting_len + JOB_HEADER_LEN;
  size_t name_len = strlen(bench_post().name);
  x->details_len = x->posting_len > name_len ? x->posting_len - name_len : 1;
  return 0;
}

/* ------------------------------------------------------ single process */

/* The library's flushes in the timed rounds of the last single-process
 * figure (durability interval: the flash's wear), and the rounds' time. */
static struct {
  uint64_t flushes;
  double secs;
  int64_t interval_ms;
} lib_flushes;

/* Each side's figure for mode d: fresh boards, warm-up, then rounds taken
 * in turns (lib, raw, raw+log, lib, ...), median of each. */
static int bench_single(bench_fig fig[NSIDES], bench_ctx *x,
                        const bench_opts *o, jb_durability d) {
  const char *mode = jb_durability_name(d);
  size_t n = bench_fast(d) ? o->jobs : o->sync_jobs;
  size_t warm = bench_fast(d) ? WARMUP_JOBS : WARMUP_SYNC_JOBS;
  bench_target t[NSIDES];
  char dir[4200], name[64], err[600], what[64];
  int rc, ret = 0, s;
  memset(t, 0, sizeof t);
  for (s = 0; s < x->nsides; s++) {
    snprintf(name, sizeof name, "%s%s", side_dir[s], mode);
    if ((ret = make_sub(x, name, dir, sizeof dir))) goto out;
    if (target_open(&t[s], (bench_side)s, dir, d, x, 0, err, sizeof err) ||
        target_cycles(&t[s], warm, err, sizeof err)) {
      snprintf(what, sizeof what, "%s, %s", mode, side_label[s]);
      ret = bench_fail(what, err);
      goto out;
    }
  }
  double secs[NSIDES][BENCH_MAX_ROUNDS];
  jb_flush_info f0, f1;
  jb_board_flush_info(&f0, t[SIDE_LIB].board);
  memset(&lib_flushes, 0, sizeof lib_flushes);
  for (unsigned i = 0; i < o->rounds; i++) {
    for (s = 0; s < x->nsides; s++) {
      double t0 = bench_now_s();
      rc = target_cycles(&t[s], n, err, sizeof err);
      secs[s][i] = bench_now_s() - t0;
      if (s == SIDE_LIB) lib_flushes.secs += secs[s][i];
      if (rc) {
        snprintf(what, sizeof what, "%s, %s", mode, side_label[s]);
        ret = bench_fail(what, err);
        goto out;
      }
    }
  }
  jb_board_flush_info(&f1, t[SIDE_LIB].board);
  lib_flushes.flushes = f1.flushes - f0.flushes;
  lib_flushes.interval_ms = f1.flush_interval_ms;
  for (s = 0; s < x->nsides; s++) {
    fig[s] = (bench_fig){n, bench_median(secs[s], o->rounds)};
    size_t left = target_left(&t[s]);
    if (left != 0) {
      snprintf(what, sizeof what, "%s, %s", mode, side_label[s]);
      snprintf(err, sizeof err, "%zu jobs left behind after whole cycles",
               left);
      ret = bench_fail(what, left == (size_t)-1 ? "cannot count jobs" : err);
      goto out;
    }
  }
out:
  for (s = 0; s < NSIDES; s++) target_close(&t[s]);
  return ret;
}

/* The worker path beside the plain API (bench_worker.c), --jobs / 4
 * jobs per round in mode none. */
static int bench_worker_part(bench_ctx *x, const bench_opts *o,
                             jb_durability d) {
  char name[32], dir[4200];
  snprintf(name, sizeof name, "worker-%s", jb_durability_name(d));
  int rc = make_sub(x, name, dir, sizeof dir);
  if (rc) return rc;
  jb_post p = bench_post();
  bool none = bench_fast(d);
  bench_worker_opts wo = {dir, d, none ? (o->jobs + 3) / 4 : o->sync_jobs,
                          none ? WARMUP_JOBS : WARMUP_SYNC_JOBS, o->rounds,
                          &p, o->json};
  return bench_worker(&wo) ? BENCH_EXIT_ERROR : 0;
}

/* ------------------------------------------------------ kinds of claim */

#define NKINDS 4
static const char *const kind_label[NKINDS] = {"plain", "lease", "process",
                                               "both"};

static jb_claim_options kind_opts(int k) {
  jb_claim_options co = JB_CLAIM_OPTIONS_INIT;
  if (k == 1 || k == 3) co.lease_ms = 30000;
  if (k == 2 || k == 3) co.flags = JB_CLAIM_BIND_PROCESS;
  return co;
}

/* The library's cycle in mode none with each kind of claim: fresh boards,
 * warm-up, rounds in turns, medians. */
static int bench_claims(bench_fig fig[NKINDS], bench_ctx *x,
                        const bench_opts *o) {
  bench_target t[NKINDS];
  char dir[4200], name[64], err[600], what[64];
  int ret = 0, k;
  memset(t, 0, sizeof t);
  for (k = 0; k < NKINDS; k++) {
    jb_claim_options co = kind_opts(k);
    snprintf(name, sizeof name, "claims-%s", kind_label[k]);
    if ((ret = make_sub(x, name, dir, sizeof dir))) goto out;
    if (target_open(&t[k], SIDE_LIB, dir, JB_DURABILITY_NONE, x, 0, err,
                    sizeof err) ||
        target_cycles_as(&t[k], WARMUP_JOBS, &co, err, sizeof err)) {
      snprintf(what, sizeof what, "claims, %s", kind_label[k]);
      ret = bench_fail(what, err);
      goto out;
    }
  }
  double secs[NKINDS][BENCH_MAX_ROUNDS];
  for (unsigned i = 0; i < o->rounds; i++) {
    for (k = 0; k < NKINDS; k++) {
      jb_claim_options co = kind_opts(k);
      double t0 = bench_now_s();
      int rc = target_cycles_as(&t[k], o->jobs, &co, err, sizeof err);
      secs[k][i] = bench_now_s() - t0;
      if (rc) {
        snprintf(what, sizeof what, "claims, %s", kind_label[k]);
        ret = bench_fail(what, err);
        goto out;
      }
    }
  }
  for (k = 0; k < NKINDS; k++) {
    fig[k] = (bench_fig){o->jobs, bench_median(secs[k], o->rounds)};
    if (target_left(&t[k]) != 0) {
      snprintf(what, sizeof what, "claims, %s", kind_label[k]);
      ret = bench_fail(what, "jobs left behind after whole cycles");
      goto out;
    }
  }
out:
  for (k = 0; k < NKINDS; k++) target_close(&t[k]);
  return ret;
}

/* ------------------------------------------------------ multi-process */

/* Write all of buf (a pipe; EINTR-safe). */
static void write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    len -= (size_t)w;
  }
}

/*
 * One racing process: open the board (or raw environment) itself (a handle
 * must not cross fork), warm up, say ready, wait for the start (EOF on
 * `go`), run `n` cycles, exit. Never returns. An error is one line on
 * stderr and exit status 1.
 */
static void mp_child(bench_side side, const char *dir, const bench_ctx *x,
                     jb_durability d, unsigned idx, size_t n, int ready_fd,
                     int go_fd) {
  bench_target t;
  char err[600];
  int rc = target_open(&t, side, dir, d, x, idx + 1, err, sizeof err);
  if (rc == 0)
    rc = target_cycles(&t, bench_fast(d) ? WARMUP_JOBS / 4 : WARMUP_SYNC_JOBS,
                       err, sizeof err);
  if (rc == 0) {
    char one = 'R';
    write_all(ready_fd, &one, 1);
    close(ready_fd);
    char c;
    while (read(go_fd, &c, 1) < 0 && errno == EINTR) {
    }
    rc = target_cycles(&t, n, err, sizeof err);
  }
  target_close(&t);
  if (rc != 0) {
    char line[700];
    int len = snprintf(line, sizeof line, "jobboard-bench: %s process %u: "
                       "%s\n", side_label[side], idx + 1, err);
    write_all(2, line, len > 0 && (size_t)len < sizeof line
                           ? (size_t)len : sizeof line - 1);
    _exit(1);
  }
  _exit(0);
}

/* One race of `procs` processes over `total` cycles; *secs is the wall
 * time from the common start to the last exit. */
static int mp_round(double *secs, bench_side side, const char *dir,
                    const bench_ctx *x, jb_durability d, unsigned procs,
                    size_t total) {
  int ready[2], go[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return bench_fail("pipe", strerror(errno));
  if (pipe2(go, O_CLOEXEC) != 0) {
    int e = errno;
    close(ready[0]);
    close(ready[1]);
    return bench_fail("pipe", strerror(e));
  }
  pid_t pids[MAX_PROCS];
  unsigned started = 0;
  int fork_errno = 0;
  fflush(stdout);
  fflush(stderr);
  for (unsigned i = 0; i < procs; i++) {
    size_t n = total / procs + (i < total % procs ? 1 : 0);
    pid_t pid = fork();
    if (pid < 0) {
      fork_errno = errno;
      break;
    }
    if (pid == 0) {
      close(ready[0]);
      close(go[1]);
      mp_child(side, dir, x, d, i, n, ready[1], go[0]);
    }
    pids[started++] = pid;
  }
  close(ready[1]);
  close(go[0]);
  /* Every child says ready (one byte) or dies (its end closes): an event,
   * not a sleep. */
  unsigned nready = 0;
  char buf[MAX_PROCS];
  while (nready < started) {
    ssize_t got = read(ready[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    nready += (unsigned)got;
  }
  close(ready[0]);
  double t0 = bench_now_s();
  close(go[1]); /* the start: EOF for every child at once */
  int failed = 0;
  for (unsigned i = 0; i < started; i++) {
    int st;
    while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st)) {
      char what[80];
      snprintf(what, sizeof what, "%s process %u", side_label[side], i + 1);
      bench_fail(what, strsignal(WTERMSIG(st)));
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
  }
  *secs = bench_now_s() - t0;
  if (fork_errno) return bench_fail("fork", strerror(fork_errno));
  return failed ? BENCH_EXIT_ERROR : 0;
}

/* The race of `procs` processes on each side: fresh boards, rounds in
 * turns, medians. */
static int bench_multi(bench_fig fig[NSIDES], bench_ctx *x,
                       const bench_opts *o, unsigned procs) {
  jb_durability d = o->procs_mode;
  size_t total = bench_fast(d) ? o->jobs : o->sync_jobs;
  char dir[NSIDES][4200], name[64], err[600];
  bench_target t;
  int rc, s;
  /* Create each here, so that the children only open it; and close it
   * before forking: a handle must not cross a fork. With --procs-steady
   * the board is made in interval, which turns its flushed-state records
   * on for every later writer. */
  for (s = 0; s < x->nsides; s++) {
    snprintf(name, sizeof name, "%smp-%s-%u", side_dir[s],
             jb_durability_name(d), procs);
    if ((rc = make_sub(x, name, dir[s], sizeof dir[s]))) return rc;
    jb_durability made = o->procs_steady && s == SIDE_LIB
                             ? JB_DURABILITY_INTERVAL : d;
    if (target_open(&t, (bench_side)s, dir[s], made, x, 0, err, sizeof err))
      return bench_fail(side_label[s], err);
    target_close(&t);
  }
  double secs[NSIDES][BENCH_MAX_ROUNDS];
  for (unsigned i = 0; i < o->rounds; i++)
    for (s = 0; s < x->nsides; s++)
      if ((rc = mp_round(&secs[s][i], (bench_side)s, dir[s], x, d, procs,
                         total)))
        return rc;
  /* Every race leaves each board empty: whatever a process posted, some
   * process claimed and consumed. Checked, since a figure over lost jobs
   * is no figure. */
  for (s = 0; s < x->nsides; s++) {
    fig[s] = (bench_fig){total, bench_median(secs[s], o->rounds)};
    if (target_open(&t, (bench_side)s, dir[s], d, x, 0,
                    err, sizeof err))
      return bench_fail(side_label[s], err);
    size_t left = target_left(&t);
    target_close(&t);
    if (left != 0) {
      snprintf(err, sizeof err, "%zu jobs left behind after the race", left);
      return bench_fail(side_label[s],
                        left == (size_t)-1 ? "cannot count jobs" : err);
    }
  }
  return 0;
}

/* ------------------------------------------------------------ output */

static void cpu_model(char *out, size_t len) {
  snprintf(out, len, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *p = strchr(line, ':');
    if (p == NULL) continue;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    p[strcspn(p, "\n")] = '\0';
    snprintf(out, len, "%s", p);
    break;
  }
  fclose(f);
}

static const char *fs_name(const char *path) {
  struct statfs s;
  if (statfs(path, &s) != 0) return "unknown";
  switch ((unsigned long)s.f_type) {
  case 0xEF53UL: return "ext4";
  case 0x01021994UL: return "tmpfs";
  case 0x58465342UL: return "xfs";
  case 0x9123683EUL: return "btrfs";
  case 0x794c7630UL: return "overlayfs";
  case 0x2fc12fc1UL: return "zfs";
  case 0x6969UL: return "nfs";
  case 0xF2F52010UL: return "f2fs";
  default: return "other";
  }
}

/* The sides' rows; SQLite's is labelled with its synchronous setting. */
static void print_block(const char *title, const bench_fig fig[NSIDES],
                        int nsides, jb_durability d) {
  printf("\n%s\n", title);
  for (int s = 0; s < nsides; s++) {
    char label[40];
    if (s == SIDE_SQL)
      snprintf(label, sizeof label, "SQLite %s", bench_peer_sync_name(d));
    else
      snprintf(label, sizeof label, "%s", side_label[s]);
    printf("  %-16s %12.0f %11.2f", label, rate(&fig[s]), us_per(&fig[s]));
    if (s != SIDE_LIB && rate(&fig[s]) > 0)
      printf("   %5.2f", rate(&fig[SIDE_LIB]) / rate(&fig[s]));
    putchar('\n');
  }
}

static json_t *json_figs(const char *type, jb_durability d, unsigned procs,
                         const bench_fig fig[NSIDES], int nsides,
                         unsigned rounds) {
  json_t *v = json_pack("{s:s,s:s,s:I,s:I,s:I,s:s}", "type", type, "mode",
                        jb_durability_name(d), "procs", (json_int_t)procs,
                        "cycles", (json_int_t)fig[0].cycles, "rounds",
                        (json_int_t)rounds, "raw_flags",
                        bench_raw_flags_name(d));
  if (v == NULL) return NULL;
  char key[64];
  for (int s = 0; s < nsides; s++) {
    snprintf(key, sizeof key, "%s_cycles_per_s", side_key[s]);
    json_object_set_new(v, key, json_real(rate(&fig[s])));
    snprintf(key, sizeof key, "%s_us_per_cycle", side_key[s]);
    json_object_set_new(v, key, json_real(us_per(&fig[s])));
  }
  double l = rate(&fig[SIDE_LIB]), r = rate(&fig[SIDE_RAW]),
         rl = rate(&fig[SIDE_RAWLOG]);
  json_object_set_new(v, "ratio", json_real(r > 0 ? l / r : 0));
  json_object_set_new(v, "ratio_to_raw_log", json_real(rl > 0 ? l / rl : 0));
  if (nsides > SIDE_SQL) {
    double q = rate(&fig[SIDE_SQL]);
    json_object_set_new(v, "sqlite_synchronous",
                        json_string(bench_peer_sync_name(d)));
    json_object_set_new(v, "ratio_to_sqlite", json_real(q > 0 ? l / q : 0));
  }
  return v;
}

/* ------------------------------------------------------------- command */

/* The parts in files of their own (bench_threads.c, bench_batch.c): in a
 * directory of their own under the root, told what they need. Skipped
 * when `count` (their list's length) is 0. */
static int run_part(bench_ctx *x, const bench_opts *o, const char *name,
                    size_t count,
                    int (*part)(const bench_part_opts *, const char *)) {
  if (count == 0) return 0;
  char dir[4200];
  int rc = make_sub(x, name, dir, sizeof dir);
  if (rc) return rc;
  bench_part_opts po;
  memset(&po, 0, sizeof po);
  memcpy(po.mode, o->mode, sizeof po.mode);
  po.jobs = o->jobs;
  po.sync_jobs = o->sync_jobs;
  po.rounds = o->rounds;
  po.json = o->json;
  po.peers = o->peers;
  po.details_len = x->details_len;
  po.value_len = x->value_len;
  memcpy(po.threads, o->threads, sizeof po.threads);
  po.nthreads = o->nthreads;
  memcpy(po.batch, o->batch, sizeof po.batch);
  po.nbatch = o->nbatch;
  po.post_jobs = o->post_jobs;
  return part(&po, dir);
}

/* The setup line's parts: the lists, and SQLite's version with --peers
 * (null without). */
static void json_setup_parts(json_t *v, const bench_opts *o,
                             const bench_ctx *x) {
  if (v == NULL) return;
  json_t *procs = json_array(), *threads = json_array(),
         *batch = json_array();
  for (size_t i = 0; i < o->nprocs; i++)
    json_array_append_new(procs, json_integer(o->procs[i]));
  for (size_t i = 0; i < o->nthreads; i++)
    json_array_append_new(threads, json_integer(o->threads[i]));
  for (size_t i = 0; i < o->nbatch; i++)
    json_array_append_new(batch, json_integer((json_int_t)o->batch[i]));
  json_object_set_new(v, "procs", procs);
  json_object_set_new(v, "threads", threads);
  json_object_set_new(v, "batch", batch);
  json_object_set_new(v, "post_jobs", json_integer((json_int_t)o->post_jobs));
  json_object_set_new(v, "sqlite", o->peers ? json_string(bench_peer_version())
                                            : json_null());
  json_object_set_new(v, "sqlite_details_bytes",
                      json_integer((json_int_t)x->details_len));
}

/* Wake-up latency (bench_wake.h), printed or as a "wake" JSON line. */
static int bench_wakes(bench_ctx *x, const bench_opts *o) {
  char dir[4200], err[512] = "";
  int rc = make_sub(x, "wake", dir, sizeof dir);
  if (rc) return rc;
  bench_lat board, call, commit, fl;
  if (bench_wake(&board, &call, &commit, &fl, dir, o->wakes, err,
                 sizeof err) != 0)
    return bench_fail("wake-up latency", err);
  double ratio = fl.p50_us > 0 ? commit.p50_us / fl.p50_us : 0.0;
  if (o->json) {
    json_t *v = json_pack("{s:s,s:s,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                          "type", "wake", "mode", "none", "samples",
                          (json_int_t)o->wakes, "board_p50_us", commit.p50_us,
                          "board_p99_us", commit.p99_us, "board_max_us",
                          commit.max_us, "floor_p50_us", fl.p50_us,
                          "floor_p99_us", fl.p99_us, "floor_max_us", fl.max_us,
                          "post_call_p50_us", call.p50_us);
    json_object_set_new(v, "ratio_p50", json_real(ratio));
    json_object_set_new(v, "from_call_p50_us", json_real(board.p50_us));
    json_object_set_new(v, "from_call_p99_us", json_real(board.p99_us));
    json_object_set_new(v, "from_call_max_us", json_real(board.max_us));
    bench_json_line(v);
  } else {
    printf("\nwake-up, post in one process -> jb_board_wait returns in "
           "another, %zu samples\n", o->wakes);
    printf("%-26s %12s %11s %11s\n", "", "p50 us", "p99 us", "max us");
    printf("  %-24s %12.1f %11.1f %11.1f\n", "jobboard, from commit",
           commit.p50_us, commit.p99_us, commit.max_us);
    printf("  %-24s %12.1f %11.1f %11.1f\n", "futex floor", fl.p50_us,
           fl.p99_us, fl.max_us);
    printf("  %-24s %12.1f %11.1f %11.1f\n", "jobboard, from post call",
           board.p50_us, board.p99_us, board.max_us);
    printf("  p50 from the commit over the floor's: %.2f; the post call "
           "alone: p50 %.1f us\n", ratio, call.p50_us);
  }
  fflush(stdout);
  return 0;
}

/* ------------------------------------------------------ through Redis */

#ifdef JB_WITH_REDIS
static jb_durability only_mode(const bench_opts *o) {
  return o->mode[JB_DURABILITY_FULL]       ? JB_DURABILITY_FULL
         : o->mode[JB_DURABILITY_NORMAL]   ? JB_DURABILITY_NORMAL
         : o->mode[JB_DURABILITY_INTERVAL] ? JB_DURABILITY_INTERVAL
                                           : JB_DURABILITY_NONE;
}

static const struct {
  const char *key, *label;
  size_t off;
} redis_rows[] = {
    {"ping", "round trip (PING)", offsetof(bench_redis_figs, ping)},
    {"local_claim", "local claim", offsetof(bench_redis_figs, local_claim)},
    {"local_abandon", "local abandon",
     offsetof(bench_redis_figs, local_abandon)},
    {"floor", "PING + local commit", offsetof(bench_redis_figs, floor)},
    {"post_publish", "post + publish",
     offsetof(bench_redis_figs, post_publish)},
    {"post", "  post (local)", offsetof(bench_redis_figs, post)},
    {"publish", "  publish", offsetof(bench_redis_figs, publish)},
    {"claim", "claim via Redis", offsetof(bench_redis_figs, claim)},
    {"consume", "consume via Redis", offsetof(bench_redis_figs, consume)},
    {"claim_next", "claim-next via Redis",
     offsetof(bench_redis_figs, claim_next)},
    {"many_one_by_one", "  x64, one by one, /job",
     offsetof(bench_redis_figs, many_one_by_one)},
    {"many_one_call", "  x64, one call, /job",
     offsetof(bench_redis_figs, many_one_call)},
};

static const bench_redis_phase *redis_row(const bench_redis_figs *f,
                                          size_t i) {
  return (const bench_redis_phase *)((const char *)f + redis_rows[i].off);
}

/* The replicator's part (bench_sync.h): wake-up through Redis, and the
 * local cycle with the sync on. */
static void print_wake_row(const char *label, const bench_sync_wake *w) {
  printf("  %-21s %5d %5zu %9.1f %9.1f %9.1f %9.1f %9.1f %6.1f\n", label,
         w->poll_ms, w->lat.samples, w->lat.min_us, w->lat.p50_us,
         w->lat.p99_us, w->lat.max_us, w->lat.mean_us, w->post_call.p50_us);
}

static json_t *json_wake(const char *poster, const bench_sync_wake *w) {
  return json_pack("{s:s,s:s,s:i,s:I,s:f,s:f,s:f,s:f,s:f,s:f}", "type",
                   "redis_wake", "poster", poster, "poll_ms", w->poll_ms,
                   "samples", (json_int_t)w->lat.samples, "min_us",
                   w->lat.min_us, "p50_us",
                   w->lat.p50_us, "p99_us", w->lat.p99_us, "max_us",
                   w->lat.max_us, "mean_us", w->lat.mean_us,
                   "post_call_p50_us", w->post_call.p50_us);
}

static int bench_with_replicator(bench_ctx *x, const bench_opts *o,
                                 const bench_redis_opts *ro, const char *ns) {
  if (o->wakes == 0 && (o->poll_wakes == 0 || o->npolls == 0) &&
      o->sync_cycles == 0)
    return 0;
  char dir[4200], err[700] = "";
  int rc = make_sub(x, "sync", dir, sizeof dir);
  if (rc) return rc;
  bench_sync_opts so;
  memset(&so, 0, sizeof so);
  so.url = ro->url;
  so.ns = ns;
  so.durability = ro->durability;
  so.post = ro->post;
  so.who = ro->who;
  so.wakes = o->wakes;
  memcpy(so.polls, o->polls, sizeof so.polls);
  so.npolls = o->npolls;
  so.poll_wakes = o->poll_wakes;
  so.cycles = o->sync_cycles;
  so.rounds = o->rounds;
  bench_sync_figs f;
  if (bench_sync(&f, dir, &so, err, sizeof err) != 0)
    return bench_fail("with a replicator", err);
  if (o->json) {
    if (o->wakes) {
      bench_json_line(json_wake("publish", &f.publish));
      bench_json_line(json_wake("replicated", &f.replicated));
    }
    for (size_t i = 0; i < f.ntaskflow; i++)
      bench_json_line(json_wake("taskflow", &f.taskflow[i]));
    if (o->sync_cycles) {
      json_t *v = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "type",
                            "redis_cycles", "mode",
                            jb_durability_name(ro->durability), "cycles",
                            (json_int_t)o->sync_cycles, "rounds",
                            (json_int_t)o->rounds, "published",
                            (json_int_t)f.published, "claim_waits",
                            (json_int_t)f.claim_waits);
      char key[64];
      for (int k = 0; v && k < BENCH_SYNC_NSETTINGS; k++) {
        const char *n = bench_sync_setting[k];
        snprintf(key, sizeof key, "%s_cycles_per_s", n);
        json_object_set_new(v, key, json_real(f.cycles_per_s[k]));
        snprintf(key, sizeof key, "%s_us_per_cycle", n);
        json_object_set_new(v, key, json_real(f.cycle_us[k]));
        snprintf(key, sizeof key, "%s_p50_us", n);
        json_object_set_new(v, key, json_real(f.cycle_lat[k].p50_us));
        snprintf(key, sizeof key, "%s_p99_us", n);
        json_object_set_new(v, key, json_real(f.cycle_lat[k].p99_us));
        snprintf(key, sizeof key, "%s_max_us", n);
        json_object_set_new(v, key, json_real(f.cycle_lat[k].max_us));
      }
      const struct { const char *n; const bench_lat *l; } part[] = {
          {"kept_local", &f.kept_local}, {"via_redis", &f.via_redis}};
      for (size_t i = 0; v && i < 2; i++) {
        snprintf(key, sizeof key, "replicator_%s_cycles", part[i].n);
        json_object_set_new(v, key, json_integer((json_int_t)part[i].l->samples));
        snprintf(key, sizeof key, "replicator_%s_mean_us", part[i].n);
        json_object_set_new(v, key, json_real(part[i].l->mean_us));
        snprintf(key, sizeof key, "replicator_%s_p50_us", part[i].n);
        json_object_set_new(v, key, json_real(part[i].l->p50_us));
        snprintf(key, sizeof key, "replicator_%s_p99_us", part[i].n);
        json_object_set_new(v, key, json_real(part[i].l->p99_us));
      }
      bench_json_line(v);
    }
  } else {
    if (o->wakes || f.ntaskflow) {
      printf("\nwake-up through Redis: post -> jb_board_wait returns on "
             "board B, whose\nreplicator runs in this process (namespaces "
             "%s-*)\n", ns);
      printf("  %-21s %5s %5s %9s %9s %9s %9s %9s %6s\n", "poster (us)", "poll",
             "n", "min", "p50", "p99", "max", "mean", "post");
      if (o->wakes) {
        print_wake_row("publish (notice)", &f.publish);
        print_wake_row("replicated (notice)", &f.replicated);
      }
      for (size_t i = 0; i < f.ntaskflow; i++)
        print_wake_row("taskflow (no notice)", &f.taskflow[i]);
      printf("  poll: B's replicator's poll interval (ms); post: the post "
             "call alone, p50.\n  publish: jb_job_post + jb_sync_publish on "
             "board A; replicated: jb_job_post\n  on A, whose own replicator "
             "publishes it; taskflow: INCR + HSETNX at a random\n  point of "
             "B's poll interval, found by its next poll\n");
    }
    if (o->sync_cycles) {
      printf("\nlocal cycle (post + claim-next + consume) with the sync on, "
             "%zu cycles x %u\nround%s, median round; p50/p99/max over every "
             "cycle\n", o->sync_cycles, o->rounds, o->rounds == 1 ? "" : "s");
      printf("  %-14s %10s %9s %8s %8s %9s %8s\n", "", "cycles/s",
             "us/cycle", "p50 us", "p99 us", "max us", "+us");
      for (int k = 0; k < BENCH_SYNC_NSETTINGS; k++)
        printf("  %-14s %10.0f %9.2f %8.1f %8.1f %9.1f %+8.2f\n",
               bench_sync_setting[k], f.cycles_per_s[k], f.cycle_us[k],
               f.cycle_lat[k].p50_us, f.cycle_lat[k].p99_us,
               f.cycle_lat[k].max_us, f.cycle_us[k] - f.cycle_us[0]);
      printf("  plain: no sync; attached: jb_sync_attach, no replicator; "
             "replicator: attached,\n  and a replicator on the board in this "
             "process. +us: us/cycle beyond plain.\n");
      printf("  replicator's cycles by where the job went (its publication "
             "marker in Redis):\n");
      printf("  %-18s %8s %9s %8s %8s %9s\n", "", "cycles", "mean us",
             "p50 us", "p99 us", "max us");
      const struct { const char *n; const bench_lat *l; } part[] = {
          {"kept local", &f.kept_local},
          {"through Redis", &f.via_redis}};
      for (size_t i = 0; i < 2; i++)
        printf("  %-18s %8zu %9.2f %8.1f %8.1f %9.1f\n", part[i].n,
               part[i].l->samples, part[i].l->mean_us, part[i].l->p50_us,
               part[i].l->p99_us, part[i].l->max_us);
      printf("  (plain: mean %.2f us); claim-next or consume waited for a "
             "publication %llu time%s\n", f.cycle_lat[0].mean_us,
             (unsigned long long)f.claim_waits,
             f.claim_waits == 1 ? "" : "s");
    }
  }
  fflush(stdout);
  return 0;
}

/* The program beside this one's executable (the build directory; under
 * libtool the executable runs from .libs/, and the wrapper one level up
 * sets the library path for the uninstalled jobboard). */
static int program_beside(char *out, size_t len, const char *name) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash == NULL) return -1;
  *slash = '\0';
  size_t dl = strlen(exe);
  if (dl >= 6 && strcmp(exe + dl - 6, "/.libs") == 0) exe[dl - 6] = '\0';
  return (size_t)snprintf(out, len, "%s/%s", exe, name) < len ? 0 : -1;
}

/* Fleet lag (bench_fleet.h): --fleet sizes, daemons in each --fleet-sync
 * mode. */
static int bench_fleet_part(bench_ctx *x, const bench_opts *o,
                            const bench_redis_opts *ro, const char *ns) {
  if (o->nfleet == 0 || o->fleet_wakes == 0) return 0;
  char dir[4200], err[700] = "", prog[PATH_MAX];
  int rc = make_sub(x, "fleet", dir, sizeof dir);
  if (rc) return rc;
  bench_fleet_opts fo;
  memset(&fo, 0, sizeof fo);
  fo.url = ro->url;
  fo.ns = ns;
  if (o->jobboard) {
    fo.jobboard = o->jobboard;
  } else if (program_beside(prog, sizeof prog, "jobboard") == 0) {
    fo.jobboard = prog;
  } else {
    return bench_fail("fleet", "cannot find the jobboard program beside "
                      "jobboard-bench (give --jobboard PATH)");
  }
  fo.durability = ro->durability;
  fo.post = ro->post;
  fo.who = ro->who;
  for (size_t i = 0; i < o->nfleet; i++) fo.hosts[i] = (unsigned)o->fleet[i];
  fo.nhosts = o->nfleet;
  memcpy(fo.sync, o->fleet_sync, o->nfleet_sync * sizeof *fo.sync);
  fo.nsync = o->nfleet_sync;
  fo.samples = o->fleet_wakes;
  fo.history = o->fleet_history;
  bench_fleet_row rows[BENCH_FLEET_MAX_SIZES * BENCH_FLEET_MAX_MODES];
  size_t nrows = 0;
  if (bench_fleet(rows, &nrows, dir, &fo, err, sizeof err) != 0)
    return bench_fail("fleet", err);
  if (o->json) {
    for (size_t i = 0; i < nrows; i++) {
      const bench_fleet_row *r = &rows[i];
      bench_json_line(json_pack(
          "{s:s,s:i,s:s,s:s,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
          "type", "redis_fleet", "hosts", (int)r->hosts, "mode",
          jb_durability_name(ro->durability), "sync_mode",
          jb_durability_name(r->sync), "history",
          (json_int_t)o->fleet_history, "posts",
          (json_int_t)r->last.samples, "samples", (json_int_t)r->all.samples,
          "min_us", r->all.min_us, "p50_us", r->all.p50_us, "p99_us",
          r->all.p99_us, "max_us", r->all.max_us, "mean_us", r->all.mean_us,
          "last_p50_us", r->last.p50_us, "last_p99_us", r->last.p99_us,
          "post_call_p50_us", r->post_call.p50_us));
    }
  } else {
    printf("\nfleet lag: a post on host 1 -> jb_log_wait returns on each "
           "other host; each\nhost a board with its own `jobboard sync` "
           "(%s), one Redis (namespaces\n%s-fleet-*); boards in mode %s, "
           "history %zu records\n", fo.jobboard, ns,
           jb_durability_name(ro->durability), o->fleet_history);
    printf("  %5s %6s %6s %9s %9s %9s %9s %9s %9s %9s\n", "hosts", "sync",
           "n", "min", "p50", "p99", "max", "mean", "last p50", "last p99");
    for (size_t i = 0; i < nrows; i++) {
      const bench_fleet_row *r = &rows[i];
      printf("  %5u %6s %6zu %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n",
             r->hosts, jb_durability_name(r->sync), r->all.samples,
             r->all.min_us, r->all.p50_us, r->all.p99_us, r->all.max_us,
             r->all.mean_us, r->last.p50_us, r->last.p99_us);
    }
    printf("  us; sync: the daemons' --durability; n: posts x other hosts; "
           "last: per post,\n  the last host to see it\n");
  }
  fflush(stdout);
  return 0;
}

static int bench_through_redis(bench_ctx *x, const bench_opts *o) {
  char dir[4200], err[700] = "";
  int rc = make_sub(x, "redis", dir, sizeof dir);
  if (rc) return rc;
  jb_post p = bench_post();
  bench_redis_opts ro = {o->redis, o->ns, o->jobs, only_mode(o), &p,
                         BENCH_WHO};
  bench_redis_figs f;
  if (bench_redis(&f, dir, &ro, err, sizeof err) != 0)
    return bench_fail("through Redis", err);
  const size_t nrows = sizeof redis_rows / sizeof redis_rows[0];
  if (o->json) {
    json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:f,s:f}", "type",
                          "redis", "url", o->redis, "namespace", f.ns,
                          "server", f.server_version, "mode",
                          jb_durability_name(ro.durability), "jobs",
                          (json_int_t)o->jobs, "claim_ratio", f.claim_ratio,
                          "floor_ratio", f.floor_ratio);
    json_object_set_new(v, "many_batch", json_integer(BENCH_REDIS_BATCH));
    json_object_set_new(v, "many_ratio", json_real(f.many_ratio));
    json_object_set_new(v, "loop_ratio", json_real(f.loop_ratio));
    char key[64];
    for (size_t i = 0; v && i < nrows; i++) {
      const bench_redis_phase *ph = redis_row(&f, i);
      snprintf(key, sizeof key, "%s_p50_us", redis_rows[i].key);
      json_object_set_new(v, key, json_real(ph->lat.p50_us));
      snprintf(key, sizeof key, "%s_p99_us", redis_rows[i].key);
      json_object_set_new(v, key, json_real(ph->lat.p99_us));
      snprintf(key, sizeof key, "%s_max_us", redis_rows[i].key);
      json_object_set_new(v, key, json_real(ph->lat.max_us));
      snprintf(key, sizeof key, "%s_per_s", redis_rows[i].key);
      json_object_set_new(v, key, json_real(ph->ops_per_s));
    }
    bench_json_line(v);
  } else {
    printf("  redis     %s, Redis %s, namespace %s\n", o->redis,
           f.server_version, f.ns);
    printf("  board     mode %s; %zu jobs per phase after 50 untimed\n\n",
           jb_durability_name(ro.durability), o->jobs);
    printf("%-24s %10s %10s %10s %10s\n", "", "ops/s", "p50 us", "p99 us",
           "max us");
    for (size_t i = 0; i < nrows; i++) {
      const bench_redis_phase *ph = redis_row(&f, i);
      printf("  %-22s %10.0f %10.1f %10.1f %10.1f\n", redis_rows[i].label,
             ph->ops_per_s, ph->lat.p50_us, ph->lat.p99_us, ph->lat.max_us);
    }
    printf("\n  claim p50 / (round trip p50 + local claim p50): %.2f "
           "(%.1f / (%.1f + %.1f) us)\n", f.claim_ratio, f.claim.lat.p50_us,
           f.ping.lat.p50_us, f.local_claim.lat.p50_us);
    printf("  claim p50 / (PING + local commit) p50: %.2f (%.1f / %.1f us)\n",
           f.floor_ratio, f.claim.lat.p50_us, f.floor.lat.p50_us);
    printf("  claim-next x%d per job p50 / claim-next p50: one call %.3f "
           "(%.1f / %.1f us:\n    %s a fifth), one by one %.3f (%.1f us)\n",
           BENCH_REDIS_BATCH, f.many_ratio, f.many_one_call.lat.p50_us,
           f.claim_next.lat.p50_us,
           f.many_ratio <= 0.2 ? "at most" : "more than", f.loop_ratio,
           f.many_one_by_one.lat.p50_us);
  }
  fflush(stdout);
  if ((rc = bench_with_replicator(x, o, &ro, f.ns)) != 0) return rc;
  return bench_fleet_part(x, o, &ro, f.ns);
}
#endif

static int run(int argc, char **argv);

/* The figures go to stdout; a failed write (a full disk behind `>`) is an
 * error, not a run that exits 0 with half of them. */
int main(int argc, char **argv) {
  int rc = run(argc, argv);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "jobboard-bench: writing standard output: %s\n",
            strerror(errno));
    if (rc == BENCH_EXIT_OK) rc = BENCH_EXIT_ERROR;
  }
  return rc;
}

/* --names: claim-next by job name, jobboard beside SQLite. */
static void names_print(const char *side, const bench_names_side *r,
                        bool json) {
  for (int sc = 0; sc < BENCH_NAMES_N; sc++) {
    const bench_lat *l = &r->lat[sc];
    if (json) {
      bench_json_line(json_pack("{s:s,s:s,s:s,s:I,s:f,s:f,s:f}", "type",
                                "names", "side", side, "case",
                                bench_names_label[sc], "claims",
                                (json_int_t)l->samples, "p50_us",
                                l->p50_us, "p99_us", l->p99_us, "build_s",
                                r->build_s));
    } else {
      printf("  %-9s %-28s %7zu claims  p50 %9.1f us  p99 %9.1f us\n", side,
             bench_names_label[sc], l->samples, l->p50_us, l->p99_us);
    }
  }
  if (!json) printf("  %-9s built in %.1f s\n\n", side, r->build_s);
}

static int run_names(bench_ctx *x, const bench_opts *o, const char *cpu,
                     const char *kernel, long ncpu, const char *fs) {
  if (!o->json)
    printf("jobboard-bench %s: claim-next by job name, %zu jobs over %zu "
           "names\n(behind 100,000 jobs of a name posted first), durability "
           "none\n\n  machine   %ld cpus, %s, Linux %s\n  boards    %s "
           "(%s)\n\n",
           jb_version(NULL, NULL, NULL), o->names_jobs, o->names, ncpu, cpu,
           kernel, x->root, fs);
  char dir[4200], err[512];
  bench_names_side r;
  int rc = make_sub(x, "names", dir, sizeof dir);
  if (rc) return rc;
  if (bench_names_board(&r, dir, o->names_jobs, o->names, o->names_claims,
                        err, sizeof err))
    return bench_fail("names", err);
  names_print("jobboard", &r, o->json);
  if ((rc = make_sub(x, "names-sqlite", dir, sizeof dir))) return rc;
  if (bench_names_sqlite(&r, dir, o->names_jobs, o->names, o->names_claims,
                         err, sizeof err) == 0)
    names_print("SQLite", &r, o->json);
  else if (!o->json)
    printf("  SQLite    not measured: %s\n", err);
  return 0;
}

static int run_controls(bench_ctx *x, const bench_opts *o, const char *cpu,
                        const char *kernel, long ncpu, const char *fs) {
  if (!o->json)
    printf("jobboard-bench %s: a claim-next + consume cycle of one name with "
           "a cap or a rate limit, durability none\n\n  machine   %ld cpus, "
           "%s, Linux %s\n  boards    %s (%s)\n\n",
           jb_version(NULL, NULL, NULL), ncpu, cpu, kernel, x->root, fs);
  char dir[4200], err[512];
  bench_lat r[BENCH_CTL_N];
  int rc = make_sub(x, "controls", dir, sizeof dir);
  if (rc) return rc;
  if (bench_names_controls(r, dir, o->controls, err, sizeof err))
    return bench_fail("controls", err);
  for (int c = 0; c < BENCH_CTL_N; c++) {
    if (o->json)
      bench_json_line(json_pack("{s:s,s:s,s:I,s:f,s:f}", "type", "controls",
                                "case", bench_ctl_label[c], "cycles",
                                (json_int_t)r[c].samples, "p50_us",
                                r[c].p50_us, "p99_us", r[c].p99_us));
    else
      printf("  %-14s %8zu cycles  p50 %7.1f us  p99 %7.1f us\n",
             bench_ctl_label[c], r[c].samples, r[c].p50_us, r[c].p99_us);
  }
  return 0;
}

/* --pages: the web pages' reads, jobboard beside SQLite. */
static void pages_print(const char *side, const bench_pages_side *r,
                        bool json) {
  for (int c = 0; c < BENCH_PAGES_N; c++) {
    if (json)
      bench_json_line(json_pack("{s:s,s:s,s:s,s:I,s:f,s:f,s:f}", "type",
                                "pages", "side", side, "case",
                                bench_pages_label[c], "rows",
                                (json_int_t)r->rows[c], "median_ms",
                                r->median_ms[c], "max_ms", r->max_ms[c],
                                "build_s", r->build_s));
    else
      printf("  %-9s %-13s %6zu rows  median %8.2f ms  max %8.2f ms\n",
             side, bench_pages_label[c], r->rows[c], r->median_ms[c],
             r->max_ms[c]);
  }
  if (!json) printf("  %-9s built in %.1f s\n\n", side, r->build_s);
}

static int run_pages(bench_ctx *x, const bench_opts *o, const char *cpu,
                     const char *kernel, long ncpu, const char *fs) {
  if (!o->json)
    printf("jobboard-bench %s: the reads of `jobboard web`'s pages, %zu "
           "jobs over 20 names, durability none, %d runs each\n\n  machine"
           "   %ld cpus, %s, Linux %s\n  boards    %s (%s)\n\n",
           jb_version(NULL, NULL, NULL), o->pages, BENCH_PAGES_RUNS, ncpu,
           cpu, kernel, x->root, fs);
  char dir[4200], err[512] = "";
  bench_pages_side r;
  int rc = make_sub(x, "pages", dir, sizeof dir);
  if (rc) return rc;
  if (bench_pages_board(&r, dir, o->pages, err, sizeof err))
    return bench_fail("pages", err);
  pages_print("jobboard", &r, o->json);
  if ((rc = make_sub(x, "pages-sqlite", dir, sizeof dir))) return rc;
  if (bench_pages_sqlite(&r, dir, o->pages, err, sizeof err) == 0)
    pages_print("SQLite", &r, o->json);
  else if (!o->json)
    printf("  SQLite    not measured: %s\n", err);
  return 0;
}

static int run(int argc, char **argv) {
  bench_opts o;
  int rc = parse_args(&o, argc, argv);
  if (rc >= 0) return rc;
  bench_ctx x;
  memset(&x, 0, sizeof x);
  x.nsides = o.peers ? NSIDES : SIDE_SQL;
  if ((rc = make_root(&x, &o))) return rc;

  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  struct utsname un;
  if (uname(&un) != 0) snprintf(un.release, sizeof un.release, "unknown");
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const char *fs = fs_name(x.root);

  int ret;
  if (o.names) {
    ret = run_names(&x, &o, cpu, un.release, ncpu, fs);
    goto done;
  }
  if (o.controls) {
    ret = run_controls(&x, &o, cpu, un.release, ncpu, fs);
    goto done;
  }
  if (o.pages) {
    ret = run_pages(&x, &o, cpu, un.release, ncpu, fs);
    goto done;
  }
  if (o.redis != NULL) {
#ifdef JB_WITH_REDIS
    if (o.json)
      bench_json_line(json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s}", "type", "setup",
                          "version", jb_version(NULL, NULL, NULL), "cpus",
                          (json_int_t)ncpu, "cpu", cpu, "kernel", un.release,
                          "dir", x.root, "filesystem", fs));
    else
      printf("jobboard-bench %s: the job operations through Redis\n\n"
             "  machine   %ld cpus, %s, Linux %s\n  boards    %s (%s)\n",
             jb_version(NULL, NULL, NULL), ncpu, cpu, un.release, x.root, fs);
    fflush(stdout);
    ret = bench_through_redis(&x, &o);
#else
    ret = bench_usage_error("--redis: this jobboard-bench was built "
                            "without Redis sync (configure --with-redis, "
                            "with hiredis)");
#endif
    goto done;
  }
  ret = learn_sizes(&x);
  if (ret) goto done;
  if (o.json) {
    json_t *v = json_pack("{s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I}",
                        "type", "setup", "version",
                        jb_version(NULL, NULL, NULL), "cpus",
                        (json_int_t)ncpu, "cpu", cpu, "kernel", un.release,
                        "dir", x.root, "filesystem", fs, "jobs",
                        (json_int_t)o.jobs, "sync_jobs",
                        (json_int_t)o.sync_jobs, "rounds",
                        (json_int_t)o.rounds, "posting_bytes",
                        (json_int_t)x.posting_len, "raw_value_bytes",
                        (json_int_t)x.value_len);
    json_setup_parts(v, &o, &x);
    bench_json_line(v);
  } else {
    printf("jobboard-bench %s: one cycle = post + claim-next + consume, "
           "three write\ntransactions per job\n\n",
           jb_version(NULL, NULL, NULL));
    printf("  machine   %ld cpus, %s, Linux %s\n", ncpu, cpu, un.release);
    printf("  boards    %s (%s)\n", x.root, fs);
    if (strcmp(fs, "tmpfs") == 0)
      printf("            tmpfs: a flush costs nothing here, so full and "
             "normal measure no disk\n");
    printf("  job       posting of %zu bytes (%zu with the library's "
           "header)\n", x.posting_len, x.value_len);
    printf("  figures   median of %u round%s, after untimed warm-up "
           "cycles\n", o.rounds, o.rounds == 1 ? "" : "s");
    printf("  raw LMDB  the same three write transactions on bare LMDB, "
           "with the library's\n            flags for the mode and records "
           "of the same sizes; \"+ log\" also\n            appends a "
           "change-log event in each to one log table\n");
    printf("  ratio     jobboard's cycles/s over the floor's (1.00: as fast "
           "as bare LMDB)\n");
    if (o.nprocs > 0 || o.nthreads > 0)
      printf("  racing    cycles/s of all processes (threads) together; "
             "us/cycle is wall\n            time over all their cycles\n");
    if (o.peers)
      printf("  SQLite    %s, WAL, the same job (jobboard-bench --help); "
             "synchronous FULL,\n            NORMAL, OFF for full, normal, "
             "none; \"ratio\" on its row: jobboard's\n            cycles/s "
             "over SQLite's\n", bench_peer_version());
    printf("\n");
    printf("%-18s %12s %11s %7s", "", "cycles/s", "us/cycle", "ratio");
  }
  fflush(stdout);

  for (size_t i = 0; ret == 0 && i < BENCH_NMODES; i++) {
    jb_durability d = bench_mode_order[i];
    if (!o.mode[d]) continue;
    bench_fig fig[NSIDES];
    if ((ret = bench_single(fig, &x, &o, d))) break;
    double per_s = lib_flushes.secs > 0 ? lib_flushes.flushes / lib_flushes.secs : 0;
    if (o.json) {
      json_t *v = json_figs("single", d, 1, fig, x.nsides, o.rounds);
      if (v && d == JB_DURABILITY_INTERVAL) {
        json_object_set_new(v, "flushes", json_integer((json_int_t)lib_flushes.flushes));
        json_object_set_new(v, "flushes_per_s", json_real(per_s));
        json_object_set_new(v, "flush_interval_ms",
                            json_integer(lib_flushes.interval_ms));
      }
      bench_json_line(v);
    } else {
      char title[160];
      snprintf(title, sizeof title, "%s, 1 process, %zu cycles (%s)",
               jb_durability_name(d), fig[0].cycles, bench_raw_flags_name(d));
      print_block(title, fig, x.nsides, d);
      if (d == JB_DURABILITY_INTERVAL)
        printf("  flushes          %llu in %.2f s of rounds: %.1f/s (interval "
               "%lld ms; the flash's wear)\n",
               (unsigned long long)lib_flushes.flushes, lib_flushes.secs, per_s,
               (long long)lib_flushes.interval_ms);
    }
    fflush(stdout);
    ret = bench_worker_part(&x, &o, d);
  }

  if (ret == 0 && o.claims && o.mode[JB_DURABILITY_NONE]) {
    bench_fig fig[NKINDS];
    if ((ret = bench_claims(fig, &x, &o)) == 0) {
      if (o.json) {
        json_t *v = json_pack("{s:s,s:s,s:I,s:I}", "type", "claims", "mode",
                              "none", "cycles", (json_int_t)o.jobs, "rounds",
                              (json_int_t)o.rounds);
        char key[64];
        for (int k = 0; v && k < NKINDS; k++) {
          snprintf(key, sizeof key, "%s_cycles_per_s", kind_label[k]);
          json_object_set_new(v, key, json_real(rate(&fig[k])));
          snprintf(key, sizeof key, "%s_us_per_cycle", kind_label[k]);
          json_object_set_new(v, key, json_real(us_per(&fig[k])));
        }
        bench_json_line(v);
      } else {
        printf("\nnone, 1 process, %zu cycles, by kind of claim   (us beyond "
               "plain)\n", o.jobs);
        for (int k = 0; k < NKINDS; k++) {
          printf("  %-16s %12.0f %11.2f", kind_label[k], rate(&fig[k]),
                 us_per(&fig[k]));
          if (k > 0) printf("   %+5.2f", us_per(&fig[k]) - us_per(&fig[0]));
          putchar('\n');
        }
      }
      fflush(stdout);
    }
  }

  if (ret == 0) ret = run_part(&x, &o, "threads", o.nthreads,
                                bench_threads_part);
  for (size_t k = 0; ret == 0 && k < o.nprocs; k++) {
    bench_fig fig[NSIDES];
    unsigned procs = o.procs[k];
    if ((ret = bench_multi(fig, &x, &o, procs)) == 0) {
      if (o.json) {
        json_t *v = json_figs("multi", o.procs_mode, procs, fig, x.nsides,
                              o.rounds);
        if (v) json_object_set_new(v, "steady", json_boolean(o.procs_steady));
        bench_json_line(v);
      } else {
        char title[160];
        snprintf(title, sizeof title, "%s, %u process%s racing on one "
                 "board%s, %zu cycles in all", jb_durability_name(o.procs_mode),
                 procs, procs == 1 ? "" : "es",
                 o.procs_steady ? " (steady records on)" : "", fig[0].cycles);
        print_block(title, fig, x.nsides, o.procs_mode);
      }
      fflush(stdout);
    }
  }
  if (ret == 0) ret = run_part(&x, &o, "posting", o.nbatch,
                                bench_batch_part);
  if (ret == 0 && o.wakes > 0) ret = bench_wakes(&x, &o);
  if (ret == 0 && o.keep && !o.json) printf("\nkept %s\n", x.root);
  fflush(stdout);
done:
  cleanup(&x, &o);
  return ret;
}
