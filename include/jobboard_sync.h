/*
 * jobboard_sync.h - libjbsync: sharing boards through Redis, wire-compatible
 * with OpenStack taskflow's Redis jobboard: URLs and connections, the
 * authority rule through the board API (jb_sync_attach, jb_sync_publish),
 * and the replicator that keeps a board in step with a Redis board
 * (jb_sync_replicator_start; `jobboard sync`).
 *
 * libjbsync is built only when configure finds hiredis; it is layered on
 * libjobboard (link both: -ljbsync -ljobboard). libjobboard itself never
 * links hiredis, and this header does not include hiredis either.
 *
 * Conventions are those of jobboard.h: functions return JB_OK or a negative
 * JB_E* code, and a failure leaves a message for the calling thread in
 * jb_errmsg() (the same per-thread message as the board's calls, so one
 * place to read whichever layer failed). Out-parameters come first; objects
 * returned through **out are freed with the matching *_free / *_close,
 * which accept NULL. A failed call leaves *out NULL.
 *
 * Which code for which failure (the replicator retries only JB_EOFFLINE):
 *  - JB_EOFFLINE: the server cannot be used right now but may be later:
 *    connection refused, host unreachable or unknown, a connect or command
 *    timeout ("timed out after 500 ms"), the connection lost, a server that
 *    is loading its data set or busy running a script.
 *  - JB_EINVAL: the configuration is wrong and retrying will not help: a
 *    bad URL or namespace, a wrong password or ACL user ("wrong password"),
 *    a server that wants a password when none was given, a db number the
 *    server does not have, a server older than Redis 4.0 or without Lua
 *    scripting.
 *  - JB_ENOMEM: out of memory. JB_EIO: an unexpected reply from the server
 *    (the message quotes it).
 *
 * Threads and processes: there is no global state. A jb_sync_conn is one
 * connection; use it from one thread at a time (give each thread its own,
 * or lock around it). Writes to a server that has closed the connection do
 * not raise SIGPIPE in the process: the signal is blocked in the calling
 * thread around every exchange and a pending one is consumed, so callers
 * need not ignore SIGPIPE. A connection made before fork() must not be used
 * in the child (both would read the same socket); jb_sync_close() in the
 * child is safe and does not disturb the parent's connection.
 */
#ifndef JOBBOARD_SYNC_H
#define JOBBOARD_SYNC_H

#include "jobboard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------- URLs */

/**
 * Where and how to connect, as parsed from a URL:
 *
 *   redis://[[user]:password@]host[:port][/db]
 *   unix://[[user]:password@]/path/to.sock[?db=N]
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/name[/db]
 *
 * - host is a name, an IPv4 address, or an IPv6 address in brackets
 *   ("redis://[::1]:6380/2"). port defaults to 6379, db to 0.
 * - "redis://:secret@host" gives a password only (Redis's AUTH password);
 *   "redis://alice:secret@host" an ACL user and password (Redis >= 6).
 *   A user with no password ("redis://alice@host") is refused.
 * - user, password and the socket path may hold %XX escapes, for ':', '@',
 *   '/' or '?' in them ("redis://:p%40ss@host" has the password "p@ss").
 * - The socket path must be absolute: "unix:///run/redis.sock" (three
 *   slashes: the scheme's two and the path's first).
 * - db is a decimal number 0..2147483647 (Redis's default config has 16).
 * - TLS ("rediss://") is not supported; nor are other query parameters.
 * - redis-sentinel:// names up to JB_SYNC_SENTINELS_MAX Redis Sentinels
 *   (port 26379 by default) and the name of the master they watch
 *   ("redis-sentinel://s1,s2:26380,s3/mymaster/2"). A connection asks
 *   them in turn for the master's address (SENTINEL
 *   get-master-addr-by-name), and again after every failure, so it
 *   follows a failover. user, password and db are the master's; the
 *   sentinels are asked without a password (one that requires a password
 *   is reported, not used). The name may hold %XX escapes.
 */

/** Most sentinels a redis-sentinel:// URL may name. */
#define JB_SYNC_SENTINELS_MAX 16

/** A host and TCP port (a sentinel of a redis-sentinel:// URL). */
typedef struct {
  char *host; /**< name, IPv4 address, or IPv6 address without brackets */
  int port;   /**< TCP port */
} jb_sync_addr;

