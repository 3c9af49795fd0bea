/*
 * jobboard.h - a shared, crash-safe job board for the programs of one host.
 *
 * A board is a directory holding an LMDB environment. Any thread or process
 * on the host may open it; every state change is one LMDB write transaction,
 * so a claim is atomic: two claimers can never both own one job.
 *
 * Conventions (they hold for every function below unless its entry says
 * otherwise):
 *
 *  - Functions return an int status: JB_OK (0) or a negative JB_E* code.
 *    On failure a human message naming the job, owner or field is kept for
 *    the calling thread and returned by jb_errmsg(). A failed call changes
 *    nothing on the board.
 *  - Out-parameters come first, then the handle acted on, then arguments.
 *  - Objects returned through `**out` belong to the caller and are freed with
 *    the matching *_free / *_close. Pointers returned by value (accessors)
 *    are borrowed from their parent object and live as long as it does.
 *  - A failed open or lookup leaves `*out` NULL: there is nothing to free.
 *    Every *_free / *_close accepts NULL as a harmless no-op.
 *  - Uuids are 36-character lowercase hyphenated text; input is accepted
 *    in either case. The board makes version 7 uuids (RFC 9562: they
 *    begin with the posting time, so later posts sort later, which keeps
 *    the board's uuid-keyed tables compact); it accepts any uuid from
 *    elsewhere (taskflow's are version 4).
 *
 * Threads and processes:
 *  - A jb_board handle is safe to use from many threads at once. Write
 *    transactions are serialised by LMDB's writer lock (shared by all the
 *    processes of the host); reads run in parallel with writes.
 *  - A handle opened before fork() must not be used in the child: open the
 *    board again in the child (LMDB's rule; the child holds copies of the
 *    parent's locks). Such a handle refuses to work (JB_EINVAL).
 *  - Several handles of one process on one board share one LMDB
 *    environment (LMDB forbids opening it twice in a process), so they must
 *    use the same durability; each keeps its own max_posting.
 *  - jb_job and jb_iter objects are not shared between threads.
 *
 * Durability (jb_board_options.durability). In every mode a crash of any
 * process (kill -9 included, at any instruction) loses nothing that was
 * acknowledged: a commit's pages and then its meta page are written with
 * pwrite, and the page cache outlives the process.
 *  - JB_DURABILITY_FULL (default): every commit is flushed to disk (pages,
 *    then the meta page). A power loss or kernel crash loses nothing that
 *    was acknowledged.
 *  - JB_DURABILITY_NORMAL: one flush per commit (the meta page is not
 *    flushed). A power loss may undo the last commit, never damage the
 *    board.
 *  - JB_DURABILITY_INTERVAL: a commit returns without a flush; the board
 *    is flushed at most every flush interval T (jb_board_options
 *    .flush_interval_ms, else the board's, else 1000 ms), also when writers
 *    go idle, and each flushed state is recorded in the board's "steady"
 *    file. A power loss or kernel crash leaves a board that opens and
 *    passes jb_board_check, holding every commit up to a flushed state
 *    no older than T plus one flush; no commit is ever half there (the
 *    first open after the reboot puts the recorded state back). Once a
 *    board has been opened in interval, every writer of it takes part:
 *    full and normal commits return once a recorded flush holds them
 *    (never rolled back), none commits are flushed like interval ones.
 *    docs/DESIGN-NOTES.md, "Durability interval".
 *  - JB_DURABILITY_NONE: no flush (MDB_NOSYNC): the fastest mode. A power
 *    loss or kernel crash can lose recent commits AND DAMAGE THE BOARD
 *    (unless the board uses interval: see above). Do not use it on
 *    devices that can lose power unless the board can be thrown away.
 * No mode maps the board with MDB_WRITEMAP: LMDB 0.9.24 on x86-64 cannot
 * make that safe against kill -9 (docs/DESIGN-NOTES.md).
 */
#ifndef JOBBOARD_H
#define JOBBOARD_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Symbols of the public API; everything else in the library is hidden. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define JB_EXTERN __attribute__((visibility("default")))
#else
#define JB_EXTERN
#endif

/* The names replaced in 0.2 (the end of this header) warn when used; a
 * program defining JB_NO_DEPRECATED before the include does not see them
 * at all (the library's own code is built so). */
#if defined(__GNUC__) && (__GNUC__ >= 5 || defined(__clang__))
#define JB_DEPRECATED(use) __attribute__((deprecated("use " use)))
#else
#define JB_DEPRECATED(use)
#endif

/*
 * Contents. The header follows the man(3) group pages, one part each, in
 * this order, after a short vocabulary (sizes, priorities, states) that
 * they all use: the board (jb_board(3)); jobs (jb_jobs(3)); claims
 * (jb_claims(3)); retries and dead letters (jb_retry(3)); waits
 * (jb_waits(3)); the history and the change log (jb_history(3)); periodic
 * jobs (jb_schedule(3)); statistics (jb_stats(3)); entities
 * (jb_entities(3)); errors, the names of the enums' values and the
 * version (jb_errors(3)). Last come the names replaced in 0.2, which
 * jb_deprecated(3) lists with their replacements.
 */

/* ------------------------------------------------------------ vocabulary */

/** Length of a uuid's text form, including the terminating NUL. */
#define JB_UUID_STRLEN 37
/** Longest owner name (`who`) in bytes, without the terminating NUL. */
#define JB_WHO_MAX 255
/** Longest job name in bytes. */
#define JB_NAME_MAX 1024

/** Priorities, highest first in listings and claim-next. */
typedef enum {
  JB_PRIORITY_VERY_LOW = 0,
  JB_PRIORITY_LOW = 1,
  JB_PRIORITY_NORMAL = 2,
  JB_PRIORITY_HIGH = 3,
  JB_PRIORITY_VERY_HIGH = 4,
} jb_priority;

/**
 * States as seen by readers. A job that is not on the board (consumed,
 * trashed, or never posted here) reads as COMPLETE, as in taskflow.
 */
typedef enum {
  JB_STATE_UNCLAIMED = 0,
  JB_STATE_CLAIMED = 1,
  JB_STATE_COMPLETE = 2,
} jb_state;

/* ===================================================== board: jb_board(3) */

typedef struct jb_board jb_board;

typedef enum {
  JB_DURABILITY_FULL = 0,
  JB_DURABILITY_NORMAL = 1,
  JB_DURABILITY_NONE = 2,
  JB_DURABILITY_INTERVAL = 3,
} jb_durability;

/* 2 added history_max, history_max_age_ms, log_keep and log_max_age_ms;
 * 3 added flush_interval_ms. Older structs (without them) are still
 * accepted, and those fields then take their defaults. */
#define JB_BOARD_OPTIONS_VERSION 3

/** Flags for jb_board_options.flags. */
enum {
  /** Create the board directory (not its parents) if it does not exist,
   *  and initialise a new board in it. Without it a missing directory is
   *  JB_ENOTFOUND. A board is made only in a new or empty directory: an
   *  existing one without data.mdb that holds other files than a board's
   *  own (lock.mdb, signal, steady, sync.*) or lost+found is refused with
   *  JB_ECORRUPT and left untouched (a mistyped path makes no board). */
  JB_OPEN_CREATE = 1u << 0,
  /** Open the board for reading only (LMDB's MDB_RDONLY): nothing in the
   *  board directory is created or written. Every write through the handle
   *  fails with JB_EREADONLY. Works on a board whose files the process may
   *  only read (another user's board shared with group read, a read-only
   *  mount): when the lock file cannot be opened for writing, the board is
   *  read without LMDB's reader table (MDB_NOLOCK; see jb_board_readonly):
   *  a writer may then reuse pages a long read is looking at, so keep read
   *  transactions short (each call is one) and expect a rare JB_ECORRUPT
   *  from a read that races a writer. On a read-only file system LMDB
   *  itself drops the locks, with the same caveat (no writer can run
   *  there anyway). Waits on such a handle look at the board every 200 ms
   *  instead of being woken by commits. A board that still needs its first
   *  open of this boot or a schema upgrade is read as it is (claims of an
   *  earlier boot count as lapsed). Not with JB_OPEN_CREATE. If this
   *  process already has the board open for writing, the handle shares
   *  that environment (LMDB allows one per process) and is read-only only
   *  in that jb_board_readonly() says so. */
  JB_OPEN_READONLY = 1u << 1,
};

/**
 * Options for jb_board_open. Initialise with JB_BOARD_OPTIONS_INIT and then
 * set the fields you care about; zero means "the default" for sizes.
 * Durability is a property of the handle, not of the board: processes may
 * open one board with different modes (each commit is as durable as the
 * handle that made it).
 */
typedef struct {
  unsigned int version;    /**< JB_BOARD_OPTIONS_VERSION */
  unsigned int flags;      /**< JB_OPEN_* */
  jb_durability durability;
  size_t map_size;         /**< initial map size in bytes; 0 = the board's
                                own (set when it was made with a map_size
                                and JB_OPEN_CREATE: jobboard init
                                --map-size), else 64 MiB. The map grows by
                                itself when full. */
  size_t max_posting;      /**< largest posting in bytes; 0 = 1 MiB */
  /* The completion history (see jb_consume). The board's stored
   * retention (jb_board_set_retention) wins: these apply, to the
   * completions this handle writes, only to a bound the board does not
   * store (another process may keep more). */
  size_t history_max;         /**< records kept; 0 = 10,000 */
  int64_t history_max_age_ms; /**< age of the oldest kept; 0 = 7 days */
  /* Version 2: the change log's bounds (see "change log" below). Like
   * durability they belong to the process, not to the board: every write
   * of this process trims by them, so a second handle of the process on
   * the board must ask for the same ones (defaults resolved). */
  uint64_t log_keep;       /**< events the log keeps at least, unless
                                too old; 0 = JB_LOG_KEEP_DEFAULT */
  int64_t log_max_age_ms;  /**< events older than this are trimmed;
                                0 = JB_LOG_MAX_AGE_DEFAULT_MS */
  /* Version 3. */
  int64_t flush_interval_ms; /**< durability interval: this process's
                                  flush period; 0 = the board's
                                  (jb_board_set_flush_interval), else
                                  JB_FLUSH_INTERVAL_DEFAULT_MS */
} jb_board_options;

#define JB_FLUSH_INTERVAL_DEFAULT_MS 1000

#define JB_BOARD_OPTIONS_INIT                                                  \
  { JB_BOARD_OPTIONS_VERSION, 0, JB_DURABILITY_FULL, 0, 0, 0, 0, 0, 0, 0 }

/**
 * Open the board in directory `path` (NULL `opts` means defaults).
 * Clears reader slots left by dead processes. Refuses a board written by a
 * newer schema. Opening an existing board takes no write transaction, so
 * it does not wait for another process's write. Something that is not a
 * board is refused before it is mapped: its files are left as they were.
 * On failure *out is NULL.
 * Errors: JB_ENOTFOUND (no such directory and JB_OPEN_CREATE not given,
 * or its parent directory is missing: only the board directory is made),
 * JB_EINVAL (path is not a directory, bad options: a log_max_age_ms below
 * 0 or above INT64_MAX / 1000, or a durability or log bounds other than
 * those of a handle this process already has on the board), JB_ECORRUPT (the
 * directory holds something that is not a board; with JB_OPEN_CREATE, also
 * other files and no board), JB_EVERSION (newer
 * schema), JB_EIO (also while an earlier commit of this process on the
 * board failed in a way that leaves the disk's contents unknown: see
 * below), JB_EFULL, JB_ENOMEM.
 *
 * I/O errors: a commit whose write or flush fails with an I/O error returns
 * JB_EIO, and every later write through any handle of this process on that
 * board, and any new open of it, fails with JB_EIO ("reopen the board")
 * until every handle of it is closed: after a failed flush the kernel may
 * have dropped the data while a later flush reports success. Reads go on,
 * unless the failure hit the meta page's write (LMDB then refuses reads
 * too). A full disk (JB_EFULL) changes nothing and leaves the handle
 * usable, unless it hit the meta page's write: then as an I/O error.
 */
JB_EXTERN int jb_board_open(jb_board **out, const char *path,
                  const jb_board_options *opts);

/**
 * Close a board handle. No other thread may be using it. NULL is a no-op.
 * Jobs and iterators taken from the board must be freed first. A handle
 * inherited across fork() may be closed in the child: that releases the
 * handle but leaves its LMDB environment alone (closing it would drop the
 * child's own locks on the board); the child's memory for it is kept
 * until exit.
 */
JB_EXTERN void jb_board_close(jb_board *board);

/**
 * How the handle may use its board: 0 read-write; else the reason it is
 * read-only, a JB_READONLY_* value. */
enum {
  JB_READONLY_ASKED = 1,   /**< opened with JB_OPEN_READONLY, with LMDB's
                                locks (a full, consistent reader) */
  JB_READONLY_NOLOCK = 2,  /**< read-only and without LMDB's reader table:
                                the lock file could not be written (see
                                JB_OPEN_READONLY for the caveat) */
};
JB_EXTERN int jb_board_readonly(const jb_board *board);

/** The directory the board was opened from (borrowed from the handle). */
JB_EXTERN const char *jb_board_path(const jb_board *board);

/** Flags for jb_board_count and jb_iter_open. */
enum {
  /** Only jobs that are UNCLAIMED (claimable). */
  JB_ONLY_UNCLAIMED = 1u << 0,
};

/**
 * Number of jobs on the board (claimed included), or with JB_ONLY_UNCLAIMED
 * the number of claimable ones. O(1). Errors: JB_EINVAL (NULL argument, or
 * a handle opened before fork() used in the child), JB_EIO.
 */
JB_EXTERN int jb_board_count(size_t *out, jb_board *board, unsigned int flags);

/**
 * End every wait on this handle, now and later, from any thread: each
 * returns JB_EINTERRUPTED (waits on other handles, and in other processes,
 * go on). It stays so until jb_board_interrupt_reset. Safe to call from a
 * signal handler (it only stores a flag and wakes the futex).
 * Returns JB_OK, or JB_EINVAL for a NULL handle.
 */
JB_EXTERN int jb_board_interrupt(jb_board *board);

/** Undo jb_board_interrupt: later waits on the handle wait again. */
JB_EXTERN int jb_board_interrupt_reset(jb_board *board);

/**
 * Flush the board now: when this returns JB_OK, every commit made so far
 * on the board (by any process) is on the disk, and on a board that uses
 * durability interval it is the recorded flushed state a power loss
 * comes back to. In full it has nothing to add. Errors: JB_EREADONLY,
 * JB_EIO (the flush failed: as a failed commit, the handle's process then
 * writes no more to the board).
 */
JB_EXTERN int jb_board_sync(jb_board *board);

/**
 * The board's own flush interval for durability interval, kept in the
 * board (its "steady" file) for every process that does not set
 * jb_board_options.flush_interval_ms: 1 ms to one day, or 0 for
 * JB_FLUSH_INTERVAL_DEFAULT_MS. Running processes take it at their next
 * flush. Errors: JB_EINVAL (out of range), JB_EREADONLY, JB_EIO.
 */
JB_EXTERN int jb_board_set_flush_interval(jb_board *board, int64_t ms);

/** What durability interval does for this handle's process. */
typedef struct {
  int on;                    /**< the board uses interval and this process
                                  takes part (every writer then does) */
  int64_t flush_interval_ms; /**< this process's period */
  uint64_t flushes;          /**< flushes of the board this process made */
  uint64_t recorded_txnid;   /**< the board's last recorded flushed state
                                  (an LMDB transaction id) */
  uint64_t latest_txnid;     /**< its newest commit */
} jb_flush_info;

/** Fill `out` (zeros when the handle is read-only). JB_OK or JB_EINVAL. */
JB_EXTERN int jb_board_flush_info(jb_flush_info *out, jb_board *board);

/* ------------------------------------------------------------------ check */

/** What jb_board_check counted. */
typedef struct {
  size_t jobs;        /**< jobs on the board */
  size_t ready;       /**< entries in the ready index */
  size_t claimed;     /**< claim records */
  size_t log_events;  /**< change-log entries kept */
  size_t trashed;     /**< postings in the trash area */
  size_t quarantined; /**< records in quarantine (this run included) */
  size_t moved;       /**< postings moved to quarantine by this run */
  size_t problems;    /**< invariant violations found by this run */
  size_t history;     /**< completion records in the history */
} jb_check_stats;

/** Called once per problem or note, with one line of text. */
typedef void (*jb_check_cb)(const char *line, void *payload);

