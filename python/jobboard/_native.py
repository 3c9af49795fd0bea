"""The C API of libjobboard (and libjbsync), declared for cffi's ABI mode.

Only declarations live here: every behaviour is the C library's.  cffi
releases the GIL around each call into C, so Python threads that wait on
or write to a board do not hold up one another.
"""

import ctypes.util
import os
import threading

import cffi

CDEF = r"""
/* The header's constants that the Python side uses (test_header_match
 * compares each with the header's value). */
#define JB_UUID_STRLEN 37
#define JB_WHO_MAX 255
#define JB_NAME_MAX 1024
#define JB_UNIQUE_MAX 255
#define JB_REASON_MAX 1024
#define JB_DELAY_MAX_MS 315360000000
#define JB_LEASE_MAX_MS 2592000000
#define JB_BATCH_MAX 4096
#define JB_SCHEDULE_NAME_MAX 200
#define JB_SCHEDULE_EVERY_MIN_MS 1000
#define JB_BOARD_OPTIONS_VERSION 3
#define JB_FLUSH_INTERVAL_DEFAULT_MS 1000
#define JB_POST_VERSION 3
#define JB_POST_EXPIRES_DEAD 1
#define JB_CLAIM_OPTIONS_VERSION 3
#define JB_CLAIM_NAMES_MAX 256
#define JB_RETRY_POLICY_VERSION 1
#define JB_RETRY_OPTIONS_VERSION 1
#define JB_CONSUME_OPTIONS_VERSION 1
#define JB_SCHEDULE_VERSION 2
#define JB_HISTORY_OPTIONS_VERSION 2
#define JB_STATS_VERSION 1
#define JB_STATS_BY_NAME 1
#define JB_STATS_NO_WALK 2
#define JB_ITER_OPTIONS_VERSION 1
#define JB_ITER_READY 1
#define JB_ITER_CLAIMED 2
#define JB_ITER_DELAYED 4
#define JB_ITER_CURSOR_MAX 48
#define JB_OPEN_CREATE 1
#define JB_OPEN_READONLY 2
#define JB_ONLY_UNCLAIMED 1
#define JB_CHECK_RECORD 1
#define JB_CLAIM_BIND_PROCESS 1
#define JB_CLAIM_NAMES_IN_ORDER 2
#define JB_HISTORY_OLDEST_FIRST 1
#define JB_RETRY_BACKOFF 1
#define JB_RETRY_DEAD 2
#define JB_REQUEUE_KEEP_ATTEMPTS 1
#define JB_RETAIN_HISTORY_MAX 1
#define JB_RETAIN_HISTORY_AGE 2
#define JB_RETAIN_DEAD_MAX 4
#define JB_RETAIN_DEAD_AGE 8
#define JB_RETAIN_HISTORY_MAX_DEFAULT 10000
#define JB_RETAIN_DEAD_MAX_DEFAULT 10000
#define JB_RETAIN_PRUNE_MAX 64
#define JB_CANCEL_FORCE 1
#define JB_SCHEDULE_REPLACE 1
#define JB_EXPIRY_NOT_CLAIMED 0
#define JB_EXPIRY_NONE 1
#define JB_EXPIRY_AT 2
#define JB_OUTCOME_SUCCESS 0
#define JB_OUTCOME_FAILURE 1
#define JB_STATS_UNCLAIMED 0
#define JB_STATS_CLAIMED 1
#define JB_STATS_DELAYED 2
#define JB_STATS_STATES 3
#define JB_READONLY_ASKED 1
#define JB_READONLY_NOLOCK 2

typedef struct jb_board jb_board;
typedef struct jb_job jb_job;
typedef struct jb_iter jb_iter;
typedef struct jb_history_iter jb_history_iter;

typedef int jb_priority;
typedef int jb_state;
typedef int jb_durability;
typedef int jb_event_type;
typedef int jb_expiry;
typedef int jb_outcome;
typedef int jb_end;
typedef int jb_dead_cause;
typedef int jb_catchup;
typedef int jb_overlap;

const char *jb_version(int *major, int *minor, int *patch);
const char *jb_strerror(int code);
const char *jb_errmsg(void);
const char *jb_priority_name(jb_priority priority);
int jb_priority_parse(jb_priority *out, const char *name);
const char *jb_state_name(jb_state state);
const char *jb_durability_name(jb_durability durability);
int jb_durability_parse(jb_durability *out, const char *name);

typedef struct {
  unsigned int version;
  unsigned int flags;
  jb_durability durability;
  size_t map_size;
  size_t max_posting;
  size_t history_max;
  int64_t history_max_age_ms;
  uint64_t log_keep;
  int64_t log_max_age_ms;
  int64_t flush_interval_ms;
} jb_board_options;

typedef struct {
  int on;
  int64_t flush_interval_ms;
  uint64_t flushes;
  uint64_t recorded_txnid;
  uint64_t latest_txnid;
} jb_flush_info;
int jb_board_sync(jb_board *board);
int jb_board_set_flush_interval(jb_board *board, int64_t ms);
int jb_board_flush_info(jb_flush_info *out, jb_board *board);

int jb_board_open(jb_board **out, const char *path,
                  const jb_board_options *opts);
void jb_board_close(jb_board *board);
const char *jb_board_path(const jb_board *board);
int jb_board_readonly(const jb_board *board);
int jb_board_count(size_t *out, jb_board *board, unsigned int flags);

void jb_job_free(jb_job *job);
const char *jb_job_uuid(const jb_job *job);
const char *jb_job_name(const jb_job *job);
jb_priority jb_job_priority(const jb_job *job);
uint64_t jb_job_sequence(const jb_job *job);
int64_t jb_job_created(const jb_job *job);
int64_t jb_job_modified(const jb_job *job);
jb_state jb_job_state(const jb_job *job);
const char *jb_job_owner(const jb_job *job);
uint64_t jb_job_token(const jb_job *job);
int64_t jb_job_lease_expires(const jb_job *job);
int jb_job_holder_pid(const jb_job *job);
bool jb_job_holder_alive(const jb_job *job);
bool jb_job_remote(const jb_job *job);
const char *jb_job_book_name(const jb_job *job);
const char *jb_job_book_uuid(const jb_job *job);
const void *jb_job_details(const jb_job *job, size_t *len);
const void *jb_job_posting(const jb_job *job, size_t *len);
int64_t jb_job_not_before(const jb_job *job);
uint32_t jb_job_attempts(const jb_job *job);
uint32_t jb_job_max_attempts(const jb_job *job);
int64_t jb_job_time_limit(const jb_job *job);
const char *jb_job_unique_key(const jb_job *job);
const char *jb_job_last_reason(const jb_job *job);
bool jb_job_progress(const jb_job *job, double *percent, const char **message,
                     int64_t *at_us);
uint32_t jb_job_snoozes(const jb_job *job);
uint32_t jb_job_max_snoozes(const jb_job *job);
int64_t jb_job_deadline(const jb_job *job);

typedef struct {
  unsigned int version;
  const char *name;
  const void *details;
  size_t details_len;
  jb_priority priority;
  const char *book_name;
  const char *book_uuid;
  int64_t not_before_us;
  int64_t delay_ms;
  uint32_t max_attempts;
  int64_t time_limit_ms;
  int64_t backoff_ms;
  int64_t backoff_max_ms;
  const char *unique_key;
  uint32_t max_snoozes;
  int64_t expires_ms;
  unsigned int flags;
} jb_post;

int jb_job_post(char uuid_out[37], jb_board *board, const jb_post *post);
int jb_job_post_batch(char (*uuids_out)[37], jb_board *board,
                      const jb_post *posts, size_t n);
int jb_post_check(const jb_post *post, size_t max_posting);
int jb_job_get(jb_job **out, jb_board *board, const char *uuid);

typedef struct {
  unsigned int version;
  unsigned int flags;
  int64_t lease_ms;
  int64_t wait_ms;
  const char *const *names;
  size_t n_names;
} jb_claim_options;

int jb_claim(uint64_t *token_out, jb_board *board, const char *uuid,
             const char *who, const jb_claim_options *opts);
int jb_claim_next(char uuid_out[37], jb_job **job_out, uint64_t *token_out,
                  jb_board *board, const char *who,
                  const jb_claim_options *opts);
int jb_extend(jb_board *board, const char *uuid, const char *who,
              uint64_t token, int64_t lease_ms);
int jb_progress(jb_board *board, const char *uuid, const char *who,
                uint64_t token, double percent, const char *message);
int jb_job_expires_in(jb_expiry *out, int64_t *ms_out, jb_board *board,
                      const char *uuid);
int jb_abandon(jb_board *board, const char *uuid, const char *who,
               uint64_t token);
int jb_snooze(jb_board *board, const char *uuid, const char *who,
              uint64_t token, int64_t delay_ms);
int jb_trash(jb_board *board, const char *uuid, const char *who,
             uint64_t token);
int jb_job_find_owner(char out[256], jb_board *board, const char *uuid);

typedef struct {
  unsigned int version;
  uint32_t max_attempts;
  int64_t backoff_ms;
  int64_t backoff_max_ms;
} jb_retry_policy;
int jb_board_get_retry_policy(jb_retry_policy *out, jb_board *board);
int jb_board_set_retry_policy(jb_board *board, const jb_retry_policy *policy);
typedef struct {
  int64_t history_max;
  int64_t history_max_age_ms;
  int64_t dead_max;
  int64_t dead_max_age_ms;
} jb_retention;
int jb_board_get_retention(jb_retention *stored, jb_retention *effective,
                           jb_board *board);
int jb_board_set_retention(jb_board *board, const jb_retention *r,
                           unsigned int fields);
typedef struct {
  unsigned int version;
  unsigned int flags;
  uint64_t token;
  const char *reason;
  int64_t delay_ms;
} jb_retry_options;
typedef struct {
  bool dead;
  int64_t due_us;
  uint32_t attempts;
} jb_retry_result;
int jb_retry(jb_retry_result *out, jb_board *board, const char *uuid,
             const char *who, const jb_retry_options *opts);

const char *jb_dead_cause_name(jb_dead_cause cause);
typedef struct {
  char uuid[37];
  jb_dead_cause cause;
  const char *name;
  jb_priority priority;
  uint64_t sequence;
  const char *owner;
  uint32_t attempts;
  uint32_t max_attempts;
  const char *reason;
  const char *unique_key;
  int64_t posted_us;
  int64_t dead_us;
  const void *details;
  size_t details_len;
  const void *posting;
  size_t posting_len;
} jb_dead_letter;
void jb_dead_free(jb_dead_letter *letter);
int jb_dead_get(jb_dead_letter **out, jb_board *board, const char *uuid);
int jb_dead_count(size_t *out, jb_board *board);
typedef int (*jb_dead_cb)(const jb_dead_letter *letter, void *payload);
int jb_dead_foreach(jb_board *board, jb_dead_cb cb, void *payload);
int jb_dead_requeue(jb_board *board, const char *uuid, unsigned int flags);
int jb_dead_purge(size_t *out, jb_board *board, int64_t before_us);
int jb_dead_remove(jb_board *board, const char *uuid);
int jb_dead_repost(jb_board *board, const char *uuid, unsigned int flags,
                   char new_uuid[37]);

int jb_job_cancel(jb_board *board, const char *uuid, unsigned int flags);
int jb_job_run_now(jb_board *board, const char *uuid);
int jb_board_cancel_unclaimed(size_t *out, jb_board *board);

const char *jb_catchup_name(jb_catchup catch_up);
const char *jb_overlap_name(jb_overlap overlap);
typedef struct {
  unsigned int version;
  const char *name;
  int64_t every_ms;
  const char *cron;
  int64_t start_us;
  jb_catchup catch_up;
  jb_post job;
  int64_t next_us;
  int64_t last_run_us;
  uint64_t runs;
  int64_t created_us;
  const char *tz;
  jb_overlap overlap;
  uint64_t skipped;
} jb_schedule;
int jb_schedule_add(jb_board *board, const jb_schedule *sched,
                    unsigned int flags);
int jb_schedule_remove(jb_board *board, const char *name);
int jb_schedule_get(jb_schedule **out, jb_board *board, const char *name);
void jb_schedule_free(jb_schedule *sched);
typedef int (*jb_schedule_cb)(const jb_schedule *sched, void *payload);
int jb_schedule_foreach(jb_board *board, jb_schedule_cb cb, void *payload);
int jb_schedule_tick(size_t *posted, jb_board *board, int64_t now_us);
int jb_schedule_next_due(int64_t *out, jb_board *board);
int jb_schedule_wait(jb_board *board, int64_t timeout_ms);
int jb_job_get_state(jb_state *out, jb_board *board, const char *uuid);

typedef struct {
  const char *name;
  const char *kind;
  const void *meta;
  size_t meta_len;
  int pid;
  int64_t registered_us;
} jb_entity;
typedef int (*jb_entity_cb)(const jb_entity *entity, void *payload);
int jb_entity_register(jb_board *board, const char *name, const char *kind,
                       const void *meta, size_t meta_len);
int jb_entity_unregister(jb_board *board, const char *name);
int jb_entity_list(jb_board *board, jb_entity_cb cb, void *payload);

int jb_board_wait(jb_board *board, unsigned int flags, int64_t timeout_ms);
int jb_board_wait_names(jb_board *board, unsigned int flags,
                        const char *const *names, size_t n_names,
                        int64_t timeout_ms, size_t *count_out);
int jb_board_interrupt(jb_board *board);
int jb_board_interrupt_reset(jb_board *board);

typedef struct {
  char uuid[37];
  jb_end end;
  const char *name;
  jb_priority priority;
  uint64_t sequence;
  const char *owner;
  int64_t posted_us;
  int64_t claimed_us;
  int64_t completed_us;
  const void *result;
  size_t result_len;
  const char *reason;
  uint64_t history_seq;
  const void *details;
  size_t details_len;
  const char *book_name;
  const char *book_uuid;
  uint32_t attempts;
  bool has_result;
  const void *posting;
  size_t posting_len;
  uint32_t snoozes;
} jb_completion;
const char *jb_end_name(jb_end end);
void jb_completion_free(jb_completion *completion);
typedef struct {
  unsigned int version;
  jb_outcome outcome;
  const void *result;
  size_t result_len;
} jb_consume_options;
int jb_consume(jb_board *board, const char *uuid, const char *who,
               uint64_t token, const jb_consume_options *opts);
int jb_job_completion(jb_completion **out, jb_board *board, const char *uuid);
int jb_job_wait_done(jb_completion **out, jb_board *board, const char *uuid,
                     int64_t timeout_ms);
int jb_history_count(size_t *out, jb_board *board);

int jb_claim_next_many(size_t *n_out, char (*uuids_out)[37],
                       uint64_t *tokens_out, jb_job **jobs_out,
                       jb_board *board, const char *who,
                       const jb_claim_options *opts, size_t max);
int jb_consume_and_claim_next(
    char next_uuid_out[37], jb_job **next_job_out, uint64_t *next_token_out,
    jb_board *board, const char *uuid, const char *who, uint64_t token,
    const jb_consume_options *done, const jb_claim_options *next);
typedef struct {
  const char *uuid;
  const char *who;
  uint64_t token;
  jb_outcome outcome;
  const void *result;
  size_t result_len;
} jb_consume_item;
typedef void (*jb_item_cb)(size_t index, int status, const char *message,
                           void *payload);
int jb_consume_many(int *status_out, jb_board *board,
                    const jb_consume_item *items, size_t n,
                    jb_item_cb cb, void *payload);
typedef struct {
  unsigned int version;
  uint32_t ends;
  const char *name;
  const char *name_prefix;
  int64_t since_us;
  int64_t until_us;
  unsigned int flags;
} jb_history_options;
int jb_history_query(jb_history_iter **out, jb_board *board,
                     const jb_history_options *opts);
int jb_history_next(const jb_completion **out, jb_history_iter *it);
void jb_history_close(jb_history_iter *it);

typedef struct {
  uint64_t seq;
  jb_event_type type;
  char uuid[37];
  char owner[256];
  int64_t time_us;
  uint64_t job_seq;
  jb_priority priority;
  uint64_t lost;
} jb_event;
const char *jb_event_type_name(jb_event_type type);
int jb_log_bounds(uint64_t *first_out, uint64_t *next_out, jb_board *board);
int jb_log_read(jb_event *events, size_t *n_out, uint64_t *first_out,
                jb_board *board, uint64_t from, size_t max);
int jb_log_wait(jb_event *events, size_t *n_out, uint64_t *first_out,
                jb_board *board, uint64_t from, size_t max,
                int64_t timeout_ms);
int jb_log_progress(double *percent_out, char *message_out, jb_board *board,
                    uint64_t seq);

int jb_name_matches(const char *const *names, size_t n, const char *name);
int jb_pause(jb_board *board, const char *name);
int jb_resume(jb_board *board, const char *name);
int jb_set_cap(jb_board *board, const char *name, uint32_t max_claims);
int jb_cap_prefixes(jb_board *board,
                    int (*visit)(const char *prefix, uint32_t max_claims,
                                 void *arg),
                    void *arg);
int jb_set_rate(jb_board *board, const char *name, uint32_t count,
                uint64_t period_ms);
int jb_rate_prefixes(jb_board *board,
                     int (*visit)(const char *prefix, uint32_t count,
                                  uint64_t period_ms, void *arg),
                     void *arg);
typedef struct {
  const char *name;
  int paused;
  int64_t changed_us;
  size_t ready;
  uint32_t cap;
  uint32_t held;
  int cap_each;
  uint32_t rate;
  uint64_t period_ms;
  int64_t next_token_us;
  int rate_each;
} jb_queue_info;
int jb_queues_foreach(jb_board *board,
                      int (*visit)(const jb_queue_info *q, void *arg),
                      void *arg, int *board_paused);

int jb_iter_open(jb_iter **out, jb_board *board, unsigned int flags);
typedef struct {
  unsigned int version;
  unsigned int flags;
  const char *after;
  const char *name;
  unsigned int where;
  unsigned int batch;
} jb_iter_options;
int jb_iter_open_opts(jb_iter **out, jb_board *board,
                      const jb_iter_options *opts);
int jb_iter_cursor(const jb_iter *iter, char out[48]);
int jb_iter_next(const jb_job **out, jb_iter *iter);
void jb_iter_close(jb_iter *iter);

typedef struct {
  char *name;
  size_t jobs[3];
} jb_stats_name;
typedef struct {
  unsigned int version;
  unsigned int flags;
  int64_t now_us;
  size_t jobs;
  size_t by_state[3];
  size_t by_priority[5][3];
  size_t delayed_due;
  int64_t oldest_unclaimed_us;
  size_t dead_letters;
  size_t claims_bound;
  size_t claims_leased;
  size_t claims_plain;
  size_t lapsing_lease;
  size_t lapsing_holder;
  size_t history;
  uint64_t completed_1m[8];
  uint64_t completed_1h[8];
  uint64_t log_first;
  uint64_t log_next;
  uint64_t events_total[16];
  uint64_t ends_total[8];
  uint64_t map_size;
  uint64_t page_size;
  uint64_t pages_used;
  unsigned int readers;
  unsigned int readers_max;
  jb_stats_name *names;
  size_t n_names;
} jb_stats;
int jb_stats_read(jb_stats *out, jb_board *board);
void jb_stats_clear(jb_stats *st);

typedef struct {
  size_t jobs;
  size_t ready;
  size_t claimed;
  size_t log_events;
  size_t trashed;
  size_t quarantined;
  size_t moved;
  size_t problems;
  size_t history;
} jb_check_stats;
typedef void (*jb_check_cb)(const char *line, void *payload);
int jb_board_check(jb_check_stats *stats, jb_board *board, jb_check_cb cb,
                   void *payload);
int jb_board_check_ex(jb_check_stats *stats, jb_board *board,
                      unsigned int flags, jb_check_cb cb, void *payload);
typedef struct {
  int64_t time_us;
  int64_t duration_us;
  uint64_t problems;
  uint64_t moved;
  uint64_t jobs;
} jb_check_record;
int jb_board_last_check(jb_check_record *out, jb_board *board);

typedef int jb_salvage_kind;
typedef struct {
  size_t copied;
  size_t orphaned;
  size_t undecodable;
  size_t completed;
  size_t bad_pages;
  size_t bad_tables;
  size_t history;
} jb_salvage_stats;
typedef void (*jb_salvage_cb)(jb_salvage_kind kind, const char *line,
                              void *payload);
int jb_board_salvage(jb_salvage_stats *stats, const char *src,
                     const char *dst, jb_salvage_cb cb, void *payload);
"""

