/*
 * tz.c - time zones (tz.h): TZif files and POSIX TZ rules. Only what a
 * schedule needs: the UTC offset at an instant (no abbreviations, no leap
 * seconds: zoneinfo's "right/" files are not zone names here).
 */
#include "codec/tz.h"
#include "codec/cron.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A POSIX TZ rule's date: Jn (1..365, no 29 February), n (0..365) or
 * Mm.w.d; and the local time of day the change happens at. */
typedef struct {
  char kind; /* 'J', 'n', 'M' */
  int n, m, w, d;
  int32_t secs;
} tz_date;

typedef struct {
  int32_t std_off, dst_off; /* east of UTC, seconds */
  bool has_dst;
  tz_date start, end;
} tz_rule;

struct jb_tz {
  size_t n;        /* transitions */
  int64_t *at;     /* n instants, increasing */
  int32_t *off;    /* the offset from each transition on */
  int32_t first;   /* the offset before the first (time type 0) */
  bool has_rule;   /* the footer's rule governs after at[n-1] */
  tz_rule rule;
};

/* ---------------------------------------------------------------- names */

bool jb__tz_name_ok(const char *name, size_t len, char *why, size_t whylen) {
  if (len == 0 || len > JB_TZ_NAME_MAX) {
    snprintf(why, whylen, "a time zone name is 1..%d bytes (Area/Place, as "
             "Europe/Berlin)", JB_TZ_NAME_MAX);
    return false;
  }
  size_t part = 0;
  for (size_t i = 0; i <= len; i++) {
    char c = i < len ? name[i] : '/';
    if (c == '/') {
      if (part == 0) {
        snprintf(why, whylen, "'%.*s' is not a time zone name (Area/Place, "
                 "as Europe/Berlin)", (int)len, name);
        return false;
      }
      part = 0;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '+')) {
      snprintf(why, whylen, "'%.*s' is not a time zone name (letters, "
               "digits, _ - + between slashes, as Europe/Berlin)", (int)len,
               name);
      return false;
    }
    part++;
  }
  return true;
}

/* ----------------------------------------------------------- POSIX rule */

/* [+-]hh[:mm[:ss]], hours up to `maxh`, into *out seconds. */
static bool rule_time(const char **p, int maxh, int32_t *out) {
  const char *s = *p;
  int sign = 1;
  if (*s == '+' || *s == '-') sign = *s++ == '-' ? -1 : 1;
  int32_t v[3] = {0, 0, 0};
  for (int k = 0; k < 3; k++) {
    if (k && *s != ':') break;
    if (k) s++;
    if (*s < '0' || *s > '9') return false;
    int x = 0, digits = 0;
    while (*s >= '0' && *s <= '9' && digits < 3) x = x * 10 + (*s++ - '0'), digits++;
    if ((k == 0 && x > maxh) || (k && x > 59)) return false;
    v[k] = x;
  }
  *out = sign * (v[0] * 3600 + v[1] * 60 + v[2]);
  *p = s;
  return true;
}

/* A zone abbreviation: 3+ letters, or <...> (letters, digits, + -). */
static bool rule_name(const char **p) {
  const char *s = *p;
  size_t n = 0;
  if (*s == '<') {
    s++;
    while (*s && *s != '>') s++, n++;
    if (*s != '>' || n < 3) return false;
    s++;
  } else {
    while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) s++, n++;
    if (n < 3) return false;
  }
  *p = s;
  return true;
}

static int rule_int(const char **p, int lo, int hi) {
  const char *s = *p;
  int x = 0, digits = 0;
  while (*s >= '0' && *s <= '9' && digits < 3) x = x * 10 + (*s++ - '0'), digits++;
  if (digits == 0 || x < lo || x > hi) return -1;
  *p = s;
  return x;
}

static bool rule_date(const char **p, tz_date *d) {
  const char *s = *p;
  memset(d, 0, sizeof *d);
  d->secs = 7200; /* 02:00 unless given */
  if (*s == 'M') {
    s++;
    d->kind = 'M';
    if ((d->m = rule_int(&s, 1, 12)) < 0 || *s++ != '.' ||
        (d->w = rule_int(&s, 1, 5)) < 0 || *s++ != '.' ||
        (d->d = rule_int(&s, 0, 6)) < 0)
      return false;
  } else if (*s == 'J') {
    s++;
    d->kind = 'J';
    if ((d->n = rule_int(&s, 1, 365)) < 0) return false;
  } else {
    d->kind = 'n';
    if ((d->n = rule_int(&s, 0, 365)) < 0) return false;
  }
  if (*s == '/') {
    s++;
    if (!rule_time(&s, 167, &d->secs)) return false; /* RFC 8536: -167..167 */
  }
  *p = s;
  return true;
}