/**
 * Verify the board's invariants: every job is in exactly one of ready /
 * claimed; every index entry points at a job; every posting decodes (one
 * that does not is moved to the quarantine table with the reason, never
 * deleted); sequences and counters are consistent; every lease and
 * holder index entry matches its claim; every entity record and every
 * schedule is well-formed; every history record decodes, and each job's history entry
 * names a record of that job. A job moved to quarantine has reached
 * COMPLETE: it gets a history record (JB_END_REVOKED, with the reason).
 * Reports each problem
 * (and each quarantined record, as a note: a line that starts with
 * "quarantined: ") through `cb` (may be NULL); fills `stats`
 * (may be NULL). Returns JB_OK only when no problem was found and nothing
 * had to be quarantined by this run; JB_ECORRUPT otherwise. The check is
 * a read: writers go on meanwhile. Only when a posting must move is it
 * repeated as one write transaction that moves every such posting. On a
 * handle opened read-only (JB_OPEN_READONLY) nothing moves: such a posting
 * is reported as a problem instead.
 * Errors: JB_ECORRUPT, JB_EIO.
 */
JB_EXTERN int jb_board_check(jb_check_stats *stats, jb_board *board, jb_check_cb cb,
                   void *payload);

/** Flags for jb_board_check_ex. */
enum {
  /** Keep the check's time and result in the board (jb_board_last_check),
   * in a write transaction of its own after the check. */
  JB_CHECK_RECORD = 1u << 0,
};

/** The last recorded check of a board (jb_board_last_check). */
typedef struct {
  int64_t time_us;     /**< when it ended (wall clock, microseconds) */
  int64_t duration_us; /**< how long it ran */
  uint64_t problems;   /**< problems it found */
  uint64_t moved;      /**< postings it moved to quarantine */
  uint64_t jobs;       /**< jobs on the board it saw */
} jb_check_record;

/**
 * jb_board_check, with `flags` (0 or JB_CHECK_RECORD). With
 * JB_CHECK_RECORD a check that ran to the end (JB_OK or JB_ECORRUPT)
 * keeps its record in the board, so that dashboards and metrics can say
 * when the board was last checked and what was found. On a read-only
 * handle, or when that write fails (a full map, an I/O error), nothing is
 * recorded and `cb` gets a note that starts "not recorded: "; the return
 * value is the check's either way. Errors: as jb_board_check, and
 * JB_EINVAL for unknown flags.
 */
JB_EXTERN int jb_board_check_ex(jb_check_stats *stats, jb_board *board,
                                unsigned int flags, jb_check_cb cb,
                                void *payload);

/**
 * The board's last recorded check (jb_board_check_ex with
 * JB_CHECK_RECORD; `jobboard check` records). O(1), a read.
 * Errors: JB_EINVAL (NULL argument), JB_ENOTFOUND (no check recorded one),
 * JB_ECORRUPT (the record does not decode), JB_EIO.
 */
JB_EXTERN int jb_board_last_check(jb_check_record *out, jb_board *board);

/* ---------------------------------------------------------------- salvage */

/** What jb_board_salvage found and copied. */
typedef struct {
  size_t copied;      /**< jobs posted into the new board */
  size_t orphaned;    /**< of those, found on pages no tree reaches */
  size_t undecodable; /**< job records whose posting does not decode */
  size_t completed;   /**< job records left out: the history, log, trash or
                           quarantine say the job completed */
  size_t bad_pages;   /**< pages that could not be read */
  size_t bad_tables;  /**< tables whose tree could not be walked */
  size_t history;     /**< completion records copied into the history */
} jb_salvage_stats;

/** What a jb_salvage_cb line is about. */
typedef enum {
  JB_SALVAGE_COPIED = 1,  /**< "job UUID (NAME)": copied */
  JB_SALVAGE_UNDECODABLE, /**< a job record that was not copied, and why */
  JB_SALVAGE_BAD_PAGE,    /**< "page N: why": a page that cannot be read */
  JB_SALVAGE_BAD_TABLE,   /**< a table (or meta page) that cannot be read */
  JB_SALVAGE_NOTE,        /**< anything else worth knowing */
} jb_salvage_kind;

/** Called once per line of the salvage's report. */
typedef void (*jb_salvage_cb)(jb_salvage_kind kind, const char *line,
                              void *payload);

/**
 * Copy what can be read of the damaged board in directory `src` into a new
 * board in directory `dst`. `src` is only read: its data file is opened
 * read-only and mapped, no lock file is made (it may be on a read-only
 * mount), and its pages are read by jobboard's own reader of LMDB's file
 * format, which checks every page before using it (LMDB itself trusts
 * its file and may crash on a damaged one). No process may write `src`
 * meanwhile.
 *
 * Every job record whose posting decodes is posted into `dst` with its
 * uuid, name, details, priority, creation time and book, UNCLAIMED (claims
 * are dropped), in its original order (priority, then sequence); it gets
 * `dst`'s sequences. Jobs are read from the jobs table of the newest meta
 * page whose tree is readable, and, for leaf pages cut off by a damaged
 * page above them, from every page that no tree reaches and that its free
 * list does not list (free pages hold stale copies: only their completion
 * records are read). A job
 * the readable history, log, trash or quarantine of either meta page
 * says has completed is never copied (a dead letter requeued since, under
 * the same uuid and a higher sequence, is a live job: it is copied). Completion records of the history
 * that decode are copied (in order, newest kept within `dst`'s bounds),
 * as are a copied job's due time, attempts, last reason, options and
 * unique key, the dead letters and the schedules; the change log is not
 * (`dst` starts its own log with the POSTED events).
 *
 * `dst` must not exist (its parent must) or be an empty directory.
 * Reports each copied job, each undecodable record, each unreadable page
 * and table through `cb` (may be NULL); fills `stats` (may be NULL).
 * Returns JB_OK when the salvage ran, however much it lost (see stats).
 * Errors: JB_EINVAL (`dst` exists and is not an empty directory, NULL
 * arguments), JB_ENOTFOUND (`src` holds no data.mdb, or `dst`'s parent is
 * missing), JB_ECORRUPT (neither meta page of `src` is readable: nothing
 * is written), JB_EIO, JB_ENOMEM.
 */
JB_EXTERN int jb_board_salvage(jb_salvage_stats *stats, const char *src,
                               const char *dst, jb_salvage_cb cb,
                               void *payload);

/* ======================================================= jobs: jb_jobs(3) */

/**
 * A snapshot of one job, as read at one moment. Owned by the caller when
 * returned through `**out` (free with jb_job_free); borrowed when returned
 * by jb_iter_next.
 */
typedef struct jb_job jb_job;

/** Free a job. NULL is a no-op. */
JB_EXTERN void jb_job_free(jb_job *job);

/** The job's uuid, 36 characters (borrowed from the job). */
JB_EXTERN const char *jb_job_uuid(const jb_job *job);
/** The job's name, NUL-terminated UTF-8 (borrowed from the job). */
JB_EXTERN const char *jb_job_name(const jb_job *job);
/** The job's priority. */
JB_EXTERN jb_priority jb_job_priority(const jb_job *job);
/** Board-wide sequence number: strictly increasing in posting order. */
JB_EXTERN uint64_t jb_job_sequence(const jb_job *job);
/** When the job was posted, microseconds since the Unix epoch (UTC). */
JB_EXTERN int64_t jb_job_created(const jb_job *job);
/** Last claim / abandon (or the post), microseconds since the epoch. */
JB_EXTERN int64_t jb_job_modified(const jb_job *job);
/** UNCLAIMED or CLAIMED (a job that has a snapshot is on the board). */
JB_EXTERN jb_state jb_job_state(const jb_job *job);
/** The owner's name, or NULL when unclaimed. */
JB_EXTERN const char *jb_job_owner(const jb_job *job);
/** The claim's fencing token; 0 when unclaimed. */
JB_EXTERN uint64_t jb_job_token(const jb_job *job);
/** When the claim's lease lapses, microseconds since the epoch (wall
 *  clock, as estimated when the snapshot was taken); 0 when it has no
 *  lease or the job is unclaimed. */
JB_EXTERN int64_t jb_job_lease_expires(const jb_job *job);
/** The pid of the process the claim is bound to; 0 when not bound. */
JB_EXTERN int jb_job_holder_pid(const jb_job *job);
/** Whether that process was running when the snapshot was taken. */
JB_EXTERN bool jb_job_holder_alive(const jb_job *job);
/** true when Redis decides this job's ownership (the authority rule: it
 *  was published to, or came from, a Redis board): claim, abandon,
 *  consume, trash and extend of it go through Redis first, and fail with
 *  JB_EOFFLINE on a handle not attached to Redis (jb_sync_attach). false
 *  for a job decided locally (never published). */
JB_EXTERN bool jb_job_remote(const jb_job *job);
/** The book's name and uuid, or NULL when the job was posted without one. */
JB_EXTERN const char *jb_job_book_name(const jb_job *job);
JB_EXTERN const char *jb_job_book_uuid(const jb_job *job);
/** A delayed job's due time (microseconds since the epoch): it is not
 *  claimable before it. 0 when the job is not delayed (never was, or it is
 *  due and was made claimable). */
JB_EXTERN int64_t jb_job_not_before(const jb_job *job);
/** Claims of this job that ended without a completion: abandoned,
 *  retried, lapsed (lease or holder gone, time limit). */
JB_EXTERN uint32_t jb_job_attempts(const jb_job *job);
/** The most attempts the job was posted with; 0: the board's policy. */
JB_EXTERN uint32_t jb_job_max_attempts(const jb_job *job);
/** The job's time limit in milliseconds (a claim lapses this long after
 *  it is made, renewed or not); 0: none. */
JB_EXTERN int64_t jb_job_time_limit(const jb_job *job);
/** The unique key the job holds, or NULL. */
JB_EXTERN const char *jb_job_unique_key(const jb_job *job);
/** The reason given with the last failed attempt, or NULL. */
JB_EXTERN const char *jb_job_last_reason(const jb_job *job);
/** The progress last reported (jb_progress): true when there is one, and
 *  then its percentage (0..100, in tenths) in `*percent`, its message (NULL
 *  when none was given; borrowed from the job) in `*message` and when it
 *  was reported (microseconds since the epoch) in `*at_us`; false with
 *  0, NULL and 0 when none. Each pointer may be NULL. A claim that lapses
 *  keeps its last report here until the job is claimed again. */
JB_EXTERN bool jb_job_progress(const jb_job *job, double *percent,
                               const char **message, int64_t *at_us);
/** Times the job was snoozed (jb_snooze); they are not attempts. */
JB_EXTERN uint32_t jb_job_snoozes(const jb_job *job);
/** The most snoozes the job was posted with; 0: no limit. */
JB_EXTERN uint32_t jb_job_max_snoozes(const jb_job *job);
/** The job's deadline to start (microseconds since the epoch): not
 *  claimed by then it ends EXPIRED. 0: none, or it was claimed (a claim
 *  started it: the deadline no longer applies). */
JB_EXTERN int64_t jb_job_deadline(const jb_job *job);
/** The details: one msgpack map (an empty map 0x80 when none was given). */
JB_EXTERN const void *jb_job_details(const jb_job *job, size_t *len);
/** The posting exactly as stored: msgpack in the taskflow layout. */
JB_EXTERN const void *jb_job_posting(const jb_job *job, size_t *len);

/**
 * What to post. Initialise with JB_POST_INIT, then set the fields.
 *  - name: required, 1..JB_NAME_MAX bytes of UTF-8.
 *  - details/details_len: one complete msgpack map, nothing after it;
 *    NULL (with length 0) means an empty map.
 *  - priority: one of the five.
 *  - book_name/book_uuid: both or neither (taskflow's logbook reference);
 *    book_uuid must be a uuid.
 * The whole encoded posting must fit in the board's max_posting.
 */
typedef struct {
  unsigned int version; /**< JB_POST_VERSION (1 has the fields up to
                             book_uuid only) */
  const char *name;
  const void *details;
  size_t details_len;
  jb_priority priority;
  const char *book_name;
  const char *book_uuid;
  /* Version 2: a job's life (0 / NULL: not asked for). */
  int64_t not_before_us; /**< not claimable before this wall-clock time,
                              microseconds since the epoch */
  int64_t delay_ms;      /**< not claimable for this long after the post
                              (not with not_before_us); at most
                              JB_DELAY_MAX_MS */
  uint32_t max_attempts; /**< dead letter after this many failed attempts;
                              0: the board's retry policy */
  int64_t time_limit_ms; /**< a claim lapses this long after it is made,
                              whatever its holder renews; at most
                              JB_LEASE_MAX_MS */
  int64_t backoff_ms;    /**< the first retry's back-off; 0: the board's */
  int64_t backoff_max_ms; /**< the longest back-off; 0: the board's */
  const char *unique_key; /**< 1..JB_UNIQUE_MAX bytes of UTF-8: refused
                               (JB_EEXISTS) while a live job holds it */
  /* Version 3: snoozes and a deadline to start (0: not asked for). */
  uint32_t max_snoozes;  /**< jb_snooze is refused (JB_EINVAL, naming the
                              limit) once the job snoozed this many times;
                              0: no limit */
  int64_t expires_ms;    /**< a deadline to start: not claimed this long
                              after the post, the job ends EXPIRED
                              (JB_END_EXPIRED) and is never claimed; at
                              most JB_DELAY_MAX_MS */
  unsigned int flags;    /**< JB_POST_* */
} jb_post;

/** Flags of jb_post (version 3). */
enum {
  /** A job that expires goes to the dead letters (cause
   *  JB_DEAD_EXPIRED, history JB_END_DEAD) rather than ending EXPIRED. */
  JB_POST_EXPIRES_DEAD = 1u << 0,
};

#define JB_POST_VERSION 3
#define JB_POST_INIT                                                           \
  { JB_POST_VERSION, NULL, NULL, 0, JB_PRIORITY_NORMAL, NULL, NULL,            \
    0, 0, 0, 0, 0, 0, NULL, 0, 0, 0 }
/** The longest unique key in bytes. */
#define JB_UNIQUE_MAX 255
/** The longest delay: 10 years. */
#define JB_DELAY_MAX_MS ((int64_t)3650 * 24 * 3600 * 1000)

/**
 * Post one job. Writes its new uuid (36 chars + NUL) to `uuid_out`.
 * With a unique key that a live job holds, nothing is written and
 * JB_EEXISTS is returned with that job's uuid in `uuid_out`.
 * With a due time in the future (not_before_us, delay_ms) the job is on
 * the board (listed, counted) but not claimable until then.
 * The posting is encoded as taskflow's Redis jobboard encodes it and gets
 * the next board sequence. The sequence is its last field, so a publisher
 * to Redis copies the bytes before it and writes the sequence Redis gives
 * (taskflow's sequences must come from one shared counter).
 * Errors: JB_EINVAL (names the field; nothing written), JB_EFULL, JB_EIO.
 */
JB_EXTERN int jb_job_post(char uuid_out[JB_UUID_STRLEN], jb_board *board,
                const jb_post *post);

/**
 * Post `n` jobs in one write transaction: all of them or none. Every post
 * of `posts` has the version of the first (a program built against
 * version 1 of jb_post passes an array of the smaller struct, which the
 * first element's version tells). Uuids are
 * written to uuids_out[0..n-1] in order; sequences follow the same order.
 * Every post is validated before anything is written; the message of a bad
 * one names its index. Two posts of the batch with one unique key are
 * JB_EINVAL (naming both). With a unique key that a live job holds,
 * nothing is posted and JB_EEXISTS is returned with that job's uuid in the
 * refused post's slot of uuids_out alone (the other slots are not
 * written, so a caller that zeroes them first learns which post it was).
 * Errors: as jb_job_post.
 */
JB_EXTERN int jb_job_post_batch(char (*uuids_out)[JB_UUID_STRLEN], jb_board *board,
                      const jb_post *posts, size_t n);

/**
 * Check a post by the rules jb_job_post applies (every field above, and the
 * encoded size against `max_posting`, 0 meaning the default of 1 MiB),
 * without a board: a tool can refuse bad input before it opens or creates
 * one. Writes nothing. Errors: JB_EINVAL (names the field), JB_ENOMEM.
 */
JB_EXTERN int jb_post_check(const jb_post *post, size_t max_posting);

/**
 * Look a job up by uuid. On success *out is a snapshot the caller frees.
 * Errors: JB_EINVAL (malformed uuid), JB_ENOTFOUND (not on the board),
 * JB_ECORRUPT (its posting does not decode: run `jobboard check`).
 */
JB_EXTERN int jb_job_get(jb_job **out, jb_board *board, const char *uuid);

/**
 * The state of job `uuid`: UNCLAIMED, CLAIMED, or COMPLETE when it is not on
 * the board. Errors: JB_EINVAL (malformed uuid), JB_EIO.
 */
JB_EXTERN int jb_job_get_state(jb_state *out, jb_board *board, const char *uuid);

/** Flags of jb_job_cancel. */
enum {
  JB_CANCEL_FORCE = 1u << 0, /**< cancel a claimed job too */
};
/**
 * Take a job that is not claimed off the board: it is COMPLETE, its
 * history record says JB_END_CANCELLED and its unique key is free. A
 * claimed job is refused (JB_ECLAIMED, naming the owner) unless
 * JB_CANCEL_FORCE: then its holder's next consume, extend or abandon is
 * refused (JB_ENOTFOUND, saying it was cancelled).
 * A job Redis decides (jb_job_remote) is cancelled through Redis first,
 * on a handle attached to it (jb_sync_attach): Redis takes it out of its
 * listings only if it is unclaimed there (or, forced, claimed too), then
 * one local write transaction records the cancel; JB_ECLAIMED when Redis
 * has it claimed, JB_ENOTFOUND when Redis no longer lists it, JB_EOFFLINE
 * when Redis cannot be reached or the handle is not attached (nothing
 * changes).
 * Errors: JB_ENOTFOUND, JB_ECLAIMED, JB_EOFFLINE, JB_EINVAL.
 */
