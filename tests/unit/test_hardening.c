/* Regression tests for what the hardening work found (tests/fuzz/, make
 * analyze). A remote host's JSON document is untrusted input: its words must
 * never reach a terminal raw, and its numbers must not overflow the sums
 * (signed overflow is UB). The driver's procfs text must not wrap numbers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet/merge.h"
#include "gpu/gpu.h"

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

static void judge(const char *command, const char *doc, int exit_code, struct gs_host_result *r)
{
	struct gs_run_output o = { 0 };
	struct gs_merge_opts m = { .command = command, .deadline_ms = 1000, .tolerance_mib = 64 };

	o.state = GS_RUN_EXITED;
	o.exit_code = exit_code;
	o.out = strdup(doc);
	assert_non_null(o.out);
	o.out_len = strlen(doc);
	assert_int_equal(gs_host_result_make(r, "gpu01", &o, &m), 0);
	free(o.out);
}

/* A verdict word with an OSC escape sequence (sets the terminal title, can
 * hide text) was copied raw into the host's report line. */
static void test_verdict_escape_sanitized(void **state)
{
	struct gs_host_result r;

	(void)state;
	judge("reclaim", "{\"schema_version\":1,\"command\":\"reclaim\",\"verdict\":\"evil\\u001b]0;pwned\\u0007\",\"gpus\":[]}",
	      1, &r);
	assert_int_equal(r.failure, GS_HF_NONE);
	assert_non_null(r.line);
	assert_true(printable(r.line));
	gs_host_result_free(&r);
}

/* The "command" word of a mismatching document was quoted raw in the error. */
static void test_command_escape_sanitized(void **state)
{
	struct gs_host_result r;

	(void)state;
	judge("status", "{\"schema_version\":1,\"command\":\"st\\u001b[2Jatus\"}", 0, &r);
	assert_int_equal(r.failure, GS_HF_BAD_OUTPUT);
	assert_non_null(r.error);
	assert_true(printable(r.error));
	assert_non_null(strstr(r.error, "\\x1b"));
	gs_host_result_free(&r);
}

/* Two GPUs at INT64_MAX MiB: the memory sum overflowed (UBSan: signed
 * integer overflow in sum_mib); now the figure is "memory unknown". */
static void test_memory_sum_overflow(void **state)
{
	struct gs_host_result r;

	(void)state;
	judge("status",
	      "{\"schema_version\":1,\"command\":\"status\",\"gpus\":[{\"index\":0,\"memory_used_mib\":9223372036854775807},"
	      "{\"index\":1,\"memory_used_mib\":9223372036854775807}],\"processes\":["
	      "{\"pid\":5,\"role\":\"protected\",\"gpus\":[0],\"memory_mib\":9223372036854775807},"
	      "{\"pid\":6,\"role\":\"protected\",\"gpus\":[0],\"memory_mib\":9223372036854775807}]}",
	      0, &r);
	assert_int_equal(r.failure, GS_HF_NONE);
	assert_non_null(strstr(r.line, "memory unknown"));
	gs_host_result_free(&r);
}

/* Negative memory from a host is not a figure either. */
static void test_memory_negative(void **state)
{
	struct gs_host_result r;

	(void)state;
	judge("status",
	      "{\"schema_version\":1,\"command\":\"status\",\"gpus\":[{\"index\":0,\"memory_used_mib\":-5}],\"processes\":[]}",
	      0, &r);
	assert_int_equal(r.failure, GS_HF_NONE);
	assert_non_null(strstr(r.line, "memory unknown"));
	gs_host_result_free(&r);
}

/* "%x" let a 9-digit bus number wrap: 0000:100000018:00.0 read as bus 0x18. */
static void test_procfs_bus_no_wrap(void **state)
{
	struct gs_gpu g;

	(void)state;
	assert_int_equal(gs_procfs_nvidia_parse_information("Bus Location: \t 0000:100000018:00.0\nDevice Minor: 0\n", &g),
			 -EBADMSG);
	assert_int_equal(gs_procfs_nvidia_parse_information("Bus Location: \t 0000:2a:00.0\nDevice Minor: 1\n", &g), 0);
	assert_string_equal(g.pci_bus_id, "00000000:2A:00.0");
	assert_int_equal(gs_procfs_nvidia_parse_information("Bus Location: 00000000:2A:00.0\nDevice Minor: 1\n", &g), 0);
	assert_string_equal(g.pci_bus_id, "00000000:2A:00.0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdict_escape_sanitized),
		cmocka_unit_test(test_command_escape_sanitized),
		cmocka_unit_test(test_memory_sum_overflow),
		cmocka_unit_test(test_memory_negative),
		cmocka_unit_test(test_procfs_bus_no_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
