/*
 * json.h - JSON at the command line, msgpack in the library.
 *
 * Details are a msgpack map in the library and a JSON object at the CLI.
 * JSON -> msgpack is exact (object -> map, array -> array, string -> str,
 * integer -> the smallest int, real -> float64, true/false -> bool,
 * null -> nil). msgpack -> JSON is exact for those types too; the msgpack
 * values JSON has no word for are written as tagged objects, documented in
 * `jobboard show --help`:
 *
 *   bin, or a str that is not UTF-8  {"$bin": "<base64>"}
 *   ext (e.g. oslo's datetime)       {"$ext": <type>, "$data": "<base64>"}
 *   unsigned integer > 2^63-1        {"$uint64": "<decimal digits>"}
 *   NaN, +-infinity                  {"$float": "NaN" | "Infinity" | "-Infinity"}
 *   a map key that is not a string   the key's JSON text ("1", "true", ...),
 *                                    or when that is longer than
 *                                    CLI_KEY_TEXT_MAX bytes (a map or array
 *                                    key) "$msgpack:<base64 of its msgpack>"
 *
 * The tags are output only: input JSON is taken literally.
 */
#ifndef JOBBOARD_CLI_JSON_H
#define JOBBOARD_CLI_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "jobboard.h"

/* The longest JSON text a map key that is not a string is shown as. */
#define CLI_KEY_TEXT_MAX 256

/* Deepest nesting of details (the top object counts as 1): msgpack-c's
 * unpacker keeps a fixed stack of 32 containers (MSGPACK_EMBED_STACK_SIZE)
 * and refuses anything deeper, and the posting map holding the details is
 * one of them: details 32 deep would be stored but never read back. */
#define CLI_DETAILS_MAX_DEPTH 31

/*
 * Encode the JSON object `obj` as a msgpack map. On success *out is a
 * malloc'ed buffer of *len bytes (the caller frees it) and 0 is returned;
 * on failure -1 with a reason in `err` (nesting too deep, out of memory).
 */
int cli_json_to_msgpack(char **out, size_t *len, const json_t *obj,
                        char *err, size_t errlen);

/*
 * Decode one msgpack value (normally the details map) into a new JSON
 * value the caller decrefs. NULL when the bytes do not decode.
 */
json_t *cli_msgpack_to_json(const void *data, size_t len);

/* A string as a JSON value: a JSON string, {"$bin": "<base64>"} when it
 * is not UTF-8, null for NULL. NULL only when out of memory. */
json_t *cli_json_text(const char *s);

/* The job as one JSON object: uuid, name, priority, sequence, created,
 * modified, state, owner, book, details. NULL only when out of memory. */
json_t *cli_job_to_json(const jb_job *job);

/* A live entity as one JSON object: name, kind, pid, registered (ISO-8601
 * UTC), meta. NULL only when out of memory. */
json_t *cli_entity_to_json(const jb_entity *entity);

/* A name of the board as `queues --json` gives it (jb_queue_info's fields,
 * times as ISO-8601 UTC, the next token only while it is after now_us).
 * NULL only when out of memory. In cmd_queues.c. */
json_t *cli_queue_json(const jb_queue_info *q, int64_t now_us);

/* Print `value` compactly on one line of stdout and decref it. Returns 0,
 * or -1 when it could not be encoded or written. */
int cli_json_print(json_t *value);

/* "2024-01-02T03:04:05.000006Z": microseconds since the epoch in UTC.
 * `buf` needs 40 bytes. */
void cli_format_time(char *buf, size_t len, int64_t us);

/* Base64 (RFC 4648, with padding) of `len` bytes; malloc'ed, NULL when out
 * of memory. */
char *cli_base64(const void *data, size_t len);

#endif