JB_EXTERN int jb_job_cancel(jb_board *board, const char *uuid,
                            unsigned int flags);
/**
 * Make job `uuid`, UNCLAIMED and waiting for its due time (posted with a
 * delay or a not-before time, retried after a delay or the back-off,
 * snoozed), claimable at once: it becomes due now, as a delayed job does
 * when its time comes. It keeps its uuid, priority, sequence (so its
 * place in the listing and in claim-next's order), attempts, options and
 * modified time; jb_job_not_before reads 0 afterwards. Waiters for
 * claimable jobs (claim-next's, jb_board_wait's) are woken as for a job
 * that becomes due. Pauses, caps and rate limits of its name still
 * apply. No change-log event is appended (a job becoming due is none).
 * A job that is claimable already (not delayed, or its claim lapsed) is
 * left as it is: JB_OK, nothing changed. On a board synced with Redis
 * the job is decided here until published (Redis never lists a job that
 * is not due): its replicator publishes it at its next full pass, at the
 * latest at the due time it had.
 * Errors: JB_EINVAL (malformed uuid), JB_ENOTFOUND (not on the board),
 * JB_ECLAIMED (claimed: the message names the owner), JB_EREADONLY,
 * JB_EFULL, JB_EIO.
 */
JB_EXTERN int jb_job_run_now(jb_board *board, const char *uuid);
/** Cancel every job that is not claimed (delayed ones included), a few
 *  hundred per write transaction; the number to `*out` (may be NULL).
 *  On a handle attached to Redis, the unclaimed jobs Redis decides are
 *  then cancelled through Redis one by one (those Redis finds claimed or
 *  gone are left; JB_EOFFLINE stops there, *out counting what was done);
 *  without the hook they are left. */
JB_EXTERN int jb_board_cancel_unclaimed(size_t *out, jb_board *board);

/* -------------------------------------------------------------- iteration */

typedef struct jb_iter jb_iter;

/**
 * Iterate the board's jobs in listing order: priority (highest first), then
 * sequence (oldest first); with JB_ONLY_UNCLAIMED only claimable ones.
 * The iterator streams: it reads a few dozen jobs per short read
 * transaction and remembers its position, so it never loads the board and
 * never holds a snapshot between calls. A job posted during the iteration
 * at a position after the cursor is seen; each job is seen at most once.
 * Errors: JB_EINVAL, JB_ENOMEM.
 */
JB_EXTERN int jb_iter_open(jb_iter **out, jb_board *board, unsigned int flags);

/**
 * Advance. On success *out is the next job, borrowed until the next call to
 * jb_iter_next or jb_iter_close; at the end, JB_OK with *out NULL.
 * Errors: JB_ECORRUPT (a posting does not decode: the message names it;
 * the iterator moves past it, so calling again continues), JB_EIO.
 */
JB_EXTERN int jb_iter_next(const jb_job **out, jb_iter *iter);

/** Free an iterator. NULL is a no-op. */
JB_EXTERN void jb_iter_close(jb_iter *iter);

/** The version of jb_iter_options this header describes. */
#define JB_ITER_OPTIONS_VERSION 1

/** jb_iter_options.where: the jobs to list by where they are (0: all). */
enum {
  JB_ITER_READY = 1u << 0,   /**< unclaimed (posted, abandoned, due) */
  JB_ITER_CLAIMED = 1u << 1, /**< claimed, lapsed claims included (a lapsed
                                  claim's job reads UNCLAIMED) */
  JB_ITER_DELAYED = 1u << 2, /**< not claimable before their due time */
};

/** Room for a cursor as text (jb_iter_cursor), its NUL included. */
#define JB_ITER_CURSOR_MAX 48

/**
 * Where jb_iter_open_opts starts and what it lists. Zero every field but
 * `version` for the whole board from the start (as jb_iter_open).
 */
typedef struct {
  unsigned int version; /**< JB_ITER_OPTIONS_VERSION */
  unsigned int flags;   /**< JB_ONLY_UNCLAIMED or 0 */
  /** Start just after this position (a jb_iter_cursor text, "P-SEQ" for
   *  the job of priority P and sequence SEQ decided on this board); NULL:
   *  from the first job. The iterator seeks there: a deep page costs what
   *  the first one does. */
  const char *after;
  /** Only the jobs of this exact name (NULL: every name). Its ready jobs
   *  are read through the names' index (a seek, then only its jobs); its
   *  claimed and delayed ones by a walk of those indexes. */
  const char *name;
  unsigned int where;   /**< JB_ITER_* bits, 0 for all */
  /** Jobs read per read transaction, 1..64 (0: 64): a caller that wants
   *  a few jobs (a page of 50, the first job) reads no more. */
  unsigned int batch;
} jb_iter_options;

/**
 * jb_iter_open with a start position and filters (jb_iter_options). Every
 * batch is still one short read transaction; a sparse filter (a name with
 * few claimed jobs among many) looks at a bounded number of index entries
 * per transaction. Errors: JB_EINVAL (NULL argument, unknown version,
 * flags or where bits, a malformed cursor, a name longer than
 * JB_NAME_MAX), JB_ENOMEM.
 */
JB_EXTERN int jb_iter_open_opts(jb_iter **out, jb_board *board,
                                const jb_iter_options *opts);

/**
 * The position just after the last job jb_iter_next handed out, as text
 * for jb_iter_options.after (into `out`, JB_ITER_CURSOR_MAX bytes; the
 * empty string before the first job). Opening at it continues the listing
 * where this iterator stands. Errors: JB_EINVAL (NULL argument).
 */
JB_EXTERN int jb_iter_cursor(const jb_iter *iter,
                             char out[JB_ITER_CURSOR_MAX]);

/* =================================================== claims: jb_claims(3) */

/*
 * Claims that end by themselves.
 *
 * A claim may carry a lease (it lapses lease_ms after the claim, unless
 * extended) and may be bound to a process (it lapses when that process is
 * gone: exited, killed, or its pid reused; like a ZooKeeper ephemeral
 * node, with no expiry to wait for). A lapsed claim makes the job
 * UNCLAIMED for every reader at once and claim-next hands it out again;
 * the next write that comes across it returns it to the ready index
 * (claim-next does so for a bounded number of lapsed claims each time).
 *
 * Lease expiry is kept on CLOCK_BOOTTIME: it means the same for every
 * process of the host, survives a restart of any process, is not moved by
 * changes of the wall clock (NTP, an RTC set at boot on a device without
 * a battery), and counts time spent suspended. Its values belong to one
 * boot: the board records the boot id, and leases and process-bound claims
 * of an earlier boot lapse when the board is first opened after a reboot.
 *
 * Processes are named by pid and start time as /proc shows them, so every
 * process that binds claims or registers entities on a board must see the
 * same /proc: one PID namespace (not workers in separate containers
 * sharing the board directory). Where /proc hides other users' processes
 * (hidepid), their liveness is checked with kill(pid, 0) and a reused pid
 * cannot be told apart.
 *
 * Every successful claim returns a fencing token, strictly greater than
 * every token handed out before on the board (by any process, across
 * reopens). abandon, consume, trash and extend accept it: a holder whose
 * token is not the current claim's is refused (JB_ENOTOWNER) even under
 * the right owner name, so a worker whose lease lapsed and whose job was
 * claimed again under the same name cannot consume it.
 */

/** Flags of jb_claim_options. */
enum {
  /** Bind the claim to the calling process: it lapses when the process is
   *  gone. */
  JB_CLAIM_BIND_PROCESS = 1u << 0,
  /** With names (version 3): take from the first name, in the order
   *  given, that has a claimable job, rather than in listing order across
   *  them (strict queue order, as Sidekiq's); a prefix's names in no
   *  particular order among themselves. */
  JB_CLAIM_NAMES_IN_ORDER = 1u << 1,
};

/** Wait without limit (jb_claim_options.wait_ms and every timeout). */
#define JB_WAIT_FOREVER ((int64_t)-1)

/** Options of a claim. Start from JB_CLAIM_OPTIONS_INIT; NULL where a
 *  function takes them means every default. */
typedef struct {
  unsigned int version; /**< JB_CLAIM_OPTIONS_VERSION (1 has the fields up
                             to lease_ms only) */
  unsigned int flags;   /**< JB_CLAIM_* */
  int64_t lease_ms;     /**< > 0: the claim lapses after this long; 0: no
                             expiry */
  /* Version 2. */
  int64_t wait_ms;      /**< jb_claim_next and jb_claim_next_many: when
                             nothing is claimable, wait up to this long
                             for a job (JB_WAIT_FOREVER: without limit);
                             0: do not wait. jb_claim refuses anything but
                             0. */
  /* Version 3. */
  const char *const *names; /**< claim-next (jb_claim_next,
                             jb_claim_next_many,
                             jb_consume_and_claim_next): take only jobs of
                             these n_names names, in listing order across
                             them; a name ending in '*' is a prefix
                             ("images.*": every name starting with
                             "images."; "*": every name). NULL or n_names
                             0: every name. jb_claim refuses names. */
  size_t n_names;            /**< entries in names (at most
                             JB_CLAIM_NAMES_MAX) */
} jb_claim_options;

#define JB_CLAIM_OPTIONS_VERSION 3
#define JB_CLAIM_OPTIONS_INIT { JB_CLAIM_OPTIONS_VERSION, 0, 0, 0, NULL, 0 }
/** The most names one claim-next may choose. */
#define JB_CLAIM_NAMES_MAX 256

/** The longest lease: 30 days. */
#define JB_LEASE_MAX_MS ((int64_t)30 * 24 * 3600 * 1000)

/**
 * Claim the job `uuid` for `who` (1..JB_WHO_MAX bytes of UTF-8), with
 * `opts` (NULL: no lease, not bound), writing the claim's fencing token to
 * `*token_out` (may be NULL). A same-owner re-claim refreshes the lease
 * (with opts' lease, or the claim's own) and the modified time, writes the
 * current token, and still fails with JB_ECLAIMED naming the owner.
 * Errors: JB_ENOTFOUND (not on the board), JB_ECLAIMED (already claimed:
 * the message names the owner, also when it is `who` itself), JB_ENOTDUE
 * (a delayed job before its due time), JB_EINVAL (a bad `who`, a lease
 * <= 0 when given or longer than JB_LEASE_MAX_MS, unknown flags, a
 * wait_ms other than 0).
 */
JB_EXTERN int jb_claim(uint64_t *token_out, jb_board *board, const char *uuid,
                       const char *who, const jb_claim_options *opts);

/**
 * Claim the first claimable job in listing order (highest priority, then
 * lowest sequence) for `who`, in one transaction that never looks at
 * claimed jobs, with `opts` (NULL: no lease, not bound, no wait). Writes
 * its uuid to `uuid_out` (may be NULL), its fencing token to `*token_out`
 * (may be NULL) and, when `job_out` is not NULL, a snapshot of the claimed
 * job the caller frees.
 *
 * Jobs whose claims lapsed are claimable. A lapsed lease is seen at once;
 * a process-bound claim whose holder is gone is seen by a handle's sweep
 * of the holders' processes (/proc), which each handle makes at most every
 * 50 ms of the boot clock, or at once when no other job is ready: within
 * 50 ms of a holder's death a claim-next may take a job listed after the
 * one it held (that one is claimable, and claimed by the next sweep).
 *
 * With opts->wait_ms other than 0 it waits, up to wait_ms
 * (JB_WAIT_FOREVER: without limit), until it can claim. Every waiter tries
 * to claim after a wake-up: of many waiters and one new job, exactly one
 * gets it and the others sleep again.
 *
 * Errors: JB_ENOTFOUND (nothing claimable, not waiting), JB_ETIMEDOUT
 * (waited wait_ms, nothing claimable), JB_EINTERRUPTED (the wait was ended
 * by jb_board_interrupt), JB_EINVAL (as jb_claim), JB_ECORRUPT (only when
 * job_out is asked for and the posting does not decode; the claim stands
 * and uuid_out and token_out are written).
 */
JB_EXTERN int jb_claim_next(char uuid_out[JB_UUID_STRLEN], jb_job **job_out,
                            uint64_t *token_out, jb_board *board,
                            const char *who, const jb_claim_options *opts);

/**
 * The owner extends its claim's lease: it now lapses `lease_ms` from now
 * (a claim without a lease gets one). `token` 0 is not checked.
 * Errors: JB_ENOTFOUND (no such job, not claimed, or its claim lapsed),
 * JB_ENOTOWNER (another owner, or another claim's token: the message
 * names both), JB_EINVAL (lease <= 0 or too long).
 */
JB_EXTERN int jb_extend(jb_board *board, const char *uuid, const char *who,
                        uint64_t token, int64_t lease_ms);

/** The longest progress message in bytes (jb_progress). */
#define JB_PROGRESS_MESSAGE_MAX 200

/**
 * The owner reports how far it has got with its claimed job: `percent`
 * (0..100; kept in tenths, rounded to the nearest) and `message` (NULL or
 * "" for none; at most JB_PROGRESS_MESSAGE_MAX bytes of UTF-8 without
 * control characters, so it prints on one line). The report replaces the
 * previous one (jb_job_progress reads it) and appends a
 * JB_EVENT_PROGRESS event to the change log (jb_log_progress reads its
 * figures). `token` 0 is not checked. One write transaction that changes
 * the job's `jobx` record and the log only: the claim is not renewed
 * (use jb_extend for that).
 * The report outlives its claim: a claim that lapses (its holder killed)
 * leaves its last report on the job, for readers to see how far it got,
 * until the job is claimed again (a new claim starts with none: the
 * claim clears it) or leaves the board (it goes with the job, and is not
 * kept in the history or the dead letters).
 * A job Redis decides is checked against this board's record of its
 * claim, without asking Redis (Redis holds no progress: nothing is
 * published).
 * Errors: JB_ENOTFOUND (no such job, not claimed, or its claim lapsed),
 * JB_ENOTOWNER (another owner, or another claim's token: the message
 * names both), JB_EINVAL (a percent that is not a number in 0..100, a
 * message too long, not UTF-8 or with a control character; nothing
 * written), JB_EFULL, JB_EIO.
 */
JB_EXTERN int jb_progress(jb_board *board, const char *uuid, const char *who,
                          uint64_t token, double percent, const char *message);

/**
 * The owner `who` gives its claim back for `delay_ms` (0..JB_DELAY_MAX_MS)
 * without spending an attempt: the job is UNCLAIMED again, not claimable
 * before now + delay_ms (a delayed job, as jb_retry's), its attempts
 * unchanged and its snoozes (jb_job_snoozes) one more; a SNOOZED event
 * is appended to the change log. `token` 0 is not checked.
 * A job posted with max_snoozes that snoozed that many times is refused
 * (JB_EINVAL, naming the limit; the claim stands): its holder consumes,
 * retries or abandons it.
 * A job Redis decides keeps no due time: refused (JB_EINVAL), nothing
 * changed.
 * Errors: as jb_abandon; JB_EINVAL (a delay out of range, the limit).
 */
JB_EXTERN int jb_snooze(jb_board *board, const char *uuid, const char *who,
                        uint64_t token, int64_t delay_ms);

/** What jb_job_expires_in found. */
typedef enum {
  JB_EXPIRY_NOT_CLAIMED = 0, /**< not claimed (or not on the board) */
  JB_EXPIRY_NONE = 1,        /**< claimed, with no expiry */
  JB_EXPIRY_AT = 2,          /**< claimed; lapses in *ms_out milliseconds */
} jb_expiry;

/**
 * How long the claim on job `uuid` has left. `*ms_out` is set (>= 0) only
 * for JB_EXPIRY_AT. A process-bound claim without a lease is
 * JB_EXPIRY_NONE while its holder runs. Errors: JB_EINVAL, JB_EIO.
 */
JB_EXTERN int jb_job_expires_in(jb_expiry *out, int64_t *ms_out,
                                jb_board *board, const char *uuid);

/**
 * The owner of job `uuid`, copied to `out` (JB_WHO_MAX + 1 bytes); the
 * empty string when the job is unclaimed or not on the board.
 * Errors: JB_EINVAL (malformed uuid), JB_EIO.
 */
JB_EXTERN int jb_job_find_owner(char out[JB_WHO_MAX + 1], jb_board *board,
                      const char *uuid);