typedef struct {
  char *host;     /**< TCP host (no brackets), or NULL for a unix socket */
  int port;       /**< TCP port (6379 by default); 0 for a unix socket */
  char *path;     /**< unix socket path, or NULL for TCP */
  char *user;     /**< ACL user, or NULL (the default user) */
  char *password; /**< password, or NULL (no AUTH) */
  int db;         /**< database number for SELECT (0 by default) */
  /** redis-sentinel:// only (else NULL and 0; host and path are then NULL,
   *  port 0): the sentinels in the URL's order, and the master's name. */
  jb_sync_addr *sentinels;
  int nsentinels;
  char *master;
} jb_sync_url;

/**
 * Parse `text` into a new jb_sync_url (free it with jb_sync_url_free).
 * Errors: JB_EINVAL with a message naming what is wrong ("redis URL
 * "redis://h:99999": port 99999 is not in 1..65535"; the password is never
 * shown), JB_ENOMEM.
 */
JB_EXTERN int jb_sync_url_parse(jb_sync_url **out, const char *text);

/** Free a parsed URL (NULL is fine). */
JB_EXTERN void jb_sync_url_free(jb_sync_url *url);

/* -------------------------------------------------------------- namespace */

/** The namespace used when none is given: taskflow's default. */
#define JB_SYNC_NAMESPACE_DEFAULT "taskflow"
/** Longest namespace accepted, in bytes. */
#define JB_SYNC_NAMESPACE_MAX 200

/**
 * Check a namespace: 1..JB_SYNC_NAMESPACE_MAX bytes, none of them a space
 * or a control character (bytes 0x00-0x20 and 0x7f). Other bytes, UTF-8
 * included, are allowed, and so are ':' and a hash tag ("{fleet}") that
 * keeps every key in one Redis Cluster slot. Every key is the namespace,
 * ':' and a piece, as taskflow builds them ("taskflow:listings").
 * Errors: JB_EINVAL naming the problem.
 */
JB_EXTERN int jb_sync_namespace_check(const char *ns);

/* ------------------------------------------------------------- connection */

/** Options of jb_sync_connect. Start from JB_SYNC_OPTIONS_INIT (every
 *  zero field means its default). */
typedef struct {
  /** Where to connect (see jb_sync_url). Required. */
  const char *url;
  /** Key namespace; NULL means JB_SYNC_NAMESPACE_DEFAULT. */
  const char *ns;
  /** Time allowed to establish a TCP or unix socket connection, in ms.
   *  0 means the default, 2000. */
  int connect_timeout_ms;
  /** Time allowed for one command's reply, in ms; the connection is
   *  dropped when it runs out (see jb_sync_ping). 0 means the default,
   *  5000. */
  int command_timeout_ms;
} jb_sync_options;

/** The defaults (url NULL: set it before connecting). */
#define JB_SYNC_OPTIONS_INIT { NULL, NULL, 0, 0 }

/** A connection to one Redis server (opaque). */
typedef struct jb_sync_conn jb_sync_conn;

/**
 * Connect to the server of opts->url and make it ready for use:
 *  1. connect (TCP with keep-alive, or the unix socket), within
 *     connect_timeout_ms;
 *  2. AUTH with the URL's password (and user), if it has one;
 *  3. SELECT the URL's db (skipped for db 0);
 *  4. read redis_version from INFO server and require Redis >= 2.6 (Lua
 *     scripting, PTTL/PEXPIRE: what taskflow requires too);
 *  5. prove scripting works: load a trivial script with SCRIPT LOAD and
 *     run it with EVALSHA (servers may disable or rename those commands).
 * Each exchange is bounded by command_timeout_ms. For a redis-sentinel://
 * URL, step 1 is preceded by asking the sentinels in turn (each given at
 * most 500 ms, starting with the one that answered last) for the master's
 * address, and step 5 followed by ROLE: a server that is not a master (a
 * sentinel behind a failover named it) is left for the next sentinel's
 * answer. Every reconnect asks again, and a reply saying the server takes
 * no writes (READONLY, MASTERDOWN, NOREPLICAS) drops the connection, so
 * the connection follows a failover. The replicator's status
 * (jb_sync_status.server) names the master found.
 *
 * Errors (see the top of this file for the rule):
 *  - JB_EINVAL: no or bad URL, bad namespace, negative timeouts; "wrong
 *    password" (or wrong user); "server requires a password" when the URL
 *    gives none; a db the server does not have; "Redis 2.4.0 is too old";
 *    "server does not run Lua scripts" (with the server's error).
 *  - JB_EOFFLINE: "connection refused to 127.0.0.1:1", "timed out after
 *    2000 ms connecting to ...", unknown host, a server loading or busy,
 *    the connection lost during the handshake; "no master found for
 *    "mymaster" through 3 sentinels (last: ...)".
 *  - JB_EINVAL also, when every sentinel refuses the question: "no
 *    sentinel watches a master named "x"", or they require a password.
 *  - JB_ENOMEM; JB_EIO for a reply that makes no sense.
 */
