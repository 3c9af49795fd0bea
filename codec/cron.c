/*
 * cron.c - cron specs and their runs (cron.h). The search walks days, not
 * minutes: a day that fails the month and day fields costs a few bit
 * tests, so the longest search (a 29 February, eight years away) looks at
 * about 2,900 days; within a matching day the hour and minute bit sets
 * give the answer directly.
 */
#include "codec/cron.h"
#include "codec/tz.h"

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

/* The names cron(5) takes for months (1..12) and weekdays (0..6), any
 * case. */
static const char *const month_names[12] = {"JAN", "FEB", "MAR", "APR",
                                            "MAY", "JUN", "JUL", "AUG",
                                            "SEP", "OCT", "NOV", "DEC"};
static const char *const dow_names[7] = {"SUN", "MON", "TUE", "WED",
                                         "THU", "FRI", "SAT"};

static bool is_letter(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* A number, or in field 3 or 4 a name, at s[*i]. 1: read; 0: neither;
 * -1: letters that name nothing (why[] says so). */
static int value(int f, const char *s, size_t len, size_t *i, unsigned *out,
                 char *why, size_t whylen) {
  if (*i >= len || !is_letter(s[*i])) return number(s, len, i, out) ? 1 : 0;
  size_t start = *i;
  while (*i < len && is_letter(s[*i])) (*i)++;
  const char *const *names = f == 3 ? month_names : dow_names;
  unsigned n = f == 3 ? 12 : f == 4 ? 7 : 0;
  for (unsigned k = 0; k < n && *i - start == 3; k++) {
    unsigned j = 0;
    while (j < 3 && (s[start + j] & ~0x20) == names[k][j]) j++;
    if (j == 3) {
      *out = f == 3 ? k + 1 : k;
      return 1;
    }
  }
  if (n == 0)
    snprintf(why, whylen, "field %d (%s): '%.*s' is not a number (names "
             "are for the month and the day of week)", f + 1, fields[f].name,
             (int)(*i - start), s + start);
  else
    snprintf(why, whylen, "field %d (%s): '%.*s' is not a name (%s)", f + 1,
             fields[f].name, (int)(*i - start), s + start,
             f == 3 ? "JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC"
                    : "SUN MON TUE WED THU FRI SAT");
  return -1;
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
      int got = value(f, s, len, &i, &a, why, whylen);
      if (got < 0) return false;
      if (got == 0) goto bad;
      b = a;
      if (i < len && s[i] == '-') {
        i++;
        bool named = i < len && is_letter(s[i]);
        if ((got = value(f, s, len, &i, &b, why, whylen)) < 0) return false;
        if (got == 0) goto bad;
        if (f == 4 && named && b == 0) b = 7; /* FRI-SUN: Sunday as 7 */
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
           "with an optional /STEP%s", f + 1, fields[f].name, (int)len, s,
           f == 3 ? " (N may be JAN..DEC)" : f == 4 ? " (N may be SUN..SAT)"
                                                  : "");
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
    if (len == 7 && memcmp(spec, "@reboot", 7) == 0) {
      snprintf(why, whylen, "@reboot is not taken: a schedule runs at times "
               "of the clock, and a board has no boot of its own (post the "
               "job from the machine's start-up instead)");
      return false;
    }
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
    if (f == 0 || f == 1) (f == 0 ? &c->minute_star : &c->hour_star)[0] =
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

/* ------------------------------------------------------- in a time zone */

#define SEC_US INT64_C(1000000)

/* The instants (us, at most two, increasing) at which local time `l_us`
 * (a whole minute, counted as if UTC) of zone z runs: cron.h. Zones
 * change their offset at most once within two days, so the offsets a
 * day before and a day after are the only candidates. */
static int instants(const jb_cron *c, const jb_tz *z, int64_t l_us,
                    int64_t u[2]) {
  int64_t l = floor_div(l_us, SEC_US);
  int32_t a = jb__tz_offset(z, l - 86400), b = jb__tz_offset(z, l + 86400);
  int32_t lo = a < b ? a : b, hi = a < b ? b : a;
  bool wild = c->minute_star || c->hour_star;
  int n = 0;
  if (jb__tz_offset(z, l - hi) == hi) u[n++] = (l - hi) * SEC_US;
  if (lo != hi && jb__tz_offset(z, l - lo) == lo) u[n++] = (l - lo) * SEC_US;
  if (n == 2 && !wild) n = 1; /* repeated: its first instant only */
  if (n > 0 || wild || lo == hi) return n;
  /* Skipped: the change's instant, the first second in (l - hi, l - lo]
   * on the later offset. */
  int64_t bot = l - hi, top = l - lo;
  int32_t after = jb__tz_offset(z, top);
  if (jb__tz_offset(z, bot) == after) return 0;
  while (top - bot > 1) {
    int64_t mid = bot + (top - bot) / 2;
    if (jb__tz_offset(z, mid) == after) top = mid;
    else bot = mid;
  }
  u[0] = top * SEC_US;
  return 1;
}

/* The least and greatest offsets (us) near instant t. */
static void near_offsets(const jb_tz *z, int64_t t_us, int64_t *lo,
                         int64_t *hi) {
  int64_t t = floor_div(t_us, SEC_US);
  int64_t a = jb__tz_offset(z, t - 86400), b = jb__tz_offset(z, t + 86400);
  *lo = (a < b ? a : b) * SEC_US;
  *hi = (a < b ? b : a) * SEC_US;
}

bool jb__cron_next_tz(const jb_cron *c, const jb_tz *z, int64_t after_us,
                      int64_t *out) {
  if (z == NULL) return jb__cron_next(c, after_us, out);
  int64_t lo, hi, l, best = INT64_MAX;
  near_offsets(z, after_us, &lo, &hi);
  /* A run after after_us is a local time after after_us + its offset. */
  int64_t cur = after_us + lo;
  while (jb__cron_next(c, cur, &l)) {
    near_offsets(z, l, &lo, &hi);
    if (best != INT64_MAX && l - hi > best) break; /* all later are later */
    if (l - after_us > JB_CRON_HORIZON_DAYS * DAY_MIN * MIN_US) break;
    int64_t u[2];
    int n = instants(c, z, l, u);
    for (int k = 0; k < n; k++)
      if (u[k] > after_us && u[k] < best) best = u[k];
    cur = l;
  }
  if (best == INT64_MAX) return false;
  *out = best;
  return true;
}

bool jb__cron_prev_tz(const jb_cron *c, const jb_tz *z, int64_t at_us,
                      int64_t *out) {
  if (z == NULL) return jb__cron_prev(c, at_us, out);
  int64_t lo, hi, l, best = INT64_MIN;
  near_offsets(z, at_us, &lo, &hi);
  int64_t cur = at_us + hi;
  while (jb__cron_prev(c, cur, &l)) {
    near_offsets(z, l, &lo, &hi);
    if (best != INT64_MIN && l - lo < best) break;
    if (at_us - l > JB_CRON_HORIZON_DAYS * DAY_MIN * MIN_US) break;
    int64_t u[2];
    int n = instants(c, z, l, u);
    for (int k = 0; k < n; k++)
      if (u[k] <= at_us && u[k] > best) best = u[k];
    cur = l - 1;
  }
  if (best == INT64_MIN) return false;
  *out = best;
  return true;
}