/* A POSIX TZ string s (NUL-terminated), as a TZif footer holds it. */
static bool rule_parse(const char *s, tz_rule *r) {
  memset(r, 0, sizeof *r);
  int32_t o;
  if (!rule_name(&s) || !rule_time(&s, 24, &o)) return false;
  r->std_off = -o; /* POSIX counts west */
  if (*s == '\0') return true;
  if (!rule_name(&s)) return false;
  r->has_dst = true;
  r->dst_off = r->std_off + 3600;
  if (*s != ',' && *s != '\0') {
    if (!rule_time(&s, 24, &o)) return false;
    r->dst_off = -o;
  }
  if (*s == '\0') { /* POSIX's default: the US rule */
    r->start = (tz_date){'M', 0, 3, 2, 0, 7200};
    r->end = (tz_date){'M', 0, 11, 1, 0, 7200};
    return true;
  }
  if (*s++ != ',' || !rule_date(&s, &r->start) || *s++ != ',' ||
      !rule_date(&s, &r->end))
    return false;
  return *s == '\0';
}

static bool leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* The day (days since 1970-01-01) of date d in year y. */
static int64_t date_day(const tz_date *d, int64_t y) {
  int64_t jan1 = jb__days_from_civil(y, 1, 1);
  if (d->kind == 'J') return jan1 + d->n - 1 + (leap(y) && d->n >= 60);
  if (d->kind == 'n') return jan1 + d->n;
  static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t first = jb__days_from_civil(y, (unsigned)d->m, 1);
  int wd1 = (int)(((first % 7) + 7 + 4) % 7); /* 1970-01-01: Thursday */
  int day = 1 + (d->d - wd1 + 7) % 7 + (d->w - 1) * 7;
  int dim = mdays[d->m - 1] + (d->m == 2 && leap(y));
  while (day > dim) day -= 7;
  return first + day - 1;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int32_t rule_offset(const tz_rule *r, int64_t t) {
  if (!r->has_dst) return r->std_off;
  int64_t y;
  unsigned m, d;
  jb__civil_from_days(floor_div(t + r->std_off, 86400), &y, &m, &d);
  /* The start is given in standard time, the end in daylight time. */
  int64_t start = date_day(&r->start, y) * 86400 + r->start.secs - r->std_off;
  int64_t end = date_day(&r->end, y) * 86400 + r->end.secs - r->dst_off;
  bool dst = start < end ? (t >= start && t < end) : (t < end || t >= start);
  return dst ? r->dst_off : r->std_off;
}

/* ---------------------------------------------------------------- TZif */

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}

static int64_t be64(const uint8_t *p) {
  return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

void jb__tz_free(jb_tz *z) {
  if (z == NULL) return;
  free(z->at);
  free(z->off);
  free(z);
}

bool jb__tz_parse(jb_tz **out, const uint8_t *d, size_t len, char *why,
                  size_t whylen) {
  *out = NULL;
#define BAD(what) (snprintf(why, whylen, "not a time zone file (%s)", what), \
                   false)
  if (len < 44 || memcmp(d, "TZif", 4) != 0) return BAD("no TZif header");
  int ver = d[4];
  /* Version 2 and later repeat the data with 64-bit times, then the
   * footer: skip the 32-bit block. */
  size_t tsize = 4, off = 0;
  for (int pass = 0; pass < 2; pass++) {
    if (len - off < 44 || memcmp(d + off, "TZif", 4) != 0)
      return BAD("a header is missing");
    uint32_t isut = be32(d + off + 20), isstd = be32(d + off + 24),
             leapc = be32(d + off + 28), timec = be32(d + off + 32),
             typec = be32(d + off + 36), charc = be32(d + off + 40);
    if (typec == 0 || typec > 256 || timec > 100000 || leapc > 100000 ||
        charc > 100000 || isut > typec || isstd > typec)
      return BAD("counts out of range");
    size_t body = timec * tsize + timec + typec * 6 + charc +
                  leapc * (tsize + 4) + isstd + isut;
    if (len - off - 44 < body) return BAD("truncated");
    if (pass == 0 && ver >= '2') {
      off += 44 + body;
      tsize = 8;
      continue;
    }
    const uint8_t *p = d + off + 44;
    const uint8_t *idx = p + timec * tsize, *types = idx + timec;
    jb_tz *z = calloc(1, sizeof *z);
    if (z == NULL) return BAD("out of memory");
    z->n = timec;
    z->at = malloc((timec ? timec : 1) * sizeof *z->at);
    z->off = malloc((timec ? timec : 1) * sizeof *z->off);
    if (z->at == NULL || z->off == NULL) {
      jb__tz_free(z);
      return BAD("out of memory");
    }
    for (uint32_t i = 0; i < timec; i++) {
      z->at[i] = tsize == 8 ? be64(p + 8 * i) : (int32_t)be32(p + 4 * i);
      if (idx[i] >= typec || (i && z->at[i] <= z->at[i - 1])) {
        jb__tz_free(z);
        return BAD("a transition is out of order");
      }
      z->off[i] = (int32_t)be32(types + 6 * idx[i]);
    }
    z->first = (int32_t)be32(types);
    const uint8_t *foot = p + body;
    size_t left = len - (size_t)(foot - d);
    if (tsize == 8 && left >= 2 && foot[0] == '\n') {
      const uint8_t *nl = memchr(foot + 1, '\n', left - 1);
      char tzs[128];
      size_t fl = nl ? (size_t)(nl - foot - 1) : 0;
      if (nl && fl > 0 && fl < sizeof tzs) {
        memcpy(tzs, foot + 1, fl);
        tzs[fl] = '\0';
        if (!rule_parse(tzs, &z->rule)) {
          jb__tz_free(z);
          snprintf(why, whylen, "its rule '%s' is not one this reader "
                   "knows", tzs);
          return false;
        }
        z->has_rule = true;
      }
    }
    *out = z;
    return true;
  }
  return BAD("no data");
#undef BAD
}

