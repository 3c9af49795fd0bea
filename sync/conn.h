/*
 * conn.h - what sync/ shares inside libjbsync: raw commands and the script
 * registry. Not API (hidden symbols; tests link the convenience library).
 * It is the only sync header that includes hiredis: the public
 * jobboard_sync.h keeps hiredis types out of its users' code.
 */
#ifndef JOBBOARD_SYNC_CONN_H
#define JOBBOARD_SYNC_CONN_H

#include "jobboard_sync.h"

#include <hiredis/hiredis.h>

/*
 * Run one command given as argv (binary-safe: argvlen may be NULL for
 * NUL-terminated strings). Connects first if the connection was dropped.
 * On JB_OK *out is the reply (free it with freeReplyObject); it is never an
 * error reply: those become codes, and the message quotes the server:
 *  - LOADING, BUSY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN -> JB_EOFFLINE
 *    (transient states of the server);
 *  - READONLY (also inside a script's error), MASTERDOWN, NOREPLICAS: the
 *    server takes no writes (a replica, a master demoted by a failover or
 *    left without replicas) -> JB_EOFFLINE, and the connection is dropped
 *    so that the next command reconnects (through the sentinels of a
 *    redis-sentinel:// URL: to the new master);
 *  - NOAUTH, WRONGPASS -> JB_EINVAL;
 *  - NOSCRIPT -> JB_ENOTFOUND (jb__sync_evalsha handles it);
 *  - any other -> JB_EIO.
 * An I/O failure or timeout drops the connection and gives JB_EOFFLINE;
 * the command is not resent.
 */
int jb__sync_command(redisReply **out, jb_sync_conn *conn, int argc,
                     const char **argv, const size_t *argvlen);

/* The URL as shown in messages and status: the password, if any, replaced
 * by "***" (sync/url.c). */
void jb__sync_url_redact(char *out, size_t size, const char *text);

/* true when the URL text holds a password ("[user]:password@"). */
bool jb__sync_url_has_password(const char *text);

/* jb_sync_url_parse, but a user without a password ("redis://alice@h") is
 * accepted (url->password NULL): the form a board remembers, its password
 * being kept apart (sync/config.c). */
int jb__sync_url_parse_loose(jb_sync_url **out, const char *text);

/* Split a URL (checked with jb__sync_url_parse_loose) into *bare, the same
 * text without the password ("redis://alice:pw@h/1" -> "redis://alice@h/1",
 * "redis://:pw@h" -> "redis://h"), and *password, decoded (NULL: none).
 * Both are new strings. Errors: as the parser's, JB_ENOMEM. */
int jb__sync_url_split(char **bare, char **password, const char *text);

/* The URL `bare` (without a password) with `password` put in, %-escaped
 * where it must be, into a new string *out. Errors: JB_EINVAL (bare has a
 * password, or is not a URL), JB_ENOMEM. */
int jb__sync_url_add_password(char **out, const char *bare,
                              const char *password);

/* ------------------------------------------------------- credentials */

/* The file in a board directory holding the Redis password (see
 * sync/credentials.c and docs/DESIGN-NOTES.md "Credentials"). */
#define JB__SYNC_CRED_FILE "sync.credentials"

/* Read the password of board directory `dir` into a new string *password
 * (NULL and JB_OK when the file does not exist). Errors: JB_EINVAL naming
 * the file: it cannot be read (another user's), is not a regular file, is
 * readable or writable by others than its owner, is empty or too long, or
 * holds a NUL byte; JB_EIO; JB_ENOMEM. */
int jb__sync_cred_read(char **password, const char *dir);

/* Whether board directory `dir` has a credentials file (readable or not:
 * only lstat(2) is asked, so that anyone may learn that a password is
 * configured without reading it); *mine, if not NULL, whether it belongs
 * to this process's effective user. */
bool jb__sync_cred_exists(const char *dir, bool *mine);

/* Replace the password of board directory `dir`: a new file made with
 * mode 0600 (O_EXCL, fchmod), given to user `owner` (fchown, when it is
 * not this process's effective user: root keeping a board's password for
 * the board's owner), written, fsync'ed, renamed over the old one, and the
 * directory fsync'ed. Errors: JB_EIO naming the file. */
int jb__sync_cred_write(const char *dir, const char *password, uid_t owner);

/* The redis_version of an INFO reply into out[0..size): false when the
 * reply is not a string naming one. */
bool jb__sync_info_version(char *out, size_t size, const redisReply *r);

/* 1 if the version text ("7.0.15", "2.6.0-rc1") is at least major.minor,
 * 0 if it is older, -1 if it does not start with "N.N". */