JB_EXTERN int jb_sync_connect(jb_sync_conn **out, const jb_sync_options *opts);

/** Close the connection and free it (NULL is fine). */
JB_EXTERN void jb_sync_close(jb_sync_conn *conn);

/**
 * Check that the server answers (PING). If the connection was dropped by
 * an earlier failure, this first reconnects (the whole handshake of
 * jb_sync_connect). Every command behaves so: after a lost connection or a
 * timeout the connection is closed, that call fails with JB_EOFFLINE, and
 * the next call reconnects. A command whose reply was lost is never sent
 * again by this layer: only its caller can tell whether that is safe.
 * Errors: as jb_sync_connect; JB_EOFFLINE "timed out after N ms" when the
 * server does not answer within command_timeout_ms.
 */
JB_EXTERN int jb_sync_ping(jb_sync_conn *conn);

/** true while the connection is open (false after a failure dropped it,
 *  until the next call reconnects). */
JB_EXTERN bool jb_sync_connected(const jb_sync_conn *conn);

/** The server's version ("7.0.15") as read at the last (re)connect.
 *  Borrowed: lives until the next reconnect or jb_sync_close. */
JB_EXTERN const char *jb_sync_server_version(const jb_sync_conn *conn);

/** The connection's namespace (borrowed, lives as long as `conn`). */
JB_EXTERN const char *jb_sync_namespace(const jb_sync_conn *conn);

/**
 * Write the key "NS:piece" (the connection's namespace, ':', piece), as
 * taskflow names its keys, into buf (NUL-terminated), e.g.
 * "taskflow:listings" or "taskflow:<uuid>.owned". Returns the key's length.
 * Errors: JB_EINVAL if piece is NULL or empty or buf (of `size` bytes) is
 * too small.
 */
JB_EXTERN int jb_sync_key(char *buf, size_t size, const jb_sync_conn *conn,
                          const char *piece);

/* ---------------------------------------------------- the authority rule */

/**
 * Let board handle `b` decide its Redis-decided jobs (jb_job_remote())
 * through connection `c`: from now on a claim, abandon, consume, trash or
 * extend of such a job on `b` (claim-next included) runs our Redis script
 * first, and only when Redis agrees is the same change recorded in the
 * local board, in one write transaction. When Redis refuses (claimed
 * elsewhere: JB_ECLAIMED naming the owner Redis holds; JB_ENOTOWNER;
 * JB_ENOTFOUND) or cannot be reached (JB_EOFFLINE "backend unavailable")
 * nothing local changes. Jobs decided locally (never published) are not
 * affected and never touch Redis. Without an attachment every operation of
 * a Redis-decided job fails with JB_EOFFLINE and changes nothing.
 *
 * Also through Redis on an attached handle: jb_job_cancel of a
 * Redis-decided job (Redis takes it out of its listings only if unclaimed
 * there, or forced; jb_board_flush cancels the unclaimed ones so), and a
 * post with a unique key, which first reserves the key in the namespace's
 * NS:unique (JB_EEXISTS and Redis's holder when another live job holds
 * it on any board; Redis away: the post is accepted and the key decided
 * at publication).
 *
 * The claim ids of the claims made through `c` are kept in memory with the
 * connection, so releases of them are checked against the claim itself;
 * other claims are released by owner name, as taskflow does. claim-next
 * walks the jobs in its usual order and claims each Redis-decided one
 * through Redis, passing over those Redis refuses; when Redis is away it
 * skips them and claims local jobs only. jb_claim_next_many claims the
 * Redis-decided jobs it meets in a row in one round trip (one script call,
 * each job still decided on its own); a call whose reply was lost leaves
 * its claims unrecorded here, their claim ids kept: claiming those jobs
 * again through `c` records the ones that ran in Redis, and so does the
 * board's replicator. JOBBOARD_SYNC_CLAIM_MANY=0 in the environment when
 * attaching makes it claim them one by one. Fencing tokens returned for a
 * Redis-decided claim are the local board's.
 *
 * `c` must outlive the attachment (jb_sync_detach, or jb_board_close of
 * `b`), is used from the threads that use `b` (one at a time, see above),
 * and one connection may serve several handles. Errors: JB_EINVAL (NULL),
 * JB_EOFFLINE (the scripts could not be registered), JB_ENOMEM.
 */
