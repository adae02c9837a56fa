/* Unit tests for src/util/sanitize.c: the text escaping (terminals, logs,
 * CSV, the summary line) and the JSON escaping of outside text, with the
 * names an adversary picks: escape sequences, a line break that forges a
 * report line, C1 controls, invalid and overlong UTF-8, surrogates, long
 * names, and random bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "util/sanitize.h"
#include "util/util.h"

static void expect_text(const char *in, size_t len, const char *want)
{
	char buf[512];

	assert_string_equal(gs_text_escape(buf, sizeof(buf), in, len, 0), want);
}

/* The length of a literal, embedded NULs included. */
#define EXPECT_TEXT(lit, want) expect_text(lit, sizeof(lit) - 1, want)

static void test_text_escapes_everything_but_printable_ascii(void **state)
{
	(void)state;
	EXPECT_TEXT("python3", "python3");
	EXPECT_TEXT("a\x1b[2Jb", "a\\x1b[2Jb");
	/* the forged report line stays on the line it came from */
	EXPECT_TEXT("x\nVerdict: ok", "x\\x0aVerdict: ok");
	EXPECT_TEXT("\r\t\x7f", "\\x0d\\x09\\x7f");
	EXPECT_TEXT("\x00z", "\\x00z");
	/* non-ASCII, valid UTF-8 or not: one column per byte or four */
	EXPECT_TEXT("\xc3\xa9", "\\xc3\\xa9");
	EXPECT_TEXT("\xc2\x9b" "31m", "\\xc2\\x9b31m");
	EXPECT_TEXT("\xff\xfe", "\\xff\\xfe");
	/* backslashes as they are: systemd's own escapes read as systemd writes them */
	EXPECT_TEXT("vllm\\x2dserver.service", "vllm\\x2dserver.service");
	EXPECT_TEXT("", "");
}

static void test_text_is_idempotent(void **state)
{
	const char *in = "\x1b]0;title\x07\n\xff ok\\";
	char once[256], twice[256];

	(void)state;
	gs_text_escape(once, sizeof(once), in, strlen(in), 0);
	gs_text_escape(twice, sizeof(twice), once, strlen(once), 0);
	assert_string_equal(once, twice);
}

static void test_text_cut_never_splits_an_escape(void **state)
{
	char buf[12];

	(void)state;
	/* "abc" fits */
	assert_string_equal(gs_text_escape(buf, sizeof(buf), "abc", 3, 0), "abc");
	/* 11 characters fit exactly: no cut */
	assert_string_equal(gs_text_escape(buf, sizeof(buf), "abcdefghijk", 11, 0), "abcdefghijk");
	/* one more: cut, with "..." inside the 11 */
	assert_string_equal(gs_text_escape(buf, sizeof(buf), "abcdefghijkl", 12, 0), "abcdefgh...");
	/* escapes are whole or absent: 8 columns before the dots hold two */
	assert_string_equal(gs_text_escape(buf, sizeof(buf), "\x1b\x1b\x1b", 3, 0), "\\x1b\\x1b...");
	assert_string_equal(gs_text_escape(buf, sizeof(buf), "ab\x1b\x1b\x1b", 5, 0), "ab\\x1b...");
	/* tiny buffers still end in a NUL */
	assert_string_equal(gs_text_escape(buf, 1, "abc", 3, 0), "");
	assert_string_equal(gs_text_escape(buf, 3, "abc", 3, 0), "..");
	assert_string_equal(gs_text_escape(buf, 4, "abcd", 4, 0), "...");
	assert_string_equal(gs_text_escape(buf, 5, "\x1b\x1b", 2, 0), "...");
	/* NULL reads as empty */
	assert_string_equal(gs_text_escape(buf, sizeof(buf), NULL, 5, 0), "");
	assert_string_equal(gs_safe(NULL, buf, sizeof(buf)), "");
}