int32_t jb__tz_offset(const jb_tz *z, int64_t t) {
  if (z->n == 0) return z->has_rule ? rule_offset(&z->rule, t) : z->first;
  if (t < z->at[0]) return z->first;
  if (t >= z->at[z->n - 1] && z->has_rule) return rule_offset(&z->rule, t);
  size_t lo = 0, hi = z->n; /* the last transition at or before t */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (z->at[mid] <= t) lo = mid;
    else hi = mid;
  }
  return z->off[lo];
}

/* --------------------------------------------------------------- loading */

typedef struct loaded {
  struct loaded *next;
  jb_tz *zone;
  size_t len;
  char name[];
} loaded;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static loaded *cache; /* kept for the process: zones are immutable */
static jb_tz utc_zone = {0, NULL, NULL, 0, false, {0, 0, false, {0}, {0}}};

static bool read_zone(jb_tz **out, const char *name, size_t len, char *why,
                      size_t whylen) {
  char path[sizeof JB_TZ_DIR + JB_TZ_NAME_MAX + 2];
  snprintf(path, sizeof path, "%s/%.*s", JB_TZ_DIR, (int)len, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size > (1 << 20)) {
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) close(fd);
    snprintf(why, whylen, "no time zone '%.*s' in %s (%s; is tzdata "
             "installed?)", (int)len, name, JB_TZ_DIR,
             e == ENOENT || e == ENOTDIR ? "no such file"
             : e ? strerror(e) : "not a zone file");
    return false;
  }
  uint8_t *buf = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (buf && got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  char pwhy[160];
  bool ok = buf && got == (size_t)st.st_size &&
            jb__tz_parse(out, buf, got, pwhy, sizeof pwhy);
  if (!ok)
    snprintf(why, whylen, "%s: %s", path,
             buf == NULL ? "out of memory"
             : got != (size_t)st.st_size ? "could not be read" : pwhy);
  free(buf);
  return ok;
}

const jb_tz *jb__tz_get(const char *name, size_t len, char *why,
                        size_t whylen) {
  if (!jb__tz_name_ok(name, len, why, whylen)) return NULL;
  if ((len == 3 && memcmp(name, "UTC", 3) == 0) ||
      (len == 7 && memcmp(name, "Etc/UTC", 7) == 0))
    return &utc_zone;
  pthread_mutex_lock(&cache_lock);
  const jb_tz *found = NULL;
  for (loaded *l = cache; l && !found; l = l->next)
    if (l->len == len && memcmp(l->name, name, len) == 0) found = l->zone;
  if (found == NULL) {
    jb_tz *z;
    loaded *l = malloc(sizeof *l + len);
    if (l == NULL) {
      snprintf(why, whylen, "out of memory for a time zone");
    } else if (read_zone(&z, name, len, why, whylen)) {
      l->zone = z;
      l->len = len;
      memcpy(l->name, name, len);
      l->next = cache;
      cache = l;
      found = z;
    } else {
      free(l);
    }
  }
  pthread_mutex_unlock(&cache_lock);
  return found;
}
