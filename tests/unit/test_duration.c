/* Unit tests for gs_parse_duration (src/util/util.c): the durations an
 * operator used to systemd and timeout(1) types, and what is refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/util.h"

static void expect_ms(const char *text, uint64_t want)
{
	uint64_t got = 0;
	int r = gs_parse_duration(text, &got);

	if (r != 0)
		fail_msg("'%s': refused (%d), want %llu ms", text, r, (unsigned long long)want);
	if (got != want)
		fail_msg("'%s': got %llu ms, want %llu ms", text, (unsigned long long)got, (unsigned long long)want);
}

static void expect_refused(const char *text, int want_r)
{
	uint64_t got = 12345;
	int r = gs_parse_duration(text, &got);

	if (r != want_r)
		fail_msg("'%s': got %d (%llu ms), want %d", text, r, (unsigned long long)got, want_r);
	assert_int_equal(got, 12345); /* untouched on error */
}

static void test_plain_seconds_as_before(void **state)
{
	(void)state;
	expect_ms("10", 10000);
	expect_ms("0", 0);
	expect_ms("0.5", 500);
	expect_ms(".25", 250);
	expect_ms("1.", 1000);
	expect_ms("0.0005", 1); /* rounded to the nearest ms */
	expect_ms("604800", 604800000ULL);
}

static void test_suffixes_as_systemd_and_timeout(void **state)
{
	(void)state;
	expect_ms("90s", 90000);
	expect_ms("2m", 120000);
	expect_ms("500ms", 500);
	expect_ms("1.5m", 90000);
	expect_ms("1h", 3600000);
	expect_ms("1d", 86400000);
	expect_ms("2min", 120000);
	expect_ms("30sec", 30000);
	expect_ms("1m30s", 90000);
	expect_ms("1min 30s", 90000);
	expect_ms("1 min", 60000);
	expect_ms("1h 2m 3s 4ms", 3723004);
	expect_ms("2 minutes", 120000);
}

static void test_refused(void **state)
{
	(void)state;
	expect_refused("", -EINVAL);
	expect_refused(" ", -EINVAL);
	expect_refused("s", -EINVAL);
	expect_refused("-1", -EINVAL);
	expect_refused("+1", -EINVAL);
	expect_refused("1e3", -EINVAL);
	expect_refused("0x10", -EINVAL);
	expect_refused("inf", -EINVAL);
	expect_refused("nan", -EINVAL);
	expect_refused("10x", -EINVAL);
	expect_refused("1m 30", -EINVAL); /* a bare number after a unit */
	expect_refused("10 20", -EINVAL);
	expect_refused("1..5", -EINVAL);
	expect_refused("5s%", -EINVAL);
	expect_refused("8d", -ERANGE);
	expect_refused("604801", -ERANGE);
	expect_refused("99999999999999999999999999", -ERANGE);
	expect_refused("7d 1ms", -ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_seconds_as_before),
		cmocka_unit_test(test_suffixes_as_systemd_and_timeout),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
