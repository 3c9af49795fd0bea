/*
 * cron.c - cron specs and their runs (cron.h). The search walks days, not
 * minutes: a day that fails the month and day fields costs a few bit
 * tests, so the longest search (a 29 February, eight years away) looks at
 * about 2,900 days; within a matching day the hour and minute bit sets
 * give the answer directly.
 */
#include "codec/cron.h"

#include <stdio.h>
#include <string.h>

#define MIN_US INT64_C(60000000)
#define DAY_MIN 1440

/* Floor division (C's truncates toward zero; times before 1970 are
 * negative). */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Howard Hinnant's days_from_civil / civil_from_days
 * (http://howardhinnant.github.io/date_algorithms.html): exact for every
 * date of the proleptic Gregorian calendar, no tables, no time zone. */
int64_t jb__days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

void jb__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* ---------------------------------------------------------------- parse */

static const struct {
  const char *name;
  unsigned lo, hi;
} fields[5] = {
    {"minute", 0, 59}, {"hour", 0, 23}, {"day of month", 1, 31},
    {"month", 1, 12},  {"day of week", 0, 7},
};

static const struct {
  const char *name, *spec;
} macros[] = {
    {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"}, {"@weekly", "0 0 * * 0"},
    {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
};

/* A number at s[*i] (at most 3 digits: no field goes past 59). */
static bool number(const char *s, size_t len, size_t *i, unsigned *out) {
  size_t start = *i;
  unsigned v = 0;
  while (*i < len && s[*i] >= '0' && s[*i] <= '9' && *i - start < 3)
    v = v * 10 + (unsigned)(s[(*i)++] - '0');
  if (*i == start || (*i < len && s[*i] >= '0' && s[*i] <= '9'))
    return false;
  *out = v;
  return true;
}

/* One field f, text s[0..len), into the bit set *bits. */
static bool parse_field(int f, const char *s, size_t len, uint64_t *bits,
                        char *why, size_t whylen) {
  unsigned lo = fields[f].lo, hi = fields[f].hi;
  *bits = 0;
  size_t i = 0;
  for (;;) {
    size_t item = i;
    unsigned a, b, step = 1;
    if (i < len && s[i] == '*') {
      a = lo;
      b = hi;
      i++;
    } else {
      if (!number(s, len, &i, &a)) goto bad;
      b = a;
      if (i < len && s[i] == '-') {
        i++;
        if (!number(s, len, &i, &b)) goto bad;
      } else if (i < len && s[i] == '/') {
        b = hi; /* N/S: from N to the end */
      }
      if (a < lo || a > hi || b < lo || b > hi) {
        snprintf(why, whylen, "field %d (%s): %.*s is outside %u..%u", f + 1,
                 fields[f].name, (int)(i - item), s + item, lo, hi);
        return false;
      }
      if (b < a) {
        snprintf(why, whylen, "field %d (%s): the range %.*s runs backwards",
                 f + 1, fields[f].name, (int)(i - item), s + item);
        return false;
      }
    }
    if (i < len && s[i] == '/') {
      i++;
      if (!number(s, len, &i, &step) || step == 0 || step > hi) {
        snprintf(why, whylen, "field %d (%s): the step in '%.*s' must be "
                 "1..%u", f + 1, fields[f].name, (int)len, s, hi);
        return false;
      }
    }
    for (unsigned v = a; v <= b; v += step)
      *bits |= (uint64_t)1 << (f == 4 && v == 7 ? 0 : v);
    if (i == len) return true;
    if (s[i] != ',') goto bad;
    i++;
  }
bad:
  snprintf(why, whylen, "field %d (%s): '%.*s' is not a list of *, N, N-M "
           "with an optional /STEP", f + 1, fields[f].name, (int)len, s);
  return false;
}

bool jb__cron_parse(jb_cron *c, const char *spec, size_t len, char *why,
                    size_t whylen) {
  memset(c, 0, sizeof *c);
  if (len > 0 && spec[0] == '@') {
    for (size_t k = 0; k < sizeof macros / sizeof macros[0]; k++)
      if (strlen(macros[k].name) == len &&
          memcmp(macros[k].name, spec, len) == 0)
        return jb__cron_parse(c, macros[k].spec, strlen(macros[k].spec), why,
                              whylen);
    snprintf(why, whylen, "'%.*s' is not @hourly, @daily, @midnight, "
             "@weekly, @monthly, @yearly or @annually", (int)len, spec);
    return false;
  }
  uint64_t bits[5];
  size_t i = 0;
  int f = 0;
  while (i < len) {
    if (spec[i] == ' ' || spec[i] == '\t') {
      i++;
      continue;
    }
    size_t start = i;
    while (i < len && spec[i] != ' ' && spec[i] != '\t') i++;
    if (f == 5) {
      snprintf(why, whylen, "more than 5 fields (minute hour day-of-month "
               "month day-of-week)");
      return false;
    }
    if (f == 2 || f == 4) (f == 2 ? &c->dom_star : &c->dow_star)[0] =
        spec[start] == '*';
    if (!parse_field(f, spec + start, i - start, &bits[f], why, whylen))
      return false;
    f++;
  }
  if (f < 5) {
    snprintf(why, whylen, "%d field%s, not 5 (minute hour day-of-month month "
             "day-of-week)", f, f == 1 ? "" : "s");
    return false;
  }
  c->minute = bits[0];
  c->hour = (uint32_t)bits[1];
  c->dom = (uint32_t)bits[2];
  c->month = (uint32_t)bits[3];
  c->dow = (uint32_t)bits[4];
  int64_t t;
  if (!jb__cron_next(c, -1, &t)) {
    snprintf(why, whylen, "no day ever matches (day of month and month)");
    return false;
  }
  return true;
}

/* ----------------------------------------------------------------- runs */

static bool day_ok(const jb_cron *c, int64_t days) {
  int64_t y;
  unsigned m, d;
  jb__civil_from_days(days, &y, &m, &d);
  if (!(c->month >> m & 1)) return false;
  unsigned wd = (unsigned)(((days % 7) + 7 + 4) % 7); /* 1970-01-01: Thu */
  bool dom = c->dom >> d & 1, dow = c->dow >> wd & 1;
  if (c->dom_star || c->dow_star) return dom && dow;
  return dom || dow;
}

bool jb__cron_next(const jb_cron *c, int64_t after_us, int64_t *out) {
  int64_t m0 = floor_div(after_us, MIN_US) + 1; /* minutes since 1970 */
  int64_t day0 = floor_div(m0, DAY_MIN);
  int from = (int)(m0 - day0 * DAY_MIN);
  for (int64_t day = day0; day < day0 + JB_CRON_HORIZON_DAYS; day++, from = 0) {
    if (!day_ok(c, day)) continue;
    for (int h = from / 60; h < 24; h++) {
      if (!(c->hour >> h & 1)) continue;
      int mfrom = h == from / 60 ? from % 60 : 0;
      uint64_t left = c->minute >> mfrom << mfrom;
      if (left == 0) continue;
      int mm = __builtin_ctzll(left);
      *out = ((day * DAY_MIN) + h * 60 + mm) * MIN_US;
      return true;
    }
  }
  return false;
}

bool jb__cron_prev(const jb_cron *c, int64_t at_us, int64_t *out) {
  int64_t m0 = floor_div(at_us, MIN_US);
  int64_t day0 = floor_div(m0, DAY_MIN);
  int upto = (int)(m0 - day0 * DAY_MIN);
  for (int64_t day = day0; day > day0 - JB_CRON_HORIZON_DAYS;
       day--, upto = DAY_MIN - 1) {
    if (!day_ok(c, day)) continue;
    for (int h = upto / 60; h >= 0; h--) {
      if (!(c->hour >> h & 1)) continue;
      int mupto = h == upto / 60 ? upto % 60 : 59;
      uint64_t below = c->minute & (((uint64_t)2 << mupto) - 1);
      if (below == 0) continue;
      int mm = 63 - __builtin_clzll(below);
      *out = ((day * DAY_MIN) + h * 60 + mm) * MIN_US;
      return true;
    }
  }
  return false;
}