# The functions of jobboard.h left out of CDEF, and why
# (test_header_match fails on a header function neither declared nor here).
# The deprecated names at the end of the header are not counted: the
# binding calls only the current ones.
UNBOUND = {
    "jb_subscribe": "Board.watch follows the change log with jb_log_wait:"
                    " a thread of the library calling into Python would"
                    " add a thread per subscription that may still run at"
                    " interpreter exit",
    "jb_unsubscribe": "with jb_subscribe",
}


# libjbsync: only what a synced board needs (connect, attach, the URL the
# board remembers).
SYNC_CDEF = r"""
typedef struct jb_sync_conn jb_sync_conn;
typedef struct {
  const char *url;
  const char *ns;
  int connect_timeout_ms;
  int command_timeout_ms;
} jb_sync_options;
int jb_sync_connect(jb_sync_conn **out, const jb_sync_options *opts);
void jb_sync_close(jb_sync_conn *conn);
int jb_sync_ping(jb_sync_conn *conn);
const char *jb_sync_namespace(const jb_sync_conn *conn);
int jb_sync_attach(jb_board *b, jb_sync_conn *c);
void jb_sync_detach(jb_board *b);
int jb_sync_publish(jb_board *b, jb_sync_conn *c, const char *uuid);
int jb_sync_board_configure(char **url_out, char **ns_out, jb_board *b,
                            const char *url, const char *ns);
int jb_sync_board_lookup(char **url_out, char **ns_out, jb_board *b,
                         const char *url, const char *ns);
typedef struct {
  char url[1024];
  char ns[201];
  size_t jobs;
  size_t released;
  size_t kept;
  size_t letters;
} jb_sync_detach_result;
int jb_sync_board_detach(jb_sync_detach_result *out, jb_board *b);
int jb_sync_board_detached(char **text_out, jb_board *b);
void free(void *ptr);
"""