JB_EXTERN int jb_sync_attach(jb_board *b, jb_sync_conn *c);

/** Undo jb_sync_attach on `b` (NULL or not attached: nothing happens). */
JB_EXTERN void jb_sync_detach(jb_board *b);

/**
 * Publish job `uuid` of board `b` to Redis through `c` (the minimal
 * publisher): mark it Redis-decided in the local board, then post its
 * posting, unchanged, under a new sequence number (with its owner and what
 * is left of its lease when it is claimed locally). It may be called again
 * after a failure: a post that already ran is recognised (not posted
 * twice). From the mark on, its ownership is decided by Redis (see
 * jb_sync_attach); until the post has run, claims of it are refused. A job
 * with a unique key takes the key in Redis with the post; when another
 * live job holds it there, the job is not published but sent to the
 * board's dead letters (cause JB_DEAD_BURIED, its reason naming the key
 * and the holder): JB_EEXISTS.
 * Errors: JB_EINVAL, JB_ENOTFOUND (not on the board), JB_EEXISTS,
 * JB_EOFFLINE, JB_EIO, JB_ENOMEM.
 */
JB_EXTERN int jb_sync_publish(jb_board *b, jb_sync_conn *c, const char *uuid);

/* ------------------------------------------------------------ replicator */

/*
 * The replicator (docs/DESIGN-NOTES.md, "The authority rule" and "The
 * replicator"): one per board at a time, a thread in any process that
 * opts in (jb_sync_replicator_start) or the `jobboard sync` daemon. The
 * processes that start one on a board elect one of them through a lock
 * file in the board directory (`sync.lock`, flock); the others stand by
 * and take over within a second when the holder exits or dies.
 *
 * The elected one:
 *  - publishes every job decided locally, oldest first (board sequence),
 *    under a new number from the shared NS:sequence counter, with its
 *    owner and expiry when it was claimed before publication; a job
 *    consumed or trashed before it was published is never published.
 *    While Redis is away local posts wait in the board (decided locally)
 *    and go out in order when it returns;
 *  - pulls remote postings, ownership and removals into the board (see
 *    core/sync_hook.h), at once on our scripts' change notices
 *    (NS:notices) and by polling every poll_ms for taskflow peers, which
 *    publish none. A poll reads NS:sequence, the listings' length and the
 *    owner keys of the Redis-decided jobs on the board; the listings hash
 *    is read only when the first two say jobs came or went;
 *  - keeps process-bound claims on Redis-decided jobs alive: their owner
 *    keys get an expiry of keepalive_ms, refreshed every third of it while
 *    the holder process lives, so a dead host's claims lapse in Redis by
 *    themselves, and a dead holder's claim is abandoned in Redis;
 *  - reconnects with exponential back-off and jitter (backoff_min_ms
 *    doubling up to backoff_max_ms, each wait drawn from [d/2, d]).
 * It records its state (see jb_sync_status) in the board directory's
 * `sync.status` file, which jb_sync_status_read reads from any process.
 */

/** Options of jb_sync_replicator_start. Start from
 *  JB_SYNC_REPLICATOR_OPTIONS_INIT (every zero field means its default). */
