/* --expect (core/expect.c): what a fleet confirmed, parsed strictly and
 * checked against a plan written out here. No /proc: literal plans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expect.h"
#include "util/util.h"

static void test_parse_takes_none_and_pid_starttime_lists(void **state)
{
	struct gs_expect e;
	char err[256];

	(void)state;
	assert_int_equal(gs_expect_parse("none", &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 0);
	gs_expect_free(&e);
	assert_int_equal(gs_expect_parse("1234:987654", &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 1);
	assert_int_equal(e.items[0].pid, 1234);
	assert_int_equal(e.items[0].starttime, 987654);
	gs_expect_free(&e);
	assert_int_equal(gs_expect_parse("1:0,4194304:18446744073709551615", &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 2);
	assert_int_equal(e.items[1].pid, 4194304);
	assert_true(e.items[1].starttime == UINT64_MAX);
	gs_expect_free(&e);
}

/* Anything else is an error naming the input, never a list to act on. */
static void test_parse_refuses_junk_with_one_line(void **state)
{
	static const char *const junk[] = {
		"", "None", "none,1:2", "1", "1:", ":1", "1:2,", ",1:2", "1:2,,3:4", "0:1", "-1:1", "+1:1",
		"01:1", "1:01", " 1:1", "1 :1", "1:1 ", "1:1\n", "1:x", "4194305:1", "99999999999999999999:1",
		"1:18446744073709551616", "1:2,1:3", "1:2:3", "0x10:1",
	};
	struct gs_expect e;
	char err[256];

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(junk); i++) {
		err[0] = '\0';
		if (gs_expect_parse(junk[i], &e, err, sizeof(err)) != -EINVAL)
			fail_msg("accepted '%s'", junk[i]);
		assert_null(e.items);
		assert_int_equal(e.n, 0);
		assert_true(strncmp(err, "invalid --expect", 16) == 0);
		assert_null(strchr(err, '\n'));
	}
}

static void test_parse_refuses_more_than_the_limit(void **state)
{
	size_t n = GS_EXPECT_MAX + 1, o = 0;
	char *s = malloc(n * 16), err[256];
	struct gs_expect e;

	(void)state;
	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		o += (size_t)sprintf(s + o, "%s%zu:1", i ? "," : "", i + 1);
	assert_int_equal(gs_expect_parse(s, &e, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "more than"));
	free(s);
}

static void plan_with(struct gs_plan *p, struct gs_target *t, size_t n)
{
	memset(p, 0, sizeof(*p));
	p->targets = t;
	p->n_targets = n;
}

static void test_check_passes_only_what_was_confirmed(void **state)
{
	struct gs_target t[2] = { { .pid = 100, .starttime = 5, .comm = "vllm" },
				  { .pid = 200, .starttime = 7, .comm = "python3" } };
	struct gs_expect e;
	struct gs_plan p;
	char why[256], err[256];

	(void)state;
	plan_with(&p, t, 2);
	assert_int_equal(gs_expect_parse("200:7,100:5", &e, err, sizeof(err)), 0);
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), 0);
	gs_expect_free(&e);
	/* A confirmed target that is gone since: nothing new to stop. */
	plan_with(&p, t, 1);
	assert_int_equal(gs_expect_parse("100:5,200:7", &e, err, sizeof(err)), 0);
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), 0);
	gs_expect_free(&e);
	/* A new target. */
	plan_with(&p, t, 2);
	assert_int_equal(gs_expect_parse("100:5", &e, err, sizeof(err)), 0);
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), -ESTALE);
	assert_string_equal(why, "not the confirmed plan: 200 (python3) is a new target; nothing was stopped");
	gs_expect_free(&e);
	/* The same PID, another process (reused): a new target too. */
	assert_int_equal(gs_expect_parse("100:5,200:8", &e, err, sizeof(err)), 0);
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), -ESTALE);
	gs_expect_free(&e);
	/* Nothing was confirmed: every target is new. */
	assert_int_equal(gs_expect_parse("none", &e, err, sizeof(err)), 0);
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), -ESTALE);
	assert_string_equal(why, "not the confirmed plan: 100 (vllm) and 1 more are new targets; nothing was stopped");
	plan_with(&p, t, 0);
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), 0);
	gs_expect_free(&e);
}

static void test_format_reads_back(void **state)
{
	struct gs_expect_item items[2] = { { .pid = 42, .starttime = 9 }, { .pid = 4194304, .starttime = UINT64_MAX } };
	struct gs_expect e;
	char *s, err[256];

	(void)state;
	assert_int_equal(gs_expect_format(items, 0, &s), 0);
	assert_string_equal(s, "none");
	free(s);
	assert_int_equal(gs_expect_format(items, 2, &s), 0);
	assert_string_equal(s, "42:9,4194304:18446744073709551615");
	assert_int_equal(gs_expect_parse(s, &e, err, sizeof(err)), 0);
	assert_int_equal(e.n, 2);
	assert_int_equal(e.items[0].pid, 42);
	gs_expect_free(&e);
	free(s);
	items[0].pid = 0;
	assert_int_equal(gs_expect_format(items, 2, &s), -EINVAL);
}

/* PID:STARTTIME:ACTION: the action shown must still be the plan's. */
static void test_an_action_that_changed_is_a_mismatch(void **state)
{
	struct gs_target t[1] = { { .pid = 100, .starttime = 5, .action = GS_ACT_STOP_UNIT, .comm = "vllm" } };
	struct gs_expect_item items[1] = { { .pid = 100, .starttime = 5, .action = "signal" } };
	struct gs_expect e;
	struct gs_plan p;
	char why[256], err[256], *s;

	(void)state;
	plan_with(&p, t, 1);
	assert_int_equal(gs_expect_parse("100:5:stop-unit", &e, err, sizeof(err)), 0);
	assert_string_equal(e.items[0].action, "stop-unit");
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), 0);
	gs_expect_free(&e);
	/* Shown as a signal; the unit stop it became would end its unit. */
	assert_int_equal(gs_expect_parse("100:5:signal", &e, err, sizeof(err)), 0);
	assert_int_equal(gs_expect_check(&e, &p, why, sizeof(why)), -ESTALE);
	assert_string_equal(why,
			    "not the confirmed plan: 100 (vllm) would be stopped with stop-unit, not signal; nothing was stopped");
	gs_expect_free(&e);
	/* Words the plan does not have, or an empty one, are refused. */
	assert_int_equal(gs_expect_parse("100:5:reboot", &e, err, sizeof(err)), -EINVAL);
	assert_int_equal(gs_expect_parse("100:5:", &e, err, sizeof(err)), -EINVAL);
	assert_int_equal(gs_expect_parse("100:5:signal:x", &e, err, sizeof(err)), -EINVAL);
	/* The format writes it, and reads back. */
	assert_int_equal(gs_expect_format(items, 1, &s), 0);
	assert_string_equal(s, "100:5:signal");
	free(s);
	/* The parser's words are the plan's, every one. */
	for (enum gs_action a = GS_ACT_SIGNAL; a <= GS_ACT_STOP_SUPERVISED; a++)
		assert_string_equal(gs_expect_action_word(a), gs_action_str(a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_takes_none_and_pid_starttime_lists),
		cmocka_unit_test(test_parse_refuses_junk_with_one_line),
		cmocka_unit_test(test_parse_refuses_more_than_the_limit),
		cmocka_unit_test(test_check_passes_only_what_was_confirmed),
		cmocka_unit_test(test_format_reads_back),
		cmocka_unit_test(test_an_action_that_changed_is_a_mismatch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
