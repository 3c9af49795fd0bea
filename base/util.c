/*
 * util.c - small shared pieces: version, names of enums, uuids, UTF-8,
 * time, growable buffers.
 */
#include "base/util.h"
#include "base/error.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <errno.h>
#include <pthread.h>
#include <sys/random.h>
#include <uuid/uuid.h>

const char *jb_version(int *major, int *minor, int *patch) {
  if (major) *major = JOBBOARD_VERSION_MAJOR;
  if (minor) *minor = JOBBOARD_VERSION_MINOR;
  if (patch) *patch = JOBBOARD_VERSION_PATCH;
  return JOBBOARD_VERSION_STRING;
}

static const char *const priority_names[] = {"VERY_LOW", "LOW", "NORMAL",
                                             "HIGH", "VERY_HIGH"};

const char *jb_priority_name(jb_priority p) {
  return ((unsigned)p <= JB_PRIORITY_VERY_HIGH) ? priority_names[p] : NULL;
}

int jb_priority_parse(jb_priority *out, const char *name) {
  if (name) {
    for (int p = 0; p <= JB_PRIORITY_VERY_HIGH; p++) {
      if (strcasecmp(name, priority_names[p]) == 0) {
        if (out) *out = (jb_priority)p;
        return JB_OK;
      }
    }
  }
  return jb__err(JB_EINVAL,
                 "unknown priority '%s': expected one of VERY_HIGH, HIGH, "
                 "NORMAL, LOW, VERY_LOW",
                 name ? name : "(null)");
}

const char *jb_state_name(jb_state s) {
  switch (s) {
  case JB_STATE_UNCLAIMED: return "UNCLAIMED";
  case JB_STATE_CLAIMED: return "CLAIMED";
  case JB_STATE_COMPLETE: return "COMPLETE";
  }
  return NULL;
}

static const char *const durability_names[] = {"full", "normal", "none",
                                                     "interval"};

const char *jb_durability_name(jb_durability d) {
  return ((unsigned)d <= JB_DURABILITY_INTERVAL) ? durability_names[d] : NULL;
}

int jb_durability_parse(jb_durability *out, const char *name) {
  if (name) {
    for (int d = 0; d <= JB_DURABILITY_INTERVAL; d++) {
      if (strcasecmp(name, durability_names[d]) == 0) {
        if (out) *out = (jb_durability)d;
        return JB_OK;
      }
    }
  }
  return jb__err(JB_EINVAL,
                 "unknown durability '%s': expected full, normal, interval or none",
                 name ? name : "(null)");
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Parsed here rather than with libuuid's uuid_parse, which converts each
 * group with strtoul: 5% of a post/claim/consume cycle in a profile. */
int jb__uuid_parse(uint8_t out[16], const char *text, const char *field) {
  if (text == NULL)
    return jb__err(JB_EINVAL, "%s: missing uuid", field);
  int ok = strnlen(text, 37) == 36;
  for (size_t i = 0, o = 0; ok && i < 36;) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      ok = text[i++] == '-';
      continue;
    }
    int hi = hexval((unsigned char)text[i]), lo = hexval((unsigned char)text[i + 1]);
    ok = hi >= 0 && lo >= 0;
    if (ok) out[o++] = (uint8_t)(hi << 4 | lo); /* hi < 0: no shift of it */
    i += 2;
  }
  if (!ok)
    return jb__err(JB_EINVAL,
                   "%s: '%.64s' is not a uuid (expected 36 characters like "
                   "3f0d7e9c-1b2a-4c5d-8e6f-0a1b2c3d4e5f)",
                   field, text);
  return JB_OK;
}

void jb__uuid_format(char out[JB_UUID_STRLEN], const uint8_t in[16]) {
  uuid_unparse_lower(in, out);
}

/*
 * Random (version 4) uuids from a per-thread pool filled by getrandom().
 * libuuid's uuid_generate_random makes five system calls per uuid (getpid,
 * getppid, getuid, gettid, getrandom): measured here, that alone held the
 * post/claim/consume cycle to a third of its speed. One getrandom per 256
 * uuids gives the same randomness. The pool is dropped in a forked child
 * (fork generation), or parent and child would hand out the same uuids.
 */
static unsigned fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void on_fork_child(void) { __atomic_add_fetch(&fork_gen, 1, __ATOMIC_SEQ_CST); }
static void install_atfork(void) { pthread_atfork(NULL, NULL, on_fork_child); }

unsigned jb__fork_generation(void) {
  pthread_once(&atfork_once, install_atfork);
  return __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
}

static _Thread_local struct {
  uint8_t bytes[4096];
  size_t pos;
  unsigned gen;
  bool filled;
} pool;