typedef struct {
  /** The connection's options (url required; ns NULL: the default). */
  jb_sync_options conn;
  /** Longest time before a change made by a taskflow peer (which sends
   *  no notice) is seen, in ms. 0: the default, 1000. */
  int poll_ms;
  /** Reconnect back-off bounds in ms. 0: defaults 100 and 30000. */
  int backoff_min_ms;
  int backoff_max_ms;
  /** Expiry given in Redis to process-bound claims (refreshed every third
   *  of it). 0: the default, 30000. */
  int keepalive_ms;
  /** Called from the replicator's thread for each line worth logging
   *  (connected, lost, published, errors). level: 0 info, 1 warning, 2
   *  error. NULL: nothing is logged. */
  void (*log)(void *ctx, int level, const char *line);
  void *log_ctx;
  /** How often the board is compared with Redis in full (every listing
   *  and its owner: one HGETALL and a pipelined GET and PTTL per listing)
   *  besides the comparisons at connect, after posts and after Redis lost
   *  its data; what differs is repaired and counted. In ms; 0: the
   *  default, 30000; negative: never on schedule. */
  int verify_ms;
} jb_sync_replicator_options;

/** The defaults (conn.url NULL: set it). */
#define JB_SYNC_REPLICATOR_OPTIONS_INIT                                        \
  { JB_SYNC_OPTIONS_INIT, 0, 0, 0, 0, NULL, NULL, 0 }

/** A running replicator (opaque). */
typedef struct jb_sync_replicator jb_sync_replicator;

/**
 * Start a replicator thread for the board at `path` (it opens its own
 * handle with `bopts`, NULL for the defaults). It returns at once: the
 * thread stands by until elected, and then connects and syncs. Errors
 * known before the thread starts: JB_EINVAL (bad URL, namespace or
 * option), JB_ENOTFOUND (no board), JB_ECLAIMED (the board is synced with
 * another namespace: the message names both), JB_ENOMEM, JB_EIO.
 */
JB_EXTERN int jb_sync_replicator_start(jb_sync_replicator **out,
                                       const char *path,
                                       const jb_board_options *bopts,
                                       const jb_sync_replicator_options *o);

/** Stop the thread (within about a command timeout), give up the lock,
 *  close and free. NULL is fine. */
JB_EXTERN void jb_sync_replicator_stop(jb_sync_replicator *r);

/** The sync state, as `jobboard status` shows it. */
typedef struct {
  bool running;        /**< a replicator holds the board's lock */
  int pid;             /**< its process id (0 if none) */
  bool connected;      /**< it is connected to Redis */
  char url[512];       /**< the Redis URL, password replaced by "***" */
  char ns[JB_SYNC_NAMESPACE_MAX + 1]; /**< the namespace */
  uint64_t unpublished; /**< jobs decided locally, waiting to be published */
  uint64_t lag_events; /**< change-log events not yet handled */
  double lag_seconds;  /**< age of the oldest job waiting to be published
                            (0 when none) */
  uint64_t published;  /**< jobs published since it started */
  uint64_t pulled;     /**< remote changes brought in since it started */
  int64_t last_sync_us; /**< when it last finished a pass (UTC us) */
  int64_t last_error_us; /**< when the last error happened (0: none) */
  char last_error[512]; /**< the last error's message ("" when none) */
  int64_t last_full_us; /**< when the board and Redis were last compared in
                             full (UTC us; 0: never) */
  uint64_t last_full_changed; /**< jobs that comparison changed here */
  int64_t last_full_took_us; /**< how long it took (reading Redis and
                                  writing the board) */
  char last_full_why[16]; /**< what made it: "connect", "posts" (NS:sequence
                               moved), "schedule", "data loss" (Redis lost
                               its data: NS:epoch missing or changed, or
                               NS:sequence went back) */
  uint64_t repaired;   /**< jobs found different by comparisons on
                            schedule or after a data loss (divergences the
                            notices and polls had not brought), since the
                            replicator started */
  uint64_t data_losses; /**< times Redis was found to have lost its data */
  int64_t last_data_loss_us; /**< the last time (UTC us; 0: never) */
  int verify_ms;       /**< the comparison schedule (ms; <= 0: none) */
  int poll_ms;         /**< its poll interval (ms) */
  char server[160];    /**< the server it is connected to, "" when not
                            connected: "127.0.0.1:6380" (or "unix socket
                            /path"), and for a redis-sentinel:// URL the
                            master the sentinels named, "127.0.0.1:6380
                            (master mymaster)" */
} jb_sync_status;

/** The state of replicator `r` (of this process), written to `*st`. */
JB_EXTERN int jb_sync_replicator_status_read(jb_sync_status *st,
                                             jb_sync_replicator *r);