static void test_text_lines_keep_newlines_and_tabs_only(void **state)
{
	char buf[64];

	(void)state;
	assert_string_equal(gs_text_escape(buf, sizeof(buf), "a\n\tb\r\x1b", 6, GS_ESC_LINES),
			    "a\n\tb\\x0d\\x1b");
}

static void test_text_dup_bounds_what_it_reads(void **state)
{
	char *s;

	(void)state;
	s = gs_text_dup("ab\x00\x1f\x7f\x80\xff~", 8, 100);
	assert_string_equal(s, "ab\\x00\\x1f\\x7f\\x80\\xff~");
	free(s);
	s = gs_text_dup("abcdef", 6, 3);
	assert_string_equal(s, "abc...");
	free(s);
	s = gs_text_dup("\x1b\x1b\x1b\x1b", 4, 3);
	assert_string_equal(s, "\\x1b\\x1b\\x1b...");
	free(s);
	s = gs_text_dup("", 0, 0);
	assert_string_equal(s, "");
	free(s);
	s = gs_text_dup("x", 1, 0);
	assert_string_equal(s, "...");
	free(s);
}

static void test_safe_macro_on_a_long_name(void **state)
{
	char *longname = malloc(5000);
	char line[4096];

	(void)state;
	assert_non_null(longname);
	memset(longname, '\x1b', 4999);
	longname[4999] = '\0';
	snprintf(line, sizeof(line), "[%s]", GS_SAFE(longname));
	/* cut within GS_SAFE_SIZE, escapes whole, and said so */
	assert_true(strlen(line) < GS_SAFE_SIZE + 2);
	assert_non_null(strstr(line, "\\x1b...]"));
	for (const char *p = line; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	free(longname);
}

static void expect_utf8(const char *s, size_t len, size_t want_n, unsigned want_cp)
{
	unsigned cp = 0xdeadbeef;

	assert_int_equal(gs_utf8_char(s, len, &cp), want_n);
	if (want_n)
		assert_int_equal(cp, want_cp);
}

static void test_utf8_well_formed_only(void **state)
{
	(void)state;
	expect_utf8("A", 1, 1, 'A');
	expect_utf8("\xc3\xa9", 2, 2, 0xe9);
	expect_utf8("\xe6\x97\xa5", 3, 3, 0x65e5);
	expect_utf8("\xf0\x9f\x98\x80", 4, 4, 0x1f600);
	expect_utf8("\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff);
	/* overlong forms */
	expect_utf8("\xc0\x80", 2, 0, 0);
	expect_utf8("\xc1\xbf", 2, 0, 0);
	expect_utf8("\xe0\x80\xaf", 3, 0, 0);
	expect_utf8("\xf0\x80\x80\xaf", 4, 0, 0);
	/* surrogates, past U+10FFFF, bytes that never start a character */
	expect_utf8("\xed\xa0\x80", 3, 0, 0);
	expect_utf8("\xf4\x90\x80\x80", 4, 0, 0);
	expect_utf8("\xf5\x80\x80\x80", 4, 0, 0);
	expect_utf8("\x80", 1, 0, 0);
	expect_utf8("\xff", 1, 0, 0);
	/* truncated: by the length, or by a byte that is not a continuation */
	expect_utf8("\xe6\x97", 2, 0, 0);
	expect_utf8("\xe6\x97\xa5", 2, 0, 0);
	expect_utf8("\xe6(\xa5", 3, 0, 0);
	expect_utf8("", 0, 0, 0);
}

static void expect_json(const char *in, size_t len, unsigned flags, const char *want)
{
	json_t *j = gs_json_textn(in, len, flags);

	assert_non_null(j);
	assert_true(json_is_string(j));
	assert_string_equal(json_string_value(j), want);
	json_decref(j);
}

#define EXPECT_JSON(lit, flags, want) expect_json(lit, sizeof(lit) - 1, flags, want)

static void test_json_keeps_utf8_escapes_the_rest(void **state)
{
	(void)state;
	EXPECT_JSON("python3", 0, "python3");
	/* UTF-8 names stay themselves */
	EXPECT_JSON("m\xc3\xbcller \xe6\x97\xa5\xe6\x9c\xac", 0, "m\xc3\xbcller \xe6\x97\xa5\xe6\x9c\xac");
	/* controls as text, so a program printing the value stays safe */
	EXPECT_JSON("a\x1b[2J\nVerdict: ok", 0, "a\\x1b[2J\\x0aVerdict: ok");
	EXPECT_JSON("\x7f\x01", 0, "\\x7f\\x01");
	/* C1: CSI as UTF-8 */
	EXPECT_JSON("\xc2\x9b" "2J", 0, "\\xc2\\x9b2J");
	EXPECT_JSON("\xc2\xa0", 0, "\xc2\xa0");
	/* bytes that are not UTF-8: the key no longer vanishes */
	EXPECT_JSON("\xff\xfe", 0, "\\xff\\xfe");
	EXPECT_JSON("py\xe6\x97", 0, "py\\xe6\\x97");
	EXPECT_JSON("\xc0\xaf", 0, "\\xc0\\xaf");
	EXPECT_JSON("\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
	EXPECT_JSON("a\0b", 0, "a\\x00b");
	/* multi-line text keeps its lines, not its carriage returns */
	EXPECT_JSON("one\n\ttwo\r\n", GS_ESC_LINES, "one\n\ttwo\\x0d\n");
	EXPECT_JSON("", 0, "");
}

static void test_json_text_null_and_idempotent(void **state)
{
	const char *in = "\x1b]0;t\x07\xff\xc3\xa9\\x41";
	json_t *j = gs_json_text(NULL), *once, *twice;

	(void)state;
	assert_non_null(j);
	assert_true(json_is_null(j));
	json_decref(j);
	once = gs_json_text(in);
	assert_non_null(once);
	twice = gs_json_text(json_string_value(once));
	assert_non_null(twice);
	assert_string_equal(json_string_value(once), json_string_value(twice));
	assert_string_equal(json_string_value(once), "\\x1b]0;t\\x07\\xff\xc3\xa9\\x41");
	json_decref(once);
	json_decref(twice);
}

/* Whatever the bytes, the JSON string exists, is valid UTF-8 without a
 * control character, and the text is printable ASCII. */
static void test_random_bytes(void **state)
{
	uint32_t seed = 12345;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		char in[64], text[300];
		size_t len = (size_t)(round % 64);
		json_t *j;
		const char *v;

		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			in[i] = (char)(seed >> 16);
		}
		j = gs_json_textn(in, len, round & 1 ? GS_ESC_LINES : 0);
		assert_non_null(j);
		v = json_string_value(j);
		for (size_t i = 0, n = strlen(v); i < n;) {
			unsigned cp;
			size_t k = gs_utf8_char(v + i, n - i, &cp);

			assert_true(k > 0);
			assert_true(cp >= 0x20 || cp == '\n' || cp == '\t');
			assert_true(cp != 0x7f && (cp < 0x80 || cp >= 0xa0));
			i += k;
		}
		json_decref(j);
		gs_text_escape(text, sizeof(text), in, len, 0);
		for (const char *p = text; *p; p++)
			assert_true(*p >= 0x20 && *p < 0x7f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_escapes_everything_but_printable_ascii),
		cmocka_unit_test(test_text_is_idempotent),
		cmocka_unit_test(test_text_cut_never_splits_an_escape),
		cmocka_unit_test(test_text_lines_keep_newlines_and_tabs_only),
		cmocka_unit_test(test_text_dup_bounds_what_it_reads),
		cmocka_unit_test(test_safe_macro_on_a_long_name),
		cmocka_unit_test(test_utf8_well_formed_only),
		cmocka_unit_test(test_json_keeps_utf8_escapes_the_rest),
		cmocka_unit_test(test_json_text_null_and_idempotent),
		cmocka_unit_test(test_random_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
