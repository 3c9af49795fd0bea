/*
 * cron.h - when a schedule runs (jobboard.h, "Periodic jobs"): a 5-field
 * cron spec "m h dom mon dow" evaluated in UTC, and fixed intervals.
 * Pure functions of their arguments (no clock, no board, no locale), so
 * store/schedule.c calls them inside its write transaction and the tests
 * check them against tables.
 *
 * Fields: minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of
 * week 0-7 (0 and 7 are Sunday). Each is a comma-separated list of items:
 * `*`, N, N-M, each optionally followed by /STEP (`*`/S: every S from the
 * field's least value; N/S: from N to the field's greatest). A month may
 * be named JAN..DEC and a weekday SUN..SAT, in any case, also in ranges
 * (MON-FRI; FRI-SUN ends on Sunday). Also @hourly, @daily (@midnight),
 * @weekly, @monthly, @yearly (@annually); @reboot is refused (a board has
 * no boot). A day matches as in Vixie cron: when both the day
 * of month and the day of week are restricted (neither begins with `*`),
 * either may match; else both must. A run is a whole minute (second 0,
 * microsecond 0, UTC) that matches every field.
 */
#ifndef JOBBOARD_CRON_H
#define JOBBOARD_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t minute; /* bit m: minute m (0..59) matches */
  uint32_t hour;   /* bits 0..23 */
  uint32_t dom;    /* bits 1..31 */
  uint32_t month;  /* bits 1..12 */
  uint32_t dow;    /* bits 0..6, Sunday 0 */
  bool dom_star, dow_star; /* the field began with `*` */
  bool minute_star, hour_star; /* likewise: a run "every" minute or hour,
                                  which a DST change does not move */
} jb_cron;

/* The longest spec text kept with a schedule. */
#define JB_CRON_SPEC_MAX 200

/* Parse spec[0..len). false, with why[0..whylen) saying which field and
 * value is wrong ("field 2 (hour): 25 is outside 0..23"), when it is not a
 * spec or when no minute ever matches it ("0 0 30 2 *"). */
bool jb__cron_parse(jb_cron *c, const char *spec, size_t len, char *why,
                    size_t whylen);

/* The first run strictly after `after_us` (*out) and the last run at or
 * before `at_us`; false when there is none within JB_CRON_HORIZON_DAYS
 * (a parsed spec always has one: a 29 February recurs within 8 years). */
#define JB_CRON_HORIZON_DAYS 4000
bool jb__cron_next(const jb_cron *c, int64_t after_us, int64_t *out);
bool jb__cron_prev(const jb_cron *c, int64_t at_us, int64_t *out);

/* The same in a time zone (codec/tz.h; NULL: UTC): the fields match the
 * zone's local time. A local time a change to daylight time skips (02:30
 * on the day clocks go from 02:00 to 03:00) runs at the change's instant
 * (03:00 local), once however many of its minutes match; a local time
 * that happens twice (01:30 on the day clocks go back from 02:00 to
 * 01:00) runs once, at its first instant. A spec whose minute or hour
 * field begins with `*` is the exception, as in cronie: it runs by the
 * clock's real minutes, so it has no run in a skipped hour and runs in
 * both copies of a repeated one. */
typedef struct jb_tz jb_tz;
bool jb__cron_next_tz(const jb_cron *c, const jb_tz *z, int64_t after_us,
                      int64_t *out);
bool jb__cron_prev_tz(const jb_cron *c, const jb_tz *z, int64_t at_us,
                      int64_t *out);

/* Civil date of a day count since 1970-01-01 (proleptic Gregorian, UTC),
 * and back; weekday 0 = Sunday. */
void jb__civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);
int64_t jb__days_from_civil(int64_t y, unsigned m, unsigned d);

#endif
