/*
 * test_web_html.c - the one escape of `jobboard web` (tools/web_html.c):
 * every byte of markup meaning written as a character reference, control
 * characters replaced, UTF-8 left whole, a cut never inside a character;
 * and the percent-encoding of the pages' links.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/web_html.h"

/* What `write` puts out for `s`, malloc'ed. */
static char *out(void (*write)(FILE *, const char *), const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  write(f, s);
  assert_int_equal(fclose(f), 0);
  return buf;
}

static void expect(void (*write)(FILE *, const char *), const char *in,
                   const char *want) {
  char *got = out(write, in);
  assert_string_equal(got, want);
  free(got);
}

static void test_markup(void **state) {
  (void)state;
  expect(web_esc, "<script>alert(1)</script>",
         "&lt;script&gt;alert(1)&lt;/script&gt;");
  expect(web_esc, "\"><img src=x onerror=alert(1)>",
         "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
  expect(web_esc, "a & b 'c'", "a &amp; b &#39;c&#39;");
  expect(web_esc, "&lt;", "&amp;lt;");
  expect(web_esc, "", "");
  expect(web_esc, NULL, "");
}

static void test_controls(void **state) {
  (void)state;
  /* Tab and newline stay (a <pre> of JSON has them); others are U+FFFD. */
  expect(web_esc, "a\tb\nc", "a\tb\nc");
  expect(web_esc, "a\x01" "b\x1b" "c\x7f", "a\xef\xbf\xbd" "b\xef\xbf\xbd"
                                          "c\xef\xbf\xbd");
  expect(web_esc, "caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac");
}

static void esc_4(FILE *f, const char *s) { web_esc_n(f, s, 4); }
static void esc_3(FILE *f, const char *s) { web_esc_n(f, s, 3); }

static void test_cut(void **state) {
  (void)state;
  expect(esc_4, "abcdef", "abcd");
  expect(esc_4, "ab", "ab");
  expect(esc_4, "a<bc", "a&lt;bc");
  /* "\xe2\x82\xac" (3 bytes) from byte 2: the cut at 4 falls inside it. */
  expect(esc_4, "ab\xe2\x82\xac", "ab");
  expect(esc_3, "\xc3\xa9\xc3\xa9", "\xc3\xa9");
}

static void test_url(void **state) {
  (void)state;
  expect(web_url_esc, "images.*", "images.%2A");
  expect(web_url_esc, "a b&c=d\"<>", "a%20b%26c%3Dd%22%3C%3E");
  expect(web_url_esc, "A-z_0.9~", "A-z_0.9~");
  expect(web_url_esc, "\xc3\xa9", "%C3%A9");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_markup),
      cmocka_unit_test(test_controls),
      cmocka_unit_test(test_cut),
      cmocka_unit_test(test_url),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
