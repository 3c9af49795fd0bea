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
} jb_board_options;

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

typedef struct {
  unsigned int version;
  const char *name;
  const void *details;
  size_t details_len;
  jb_priority priority;
  const char *book_name;
  const char *book_uuid;
} jb_post;

int jb_job_post(char uuid_out[37], jb_board *board, const jb_post *post);
int jb_job_post_batch(char (*uuids_out)[37], jb_board *board,
                      const jb_post *posts, size_t n);
int jb_job_get(jb_job **out, jb_board *board, const char *uuid);

typedef struct {
  unsigned int version;
  unsigned int flags;
  int64_t lease_ms;
} jb_claim_opts;

int jb_job_claim_ex(uint64_t *token_out, jb_board *board, const char *uuid,
                    const char *who, const jb_claim_opts *opts);
int jb_job_claim_next_ex(char uuid_out[37], jb_job **job_out,
                         uint64_t *token_out, jb_board *board,
                         const char *who, const jb_claim_opts *opts);
int jb_job_claim_next_wait(char uuid_out[37], jb_job **job_out,
                           uint64_t *token_out, jb_board *board,
                           const char *who, const jb_claim_opts *opts,
                           int64_t timeout_ms);
int jb_job_extend(jb_board *board, const char *uuid, const char *who,
                  uint64_t token, int64_t lease_ms);
int jb_job_expires_in(jb_expiry *out, int64_t *ms_out, jb_board *board,
                      const char *uuid);
int jb_job_abandon_ex(jb_board *board, const char *uuid, const char *who,
                      uint64_t token);
int jb_job_trash_ex(jb_board *board, const char *uuid, const char *who,
                    uint64_t token);
int jb_job_consume_result(jb_board *board, const char *uuid, const char *who,
                          uint64_t token, jb_outcome outcome,
                          const void *result, size_t result_len);
int jb_job_find_owner(char out[256], jb_board *board, const char *uuid);
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
int jb_board_cancel(jb_board *board);
int jb_board_cancel_reset(jb_board *board);

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
} jb_completion;
const char *jb_end_name(jb_end end);
void jb_completion_free(jb_completion *completion);
int jb_job_completion(jb_completion **out, jb_board *board, const char *uuid);
int jb_job_wait_done(jb_completion **out, jb_board *board, const char *uuid,
                     int64_t timeout_ms);
int jb_history_count(size_t *out, jb_board *board);
int jb_history_open(jb_history_iter **out, jb_board *board,
                    unsigned int flags);
int jb_history_next(const jb_completion **out, jb_history_iter *it);
void jb_history_close(jb_history_iter *it);
typedef struct {
  unsigned int version;
  uint32_t ends;
  const char *name;
  const char *name_prefix;
  int64_t since_us;
  int64_t until_us;
} jb_history_filter;
int jb_history_open_filtered(jb_history_iter **out, jb_board *board,
                             unsigned int flags,
                             const jb_history_filter *filter);

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

int jb_iter_open(jb_iter **out, jb_board *board, unsigned int flags);
int jb_iter_next(const jb_job **out, jb_iter *iter);
void jb_iter_close(jb_iter *iter);
"""

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
void jb_sync_options_init(jb_sync_options *opts);
int jb_sync_connect(jb_sync_conn **out, const jb_sync_options *opts);
void jb_sync_close(jb_sync_conn *conn);
int jb_sync_ping(jb_sync_conn *conn);
const char *jb_sync_namespace(const jb_sync_conn *conn);
int jb_sync_attach(jb_board *b, jb_sync_conn *c);
void jb_sync_detach(jb_board *b);
int jb_sync_publish(jb_board *b, jb_sync_conn *c, const char *uuid);
int jb_sync_board_config(jb_board *b, const char *url, const char *ns,
                         char **url_out, char **ns_out);
int jb_sync_board_resolve(jb_board *b, const char *url, const char *ns,
                          char **url_out, char **ns_out);
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