/**
 * The owner `who` gives its claim up: the job becomes claimable again,
 * and its attempts count one more. `token` is the claim's fencing token;
 * 0 is not checked (any claim of `who`).
 * Errors: JB_ENOTFOUND (no such job, or it is not claimed: no owner known;
 * a claim that lapsed has none; "it was cancelled" when it was),
 * JB_ENOTOWNER (claimed by someone else, or another claim's token: the
 * message names the owner and both tokens), JB_EINVAL.
 */
JB_EXTERN int jb_abandon(jb_board *board, const char *uuid, const char *who,
                         uint64_t token);

/** What the owner says of a job it consumes. */
typedef enum {
  JB_OUTCOME_SUCCESS = 0,
  JB_OUTCOME_FAILURE = 1,
} jb_outcome;

/** How a job is consumed. Start from JB_CONSUME_OPTIONS_INIT; NULL where
 *  a function takes them: JB_OUTCOME_SUCCESS and no result. */
typedef struct {
  unsigned int version; /**< JB_CONSUME_OPTIONS_VERSION */
  jb_outcome outcome;   /**< JB_OUTCOME_SUCCESS or JB_OUTCOME_FAILURE */
  const void *result;   /**< one complete msgpack map of at most the
                             board's max_posting bytes; NULL with length 0:
                             no result */
  size_t result_len;
} jb_consume_options;
#define JB_CONSUME_OPTIONS_VERSION 1
#define JB_CONSUME_OPTIONS_INIT                                                \
  { JB_CONSUME_OPTIONS_VERSION, JB_OUTCOME_SUCCESS, NULL, 0 }

/**
 * The owner `who` completes job `uuid`: it leaves the board (state
 * COMPLETE) and its history record says JB_END_CONSUMED
 * (JB_OUTCOME_SUCCESS) or JB_END_FAILED (JB_OUTCOME_FAILURE) and keeps
 * the result (none: the record says has_result false, where an explicit
 * empty map 0x80 says true). `token` is the claim's fencing token: the
 * call is refused (JB_ENOTOWNER, naming both tokens) unless it is the
 * current claim's; 0 is not checked. `opts` NULL: success, no result.
 * Errors: as jb_abandon; JB_EINVAL also for an unknown outcome or a
 * result that is not one msgpack map or is too large (names the field;
 * the job stays claimed).
 */
JB_EXTERN int jb_consume(jb_board *board, const char *uuid, const char *who,
                         uint64_t token, const jb_consume_options *opts);

/**
 * The owner removes a bad job: it leaves the board and its posting is kept
 * in the board's trash area (the dead letters, cause JB_DEAD_TRASHED) for
 * inspection; its history record says JB_END_TRASHED. `token` 0 is not
 * checked. Errors: as jb_abandon.
 */
JB_EXTERN int jb_trash(jb_board *board, const char *uuid, const char *who,
                       uint64_t token);

/* ---------------------------------------------------- the worker's path */

/*
 * Fewer commits per job. A commit costs about the same whether it carries
 * one change or many (every page it dirties is copied and written once,
 * and in durability full flushed), so a worker that ends a job and claims
 * the next in one commit, or claims or consumes several jobs at once,
 * pays for fewer commits: the calls below do in ONE write transaction
 * what their single forms do in several, with the same rules, events,
 * history records, fencing tokens and wake-ups (each commit wakes the
 * board's waiters once).
 *
 * Jobs Redis decides (a board shared through Redis: the authority rule)
 * keep their rule: Redis decides first, then the board records it. A
 * local transaction cannot include a Redis decision, so these calls fall
 * back to the separate operations for such a job: they commit what they
 * did locally, then claim or consume that job through Redis (as
 * jb_claim_next and jb_consume do, in a transaction of
 * its own), and go on. Each entry says where.
 */

/** The most jobs one batch call takes (one write transaction stays
 *  short: other writers wait for it). */
#define JB_BATCH_MAX 4096

/**
 * Claim up to `max` (1..JB_BATCH_MAX) claimable jobs for `who` in one write
 * transaction: the jobs jb_claim_next would claim one after the
 * other, in that order (highest priority, then oldest; jobs whose claims
 * lapsed are claimable, and lapsed claims are returned to the board as
 * claim-next does), each with its own CLAIMED event and its own fencing
 * token, strictly increasing in claim order. `opts` (NULL: plain claims)
 * apply to every claim. When the board holds fewer claimable jobs than
 * `max`, those there are claimed: `*n_out` says how many (1..max), and
 * uuids_out[i], tokens_out[i] and jobs_out[i] (each array may be NULL;
 * else it has room for `max`) describe claim i < *n_out. jobs_out gets
 * snapshots the caller frees with jb_job_free (slots from *n_out on are
 * set to NULL).
 * Redis-decided jobs: without Redis (no hook) they are skipped, as
 * claim-next skips them. With it, the transaction ends at the first one
 * met (its claims so far are committed), that job and the Redis-decided
 * ones right after it (up to the next job decided here, and to `max`)
 * are claimed through Redis in one round trip, each decided by Redis on
 * its own (passed over if Redis refuses; Redis-decided jobs are skipped
 * from then on when Redis is away: claims whose reply was lost are not
 * recorded, see jb_sync_attach), those granted recorded in one
 * transaction, and the walk goes on after them in a new transaction: the
 * jobs still come in claim-next order. An error
 * after some claims were committed ends the call with JB_OK and those
 * claims (the next call meets the error again).
 * With opts->wait_ms other than 0, a call that finds nothing claimable
 * waits as jb_claim_next does and then claims what there is.
 * Errors: JB_ENOTFOUND (nothing claimable, not waiting; *n_out 0),
 * JB_ETIMEDOUT and JB_EINTERRUPTED (waiting, as jb_claim_next), JB_EINVAL (NULL
 * n_out or board, `max` 0 or above JB_BATCH_MAX, a bad `who` or options,
 * as jb_claim_next), JB_ECORRUPT (jobs_out asked for and a
 * posting does not decode: every claim stands and *n_out counts them;
 * that job's jobs_out[i] is NULL, and the message names the first such
 * job), JB_EFULL, JB_EIO, JB_ENOMEM.
 */
JB_EXTERN int jb_claim_next_many(size_t *n_out,
                                 char (*uuids_out)[JB_UUID_STRLEN],
                                 uint64_t *tokens_out, jb_job **jobs_out,
                                 jb_board *board, const char *who,
                                 const jb_claim_options *opts, size_t max);

/**
 * jb_consume and then jb_claim_next for the same owner, in one write
 * transaction: the owner `who` completes job `uuid` (token and `done`
 * exactly as jb_consume takes them) and claims the next claimable job with
 * `next` (NULL: a plain claim; its wait_ms is not used: nothing waits
 * inside a write transaction).
 * If the consume fails, nothing is claimed, nothing changes, and the
 * consume's error is returned (as jb_consume returns it).
 * On JB_OK the job was consumed, and:
 *  - a job was claimed: its uuid is in `next_uuid_out`, its token in
 *    `*next_token_out` and, when `next_job_out` is not NULL, a snapshot
 *    the caller frees in `*next_job_out`;
 *  - nothing was claimed: `next_uuid_out` is the empty string (""),
 *    `*next_token_out` 0 and `*next_job_out` NULL. Nothing was claimable;
 *    or, only on the fallback below, the separate claim failed (the
 *    caller's next jb_claim_next meets that error again).
 * next_uuid_out, next_job_out and next_token_out may each be NULL;
 * next_uuid_out may be the buffer `uuid` points to (`uuid` is read
 * first), so a loop can pass one buffer for both.
 * Redis-decided jobs: a Redis-decided `uuid` is consumed through Redis
 * first, as jb_consume does, and the next job is then claimed by
 * jb_claim_next: two transactions. The same happens when the next job in
 * claim-next order is Redis-decided and the handle is connected to Redis:
 * the consume commits alone, then that claim goes through Redis. A handle
 * with no Redis skips such jobs, as claim-next does.
 * Errors: those of jb_consume (JB_ENOTFOUND, JB_ENOTOWNER, JB_EINVAL,
 * JB_EOFFLINE, ...: nothing consumed, nothing claimed); JB_EINVAL also
 * for bad claim options; JB_ECORRUPT (next_job_out asked for and the next
 * job's posting does not decode: the consume and the claim stand,
 * next_uuid_out and *next_token_out are set: trash it).
 */
JB_EXTERN int jb_consume_and_claim_next(char next_uuid_out[JB_UUID_STRLEN],
                                        jb_job **next_job_out,
                                        uint64_t *next_token_out,
                                        jb_board *board, const char *uuid,
                                        const char *who, uint64_t token,
                                        const jb_consume_options *done,
                                        const jb_claim_options *next);

/**
 * One completion of jb_consume_many: what jb_consume takes. The layout is fixed (arrays of it are passed): later fields
 * would come with a new function.
 */
typedef struct {
  const char *uuid;   /**< the job */
  const char *who;    /**< its owner */
  uint64_t token;     /**< the claim's fencing token; 0: not checked */
  jb_outcome outcome; /**< JB_OUTCOME_SUCCESS or JB_OUTCOME_FAILURE */
  const void *result; /**< one msgpack map, or NULL with result_len 0 */
  size_t result_len;
} jb_consume_item;

/** Called once per failed item of jb_consume_many, in item order,
 *  after the commit: its index, its status and its message (borrowed for
 *  the call). */
typedef void (*jb_item_cb)(size_t index, int status, const char *message,
                           void *payload);

/**
 * Consume `n` (1..JB_BATCH_MAX) jobs in one write transaction, each as
 * jb_consume would. Every item gets its own status in
 * status_out[i] (n ints): JB_OK, or the error jb_consume would
 * have returned for it. A failing item fails alone and changes nothing:
 * an invalid one (a malformed uuid, an empty owner, an unknown outcome, a
 * result that is not one msgpack map or is too large: checked first,
 * before the transaction, JB_EINVAL naming "item I") or one refused
 * (not on the board, not claimed, another owner or token: JB_ENOTFOUND,
 * JB_ENOTOWNER); the others commit. Items are applied in order, so a uuid
 * given twice is consumed by the first and not found by the second.
 * `cb` (may be NULL) is called for each failed item with its message;
 * jb_errmsg() then holds the first failed item's message.
 * Redis-decided jobs among the items are consumed through Redis after the
 * transaction, one by one, as jb_consume does (their status
 * is that call's: JB_EOFFLINE when Redis is away).
 * Returns JB_OK when the transaction committed, whatever the items'
 * statuses (read them); the call fails as a whole only when the
 * transaction cannot commit (then nothing changed, status_out is not
 * meaningful and `cb` is not called).
 * Errors: JB_EINVAL (NULL status_out, board or items, `n` 0 or above
 * JB_BATCH_MAX), JB_EFULL, JB_EIO, JB_ENOMEM, JB_ECORRUPT.
 */
JB_EXTERN int jb_consume_many(int *status_out, jb_board *board,
                              const jb_consume_item *items, size_t n,
                              jb_item_cb cb, void *payload);

/* ===================================================== retry: jb_retry(3) */

/*
 * Retries and dead letters.
 *
 * A job counts its attempts: claims that ended without a completion
 * (abandon, retry, a lapsed lease, a bound claim's holder gone, a time
 * limit reached). When a job's attempts reach its maximum (the one it was
 * posted with, else the board's retry policy; 0: no maximum) it goes to
 * the dead letters instead of back to the board, with the reason of the
 * last attempt. jb_abandon and lapses give the job back at once;
 * jb_retry gives it back after a delay, its own or the back-off's:
 * backoff * 2^(attempts - 1), at most backoff_max, with +-20 % jitter
 * (the job's values, else the board's policy).
 *
 * The dead letters are the board's trash area: jobs trashed by their
 * owner, those that used up their attempts, and those retried with
 * JB_RETRY_DEAD. They can be listed, shown, put back (requeued) and
 * purged.
 */

/** The board's retry policy (stored in the board; every process uses it). */
typedef struct {
  unsigned int version;   /**< JB_RETRY_POLICY_VERSION */
  uint32_t max_attempts;  /**< 0: no maximum (the default) */
  int64_t backoff_ms;     /**< the first retry's back-off; default 1,000 */
  int64_t backoff_max_ms; /**< the longest; default 3,600,000 (an hour) */
} jb_retry_policy;
#define JB_RETRY_POLICY_VERSION 1
#define JB_RETRY_POLICY_INIT { JB_RETRY_POLICY_VERSION, 0, 1000, 3600000 }

/** Read the board's retry policy (the defaults when none was set). */
JB_EXTERN int jb_board_get_retry_policy(jb_retry_policy *out, jb_board *board);
/** Set it: backoff_ms 1..JB_DELAY_MAX_MS, backoff_max_ms >= backoff_ms.
 *  Errors: JB_EINVAL (names the field), JB_EIO, JB_EFULL. */
JB_EXTERN int jb_board_set_retry_policy(jb_board *board,
                                        const jb_retry_policy *policy);

/** Flags of jb_retry_options. */
enum {
  JB_RETRY_BACKOFF = 1u << 0, /**< the delay from the back-off policy */
  JB_RETRY_DEAD = 1u << 1,    /**< to the dead letters now */
};
/** How a job is retried. Start from JB_RETRY_OPTIONS_INIT; NULL where a
 *  function takes them: at once, no reason, any token. */
typedef struct {
  unsigned int version; /**< JB_RETRY_OPTIONS_VERSION */
  unsigned int flags;   /**< JB_RETRY_* */
  uint64_t token;       /**< the claim's fencing token; 0: not checked */
  const char *reason;   /**< why (kept with the job, up to JB_REASON_MAX
                             bytes of UTF-8); NULL: none */
  int64_t delay_ms;     /**< back on the board after this long (without
                             JB_RETRY_BACKOFF); 0: at once */
} jb_retry_options;
#define JB_RETRY_OPTIONS_VERSION 1
#define JB_RETRY_OPTIONS_INIT { JB_RETRY_OPTIONS_VERSION, 0, 0, NULL, 0 }
/** The longest reason kept, in bytes. */
#define JB_REASON_MAX 1024

/** What jb_retry did. */
typedef struct {
  bool dead;         /**< the job went to the dead letters */
  int64_t due_us;    /**< when it is claimable again (0: at once, or dead) */
  uint32_t attempts; /**< its attempts now */
} jb_retry_result;

/**
 * The owner gives the job back to be tried again: its claim ends, its
 * attempts count one more, and it is claimable again after the delay
 * (opts NULL: at once), or goes to the dead letters (JB_RETRY_DEAD, or
 * its attempts reached the maximum). What happened is written to `*out`
 * (may be NULL).
 * A job Redis decides (see jobboard_sync.h) keeps no delay: with
 * JB_RETRY_BACKOFF it is claimable again at once (out->due_us 0), and an
 * explicit delay_ms is refused (JB_EINVAL), nothing changed.
 * Errors: as jb_abandon; JB_EINVAL (a bad option, named).
 */
JB_EXTERN int jb_retry(jb_retry_result *out, jb_board *board,
                       const char *uuid, const char *who,
                       const jb_retry_options *opts);

/** Why a job is in the dead letters. */
typedef enum {
  JB_DEAD_TRASHED = 0,  /**< its owner trashed it (jb_trash) */
  JB_DEAD_ATTEMPTS = 1, /**< its attempts reached the maximum */
  JB_DEAD_BURIED = 2,   /**< retried with JB_RETRY_DEAD, or its
                             publication refused (its unique key is held
                             in Redis by another live job) */
  JB_DEAD_EXPIRED = 3,  /**< not claimed by its deadline to start, posted
                             with JB_POST_EXPIRES_DEAD */
} jb_dead_cause;

/** One dead letter, copied out of the board (jb_dead_free). */
typedef struct {
  char uuid[JB_UUID_STRLEN];
  jb_dead_cause cause;
  const char *name;      /**< NULL when the posting does not decode */
  jb_priority priority;
  uint64_t sequence;
  const char *owner;     /**< the owner of its last claim; NULL if none */
  uint32_t attempts;
  uint32_t max_attempts; /**< as posted (0: the board's) */
  const char *reason;    /**< the last attempt's reason; NULL if none */
  const char *unique_key; /**< the key it held (freed now), or NULL */
  int64_t posted_us;     /**< 0 when not known (a record of schema 7) */
  int64_t dead_us;       /**< when it left the board */
  const void *details;   /**< one msgpack map; NULL if it does not decode */
  size_t details_len;
  const void *posting;   /**< the posting as it was stored */
  size_t posting_len;
} jb_dead_letter;

JB_EXTERN void jb_dead_free(jb_dead_letter *letter);
/** The dead letter of `uuid`. Errors: JB_ENOTFOUND, JB_EINVAL. */
JB_EXTERN int jb_dead_get(jb_dead_letter **out, jb_board *board,
                          const char *uuid);
/** Number of dead letters. */
JB_EXTERN int jb_dead_count(size_t *out, jb_board *board);
/** Called for each dead letter (borrowed for the call); non-zero stops
 *  the walk and is returned. */
typedef int (*jb_dead_cb)(const jb_dead_letter *letter, void *payload);
/** Walk the dead letters oldest first (by the time they died; a few
 *  dozen per read transaction, so a long list holds no writer up). */