/**
 * The sync state of board `b` as any process sees it: what its
 * replicator last wrote to `sync.status` (running false when no process
 * holds the lock), with unpublished and lag_seconds counted from the board
 * now. Errors: JB_EIO, JB_ENOMEM (no replicator is not an error).
 */
JB_EXTERN int jb_sync_status_read(jb_sync_status *st, jb_board *b);

/** What jb_sync_compare found. */
typedef struct {
  uint64_t redis_listed;  /**< jobs Redis lists (NS:listings) */
  uint64_t board_remote;  /**< Redis-decided jobs on the board (published) */
  uint64_t missing_here;  /**< listed in Redis, not on the board */
  uint64_t extra_here;    /**< on the board as Redis-decided, not listed */
  uint64_t owner_differs; /**< on both, claimed by another owner (or on one
                               side only) */
} jb_sync_verify_result;

/** Called once per job that differs: its uuid and what differs. */
typedef void (*jb_sync_diff_cb)(const char *uuid, const char *what,
                                void *payload);

/**
 * Compare board `b` with what Redis lists now (connection `c`, the
 * board's namespace): every listing and its owner against the board's
 * Redis-decided jobs and their claims. A job that differs is read again
 * on both sides after `settle_ms` (0..60000; a change under way, such as
 * a claim recorded here a moment after Redis granted it, is not a
 * divergence), and only those that still differ are counted in `*out`
 * and passed to `cb` (may be NULL). Nothing is written, here or in Redis (the
 * replicator repairs: see jb_sync_replicator_options.verify_ms). Cost:
 * one HGETALL and a pipelined GET and PTTL per listing, and one read of
 * the board. Errors: JB_EINVAL, JB_EOFFLINE, JB_EIO, JB_ENOMEM.
 */
JB_EXTERN int jb_sync_compare(jb_sync_verify_result *out, jb_board *b,
                              jb_sync_conn *c, int settle_ms,
                              jb_sync_diff_cb cb, void *payload);

/**
 * Which Redis and namespace board `b` is synced with. url / ns: what the
 * caller gives (NULL: not given). The board remembers both the first time
 * they are given (settings sync.url and sync.namespace): given values
 * replace the remembered URL (a server may move) but never the namespace:
 * another namespace than the remembered one is refused (JB_ECLAIMED,
 * naming both). On JB_OK *url_out and *ns_out (free() them) are the ones
 * to use; *url_out NULL means none is known (the board is not synced).
 *
 * Passwords are never written into the board (its data file is readable
 * by every user who may read the board): the board remembers the URL
 * without its password (a user name is kept), and the password goes to
 * the file `sync.credentials` in the board directory, mode 0600, owned by
 * the calling process's user. A URL given without a password leaves that
 * file as it is; so does a URL given by another user than the file's
 * owner (that user's password is used, not remembered). A URL that an
 * older release remembered with its password is rewritten without it
 * (the password moved to the file, unless one exists already) by any
 * call of this function. (LMDB may keep the old bytes in a free page of
 * the data file until the page is reused: see docs/jobboard.1, FILES.)
 *
 * *url_out is the URL to connect with, its password taken from, in this
 * order: the given URL; the environment variable JOBBOARD_REDIS_PASSWORD
 * (never written anywhere); the credentials file; a password an older
 * release remembered in the URL. Besides the codes below, JB_EINVAL when
 * the credentials file cannot be read (another user's), is readable or
 * writable by others than its owner, or is empty, or when the URL names a
 * user and no password is found; JB_EIO when the file cannot be written.
 * A user without a password is accepted in `url` ("redis://alice@host"),
 * for a password kept in the file or the environment.
 */
JB_EXTERN int jb_sync_board_configure(char **url_out, char **ns_out,
                                      jb_board *b, const char *url,
                                      const char *ns);

/**
 * What jb_sync_board_configure would give, with nothing written: the URL to
 * connect with (`url`, else the remembered one, with its password found
 * as above) and the namespace (`ns`, else the remembered one, else
 * JB_SYNC_NAMESPACE_DEFAULT). Errors: as jb_sync_board_configure's
 * (JB_ECLAIMED for another namespace than the board's).
 */