int jb__sync_version_at_least(const char *version, int major, int minor);

/* ------------------------------------------------------------- scripts */

/*
 * The script registry of a connection. A script is added once (its source
 * is copied and loaded with SCRIPT LOAD, which gives its SHA1) and then run
 * by id with EVALSHA. When the server answers NOSCRIPT (its script cache
 * was flushed: SCRIPT FLUSH, a restart, a failover) the script is loaded
 * again and the call retried once; the server did not run it, so the retry
 * cannot run it twice.
 *
 * jb__sync_script_add: *id receives the script's id (0, 1, ... in the order
 * added). Errors: JB_EINVAL for a script the server does not compile (the
 * message quotes the server), JB_EOFFLINE, JB_ENOMEM.
 */
int jb__sync_script_add(int *id, jb_sync_conn *conn, const char *name,
                        const char *source);

/* The SHA1 (40 hex digits) of script `id`, or NULL for a bad id. */
const char *jb__sync_script_sha(const jb_sync_conn *conn, int id);

/*
 * EVALSHA script `id` with nkeys keys then nargs arguments (each array
 * binary-safe; a NULL lens array means NUL-terminated strings). The reply
 * is as jb__sync_command's; a runtime error of the script is JB_EIO with
 * the script's name and the server's error. Errors: JB_EINVAL for a bad
 * id or counts; as jb__sync_command.
 */
int jb__sync_evalsha(redisReply **out, jb_sync_conn *conn, int id, int nkeys,
                     const char *const *keys, const size_t *keylens,
                     int nargs, const char *const *args,
                     const size_t *arglens);

/* How many times this connection has (re)loaded a script after NOSCRIPT
 * (for tests and, later, status). */
unsigned long jb__sync_script_reloads(const jb_sync_conn *conn);

/* A new connection to the same server and namespace, with the same
 * timeouts, not yet connected (its first command connects). For a thread
 * of its own: a connection is used by one thread at a time. Errors:
 * JB_ENOMEM. */
int jb__sync_conn_clone(jb_sync_conn **out, const jb_sync_conn *conn);

/* The connection's board attachment (sync/attach.c), created on first use
 * and freed (free_fn) by jb_sync_close. */
void *jb__sync_conn_attachment(const jb_sync_conn *conn);
void jb__sync_conn_set_attachment(jb_sync_conn *conn, void *a,
                                  void (*free_fn)(void *));

/* ------------------------------------------------- pipelines, pub/sub */

/* Queue one command (connecting first if needed); nothing is sent until
 * the first jb__sync_read. Errors: JB_EOFFLINE (not connected and the
 * reconnect failed), JB_ENOMEM. */
int jb__sync_append(jb_sync_conn *conn, int argc, const char **argv,
                    const size_t *lens);

/* Read the next reply of what was queued, in order (sends the queue
 * first). As jb__sync_command: error replies become codes (what names the
 * command in messages); an I/O failure or timeout drops the connection
 * (JB_EOFFLINE), and so every queued reply is lost. */
int jb__sync_read(redisReply **out, jb_sync_conn *conn, const char *what);

/* Put this connection in subscriber mode on `channel` (only
 * jb__sync_message may be used on it afterwards; after a drop, reconnect
 * with jb_sync_ping then subscribe again). */
int jb__sync_subscribe(jb_sync_conn *conn, const char *channel);

/* The socket of the connection, to poll(2) it (-1 while disconnected). */
int jb__sync_fd(const jb_sync_conn *conn);

/* The next message of a subscribed connection, without blocking: one
 * already read, else (readable: poll said so) one read(2) of what the
 * socket holds. *out NULL when no whole message is there yet. Errors:
 * JB_EOFFLINE (the connection was lost: it is dropped). */
int jb__sync_message(redisReply **out, jb_sync_conn *conn, bool readable);

/* Drop the connection (the next command reconnects). */
void jb__sync_drop(jb_sync_conn *conn);

/* After a call on this connection failed: true when the failure was the
 * server's refusal of the command (LOADING, BUSY, READONLY from a replica,
 * MASTERDOWN, NOREPLICAS, NOAUTH, NOSCRIPT: it did not run), false when
 * the command may have reached the server and its reply was lost (an I/O
 * failure or a timeout), was never sent, or failed with another error
 * (JB_EIO: a script may have failed halfway). */
bool jb__sync_refused(const jb_sync_conn *conn);

/* "127.0.0.1:6379" or "unix socket /path" (for messages). */
const char *jb__sync_where(const jb_sync_conn *conn);

#endif