JB_EXTERN int jb_dead_foreach(jb_board *board, jb_dead_cb cb, void *payload);

/** Flags of jb_dead_requeue. */
enum {
  JB_REQUEUE_KEEP_ATTEMPTS = 1u << 0, /**< keep its attempts (else 0) */
};
/**
 * Put a dead letter back on the board, claimable at once, under the same
 * uuid, as the newest job of its priority (a new sequence). Its unique
 * key is held again (JB_EEXISTS when another live job took it: the
 * letter stays). The letter of a job Redis decided (published or
 * mirrored) is refused (JB_EINVAL): Redis keeps its uuid's publication
 * mark, and would drop it at its next publication as the job completed;
 * jb_dead_repost posts such a letter again under a new uuid.
 * Errors: JB_ENOTFOUND, JB_EEXISTS, JB_EINVAL.
 */
JB_EXTERN int jb_dead_requeue(jb_board *board, const char *uuid,
                              unsigned int flags);
/**
 * Post a dead letter again as a NEW job: under a new uuid (its text to
 * `new_uuid`, may be NULL), with the letter's posting (name, details,
 * priority, book) and options, claimable at once as the newest job of its
 * priority, its attempts from 0 unless JB_REQUEUE_KEEP_ATTEMPTS. The
 * letter leaves the dead letters in the same write transaction: a crash
 * leaves either the new job or the letter, never both. Its unique key is
 * held again by the new job (JB_EEXISTS when another live job took it:
 * the letter stays). Unlike jb_dead_requeue it takes the letter of a job
 * Redis decided: the new uuid was never published, so on a synced board
 * the replicator publishes it as any job posted here. The old uuid's
 * history record stays as it ended.
 * Errors: JB_ENOTFOUND, JB_EEXISTS, JB_EINVAL, JB_EREADONLY, JB_EIO.
 */
JB_EXTERN int jb_dead_repost(jb_board *board, const char *uuid,
                             unsigned int flags,
                             char new_uuid[JB_UUID_STRLEN]);
/** Delete the dead letters that died before `before_us` (INT64_MAX: all);
 *  the number deleted to `*out` (may be NULL). */
JB_EXTERN int jb_dead_purge(size_t *out, jb_board *board, int64_t before_us);
/**
 * Delete the dead letter of `uuid` (one write transaction; its entry in
 * the index by age goes with it). Only this board's letter: a job Redis
 * decided keeps what Redis holds of it, as with jb_dead_purge. The job's
 * history record stays.
 * Errors: JB_EINVAL (malformed uuid), JB_ENOTFOUND (no dead letter of
 * that uuid), JB_EREADONLY, JB_EIO.
 */
JB_EXTERN int jb_dead_remove(jb_board *board, const char *uuid);

/* ================================================ names as queues: jb_queues(3) */

/*
 * A job's name is its queue. Claim-next takes the jobs of chosen names
 * (jb_claim_options.names: exact names and prefixes such as "images.*"),
 * in listing order across them, through an index of the ready jobs by
 * name: a claim looks at one index entry per name chosen, however many
 * jobs of other names the board holds.
 *
 * A name, or the whole board, can be paused: its jobs stay on the board
 * and are listed, but no claim-next (of any process, with or without
 * names) takes them until resumed; claims already held are not touched,
 * and jb_claim of a paused job by uuid still works (an operator's
 * deliberate act). The pause is stored in the board: it survives restarts
 * and holds for every process. Waiters sleep through a pause and wake at
 * the resume.
 */

/** Does `name` match one of names[0..n) (an exact name, or a prefix
 *  ending in '*')? The rule claim-next applies, for filters of one's own. */
JB_EXTERN int jb_name_matches(const char *const *names, size_t n,
                              const char *name);

/**
 * Pause the name `name` (a job of that name must have been posted once),
 * or with `name` NULL the whole board. Pausing what is paused changes
 * nothing. Errors: JB_ENOTFOUND (no job of that name was ever posted),
 * JB_EINVAL (NULL handle, an empty name, one longer than JB_NAME_MAX or
 * not UTF-8, a prefix: pauses are by exact name), JB_EREADONLY.
 */
JB_EXTERN int jb_pause(jb_board *board, const char *name);
/** Resume what jb_pause paused (the same arguments and errors). */
JB_EXTERN int jb_resume(jb_board *board, const char *name);

/**
 * Cap the jobs of the name `name` claimed at once, across every process of
 * the board, at `max_claims` (0: no cap). The cap is decided in each
 * claim's own transaction, so no race exceeds it: claim-next passes the
 * name's jobs over while it holds max_claims claims (a worker waiting for
 * them wakes when one ends), and a claim by uuid of one is refused
 * (JB_ENOTDUE, naming the cap). A claim that lapses (lease, holder process
 * gone) frees its slot when a claim-next or a claim meets it. Setting a
 * cap counts the claims the name holds now; lowering it below them takes
 * no claim back. A claim Redis decides (on a synced board) is checked
 * before Redis is asked when this board's claim-next takes it; taskflow's
 * own clients know no cap.
 *
 * A cap per key: `name` ending in '*' (such as "resize.*") caps EACH name
 * that starts with the prefix on its own at max_claims, those posted
 * later included (0: no more). A producer puts the key in the name
 * ("resize.customer42"), workers take the prefix (claim-next's names
 * "resize.*"), and no customer holds more than max_claims claims at once
 * while the others go on. It is not a cap of all those names together. A
 * name's own cap (set by its exact name) beats its prefix's, and removing
 * it (0) brings the prefix's back; the longest capped prefix of a name
 * wins. Setting one counts the claims of each name it changes (a walk of
 * the claims per name). At most 256 prefixes are capped at once.
 * Errors: as jb_pause (no NULL name: a cap is a name's or a prefix's).
 */
JB_EXTERN int jb_set_cap(jb_board *board, const char *name,
                         uint32_t max_claims);

/**
 * Call `visit` with every prefix capped for each name (jb_set_cap of
 * "prefix*"): the prefix without its '*' (NUL-terminated, valid during
 * the call) and the cap, in the order they were set. A non-zero return of
 * visit stops the walk and is returned. Errors: JB_EINVAL (NULL handle or
 * visit), JB_ENOMEM.
 */
JB_EXTERN int jb_cap_prefixes(jb_board *board,
                              int (*visit)(const char *prefix,
                                           uint32_t max_claims, void *arg),
                              void *arg);
/** The longest period of a rate limit, milliseconds (366 days). */
#define JB_RATE_PERIOD_MAX_MS (366ull * 24 * 3600 * 1000)

/**
 * Limit the claims of jobs of the name `name`, across every process of the
 * board, to `count` per `period_ms` milliseconds (count 0: no limit; the
 * period is then not read). The limit is a token bucket (GCRA): `count`
 * claims may go at once, then one every period_ms / count. It is decided
 * in each claim's own transaction, so no race exceeds it: claim-next
 * passes the name's jobs over while it has no token (a worker waiting for
 * them wakes when the next token is due, and not before), a claim by uuid
 * of one is refused (JB_ENOTDUE, naming the limit), and every claim of the
 * name made on this board spends a token (claim-next, jb_claim_next_many,
 * jb_consume_and_claim_next, jb_claim). A limit set or changed starts
 * with its tokens full. Claims of Redis-decided jobs made on another host and
 * mirrored here spend none. The tokens follow the wall clock; a clock set
 * back holds the name back for at most a period more.
 * Errors: as jb_set_cap, and JB_EINVAL for a period of 0 or above
 * JB_RATE_PERIOD_MAX_MS, or shorter than `count` microseconds (less than
 * one microsecond a claim).
 *
 * A rate limit per key: `name` ending in '*' (such as "api.*") limits
 * EACH name that starts with the prefix on its own to `count` claims per
 * period_ms, those posted later included (count 0: no more). A producer
 * puts the key in the name ("api.customer42"), workers take the prefix,
 * and no customer's jobs are claimed more often than that while the
 * others go on; it is not a limit of all those names together. A name's
 * own limit (set by its exact name) beats its prefix's, and removing it
 * (count 0) brings the prefix's back, its tokens full; the longest
 * rate-limited prefix of a name wins. A name given a prefix's limit
 * starts with its tokens full; one whose prefix's limit is set again
 * unchanged keeps its bucket. At most 256 prefixes are rate-limited at
 * once.
 */
JB_EXTERN int jb_set_rate(jb_board *board, const char *name, uint32_t count,
                          uint64_t period_ms);

/**
 * Call `visit` with every prefix rate-limited for each name (jb_set_rate
 * of "prefix*"): the prefix without its '*' (NUL-terminated, valid during
 * the call), the count and the period, in the order they were set. A
 * non-zero return of visit stops the walk and is returned. Errors:
 * JB_EINVAL (NULL handle or visit), JB_ENOMEM.
 */
JB_EXTERN int jb_rate_prefixes(jb_board *board,
                               int (*visit)(const char *prefix,
                                            uint32_t count,
                                            uint64_t period_ms, void *arg),
                               void *arg);

/** One name seen on the board (jb_queues_foreach). */
typedef struct {
  const char *name;   /**< NUL-terminated, valid during the callback */
  int paused;         /**< 1 while paused */
  int64_t changed_us; /**< when its pause or cap last changed (0: never) */
  size_t ready;       /**< its jobs claimable or paused now (not delayed,
                           not claimed) */
  uint32_t cap;       /**< its cap of claims at once (0: none) */
  uint32_t held;      /**< with a cap: its claims now */
  int cap_each;       /**< 1 when the cap is its prefix's (jb_set_cap of
                           "prefix*"), 0 when its own or none */
  uint32_t rate;      /**< its rate limit: claims per period_ms (0: none) */
  uint64_t period_ms; /**< with a rate limit: its period */
  int64_t next_token_us; /**< with a rate limit: when its next claim may go
                              (wall clock, microseconds; at or before now:
                              it has a token now) */
  int rate_each;      /**< 1 when the rate limit is its prefix's
                           (jb_set_rate of "prefix*"), 0 when its own or
                           none */
} jb_queue_info;

/**
 * Call `visit` for every name a job was ever posted with, in no particular
 * order, with its pause and its ready jobs (counted from the index: the
 * time grows with the ready jobs), in one read transaction. A non-zero
 * return of visit stops the walk and is returned. `*board_paused` (may be
 * NULL) says whether the whole board is paused.
 * Errors: JB_EINVAL (NULL handle or visit), JB_ENOMEM.
 */
JB_EXTERN int jb_queues_foreach(jb_board *board,
                                int (*visit)(const jb_queue_info *q,
                                             void *arg),
                                void *arg, int *board_paused);

/* ============================================= retention: jb_retention(3) */

/*
 * Retention: how much of the completed history and of the dead letters a
 * board keeps, by count and by age. It is a setting of the board, stored
 * in it (like the retry policy): every process that writes the board
 * prunes to it, whatever options it opened the board with, so a worker
 * opening with defaults does not undo what an administrator set.
 *
 * Defaults (a field never set): the history keeps 10,000 records and 7
 * days; the dead letters 10,000 letters and 30 days (a dead letter waits
 * for a person to look at it, so it is kept longer than the history a
 * program reads back within seconds; 10,000 letters of a 1 KiB posting
 * are some 12 MiB).
 *
 * The history fields of jb_board_options (history_max,
 * history_max_age_ms) still apply, to the handle's writes, but only to a
 * field the board does not store: the stored setting wins.
 *
 * Pruning is done by the writes that complete a job (consume, trash,
 * cancel, a job going to the dead letters) and by the write that sets
 * retention: each removes at most JB_RETAIN_PRUNE_MAX history records and
 * at most JB_RETAIN_PRUNE_MAX dead letters, oldest first (a write that
 * completes several jobs at most that many per job), so no commit becomes
 * slow; after a bound was lowered the excess goes in batches, one per
 * completion. An old record outlives its age until the next completion.
 */

/** A field of jb_retention: no bound at all. */
#define JB_RETAIN_NONE ((int64_t)-1)
/** The history's default bounds. */
#define JB_RETAIN_HISTORY_MAX_DEFAULT 10000
#define JB_RETAIN_HISTORY_AGE_DEFAULT_MS ((int64_t)7 * 24 * 3600 * 1000)
/** The dead letters' default bounds. */
#define JB_RETAIN_DEAD_MAX_DEFAULT 10000
#define JB_RETAIN_DEAD_AGE_DEFAULT_MS ((int64_t)30 * 24 * 3600 * 1000)
/** The most records of each kind one write prunes. */
#define JB_RETAIN_PRUNE_MAX 64

/**
 * Retention settings. Each field: a bound (> 0), 0 for "not set: the
 * default" (for the history fields: the handle's open option if it gave
 * one, else the default), or JB_RETAIN_NONE for no bound (the records are
 * kept until purged; an unbounded history makes a look-up of a uuid it
 * does not hold read all of it).
 */
typedef struct {
  int64_t history_max;        /**< history records kept */
  int64_t history_max_age_ms; /**< age of the oldest history record kept */
  int64_t dead_max;           /**< dead letters kept */
  int64_t dead_max_age_ms;    /**< age of the oldest dead letter kept */
} jb_retention;

/** Fields of jb_board_set_retention. */
enum {
  JB_RETAIN_HISTORY_MAX = 1u << 0,
  JB_RETAIN_HISTORY_AGE = 1u << 1,
  JB_RETAIN_DEAD_MAX = 1u << 2,
  JB_RETAIN_DEAD_AGE = 1u << 3,
  JB_RETAIN_ALL = 15u,
};

/**
 * Read the board's retention: what the board stores to `*stored` (0 in a
 * field never set; may be NULL), and what this handle's writes apply to
 * `*effective` (may be NULL): the stored value, else the handle's open
 * option (history fields), else the default; JB_RETAIN_NONE for no bound.
 * Errors: JB_EINVAL (board NULL), JB_ECORRUPT (the stored setting does not
 * decode), JB_EIO.
 */
JB_EXTERN int jb_board_get_retention(jb_retention *stored,
                                     jb_retention *effective,
                                     jb_board *board);

/**
 * Store the fields of `r` that `fields` names (JB_RETAIN_*; the others
 * keep their stored value), in one write transaction that also prunes a
 * first batch to the new bounds. A field of 0 goes back to the default;
 * JB_RETAIN_NONE is no bound. Errors: JB_EINVAL (names the field: below
 * JB_RETAIN_NONE, an age above INT64_MAX / 1000, or `fields` 0 or with an
 * unknown bit; nothing is changed), JB_EREADONLY, JB_EIO, JB_EFULL.
 */
JB_EXTERN int jb_board_set_retention(jb_board *board, const jb_retention *r,
                                     unsigned int fields);

/* ===================================================== waits: jb_waits(3) */

/*
 * Waiting without polling. Every committed write bumps a counter in the
 * board's signal file (`signal` in the board directory, memory-mapped by
 * every process that opens the board) and wakes the processes sleeping on
 * it (a shared futex). A waiter re-checks the board under a read
 * transaction after every wake-up, so a spurious wake-up costs one read
 * and cannot make a wait return wrongly. Waits for claimable jobs also
 * wake when a lease lapses (a timer set to the first expiry) and when a
 * process holding a process-bound claim ends (the library's watcher
 * thread holds a pidfd of each such holder, up to 256 processes; beyond
 * that such a wait also looks again every second).
 *
 * The signal file holds nothing that matters: a missing or corrupt one is
 * rebuilt, also under running waiters (the watcher thread, started by a
 * process's first wait, follows the file with inotify; where inotify is
 * out of instances or watches, fs.inotify.max_user_instances being 128 by
 * default, that process's waits look at the file once a second instead).
 * Truncating it under running processes is not safe (a mapped page cut
 * away is a SIGBUS); deleting it is.
 *
 * Timeouts are in milliseconds: < 0 waits without limit, 0 checks once.
 * They are kept on CLOCK_MONOTONIC, to within the scheduler's wake-up
 * latency (well under a millisecond here: docs/BENCHMARKS.md).
 */

/**
 * Block until the board holds at least one job, or with JB_ONLY_UNCLAIMED
 * at least one claimable job (a lapsed claim counts), or `timeout_ms`
 * passes. Errors: JB_ETIMEDOUT, JB_EINTERRUPTED (jb_board_interrupt), JB_EINVAL
 * (NULL handle, unknown flags), JB_EIO (the signal file or the watcher
 * thread could not be set up: the message says which).
 */
JB_EXTERN int jb_board_wait(jb_board *board, unsigned int flags,
                            int64_t timeout_ms);

