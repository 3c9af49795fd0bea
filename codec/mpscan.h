/*
 * mpscan.h - a look at msgpack bytes before msgpack-c unpacks them. Not
 * API. A header of inline code so that the library and sync/ (a library of
 * its own, which sees none of libjobboard's hidden symbols; it reaches
 * this header through core/sync_hook.h) share one copy.
 *
 * msgpack-c's unpacker (msgpack_unpack_next, 4.0) has two traits that bad
 * input turns against its caller:
 *  - it allocates a container's elements when it reads the header, before
 *    the bytes of those elements: the 5 bytes df ff ff ff ff (a map of
 *    2^32-1 entries) ask for 128 GiB. The allocation fails (or, with
 *    overcommit, succeeds untouched) and the unpack says out of memory
 *    (or, later, truncated);
 *  - it keeps a fixed stack of MSGPACK_EMBED_STACK_SIZE (32) containers
 *    and reports a value nested deeper as MSGPACK_UNPACK_NOMEM_ERROR too.
 * So "out of memory" from the unpacker names no memory shortage at all
 * for such input, and a decoder that passed it on as JB_ENOMEM made one
 * malformed posting (in Redis, or stored by jb_job_post with details 32
 * deep) look like a failing machine (docs/DESIGN-NOTES.md, "Fuzzing").
 *
 * jb__mp_scan walks one value without allocating: every container's count
 * must fit in the bytes left (an element takes at least one byte), so what
 * the unpacker then allocates is bounded by a small multiple of the input,
 * and the nesting must be within max_depth. Found by fuzzing
 * (tests/fuzz/fuzz_posting.c checks its verdict against msgpack-c's).
 */
#ifndef JOBBOARD_MPSCAN_H
#define JOBBOARD_MPSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The deepest nesting msgpack-c unpacks (its MSGPACK_EMBED_STACK_SIZE;
 * empty containers count). */
#define JB_MP_MAX_DEPTH 32

typedef enum {
  JB_MP_OK = 0,
  JB_MP_TRUNCATED, /* ends inside a value, or declares more than it holds */
  JB_MP_INVALID,   /* the byte 0xc1, which msgpack never uses */
  JB_MP_TOO_DEEP   /* containers nested deeper than max_depth */
} jb_mp_verdict;

/* Read a w-byte big-endian length at p[*i]; false when it is cut. */
static inline bool jb__mp_len(const uint8_t *p, size_t len, size_t *i,
                              int w, uint64_t *v) {
  if (len - *i < (size_t)w) return false;
  *v = 0;
  for (int k = 0; k < w; k++) *v = *v << 8 | p[(*i)++];
  return true;
}

/*
 * Check that p[0..len) starts with one whole msgpack value nested at most
 * max_depth (<= JB_MP_MAX_DEPTH) containers deep; on JB_MP_OK *end is its
 * length (the caller decides about bytes after it).
 */
static inline jb_mp_verdict jb__mp_scan(const void *data, size_t len,
                                        size_t *end, int max_depth) {
  const uint8_t *p = data;
  uint64_t left[JB_MP_MAX_DEPTH + 1]; /* items still to read, per level */
  int depth = 0;
  size_t i = 0;
  left[0] = 1;
  if (max_depth > JB_MP_MAX_DEPTH) max_depth = JB_MP_MAX_DEPTH;
  for (;;) {
    while (depth > 0 && left[depth] == 0) depth--;
    if (left[depth] == 0) break; /* depth 0: the one value is read */
    left[depth]--;
    if (i == len) return JB_MP_TRUNCATED;
    uint8_t b = p[i++];
    uint64_t n = 0, skip = 0;
    int items = 0; /* 1: an array of n, 2: a map of n */
    bool ok = true;
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
      /* fixint, nil, bool: nothing more */
    } else if (b <= 0x8f) {
      n = b & 0x0f;
      items = 2;
    } else if (b <= 0x9f) {
      n = b & 0x0f;
      items = 1;
    } else if (b <= 0xbf) {
      skip = b & 0x1f;
    } else if (b == 0xc1) {
      return JB_MP_INVALID;
    } else if (b <= 0xc6) { /* bin 8/16/32 */
      ok = jb__mp_len(p, len, &i, 1 << (b - 0xc4), &skip);
    } else if (b <= 0xc9) { /* ext 8/16/32: length, then the type byte */
      ok = jb__mp_len(p, len, &i, 1 << (b - 0xc7), &skip);
      skip += 1;
    } else if (b <= 0xd3) { /* float32/64, uint 8..64, int 8..64 */
      static const uint8_t w[10] = {4, 8, 1, 2, 4, 8, 1, 2, 4, 8};
      skip = w[b - 0xca];
    } else if (b <= 0xd8) { /* fixext 1/2/4/8/16, with the type byte */
      skip = 1 + (1u << (b - 0xd4));
    } else if (b <= 0xdb) { /* str 8/16/32 */
      ok = jb__mp_len(p, len, &i, 1 << (b - 0xd9), &skip);
    } else { /* 0xdc..0xdf: array 16/32, map 16/32 */
      ok = jb__mp_len(p, len, &i, b == 0xdc || b == 0xde ? 2 : 4, &n);
      items = b <= 0xdd ? 1 : 2;
    }
    if (!ok || skip > len - i) return JB_MP_TRUNCATED;
    i += (size_t)skip;
    if (items) {
      if (depth == max_depth) return JB_MP_TOO_DEEP;
      n *= (uint64_t)items; /* n < 2^32: no overflow */
      if (n > len - i) return JB_MP_TRUNCATED;
      left[++depth] = n;
    }
  }
  *end = i;
  return JB_MP_OK;
}

#endif