int jb__uuid_generate(uint8_t out[16]) {
  unsigned gen = jb__fork_generation();
  if (!pool.filled || pool.gen != gen || pool.pos + 16 > sizeof pool.bytes) {
    size_t got = 0;
    while (got < sizeof pool.bytes) {
      ssize_t n = getrandom(pool.bytes + got, sizeof pool.bytes - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return jb__err_errno(errno, "getrandom (making a job uuid)");
      got += (size_t)n;
    }
    pool.pos = 0;
    pool.gen = gen;
    pool.filled = true;
  }
  memcpy(out, pool.bytes + pool.pos, 16);
  /* Wipe what was handed out, so the same bytes can never be used twice. */
  memset(pool.bytes + pool.pos, 0, 16);
  pool.pos += 16;
  out[6] = (uint8_t)((out[6] & 0x0f) | 0x40); /* version 4 */
  out[8] = (uint8_t)((out[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  return JB_OK;
}

/*
 * Job uuids are time-ordered (version 7, RFC 9562): the first 48 bits
 * are the Unix time in milliseconds, then 12 bits of a per-thread
 * counter (RFC 9562's "fixed-length dedicated counter", started at a
 * random value below 2048 in each new millisecond; at 4095 the thread
 * borrows the next millisecond), then 62 random bits. The `jobs` table
 * and the history's uuid index are keyed by uuid: random (version 4)
 * keys put each new job on a leaf page of its own, so a batch of 1,000
 * posts dirtied, copied and wrote about 1,000 pages; keys that grow
 * with time put the jobs of a batch, of a gathered commit and of the
 * next commits on the last leaf. A thread's uuids keep increasing even
 * if the wall clock steps back (the last millisecond is kept). Uniqueness
 * rests on the 62 random bits, as a version 4 uuid's rests on 122.
 */
static _Thread_local struct {
  uint64_t ms;
  unsigned counter;
} v7;

int jb__uuid_generate_job(uint8_t out[16]) {
  int rc = jb__uuid_generate(out);
  if (rc != JB_OK) return rc;
  int64_t now = jb__now_us();
  uint64_t ms = now > 0 ? (uint64_t)now / 1000 : 0;
  if (ms > v7.ms) {
    v7.ms = ms;
    v7.counter = ((unsigned)out[6] << 8 | out[7]) & 0x7ff;
  } else if (++v7.counter > 0xfff) {
    v7.ms++;
    v7.counter = ((unsigned)out[6] << 8 | out[7]) & 0x7ff;
  }
  for (int i = 0; i < 6; i++) out[i] = (uint8_t)(v7.ms >> (40 - 8 * i));
  out[6] = (uint8_t)(0x70 | (v7.counter >> 8)); /* version 7 */
  out[7] = (uint8_t)v7.counter;
  return JB_OK;
}

bool jb__utf8_valid(const char *str, size_t len) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    size_t n;
    unsigned min;
    if (c == 0) return false;
    if (c < 0x80) { i++; continue; }
    if ((c & 0xe0) == 0xc0) { n = 1; min = 0x80; c &= 0x1f; }
    else if ((c & 0xf0) == 0xe0) { n = 2; min = 0x800; c &= 0x0f; }
    else if ((c & 0xf8) == 0xf0) { n = 3; min = 0x10000; c &= 0x07; }
    else return false;
    if (len - i < n + 1) return false;
    for (size_t k = 1; k <= n; k++) {
      if ((s[i + k] & 0xc0) != 0x80) return false;
      c = (c << 6) | (s[i + k] & 0x3f);
    }
    /* reject overlong forms, surrogates and values past U+10FFFF */
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

int jb__who_check(const char *who, size_t *len) {
  if (who == NULL || who[0] == '\0')
    return jb__err(JB_EINVAL, "who: the owner name must not be empty");
  size_t n = strnlen(who, JB_WHO_MAX + 1);
  if (n > JB_WHO_MAX)
    return jb__err(JB_EINVAL, "who: the owner name is longer than %d bytes",
                   JB_WHO_MAX);
  if (!jb__utf8_valid(who, n))
    return jb__err(JB_EINVAL, "who: the owner name is not valid UTF-8");
  if (len) *len = n;
  return JB_OK;
}

/* Tests only (jb__test_clock_fix): the wall clock this process reads;
 * 0: the real one. */
static _Atomic int64_t fixed_clock_us;

void jb__test_clock_fix(int64_t us) { atomic_store(&fixed_clock_us, us); }

int64_t jb__now_us(void) {
  int64_t fixed = atomic_load_explicit(&fixed_clock_us, memory_order_relaxed);
  if (fixed) return fixed;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t jb__mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int jb__buf_reserve(jb_buf *b, size_t more) {
  if (b->cap - b->len >= more) return JB_OK;
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < more) {
    if (cap > SIZE_MAX / 2) return jb__err(JB_ENOMEM, "buffer too large");
    cap *= 2;
  }
  uint8_t *p = realloc(b->data, cap);
  if (p == NULL) return jb__err(JB_ENOMEM, "out of memory (%zu bytes)", cap);
  b->data = p;
  b->cap = cap;
  return JB_OK;
}

int jb__buf_append(jb_buf *b, const void *p, size_t n) {
  int rc = jb__buf_reserve(b, n);
  if (rc != JB_OK) return rc;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  return JB_OK;
}

void jb__buf_free(jb_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

char *jb__duration_text(char *buf, size_t len, int64_t ms) {
  static const struct {
    uint64_t ms;
    char unit;
  } units[] = {{86400000, 'd'}, {3600000, 'h'}, {60000, 'm'}};
  uint64_t left = ms < 0 ? 0 - (uint64_t)ms : (uint64_t)ms;
  size_t n = 0;
  buf[0] = '\0';
  if (ms < 0) n += (size_t)snprintf(buf, len, "-");
  /* Under a second: milliseconds (0 reads 0s). */
  if (left < 1000) {
    snprintf(buf + n, n < len ? len - n : 0, "%llu%s",
             (unsigned long long)left, left ? "ms" : "s");
    return buf;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    uint64_t k = left / units[i].ms;
    left %= units[i].ms;
    if (k && n < len)
      n += (size_t)snprintf(buf + n, len - n, "%llu%c", (unsigned long long)k,
                            units[i].unit);
  }
  if (left == 0 || n >= len) return buf;
  /* Seconds, with the milliseconds' digits that are not 0. */
  char frac[8] = "";
  unsigned f = (unsigned)(left % 1000);
  if (f) {
    snprintf(frac, sizeof frac, ".%03u", f);
    for (size_t e = strlen(frac); frac[e - 1] == '0'; e--) frac[e - 1] = '\0';
  }
  snprintf(buf + n, len - n, "%llu%ss", (unsigned long long)(left / 1000),
           frac);
  return buf;
}