/**
 * jb_board_wait for the jobs of some names: block until the board holds a
 * job of one of `names` (`n_names` of them, as jb_claim_options.names
 * takes them: exact names, or a prefix with a trailing '*'; at most
 * JB_CLAIM_NAMES_MAX), or with JB_ONLY_UNCLAIMED a claimable one (ready,
 * a lapsed claim, or a delayed job that is due), or `timeout_ms` passes.
 * As in jb_board_wait, the jobs of a paused, capped or rate-limited name
 * count as claimable. A delayed job counts (in either form) once it is
 * due, not before. `n_names` 0 waits as jb_board_wait does.
 * The wait sleeps through the commits that make ready no job of its
 * names' lanes (store/wake.h), so posts of other names do not wake it.
 * On JB_OK, `*count_out` (may be NULL) is the number of such jobs then
 * (a second read: it may be 0 if another process took them meanwhile).
 * Errors: as jb_board_wait, and JB_EINVAL for a name NULL, empty, longer
 * than JB_NAME_MAX or not UTF-8, more than JB_CLAIM_NAMES_MAX names, or
 * `names` NULL with `n_names` > 0.
 */
JB_EXTERN int jb_board_wait_names(jb_board *board, unsigned int flags,
                                  const char *const *names, size_t n_names,
                                  int64_t timeout_ms, size_t *count_out);

/* A history record: defined with the history, below. */
typedef struct jb_completion jb_completion;

/**
 * Wait until job `uuid` completes, then return its history record as
 * jb_job_completion does. A job already in the history returns at once; a
 * job on the board is waited for (woken by the commits of any process,
 * never by polling) for up to `timeout_ms` milliseconds (< 0: no limit;
 * 0: look once). A uuid that is neither on the board nor in the history
 * (never posted here, or its record was dropped) is JB_ENOTFOUND at once.
 * Errors: JB_EINVAL, JB_ENOTFOUND, JB_ETIMEDOUT (still on the board),
 * JB_EINTERRUPTED (jb_board_interrupt), JB_ECORRUPT, JB_EIO, JB_ENOMEM.
 */
JB_EXTERN int jb_job_wait_done(jb_completion **out, jb_board *board,
                               const char *uuid, int64_t timeout_ms);

/** Masks of event types for jb_subscribe. */
#define JB_EVENT_BIT(type) (1u << (type))
/** Every event type, including those added later. */
#define JB_EVENTS_ALL 0xfffffffeu
/** taskflow's NotifyingJobBoard POSTED: a job was posted. */
#define JB_EVENTS_POSTED JB_EVENT_BIT(JB_EVENT_POSTED)
/** taskflow's REMOVAL: a job left the board (consumed, trashed, revoked
 *  or lost from Redis). */
#define JB_EVENTS_REMOVAL                                                      \
  (JB_EVENT_BIT(JB_EVENT_CONSUMED) | JB_EVENT_BIT(JB_EVENT_TRASHED) |        \
   JB_EVENT_BIT(JB_EVENT_REVOKED) | JB_EVENT_BIT(JB_EVENT_LOST))
/** Pass as `from` to jb_subscribe: start with the next event. */
#define JB_LOG_NOW UINT64_MAX

typedef struct jb_subscription jb_subscription;

/* A change-log event: defined with the change log, below. */
typedef struct jb_event jb_event;

/** A subscriber: `event` is borrowed for the call. */
typedef void (*jb_event_cb)(const jb_event *event, void *payload);

/**
 * Call `fn` for every event from sequence `from` (JB_LOG_NOW: from the
 * next one) whose type is in `mask` (JB_EVENTS_ALL, JB_EVENTS_POSTED,
 * JB_EVENTS_REMOVAL, or JB_EVENT_BIT(type) ORed). `fn` runs on a thread
 * of the library's (one per subscription), never inside a transaction:
 * it may use the board, post jobs included. Calls come in log order, each
 * event once, one at a time; a slow callback delays only its own
 * subscription. Events written by any process are delivered, the thread
 * woken by their commit (no polling).
 * When the log was trimmed past the subscription's cursor (it fell more
 * than the log's bounds behind), `fn` gets one JB_EVENT_TRIMMED event
 * (whatever the mask) naming what was lost, then the events from where
 * the log now starts. The subscription uses a handle of its own on the
 * board (opened like `board`, sharing its store), so `board` may be
 * closed before the subscription ends, and jb_board_interrupt on `board`
 * does not stop it. Its thread does not survive fork(): in a child,
 * jb_unsubscribe only frees the child's copy.
 * Errors: JB_EINVAL (NULL out, board or fn; mask without an event type;
 * `from` 0 or beyond the next sequence), JB_ETRIMMED (`from` is already
 * trimmed: the message says where the log starts), JB_ENOMEM, JB_EIO
 * (no thread could be started).
 */
JB_EXTERN int jb_subscribe(jb_subscription **out, jb_board *board,
                           uint64_t from, unsigned int mask, jb_event_cb fn,
                           void *payload);

/**
 * Stop a subscription: a callback in progress finishes, no other is made,
 * its thread is joined, and everything is freed. Must not be called from
 * the subscription's own callback (JB_EINVAL, nothing freed). NULL is a
 * no-op (JB_OK). In a child of fork(), it frees the inherited copy (the
 * parent's subscription goes on). Returns JB_OK, or the error that
 * stopped the delivery thread earlier (JB_ECORRUPT, JB_EIO, ...: the
 * message names it; the subscription is freed all the same).
 */
JB_EXTERN int jb_unsubscribe(jb_subscription *sub);

/* ================================================= history: jb_history(3) */

/*
 * Completion results and the history.
 *
 * Every job that leaves the board (reaches COMPLETE) leaves a record in
 * the board's history, written in the same transaction: how it ended, the
 * result its owner gave, who owned it, and when it was posted, claimed and
 * completed. A producer reads it with jb_job_completion or waits for it
 * with jb_job_wait_done.
 *
 * The history is bounded by the board's retention (jb_retention(3)):
 * it keeps at most history_max records (default 10,000) and drops records
 * older than history_max_age_ms (default 7 days), oldest first. Trimming
 * is done by the writes that add records, at most 64 records per write,
 * so an old record outlives its age until the next completion. A bound
 * the board does not store is the writing handle's option, so a handle
 * with smaller options than the board's other writers' trims the history
 * down to its own: store the bounds in the board to keep them fixed.
 */

/** How a job reached COMPLETE. */
typedef enum {
  JB_END_CONSUMED = 1, /**< consumed with JB_OUTCOME_SUCCESS */
  JB_END_FAILED = 2,   /**< consumed with JB_OUTCOME_FAILURE */
  JB_END_TRASHED = 3,  /**< trashed by its owner */
  JB_END_REVOKED = 4,  /**< moved to quarantine by jb_board_check (its
                            posting did not decode); `reason` says why */
  JB_END_LOST = 5,     /**< lost from Redis: a Redis-decided job Redis no
                            longer listed after it lost its data (or its
                            namespace was wiped), with no trace of a
                            completion; nobody here consumed it, and it
                            comes back if its poster publishes it again.
                            `reason` says what was seen */
  JB_END_CANCELLED = 6, /**< cancelled (jb_job_cancel,
                              jb_board_cancel_unclaimed) */
  JB_END_DEAD = 7,      /**< went to the dead letters: its attempts reached
                             the maximum, or it was retried with
                             JB_RETRY_DEAD; `reason` is the last attempt's,
                             or "expired" (a deadline to start passed, with
                             JB_POST_EXPIRES_DEAD) */
  JB_END_EXPIRED = 8,   /**< not claimed by its deadline to start
                             (jb_post.expires_ms) */
} jb_end;

/**
 * One history record. Returned through `**out` it belongs to the caller
 * (free with jb_completion_free); handed out by jb_history_next it is
 * borrowed. The strings and the result live as long as the record.
 * Records are made by the library: fields may be added at the end.
 */
struct jb_completion {
  char uuid[JB_UUID_STRLEN];
  jb_end end;
  const char *name;       /**< the job's name; NULL when it could not be read
                               (a revoked job) */
  jb_priority priority;   /**< (jb_priority)-1 when unknown (revoked) */
  uint64_t sequence;      /**< the job's board sequence (0 when unknown) */
  const char *owner;      /**< who consumed or trashed it; for a revoked job
                               the owner of its claim, or NULL */
  int64_t posted_us;      /**< microseconds since the epoch (0: unknown) */
  int64_t claimed_us;     /**< the claim (or its last refresh); 0 if none */
  int64_t completed_us;   /**< when it left the board */
  const void *result;     /**< the result: one msgpack map (0x80, the empty
                               map, when none was given: see has_result) */
  size_t result_len;
  const char *reason;     /**< JB_END_REVOKED, JB_END_LOST: why; else the
                               reason given with the job's last failed
                               attempt (JB_END_DEAD: the one that sent it
                               there); NULL when none */
  uint64_t history_seq;   /**< its place in the history: larger is newer */
  /* Added after 0.1.0 (record format 2). A record written by 0.1.0
   * (format 1) has none of these: details, book_name, book_uuid and
   * posting NULL, details_len, posting_len and attempts 0, has_result
   * true (format 1 cannot tell no result from the empty map). */
  const void *details;    /**< the job's details as posted: one msgpack
                               map (0x80 when it had none); NULL when the
                               posting is not kept (a revoked job, or an
                               older record) */
  size_t details_len;
  const char *book_name;  /**< the logbook the job was posted to; NULL
                               when none (or the posting is not kept) */
  const char *book_uuid;  /**< with book_name */
  uint32_t attempts;      /**< its failed attempts: claims that ended
                               without a completion (abandoned, retried,
                               lapsed); a job claimed once and consumed
                               has 0 */
  bool has_result;        /**< false when its owner gave no result (result
                               is then the empty map); true for any result
                               given, the empty map {} too */
  const void *posting;    /**< the job's posting bytes as the board held
                               them (taskflow's layout: uuid, name,
                               priority, created_on, details, book,
                               sequence), enough to post it again; NULL
                               when not kept (as details) */
  size_t posting_len;
  /* Added with schema 11. */
  uint32_t snoozes;       /**< times the job snoozed (jb_snooze), up to
                               65535; 0 in a record of an older release */
};

/** Free a record returned through `**out`. NULL is a no-op. */
JB_EXTERN void jb_completion_free(jb_completion *completion);

/**
 * The history record of job `uuid` (the newest, should a uuid have
 * completed twice). On success *out is a record the caller frees.
 * Errors: JB_EINVAL (malformed uuid), JB_ENOTFOUND (no record: the job is
 * still on the board, was never on it, or its record was dropped by the
 * history's bounds; the message says which of "on the board" and "not in
 * the history"), JB_ECORRUPT (the record does not decode), JB_ENOMEM.
 * The history has no index by uuid: a job still on the board is answered
 * at once, otherwise the records are read newest first, so a recent
 * completion is found after a few and a uuid the history does not hold
 * reads all of them (0.6 ms for 10,000 records on a 2-core test machine,
 * against 1 us for a recent one).
 */
JB_EXTERN int jb_job_completion(jb_completion **out, jb_board *board,
                                const char *uuid);

/** Records in the history now. Errors: JB_EINVAL, JB_EIO. */
JB_EXTERN int jb_history_count(size_t *out, jb_board *board);

typedef struct jb_history_iter jb_history_iter;

/** Flags of jb_history_options. */
enum {
  /** Oldest record first (the default is newest first). */
  JB_HISTORY_OLDEST_FIRST = 1u << 0,
};

/** jb_history_options' bit for ending `end` (a jb_end). */
#define JB_HISTORY_END(end) (1u << (unsigned int)(end))

/**
 * Which records jb_history_query hands out, and in which order: those
 * that meet every condition set (a zero or NULL field sets none).
 * Initialise with JB_HISTORY_OPTIONS_INIT, then set the fields you want.
 */
typedef struct {
  unsigned int version;    /**< JB_HISTORY_OPTIONS_VERSION (1 has the
                                fields up to until_us only) */
  uint32_t ends;           /**< JB_HISTORY_END(e) bits of the endings
                                wanted; 0: every ending */
  const char *name;        /**< only jobs of exactly this name (a revoked
                                job whose name is unknown has none) */
  const char *name_prefix; /**< only jobs whose name starts with this */
  int64_t since_us;        /**< only jobs completed at or after this
                                (microseconds since the epoch); 0: no
                                bound */
  int64_t until_us;        /**< only jobs completed before this; 0: no
                                bound */
  /* Version 2. */
  unsigned int flags;      /**< JB_HISTORY_* */
} jb_history_options;

#define JB_HISTORY_OPTIONS_VERSION 2
#define JB_HISTORY_OPTIONS_INIT                                                \
  { JB_HISTORY_OPTIONS_VERSION, 0, NULL, NULL, 0, 0, 0 }

/**
 * Iterate the history records `opts` selects (NULL: every record, newest
 * first; JB_HISTORY_OLDEST_FIRST: oldest first). Like jb_iter it streams:
 * a few dozen records per short read transaction, and each record is seen
 * at most once. Newest first starts at the newest record when
 * jb_history_next is first called and does not see later ones; oldest
 * first sees records added meanwhile. Records trimmed meanwhile are not
 * seen.
 * The conditions are applied while streaming, to each record's fixed part
 * and name without decoding the rest, and the strings of `opts` are
 * copied: it need not outlive the call. A read transaction looks at a few
 * thousand records at most, so options that select few records of a long
 * history never hold a snapshot long. A record that does not decode is
 * reported (JB_ECORRUPT from jb_history_next) whatever the options say.
 * Errors: JB_EINVAL (an unknown version or flag, a bit of `ends` that is
 * no jb_end, a name longer than JB_NAME_MAX, until_us not after since_us
 * when both are set; the message names the field), JB_ENOMEM.
 */
JB_EXTERN int jb_history_query(jb_history_iter **out, jb_board *board,
                               const jb_history_options *opts);

/**
 * Advance. On success *out is the next record, borrowed until the next
 * call or jb_history_close; at the end, JB_OK with *out NULL.
 * Errors: JB_ECORRUPT (a record does not decode: the message names its
 * place; the iterator moves past it), JB_EIO, JB_ENOMEM.
 */
JB_EXTERN int jb_history_next(const jb_completion **out, jb_history_iter *it);

/** Free a history iterator. NULL is a no-op. */
JB_EXTERN void jb_history_close(jb_history_iter *it);

/* ------------------------------------------------------------ change log */

/*
 * The change log: every write appends one event per change, in the same
 * transaction as the change, so the log is exactly the board's history in
 * commit order. Events are numbered by the log sequence: 1, 2, 3, ...
 * with no gap and no reuse, across processes and reopens.
 *
 * A reader follows it with a cursor it keeps itself: the sequence of the
 * next event it wants. Start from "now" with the `next` of jb_log_bounds
 * (or JB_LOG_NOW for a subscription), or from an older sequence to replay.
 * After reading events, the cursor is the last one's seq + 1.
 *
 * The log is trimmed from its oldest end by the writes, behind two bounds
 * (jb_board_options): it keeps at least log_keep events (and fewer than
 * log_keep + 64: trimming deletes 64 at a time) unless they are older than
 * log_max_age_ms (deleted in batches: an event may outlive the bound by
 * 1/64 of it, at most a minute). Only writes trim, at most 64 events per
 * write, and the newest event is never trimmed. A reader whose cursor
 * falls behind the oldest kept event is told so (JB_ETRIMMED, and where
 * the log now starts): events are never skipped silently.
 */

/** The event log keeps at least this many events by default. */
#define JB_LOG_KEEP_DEFAULT 100000u
/** ... and trims those older than this by default: 7 days. */
#define JB_LOG_MAX_AGE_DEFAULT_MS ((int64_t)7 * 24 * 3600 * 1000)

/** What happened. The values never change (they are stored). */
typedef enum {
  JB_EVENT_POSTED = 1,    /**< a job was posted */
  JB_EVENT_CLAIMED = 2,   /**< claimed by `owner` */
  JB_EVENT_ABANDONED = 3, /**< released by `owner`: claimable again */
  JB_EVENT_CONSUMED = 4,  /**< completed by `owner`: left the board */
  JB_EVENT_TRASHED = 5,   /**< trashed by `owner`: left the board */
  JB_EVENT_REFRESHED = 6, /**< `owner` claimed it again: claim renewed */
  JB_EVENT_EXPIRED = 7,   /**< `owner`'s claim lapsed (lease or process
                               gone): claimable again */
  JB_EVENT_EXTENDED = 8,  /**< `owner` extended its lease */
  JB_EVENT_REVOKED = 9,   /**< `jobboard check` moved it to quarantine (its
                               posting does not decode): left the board;
                               `owner` is its claim's, if any */
  JB_EVENT_LOST = 10,     /**< a Redis-decided job Redis no longer lists
                               after losing its data: left the board (see
                               JB_END_LOST); `owner` is its claim's, if
                               any */
  JB_EVENT_CANCELLED = 11, /**< cancelled: left the board; `owner` is its
                                claim's, if it was claimed (forced) */
  JB_EVENT_DEAD = 12,     /**< moved to the dead letters: left the board;
                               `owner` is its last claim's */
  JB_EVENT_PROGRESS = 13, /**< `owner` reported progress (jb_progress);
                               jb_log_progress reads its percentage and
                               message */
  JB_EVENT_SNOOZED = 14,  /**< `owner` snoozed it (jb_snooze): claimable
                               again after its delay */
  JB_EVENT_DEADLINE = 15, /**< not claimed by its deadline to start: left
                               the board (expired, or a dead letter) */
  /** Not a log event: a subscription's notice that events were trimmed
   *  before it could read them (see jb_subscribe). */
  JB_EVENT_TRIMMED = 128,
} jb_event_type;