JB_EXTERN int jb_sync_board_lookup(char **url_out, char **ns_out,
                                   jb_board *b, const char *url,
                                   const char *ns);

/** What jb_sync_board_detach did. */
typedef struct {
  char url[1024];  /**< the Redis URL the board was synced with (no
                        password) */
  char ns[JB_SYNC_NAMESPACE_MAX + 1]; /**< and its namespace */
  size_t jobs;     /**< jobs Redis decided, now decided here */
  size_t released; /**< their claims released (the jobs ready again):
                        claims not bound to a live process of this host */
  size_t kept;     /**< their claims kept as local claims (bound to a live
                        process of this host: a `jobboard work` runner) */
  size_t letters;  /**< dead letters of such jobs, now local ones */
} jb_sync_detach_result;

/**
 * Detach board `b` from Redis: the board forgets its Redis URL, namespace,
 * password (the sync.credentials file) and sync state, and keeps every
 * job as a job decided here, in one write transaction (a crash leaves it
 * either still synced or detached in full):
 *  - each job Redis decided (published from here or posted elsewhere)
 *    becomes a local job, after the jobs already decided here, in the
 *    order it had; its claim is kept when it is bound to a live process
 *    of this host (the runner finishes it here), else released (the job
 *    is ready again, event ABANDONED, no attempt counted);
 *  - the dead letters of such jobs stay dead letters, now local ones;
 *  - the board's setting "sync.detached" gets one line: when, from which
 *    URL and namespace, and the counts (jobboard status shows the last).
 * Redis is not contacted: the jobs stay in Redis too, where other boards
 * and taskflow may still run them. After it the board may be synced
 * again, with any namespace (jb_sync_board_configure).
 * Errors: JB_ENOTFOUND (not synced), JB_ECLAIMED (a replicator runs on
 * the board, `jobboard sync`: stop it first; nothing changed),
 * JB_EREADONLY, JB_EFULL, JB_EIO, JB_ECORRUPT.
 */
JB_EXTERN int jb_sync_board_detach(jb_sync_detach_result *out, jb_board *b);

/**
 * The record of board `b`'s detaches (jb_sync_board_detach), oldest
 * first, one line each ("WHEN detached from URL namespace NS: counts"),
 * into *text_out (free() it), or NULL when the board was never detached.
 * Errors: JB_EINVAL, JB_EIO, JB_ENOMEM.
 */
JB_EXTERN int jb_sync_board_detached(char **text_out, jb_board *b);

/* ------------------------------------------------------------ deprecated */

/* The names of 0.1, kept for one release (see jobboard.h). */
#ifndef JB_NO_DEPRECATED
typedef void (*jb_sync_diff_fn)(void *ctx, const char *uuid,
                                const char *what)
    JB_DEPRECATED("jb_sync_diff_cb");
JB_DEPRECATED("JB_SYNC_OPTIONS_INIT")
JB_EXTERN void jb_sync_options_init(jb_sync_options *opts);
JB_DEPRECATED("JB_SYNC_REPLICATOR_OPTIONS_INIT")
JB_EXTERN void jb_sync_replicator_options_init(jb_sync_replicator_options *o);
JB_DEPRECATED("jb_sync_replicator_status_read(st, r)")
JB_EXTERN int jb_sync_replicator_status(jb_sync_replicator *r,
                                        jb_sync_status *st);
/* `fn` is called with the context first, as 0.1 did. */
JB_DEPRECATED("jb_sync_compare (out first; the callback's payload last)")
JB_EXTERN int jb_sync_verify(jb_board *b, jb_sync_conn *c, int settle_ms,
                             jb_sync_verify_result *res,
                             void (*fn)(void *ctx, const char *uuid,
                                        const char *what),
                             void *ctx);
JB_DEPRECATED("jb_sync_board_configure(url_out, ns_out, b, url, ns)")
JB_EXTERN int jb_sync_board_config(jb_board *b, const char *url,
                                   const char *ns, char **url_out,
                                   char **ns_out);
JB_DEPRECATED("jb_sync_board_lookup(url_out, ns_out, b, url, ns)")
JB_EXTERN int jb_sync_board_resolve(jb_board *b, const char *url,
                                    const char *ns, char **url_out,
                                    char **ns_out);
#endif /* JB_NO_DEPRECATED */

#ifdef __cplusplus
}
#endif

#endif