ffi = cffi.FFI()
ffi.cdef(CDEF)

_SONAME = "libjobboard.so.0"
_SYNC_SONAME = "libjbsync.so.0"


def _libdir():
    try:
        from . import _paths  # written by `make install`
    except ImportError:
        return None
    return getattr(_paths, "LIBDIR", None)


def _candidates(env, soname):
    given = os.environ.get(env)
    if given:
        return [given]
    out = []
    libdir = _libdir()
    if libdir:
        out.append(os.path.join(libdir, soname))
    out.append(soname)
    found = ctypes.util.find_library(soname.split(".so")[0][3:])
    if found and found not in out:
        out.append(found)
    return out


def _open(ffi_, env, soname):
    errors = []
    for name in _candidates(env, soname):
        try:
            # RTLD_GLOBAL: libjbsync, loaded later, finds libjobboard's
            # symbols by its soname in this process. RTLD_NODELETE: never
            # unmapped, not even when cffi's library object is collected at
            # interpreter exit while a thread (a daemon thread in a wait,
            # the library's own watcher thread) still runs its code.
            return ffi_.dlopen(name, ffi_.RTLD_NOW | ffi_.RTLD_GLOBAL |
                               ffi_.RTLD_NODELETE)
        except OSError as e:
            errors.append("%s: %s" % (name, e))
    raise ImportError(
        "jobboard: cannot load %s (install jobboard with `make install`, or "
        "set %s to its path); tried: %s" % (soname, env, "; ".join(errors)))


lib = _open(ffi, "JOBBOARD_LIBRARY", _SONAME)

_sync_lock = threading.Lock()
_sync = None


def sync_lib():
    """libjbsync, loaded on first use (a board synced through Redis).
    Raises ImportError naming the library when it is not installed."""
    global _sync
    with _sync_lock:
        if _sync is None:
            sffi = cffi.FFI()
            sffi.include(ffi)
            sffi.cdef(SYNC_CDEF)
            _sync = (sffi, _open(sffi, "JOBBOARD_SYNC_LIBRARY", _SYNC_SONAME))
        return _sync