/** One event, copied out of the log (it owns its strings). */
struct jb_event {
  uint64_t seq;             /**< log sequence */
  jb_event_type type;
  char uuid[JB_UUID_STRLEN];/**< the job */
  char owner[JB_WHO_MAX + 1]; /**< who acted; "" for POSTED */
  int64_t time_us;          /**< wall clock, microseconds since the epoch */
  uint64_t job_seq;         /**< the job's sequence (jb_job_sequence) */
  jb_priority priority;     /**< the job's priority */
  uint64_t lost;            /**< JB_EVENT_TRIMMED only: `seq` is the first
                                 event missed, `lost` how many were; the
                                 next delivered is seq + lost. Else 0. */
};

/**
 * The log's extent: `*first_out` the oldest kept event's sequence,
 * `*next_out` the sequence the next event will get (the log holds
 * first .. next-1; first == next when it is empty). Either pointer may be
 * NULL. One short read, two B-tree lookups: cheap to call often.
 * Errors: JB_EINVAL (NULL board), JB_ECORRUPT, JB_EIO.
 */
JB_EXTERN int jb_log_bounds(uint64_t *first_out, uint64_t *next_out,
                            jb_board *board);

/**
 * Read up to `max` events from sequence `from` on (from, from + 1, ...),
 * in log order, into `events`; `*n_out` gets how many (0 when `from` is
 * the next sequence: nothing new yet). Never blocks. `*first_out` (may be
 * NULL) gets the oldest kept sequence, also on JB_ETRIMMED.
 * Errors: JB_ETRIMMED (`from` is older than the oldest kept event: the
 * message and *first_out say where the log now starts; resume there to
 * accept the gap), JB_EINVAL (NULL events, n_out or board, max 0, `from`
 * 0, or `from` beyond the next sequence: the message names it),
 * JB_ECORRUPT (an event does not decode: run `jobboard check`), JB_EIO.
 */
JB_EXTERN int jb_log_read(jb_event *events, size_t *n_out,
                          uint64_t *first_out, jb_board *board,
                          uint64_t from, size_t max);

/**
 * jb_log_read that blocks until at least one event at or after `from`
 * exists, or `timeout_ms` passes (< 0: no limit; 0: look once). It sleeps
 * on the board's commit signal: no polling, woken by the commit of any
 * process. Errors: as jb_log_read; JB_ETIMEDOUT (nothing new in time;
 * *n_out is 0), JB_EINTERRUPTED (jb_board_interrupt on this handle).
 */
JB_EXTERN int jb_log_wait(jb_event *events, size_t *n_out,
                          uint64_t *first_out, jb_board *board,
                          uint64_t from, size_t max, int64_t timeout_ms);

/**
 * The figures of JB_EVENT_PROGRESS event `seq`: its percentage to
 * `*percent_out` and its message (NUL-terminated, "" when none) to
 * `message_out` (JB_PROGRESS_MESSAGE_MAX + 1 bytes; may be NULL). The
 * event itself (jb_event) keeps its layout: its figures are read here.
 * Errors: JB_ENOTFOUND (event `seq` is not a progress event, or beyond
 * the log's end), JB_ETRIMMED (no longer kept), JB_EINVAL (NULL
 * percent_out or board), JB_ECORRUPT, JB_EIO.
 */
JB_EXTERN int jb_log_progress(double *percent_out, char *message_out,
                              jb_board *board, uint64_t seq);

/* =============================================== schedule: jb_schedule(3) */

/*
 * Periodic jobs.
 *
 * A schedule is stored in the board under a name: when it runs (every
 * `every_ms`, or at the minutes of a cron spec), the job it posts (a
 * jb_post without a due time or unique key) and what to do about runs
 * missed while nothing ticked it. Schedules do nothing by themselves:
 * whichever processes tick the board (jb_schedule_tick; `jobboard work`
 * and `jobboard schedule run` do) post the runs that are due. A tick is
 * one write transaction that posts the due runs and moves each schedule
 * past them, so of any number of processes ticking one board at once,
 * each run is posted exactly once.
 *
 * A run is a time, microseconds since the epoch (UTC):
 *  - every_ms: start_us, start_us + every_ms, start_us + 2 * every_ms, ...
 *    (start_us 0 at the add: one interval after the add);
 *  - cron: every minute (second 0) at or after start_us (0: the add) that
 *    matches the spec "minute hour day-of-month month day-of-week",
 *    evaluated in UTC or the schedule's time zone (below). Each field is
 *    `*`, N, N-M or a comma-separated list of those, each with an
 *    optional /STEP (a star with /15: every 15 from the least; 10-50/20:
 *    10, 30, 50; N/S: from N to the greatest). Minute 0-59, hour 0-23,
 *    day 1-31, month 1-12, weekday 0-7 (0 and 7 are Sunday); a month may be named JAN..DEC and a weekday SUN..SAT, in
 *    any case, also in lists and ranges (MON-FRI; FRI-SUN ends on
 *    Sunday). When both the day of month and the weekday
 *    are restricted (neither begins with `*`) a day matching either runs,
 *    as in Vixie cron. @hourly, @daily, @midnight, @weekly, @monthly,
 *    @yearly and @annually stand for their usual specs; @reboot is
 *    refused (a board has no boot). A spec no day matches ("0 0 30 2 *")
 *    is refused.
 *
 * A run's job is the template's posting with the run time added to its
 * details as "scheduled_at" (an integer, microseconds since the epoch;
 * the template must not have that key) and the unique key
 * "schedule:NAME:RUN" (RUN the same integer): jb_job_unique_key tells
 * which run a job is, and while it is on the board the run cannot be
 * posted again by any path. Its created time is the tick's time. Keys
 * that start with JB_SCHEDULE_KEY_PREFIX are the runs' own: jb_job_post
 * refuses them (JB_EINVAL).
 *
 * Time zones: a cron schedule may name an IANA zone (jb_schedule.tz);
 * its fields then match that zone's local time, and its runs follow the
 * zone's changes to and from daylight time. A local time a change skips
 * (02:30 on the day clocks go from 02:00 to 03:00) runs at the change
 * (03:00 local), once; a local time that happens twice (01:30 on the day
 * clocks go back from 02:00 to 01:00) runs once, at its first instant. A
 * spec whose minute or hour field begins with `*` runs by the real
 * minutes instead, as in cronie: no run in the skipped hour, runs in both
 * copies of the repeated one. The zone is read from the system's
 * zoneinfo by the library itself (glibc's zone is one per process, set
 * through TZ, which a library must not change under its host's threads),
 * once per process: a tzdata update is seen by processes started after
 * it. A zone whose file goes away after the add is computed in UTC until
 * it is back. Without a zone, UTC.
 *
 * Overlap: under JB_OVERLAP_SKIP a run due while an earlier run's job is
 * still on the board is not posted; the run counts as dealt with (it is
 * not posted later) and in jb_schedule.skipped.
 *
 * Catch-up: when a tick finds several runs due (nothing ticked the board
 * for a while), JB_CATCHUP_SKIP posts only the latest of them (the
 * others are skipped for good: one job), JB_CATCHUP_ALL posts each of
 * them once, oldest first (at most JB_SCHEDULE_CATCHUP_MAX per schedule
 * per tick; the next tick goes on). A tick at every run time posts every
 * run under both.
 */

/** What a tick does with runs missed (see above). */
typedef enum {
  JB_CATCHUP_SKIP = 0, /**< post only the latest due run (the default) */
  JB_CATCHUP_ALL = 1,  /**< post every missed run, each once */
} jb_catchup;

/** What a tick does with a run due while an earlier run of the schedule
 *  is unfinished (its job still queued, delayed or running: a live job
 *  holds a key "schedule:NAME:RUN"). */
typedef enum {
  JB_OVERLAP_QUEUE = 0, /**< post it anyway (the default; cron's way) */
  JB_OVERLAP_SKIP = 1,  /**< do not post it: the run is dealt with, and
                             counted in jb_schedule.skipped */
} jb_overlap;

/** The prefix of the unique keys of schedules' runs ("schedule:"). */
#define JB_SCHEDULE_KEY_PREFIX "schedule:"

/** The longest schedule name in bytes (its unique keys must fit in
 *  JB_UNIQUE_MAX). */
#define JB_SCHEDULE_NAME_MAX 200
/** The shortest interval: a second. */
#define JB_SCHEDULE_EVERY_MIN_MS 1000
/** The most runs JB_CATCHUP_ALL posts for one schedule in one tick. */
#define JB_SCHEDULE_CATCHUP_MAX 1000

/**
 * A schedule. Initialise with JB_SCHEDULE_INIT, then set the fields.
 *  - name: 1..JB_SCHEDULE_NAME_MAX bytes of UTF-8.
 *  - every_ms (JB_SCHEDULE_EVERY_MIN_MS..JB_DELAY_MAX_MS) or cron (at
 *    most 200 bytes): exactly one.
 *  - job: what each run posts, checked as jb_job_post checks a post:
 *    name, details, priority, book, max_attempts, time_limit_ms,
 *    backoff_ms, backoff_max_ms. not_before_us, delay_ms and unique_key
 *    must be 0 / NULL (the schedule sets the unique key).
 *  - tz (version 2): the IANA time zone its cron spec is evaluated in
 *    ("Europe/Berlin"; NULL or "UTC": UTC), read from the system's
 *    zoneinfo (tzdata) when added: JB_EINVAL names an unknown zone. Only
 *    with cron. See "Time zones" above.
 *  - overlap (version 2): jb_overlap.
 * The last four fields before tz, and skipped, are the schedule's state,
 * filled in by jb_schedule_get and jb_schedule_foreach and ignored by
 * jb_schedule_add.
 */
typedef struct {
  unsigned int version;  /**< JB_SCHEDULE_VERSION */
  const char *name;
  int64_t every_ms;      /**< an interval; 0 with cron */
  const char *cron;      /**< a cron spec (UTC, or tz); NULL with
                              every_ms */
  int64_t start_us;      /**< the first run (every_ms) or the earliest
                              (cron); 0: see above */
  jb_catchup catch_up;
  jb_post job;           /**< the posting template */
  int64_t next_us;       /**< out: the next run not posted yet
                              (INT64_MAX: none ever) */
  int64_t last_run_us;   /**< out: the last run a tick dealt with (0: none) */
  uint64_t runs;         /**< out: runs posted */
  int64_t created_us;    /**< out: when it was added */
  const char *tz;        /**< version 2: the cron spec's time zone (NULL:
                              UTC) */
  jb_overlap overlap;    /**< version 2 */
  uint64_t skipped;      /**< out, version 2: runs not posted for overlap */
} jb_schedule;
#define JB_SCHEDULE_VERSION 2
#define JB_SCHEDULE_INIT                                                       \
  { JB_SCHEDULE_VERSION, NULL, 0, NULL, 0, JB_CATCHUP_SKIP, JB_POST_INIT,      \
    0, 0, 0, 0, NULL, JB_OVERLAP_QUEUE, 0 }

/** Flags of jb_schedule_add. */
enum {
  JB_SCHEDULE_REPLACE = 1u << 0, /**< replace a schedule of that name (it
                                      keeps its runs count and last run;
                                      no run at or before that is posted
                                      again) */
};

/**
 * Store schedule `sched` in the board. Its first run is computed now
 * (see above); nothing is posted until a tick.
 * Errors: JB_EINVAL (names the field: a bad cron spec is named with its
 * value and the field of it that is wrong), JB_EEXISTS (a schedule of
 * that name exists, without JB_SCHEDULE_REPLACE), JB_EFULL, JB_EIO.
 * Nothing is written on error.
 */
JB_EXTERN int jb_schedule_add(jb_board *board, const jb_schedule *sched,
                              unsigned int flags);

/** Remove schedule `name` (jobs it posted stay). Errors: JB_ENOTFOUND,
 *  JB_EINVAL. */
JB_EXTERN int jb_schedule_remove(jb_board *board, const char *name);

/** Copy schedule `name` into *out, which the caller frees with
 *  jb_schedule_free (every string points into that one allocation).
 *  Errors: JB_ENOTFOUND, JB_EINVAL, JB_ECORRUPT (its record does not
 *  decode: run `jobboard check`), JB_ENOMEM. */
JB_EXTERN int jb_schedule_get(jb_schedule **out, jb_board *board,
                              const char *name);
/** Free a schedule from jb_schedule_get; NULL is a no-op. */
JB_EXTERN void jb_schedule_free(jb_schedule *sched);

/** Called for each schedule in name order, borrowed for the call; a
 *  non-zero return stops the walk and is returned. */
typedef int (*jb_schedule_cb)(const jb_schedule *sched, void *payload);
/** Walk the schedules (read in one read transaction; records that do not
 *  decode are passed over: `jobboard check` reports them). */
JB_EXTERN int jb_schedule_foreach(jb_board *board, jb_schedule_cb cb,
                                  void *payload);

/**
 * Post every schedule's due runs at time `now_us` (microseconds since the
 * epoch; 0: the wall clock now), in one write transaction, and move each
 * schedule past them; the number of jobs posted to *posted (may be
 * NULL). A run whose unique key a live job holds is not posted (it was,
 * already). A tick that finds nothing due writes nothing (one read
 * transaction). Safe from any number of threads and processes at once.
 * Errors: JB_EINVAL (NULL board, negative time), JB_EFULL, JB_EIO; and
 * as jb_job_post should a template no longer fit the handle's
 * max_posting (nothing is posted then).
 */
JB_EXTERN int jb_schedule_tick(size_t *posted, jb_board *board,
                               int64_t now_us);

/**
 * The earliest next run of the board's schedules to *out (0: no
 * schedule), which may be in the past (a tick is due now). For a loop
 * that ticks and waits for jobs: tick, then wait no later than this.
 * Errors: JB_EINVAL, JB_EIO.
 */
JB_EXTERN int jb_schedule_next_due(int64_t *out, jb_board *board);

/**
 * Sleep until a schedule of the board is due (by the wall clock), up to
 * `timeout_ms` (< 0: no limit). Schedules added, replaced or removed
 * meanwhile (any commit on the board) are taken into account without
 * polling. Returns JB_OK when a tick is due.
 * Errors: JB_ETIMEDOUT, JB_EINTERRUPTED (jb_board_interrupt), JB_EINVAL, JB_EIO.
 */
JB_EXTERN int jb_schedule_wait(jb_board *board, int64_t timeout_ms);

/* ===================================================== stats: jb_stats(3) */

/** The version of jb_stats this header describes. */
#define JB_STATS_VERSION 1

/** jb_stats.flags: also count the jobs on the board by name. */
#define JB_STATS_BY_NAME 1u
/** jb_stats.flags: do not walk the ready jobs, so the read costs
 *  O(claimed + delayed jobs) and not O(jobs): by_state[JB_STATS_UNCLAIMED]
 *  then comes from the ready index's entry count (plus the lapsed claims),
 *  by_priority's unclaimed column is left 0 and oldest_unclaimed_us only
 *  looks at the lapsed claims. Not with JB_STATS_BY_NAME. */
#define JB_STATS_NO_WALK 2u

/** Where a job on the board is (jb_stats's by-state arrays). */
enum {
  JB_STATS_UNCLAIMED = 0, /**< claimable now: ready, or its claim lapsed
                               (as jb_job_state and jb_board_count say) */
  JB_STATS_CLAIMED = 1,   /**< claimed, the claim still held */
  JB_STATS_DELAYED = 2,   /**< not claimable before its due time */
  JB_STATS_STATES = 3,
};

/** One job name's counts (JB_STATS_BY_NAME). */
typedef struct {
  char *name;                    /**< NUL-terminated (no NUL inside) */
  size_t jobs[JB_STATS_STATES];  /**< by JB_STATS_* */
} jb_stats_name;

/**
 * A board's figures at one moment (jb_stats_read). Set `version` to
 * JB_STATS_VERSION (JB_STATS_INIT does) and `flags` before the call;
 * everything else is filled in. Free what it holds with jb_stats_clear.
 */
typedef struct {
  unsigned int version;       /**< in: JB_STATS_VERSION */
  unsigned int flags;         /**< in: JB_STATS_BY_NAME or 0 */
  int64_t now_us;             /**< the wall clock the figures were read at */

  /* Jobs on the board. */
  size_t jobs;                /**< all of them */
  size_t by_state[JB_STATS_STATES];      /**< by JB_STATS_* */
  size_t by_priority[5][JB_STATS_STATES]; /**< [jb_priority][JB_STATS_*] */
  size_t delayed_due;         /**< delayed jobs already due: claimable at the
                                   next claim (counted in DELAYED) */
  int64_t oldest_unclaimed_us; /**< the longest-waiting unclaimed job's wait
                                   start (its post or last abandon), wall
                                   clock (a lapsed claim's: when its lease
                                   ran out, or its claim time when its
                                   holder went); 0: no unclaimed job */
  size_t dead_letters;        /**< jobs in the dead letters (jb_dead_*) */

  /* Held claims by kind: each counted once, bound before leased. */
  size_t claims_bound;        /**< bound to a holder process (with or
                                   without a lease) */
  size_t claims_leased;       /**< with a lease, not bound */
  size_t claims_plain;        /**< neither: held until released */
  size_t lapsing_lease;       /**< lapsed claims whose lease expired (or
                                   that were made before a reboot), their
                                   record not yet returned by a write: the
                                   job counts as UNCLAIMED, not above */
  size_t lapsing_holder;      /**< lapsed bound claims whose holder is gone
                                   (and whose lease, if any, has not
                                   expired); UNCLAIMED too */

  /* The completion history. */
  size_t history;             /**< records kept */
  uint64_t completed_1m[8];   /**< records of the last 60 s by jb_end */
  uint64_t completed_1h[8];   /**< of the last 3600 s by jb_end */

  /* The change log. */
  uint64_t log_first;         /**< the oldest sequence kept */
  uint64_t log_next;          /**< the sequence the next event gets
                                   (log_first == log_next: empty) */

  /* Counters kept by the board since it was made (or since a release
   * that keeps them first wrote it: older writes are not counted). They
   * only go up, each in the write that made the change. */
  uint64_t events_total[16];  /**< change-log events by jb_event_type
                                   (JB_EVENT_POSTED .. JB_EVENT_DEADLINE:
                                   events_total[JB_EVENT_SNOOZED] counts
                                   the snoozes) */
  uint64_t ends_total[8];     /**< history records written by jb_end, at
                                   index end & 7: JB_END_EXPIRED (8) is at
                                   0, which no other end uses (so are
                                   completed_1m and completed_1h) */

  /* The LMDB file. */
  uint64_t map_size;          /**< bytes mapped (the file's size bound) */
  uint64_t page_size;         /**< bytes per page */
  uint64_t pages_used;        /**< pages the file holds data in (the last
                                   page number + 1; free pages included) */
  unsigned int readers;       /**< live read transactions (this one too) */
  unsigned int readers_max;   /**< reader slots the environment has */

  /* JB_STATS_BY_NAME: one entry per job name on the board, in byte order
   * of the names (NULL, 0 without the flag). */
  jb_stats_name *names;
  size_t n_names;
} jb_stats;

#define JB_STATS_INIT { JB_STATS_VERSION, 0, 0, 0, {0}, {{0}}, 0, 0, 0, 0, 0, \
                        0, 0, 0, 0, {0}, {0}, 0, 0, {0}, {0}, 0, 0, 0, 0, 0, \
                        NULL, 0 }

/**
 * Fill `out` with the board's figures (jb_stats), read in ONE read
 * transaction: every figure is of the same moment. Costs O(jobs on the
 * board) (O(claimed + delayed) with JB_STATS_NO_WALK): it walks the ready,
 * claims and delayed indexes (with
 * JB_STATS_BY_NAME it also reads every job's posting), the history records
 * of the last hour, and reads the rest from LMDB's statistics. Writers go
 * on meanwhile. Lapsing claims are counted as `jobboard list` would show
 * them (a bound claim's holder is looked up in /proc, once per process).
 * Errors: JB_EINVAL (NULL argument, a version this library does not know,
 * unknown flags), JB_ENOMEM, JB_EIO.
 */
JB_EXTERN int jb_stats_read(jb_stats *out, jb_board *board);

/** Free what jb_stats_read allocated in `st` (the names); NULL is a
 * no-op. The struct may be filled again afterwards. */
JB_EXTERN void jb_stats_clear(jb_stats *st);

/* =============================================== entities: jb_entities(3) */

/*
 * Entities: workers and conductors announce themselves on the board by
 * name, with a kind and metadata, bound to the registering process. An
 * entity whose process is gone (or that was registered before the host's
 * last reboot) is no longer listed, and the next registration removes it.
 */

/** One registered entity, as listed (borrowed: valid during the callback). */
typedef struct {
  const char *name;     /**< unique on the board */
  const char *kind;     /**< e.g. "worker", "conductor" */
  const void *meta;     /**< msgpack map (may be empty: 0x80) */
  size_t meta_len;
  int pid;              /**< the registering process */
  int64_t registered_us;/**< wall clock, microseconds since the epoch */
} jb_entity;

/**
 * Register (or re-register: replace) entity `name` (1..JB_WHO_MAX bytes of
 * UTF-8: an entity is who claims jobs, and its name is an owner name) of
 * `kind` (1..JB_NAME_MAX bytes of UTF-8) with metadata `meta` (a msgpack
 * map; NULL with meta_len 0 means {}), bound to the calling process.
 * Errors: JB_EINVAL (names the field; nothing written), JB_EFULL, JB_EIO.
 */
JB_EXTERN int jb_entity_register(jb_board *board, const char *name,
                                 const char *kind, const void *meta,
                                 size_t meta_len);

/**
 * Remove entity `name`. Errors: JB_ENOTFOUND (not registered), JB_EINVAL.
 */
JB_EXTERN int jb_entity_unregister(jb_board *board, const char *name);

/** Called once per live entity, in name order; return non-zero to stop. */
typedef int (*jb_entity_cb)(const jb_entity *entity, void *payload);

/**
 * List the live entities (their processes running) in name order. The
 * callback runs after the read, outside any transaction. Errors: JB_EIO,
 * JB_ENOMEM.
 */
JB_EXTERN int jb_entity_list(jb_board *board, jb_entity_cb cb, void *payload);

/* =================================================== errors: jb_errors(3) */

/**
 * Status codes. Values never change between releases; new codes are added
 * below the last one. The CLI maps them to exit codes (see jobboard(1)).
 */
enum {
  JB_OK = 0,         /**< success */
  JB_ENOTFOUND = -1, /**< no such job (or no such board directory) */
  JB_ECLAIMED = -2,  /**< the job is already claimed (message names owner) */
  JB_ENOTOWNER = -3, /**< the caller is not the job's owner (names owner) */
  JB_EINVAL = -4,    /**< an argument is invalid (message names the field) */
  JB_ETIMEDOUT = -5, /**< a wait ran out of time */
  JB_EOFFLINE = -6,  /**< a backend (Redis) needed for the call is away */
  JB_ECORRUPT = -7,  /**< stored data does not decode / not a board */
  JB_EFULL = -8,     /**< no space left: the board cannot grow */
  JB_EIO = -9,       /**< an operating-system or storage error */
  JB_ENOMEM = -10,   /**< out of memory */
  JB_EVERSION = -11, /**< the board was written by a newer jobboard */
  JB_EINTERRUPTED = -12, /**< a wait was ended by jb_board_interrupt */
  JB_ETRIMMED = -13, /**< the change log no longer holds the sequence asked
                          for (message and out-value: where it now starts) */
  JB_EEXISTS = -14,  /**< a live job holds the unique key asked for (the
                          message and the uuid out-value name that job) */
  JB_ENOTDUE = -15,  /**< the job is delayed: not claimable before its due
                          time (the message names it) */
  JB_EREADONLY = -16, /**< the board is open read-only, or its files cannot
                           be written by this process (the message says
                           which and why) */
};

/**
 * Fixed text for a status code: never NULL, static, starts with the code's
 * name ("JB_ECLAIMED: job already claimed"). Unknown codes give
 * "JB_E?: unknown error code".
 */
JB_EXTERN const char *jb_strerror(int code);

/**
 * The message left by the last failing call of the calling thread, naming
 * what went wrong ("job 3f0d...: already claimed by worker-1"). Never NULL.
 * It is not cleared by successful calls: branch on the status code, then
 * read the message. The string lives until the thread's next failing call.
 */
JB_EXTERN const char *jb_errmsg(void);

/* The names of the enums' values. */

/** "VERY_HIGH", "HIGH", ...; NULL for a value outside the enum. */
JB_EXTERN const char *jb_priority_name(jb_priority priority);

/**
 * Parse a priority name without regard to case ("high", "Very_Low").
 * Errors: JB_EINVAL (names the text and the five valid names).
 */
JB_EXTERN int jb_priority_parse(jb_priority *out, const char *name);

/** "UNCLAIMED", "CLAIMED", "COMPLETE"; NULL for a value outside the enum. */
JB_EXTERN const char *jb_state_name(jb_state state);

/** "full", "normal", "interval", "none"; NULL outside the enum. */
JB_EXTERN const char *jb_durability_name(jb_durability durability);
/** Parse "full", "normal", "interval" or "none" (any case). Errors: JB_EINVAL. */
JB_EXTERN int jb_durability_parse(jb_durability *out, const char *name);

/** "trashed", "attempts", "buried"; NULL outside the enum. */
JB_EXTERN const char *jb_dead_cause_name(jb_dead_cause cause);

/** "skip", "all"; NULL outside the enum. */
JB_EXTERN const char *jb_catchup_name(jb_catchup catch_up);
/** "queue" or "skip"; NULL for a value not in jb_overlap. */
JB_EXTERN const char *jb_overlap_name(jb_overlap overlap);

/** "consumed", "failed", "trashed", "revoked", "lost", "cancelled",
 * "dead"; NULL outside the enum. */
JB_EXTERN const char *jb_end_name(jb_end end);

/** "POSTED", "CLAIMED", ..., "TRIMMED"; NULL for any other value. */
JB_EXTERN const char *jb_event_type_name(jb_event_type type);

/* ---------------------------------------------------------------- version */

#define JOBBOARD_VERSION_MAJOR 0
#define JOBBOARD_VERSION_MINOR 2
#define JOBBOARD_VERSION_PATCH 0
#define JOBBOARD_VERSION_STRING "0.2.0"
/** Version as one comparable number: major * 10000 + minor * 100 + patch. */
#define JOBBOARD_VERSION_NUMBER                                                \
  (JOBBOARD_VERSION_MAJOR * 10000 + JOBBOARD_VERSION_MINOR * 100 +             \
   JOBBOARD_VERSION_PATCH)

/**
 * The version of the library actually linked, which may differ from the
 * macros above when a program runs against a newer shared library.
 * Any of the out-pointers may be NULL. Returns a static string ("0.2.0").
 */
JB_EXTERN const char *jb_version(int *major, int *minor, int *patch);

/* ------------------------------------------------------------ deprecated */

/*
 * The names of 0.1, kept for one release: each does exactly what the call
 * it names does, and warns at compile time. They are removed in 0.3.
 * jb_deprecated(3) lists them with their replacements.
 */
#ifndef JB_NO_DEPRECATED

#define JB_ECANCELED JB_EINTERRUPTED /* use JB_EINTERRUPTED */

typedef jb_claim_options jb_claim_opts JB_DEPRECATED("jb_claim_options");
#define JB_CLAIM_OPTS_VERSION 1
#define JB_CLAIM_OPTS_INIT { JB_CLAIM_OPTS_VERSION, 0, 0, 0, NULL, 0 }
typedef jb_retry_options jb_retry_opts JB_DEPRECATED("jb_retry_options");
#define JB_RETRY_OPTS_VERSION JB_RETRY_OPTIONS_VERSION
#define JB_RETRY_OPTS_INIT JB_RETRY_OPTIONS_INIT
typedef jb_history_options jb_history_filter
    JB_DEPRECATED("jb_history_options");
#define JB_HISTORY_FILTER_VERSION 1
#define JB_HISTORY_FILTER_INIT { JB_HISTORY_FILTER_VERSION, 0, NULL, NULL, 0, 0, 0 }
typedef jb_event_cb jb_event_fn JB_DEPRECATED("jb_event_cb");

JB_DEPRECATED("jb_claim(NULL, board, uuid, who, NULL)")
JB_EXTERN int jb_job_claim(jb_board *board, const char *uuid, const char *who);
JB_DEPRECATED("jb_claim")
JB_EXTERN int jb_job_claim_ex(uint64_t *token_out, jb_board *board,
                              const char *uuid, const char *who,
                              const jb_claim_options *opts);
JB_DEPRECATED("jb_claim_next(uuid_out, job_out, NULL, board, who, NULL)")
JB_EXTERN int jb_job_claim_next(char uuid_out[JB_UUID_STRLEN],
                                jb_job **job_out, jb_board *board,
                                const char *who);
JB_DEPRECATED("jb_claim_next")
JB_EXTERN int jb_job_claim_next_ex(char uuid_out[JB_UUID_STRLEN],
                                   jb_job **job_out, uint64_t *token_out,
                                   jb_board *board, const char *who,
                                   const jb_claim_options *opts);
/* Waits `timeout_ms` (0: looks once, and JB_ETIMEDOUT when nothing is
 * claimable). */
JB_DEPRECATED("jb_claim_next with jb_claim_options.wait_ms")
JB_EXTERN int jb_job_claim_next_wait(char uuid_out[JB_UUID_STRLEN],
                                     jb_job **job_out, uint64_t *token_out,
                                     jb_board *board, const char *who,
                                     const jb_claim_options *opts,
                                     int64_t timeout_ms);
JB_DEPRECATED("jb_claim_next_many")
JB_EXTERN int jb_job_claim_next_many(size_t *n_out,
                                     char (*uuids_out)[JB_UUID_STRLEN],
                                     uint64_t *tokens_out, jb_job **jobs_out,
                                     jb_board *board, const char *who,
                                     const jb_claim_options *opts, size_t max);
JB_DEPRECATED("jb_extend")
JB_EXTERN int jb_job_extend(jb_board *board, const char *uuid,
                            const char *who, uint64_t token,
                            int64_t lease_ms);
JB_DEPRECATED("jb_abandon(board, uuid, who, 0)")
JB_EXTERN int jb_job_abandon(jb_board *board, const char *uuid,
                             const char *who);
JB_DEPRECATED("jb_abandon")
JB_EXTERN int jb_job_abandon_ex(jb_board *board, const char *uuid,
                                const char *who, uint64_t token);
JB_DEPRECATED("jb_consume(board, uuid, who, 0, NULL)")
JB_EXTERN int jb_job_consume(jb_board *board, const char *uuid,
                             const char *who);
JB_DEPRECATED("jb_consume(board, uuid, who, token, NULL)")
JB_EXTERN int jb_job_consume_ex(jb_board *board, const char *uuid,
                                const char *who, uint64_t token);
JB_DEPRECATED("jb_consume with jb_consume_options")
JB_EXTERN int jb_job_consume_result(jb_board *board, const char *uuid,
                                    const char *who, uint64_t token,
                                    jb_outcome outcome, const void *result,
                                    size_t result_len);
JB_DEPRECATED("jb_consume_and_claim_next")
JB_EXTERN int jb_job_consume_and_claim_next(
    char next_uuid_out[JB_UUID_STRLEN], jb_job **next_job_out,
    uint64_t *next_token_out, jb_board *board, const char *uuid,
    const char *who, uint64_t token, jb_outcome outcome, const void *result,
    size_t result_len, const jb_claim_options *opts);
JB_DEPRECATED("jb_consume_many")
JB_EXTERN int jb_job_consume_many(int *status_out, jb_board *board,
                                  const jb_consume_item *items, size_t n,
                                  jb_item_cb cb, void *payload);
JB_DEPRECATED("jb_trash(board, uuid, who, 0)")
JB_EXTERN int jb_job_trash(jb_board *board, const char *uuid,
                           const char *who);
JB_DEPRECATED("jb_trash")
JB_EXTERN int jb_job_trash_ex(jb_board *board, const char *uuid,
                              const char *who, uint64_t token);
JB_DEPRECATED("jb_retry(out, board, uuid, who, opts)")
JB_EXTERN int jb_job_retry(jb_board *board, const char *uuid,
                           const char *who, const jb_retry_options *opts,
                           jb_retry_result *out);
JB_DEPRECATED("jb_board_cancel_unclaimed")
JB_EXTERN int jb_board_flush(size_t *out, jb_board *board);
JB_DEPRECATED("jb_board_interrupt")
JB_EXTERN int jb_board_cancel(jb_board *board);
JB_DEPRECATED("jb_board_interrupt_reset")
JB_EXTERN int jb_board_cancel_reset(jb_board *board);
JB_DEPRECATED("jb_history_query")
JB_EXTERN int jb_history_open(jb_history_iter **out, jb_board *board,
                              unsigned int flags);
JB_DEPRECATED("jb_history_query (the flags are in jb_history_options)")
JB_EXTERN int jb_history_open_filtered(jb_history_iter **out,
                                       jb_board *board, unsigned int flags,
                                       const jb_history_options *filter);
JB_DEPRECATED("jb_stats_read(out, board)")
JB_EXTERN int jb_board_stats(jb_board *board, jb_stats *out);

#endif /* JB_NO_DEPRECATED */

#ifdef __cplusplus
}
#endif

#endif /* JOBBOARD_H */
