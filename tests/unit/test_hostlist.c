/* Unit tests for src/fleet/hostlist.c: expansion, padding, products, user@,
 * dedupe, exclude, folding, malformed and hostile expressions, huge ranges. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet/hostlist.h"
#include "util/util.h"

/* The list joined with single spaces, for compact expectations. */
static char *joined(const struct gs_hostlist *l)
{
	size_t i, len = 1;
	char *s;

	for (i = 0; i < l->n; i++)
		len += strlen(l->hosts[i]) + 1;
	s = calloc(1, len);
	assert_non_null(s);
	for (i = 0; i < l->n; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, l->hosts[i]);
	}
	return s;
}

static void expect_hosts(const char *expr, const char *want)
{
	struct gs_hostlist l;
	char err[256] = "";
	char *got;
	int r = gs_hostlist_parse(expr, &l, err, sizeof(err));

	if (r != 0)
		fail_msg("parse '%s': %d %s", expr, r, err);
	got = joined(&l);
	if (strcmp(got, want) != 0)
		fail_msg("parse '%s': got '%s', want '%s'", expr, got, want);
	free(got);
	gs_hostlist_free(&l);
}

static void expect_error(const char *expr, int want_r, const char *want_msg)
{
	struct gs_hostlist l;
	char err[256] = "";
	int r = gs_hostlist_parse(expr, &l, err, sizeof(err));

	if (r != want_r)
		fail_msg("parse '%s': got %d (%s), want %d", expr, r, err, want_r);
	if (!strstr(err, want_msg))
		fail_msg("parse '%s': message '%s' lacks '%s'", expr, err, want_msg);
	/* The message is printed on terminals: only printable ASCII. */
	for (const char *p = err; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	assert_int_equal(l.n, 0);
	assert_null(l.hosts);
}

static void test_basic(void **state)
{
	(void)state;
	expect_hosts("gpu1", "gpu1");
	expect_hosts("gpu[01-04,20]", "gpu01 gpu02 gpu03 gpu04 gpu20");
	expect_hosts("gpu[1-3]", "gpu1 gpu2 gpu3");
	expect_hosts("gpu[3]", "gpu3");
	expect_hosts("[1-2]gpu", "1gpu 2gpu");
	expect_hosts("10.0.0.[1-3]", "10.0.0.1 10.0.0.2 10.0.0.3");
	expect_hosts("node_a.example-1.org", "node_a.example-1.org");
	expect_hosts("", "");
	expect_hosts("  \n\t ", "");
}

static void test_padding(void **state)
{
	(void)state;
	/* Natural width unless the lower bound has a leading zero (Slurm). */
	expect_hosts("n[8-10]", "n8 n9 n10");
	expect_hosts("n[08-10]", "n08 n09 n10");
	expect_hosts("n[098-101]", "n098 n099 n100 n101");
	expect_hosts("n[007]", "n007");
	expect_hosts("n[0-2]", "n0 n1 n2");
	expect_hosts("n[00-02]", "n00 n01 n02");
	expect_hosts("n[001-010]", "n001 n002 n003 n004 n005 n006 n007 n008 n009 n010");
	/* Each range has its own width. */
	expect_hosts("n[01-02,3,004]", "n01 n02 n3 n004");
	expect_hosts("n[99-101]", "n99 n100 n101");
}

static void test_products(void **state)
{
	(void)state;
	expect_hosts("rack[1-2]-gpu[01-02]", "rack1-gpu01 rack1-gpu02 rack2-gpu01 rack2-gpu02");
	expect_hosts("r[1,3]c[1-2]n[0]", "r1c1n0 r1c2n0 r3c1n0 r3c2n0");
	expect_hosts("a[1-2].b[1].c", "a1.b1.c a2.b1.c");
}

static void test_lists_and_users(void **state)
{
	(void)state;
	expect_hosts("a,b[1-2],c", "a b1 b2 c");
	expect_hosts("gpu[1,3],login", "gpu1 gpu3 login");
	expect_hosts("root@gpu[1-2],admin@x", "root@gpu1 root@gpu2 admin@x");
	expect_hosts("a , b ,c", "a b c");
	/* -w - : whitespace and newlines, comments, CRLF. */
	expect_hosts("a b\n c\t d,e\n# comment, gpu[9]\nf # trailing\r\ng\r\n", "a b c d e f g");
	expect_hosts("u_1.x-y@h", "u_1.x-y@h");
}

static void test_dedupe(void **state)
{
	(void)state;
	expect_hosts("a,b,a,gpu[1-3],gpu[2-4]", "a b gpu1 gpu2 gpu3 gpu4");
	expect_hosts("gpu[1-2,2,1-3]", "gpu1 gpu2 gpu3");
	/* Different users are different targets. */
	expect_hosts("gpu1,root@gpu1", "gpu1 root@gpu1");
}

static void test_append(void **state)
{
	struct gs_hostlist l;
	char err[256];
	char *s;

	(void)state;
	assert_int_equal(gs_hostlist_parse("a,b", &l, err, sizeof(err)), 0);
	assert_int_equal(gs_hostlist_append(&l, "b,c[1-2]", err, sizeof(err)), 0);
	/* A bad expression leaves the list as it was, even after a good part. */
	assert_int_equal(gs_hostlist_append(&l, "d,e[", err, sizeof(err)), -EINVAL);
	s = joined(&l);
	assert_string_equal(s, "a b c1 c2");
	free(s);
	assert_int_equal(gs_hostlist_index(&l, "c2"), 3);
	assert_int_equal(gs_hostlist_index(&l, "d"), -1);
	assert_int_equal(gs_hostlist_add(&l, "a"), 0);
	assert_int_equal(gs_hostlist_add(&l, "z"), 1);
	assert_int_equal(l.n, 5);
	/* Growing past the limit by appending is refused and changes nothing. */
	assert_int_equal(gs_hostlist_append(&l, "n[1-65535]", err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "65536"));
	assert_int_equal(l.n, 5);
	gs_hostlist_free(&l);
	gs_hostlist_free(&l); /* idempotent */
}

static void test_exclude(void **state)
{
	struct gs_hostlist l, x;
	char err[256];
	char *s;

	(void)state;
	assert_int_equal(gs_hostlist_parse("gpu[1-5],root@gpu6,root@gpu7,root@gpu8", &l, err, sizeof(err)), 0);
	assert_int_equal(gs_hostlist_parse("gpu[2,4],gpu6,admin@gpu7,root@gpu8,nothere", &x, err, sizeof(err)), 0);
	assert_int_equal(gs_hostlist_exclude(&l, &x), 0);
	s = joined(&l);
	/* gpu6 matches root@gpu6 (any user); admin@gpu7 does not match root@gpu7. */
	assert_string_equal(s, "gpu1 gpu3 gpu5 root@gpu7");
	free(s);
	/* The index follows the compaction. */
	assert_int_equal(gs_hostlist_index(&l, "gpu5"), 2);
	assert_int_equal(gs_hostlist_index(&l, "gpu2"), -1);
	assert_int_equal(gs_hostlist_add(&l, "gpu2"), 1);
	assert_int_equal(gs_hostlist_index(&l, "gpu2"), 4);
	gs_hostlist_free(&x);

	/* Excluding everything, and excluding with an empty list. */
	assert_int_equal(gs_hostlist_parse("", &x, err, sizeof(err)), 0);
	assert_int_equal(gs_hostlist_exclude(&l, &x), 0);
	assert_int_equal(l.n, 5);
	gs_hostlist_free(&x);
	assert_int_equal(gs_hostlist_parse("gpu[1-5],root@gpu7", &x, err, sizeof(err)), 0);
	assert_int_equal(gs_hostlist_exclude(&l, &x), 0);
	assert_int_equal(l.n, 0);
	gs_hostlist_free(&x);
	gs_hostlist_free(&l);
}

static void test_malformed(void **state)
{
	(void)state;
	expect_error("gpu[1-4", -EINVAL, "unbalanced '[' in 'gpu[1-4'");
	expect_error("gpu[1-4\n]", -EINVAL, "unbalanced '['");
	expect_error("gpu1-4]", -EINVAL, "unbalanced ']' in 'gpu1-4]'");
	expect_error("gpu[]", -EINVAL, "empty range '[]' in 'gpu[]'");
	expect_error("gpu[5-1]", -EINVAL, "reversed range '5-1' in 'gpu[5-1]'");
	expect_error("gpu[a-b]", -EINVAL, "non-numeric range 'a-b'");
	expect_error("gpu[1-x]", -EINVAL, "non-numeric range '1-x'");
	expect_error("gpu[1 2]", -EINVAL, "non-numeric range '1 2'");
	expect_error("gpu[1-2-3]", -EINVAL, "malformed range '1-2-3'");
	expect_error("gpu[-3]", -EINVAL, "malformed range '-3'");
	expect_error("gpu[1-]", -EINVAL, "malformed range '1-'");
	expect_error("gpu[1,,2]", -EINVAL, "empty range item in 'gpu[1,,2]'");
	expect_error("gpu[1,]", -EINVAL, "empty range item");
	expect_error("gpu[,1]", -EINVAL, "empty range item");
	expect_error("gpu[[1-2]]", -EINVAL, "nested '['");
	expect_error("gpu[1234567890123456789]", -EINVAL, "number too long");
	expect_error("root@", -EINVAL, "empty host name in 'root@'");
	expect_error("@", -EINVAL, "invalid group name '@'");
	expect_error("@gpu", -EINVAL, "group reference '@gpu' needs an inventory");
	expect_error("a@b@c", -EINVAL, "invalid character '@' in 'a@b@c'");
	expect_error("gpu[1-2]@x", -EINVAL, "invalid character '[' in user name");
	/* The good element before a bad one does not leak or survive. */
	expect_error("good[1-3],bad[3-1]", -EINVAL, "reversed range '3-1' in 'bad[3-1]'");
	expect_error(NULL, -EINVAL, "no host list");
}

static void test_hostile(void **state)
{
	(void)state;
	expect_error("gpu;rm", -EINVAL, "invalid character ';' in 'gpu;rm'");
	expect_error("gpu$(id)", -EINVAL, "invalid character '$'");
	expect_error("a`id`", -EINVAL, "invalid character '`'");
	expect_error("'a'", -EINVAL, "invalid character \\x27");
	expect_error("\"a\"", -EINVAL, "invalid character '\"'");
	expect_error("a|b", -EINVAL, "invalid character '|'");
	expect_error("a&b", -EINVAL, "invalid character '&'");
	expect_error("a>b", -EINVAL, "invalid character '>'");
	expect_error("a/b", -EINVAL, "invalid character '/'");
	expect_error("a\\b", -EINVAL, "invalid character '\\'");
	expect_error("a*", -EINVAL, "invalid character '*'");
	expect_error("-oProxyCommand=x", -EINVAL, "host name starts with '-'");
	expect_error("root@-x", -EINVAL, "host name starts with '-'");
	expect_error("-l@x", -EINVAL, "user name starts with '-'");
	expect_error("r$t@x", -EINVAL, "invalid character '$' in user name");
	expect_error("a\x1b[31mb", -EINVAL, "invalid character \\x1b in 'a\\x1b[31mb'");
	expect_error("h\xc3\xa9", -EINVAL, "invalid character \\xc3");
	/* Whitespace separates: a space can never be inside one name. */
	expect_hosts("gpu 1", "gpu 1");
}

static void test_lengths(void **state)
{
	char name[300];

	(void)state;
	memset(name, 'a', 253);
	name[253] = '\0';
	expect_hosts(name, name);
	name[253] = 'a';
	name[254] = '\0';
	expect_error(name, -EINVAL, "longer than 253");
	/* The limit applies to expanded names too. */
	memset(name, 'b', 252);
	strcpy(name + 252, "[9-10]");
	expect_error(name, -EINVAL, "longer than 253");
	memset(name, 'u', 65);
	strcpy(name + 65, "@h");
	expect_error(name, -EINVAL, "user name too long");
}

/* What `scontrol show hostnames` and pdsh print for the same expressions. */
static void test_as_slurm_and_pdsh_expand(void **state)
{
	(void)state;
	/* The lower bound's width is the width; the upper bound's is not. */
	expect_hosts("n[1-010]", "n1 n2 n3 n4 n5 n6 n7 n8 n9 n10");
	expect_hosts("n[01-001]", "n01");
	expect_hosts("n[01-10]", "n01 n02 n03 n04 n05 n06 n07 n08 n09 n10");
	expect_hosts("n[8-010]", "n8 n9 n10");
	/* Empty elements are skipped. */
	expect_hosts("n[1-2],,n3", "n1 n2 n3");
	expect_hosts(",n1", "n1");
	expect_hosts("n1,", "n1");
	expect_hosts("n1,,,n2,", "n1 n2");
	expect_hosts(",", "");
	/* Duplicates: each host once, at its first place (documented). */
	expect_hosts("n2,n[1-3],n2", "n2 n1 n3");
}

static void test_huge(void **state)
{
	struct gs_hostlist l;
	char err[256];
	uint64_t t0 = gs_now_ms();

	(void)state;
	expect_error("n[0-99999999]", -E2BIG, "'n[0-99999999]' expands to more than 65536 hosts");
	expect_error("n[0-999999999999999999]", -E2BIG, "more than 65536");
	expect_error("n[0-65536]", -E2BIG, "more than 65536");
	expect_error("n[0-40000,50000-80000]", -E2BIG, "more than 65536");
	expect_error("a[0-255]b[0-255]c[0-1]", -E2BIG, "more than 65536");
	expect_error("a[0-99999]b[0-99999]c[0-99999]d[0-99999]", -E2BIG, "more than 65536");
	expect_error("n[0-40000],m[0-40000]", -E2BIG, "more than 65536 hosts (at 'm[0-40000]')");
	/* Refused before anything is expanded: fast. */
	assert_true(gs_now_ms() - t0 < 200);

	/* Exactly the limit is fine, and dedupe stays linear. */
	assert_int_equal(gs_hostlist_parse("n[00000-65535]", &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 65536);
	assert_string_equal(l.hosts[65535], "n65535");
	assert_string_equal(l.hosts[7], "n00007");
	assert_int_equal(gs_hostlist_add(&l, "one-more"), -E2BIG);
	gs_hostlist_free(&l);
	assert_int_equal(gs_hostlist_parse("a[0-255]b[0-255]", &l, err, sizeof(err)), 0);
	assert_int_equal(l.n, 65536);
	gs_hostlist_free(&l);
}

static int fake_resolve(void *userdata, const char *name, struct gs_hostlist *into, char *err, size_t errlen)
{
	int *calls = userdata;

	(*calls)++;
	if (strcmp(name, "grp") == 0) {
		gs_hostlist_add(into, "g1");
		gs_hostlist_add(into, "g2");
		return 0;
	}
	snprintf(err, errlen, "unknown group '@%s'", name);
	return -EINVAL;
}

static void test_resolver(void **state)
{
	struct gs_hostlist l = GS_HOSTLIST_INIT;
	char err[256];
	int calls = 0;
	char *s;

	(void)state;
	assert_int_equal(gs_hostlist_append_ex(&l, "x,@grp g1,y", fake_resolve, &calls, err, sizeof(err)), 0);
	s = joined(&l);
	assert_string_equal(s, "x g1 g2 y");
	free(s);
	assert_int_equal(gs_hostlist_append_ex(&l, "z,@nope", fake_resolve, &calls, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown group '@nope'");
	assert_int_equal(l.n, 4);
	assert_int_equal(calls, 2);
	gs_hostlist_free(&l);
}

static void test_name_valid(void **state)
{
	(void)state;
	assert_true(gs_hostname_valid("gpu01"));
	assert_true(gs_hostname_valid("root@gpu01.example.com"));
	assert_false(gs_hostname_valid(""));
	assert_false(gs_hostname_valid("@gpu"));
	assert_false(gs_hostname_valid("root@"));
	assert_false(gs_hostname_valid("-x"));
	assert_false(gs_hostname_valid("gpu[1-2]"));
	assert_false(gs_hostname_valid("a b"));
	assert_false(gs_hostname_valid("a;b"));
	assert_false(gs_hostname_valid("a@b@c"));
}

static void expect_fold(const char *const *hosts, size_t n, const char *want)
{
	char *s = NULL;

	assert_int_equal(gs_hostlist_fold((char *const *)hosts, n, &s), 0);
	if (strcmp(s, want) != 0)
		fail_msg("fold: got '%s', want '%s'", s, want);
	free(s);
}

static void test_fold(void **state)
{
	(void)state;
	{
		const char *h[] = { "gpu03", "gpu01", "gpu02", "gpu14", "gpu04", "gpu05", "gpu06",
				    "gpu07", "gpu08", "gpu09", "gpu10", "gpu11", "gpu12" };
		expect_fold(h, GS_ARRAY_SIZE(h), "gpu[01-12,14]");
	}
	{
		const char *h[] = { "n10", "n8", "n9" };
		expect_fold(h, 3, "n[8-10]");
	}
	{
		const char *h[] = { "n10", "n09" };
		expect_fold(h, 2, "n[09-10]");
	}
	{
		const char *h[] = { "login", "gpu2", "gpu1", "admin" };
		expect_fold(h, 4, "admin,gpu[1-2],login");
	}
	{
		const char *h[] = { "gpu05" };
		expect_fold(h, 1, "gpu05");
	}
	{
		const char *h[] = { "root@gpu1", "root@gpu2", "admin@gpu3", "user1@box" };
		expect_fold(h, 4, "admin@gpu3,root@gpu[1-2],user1@box");
	}
	{
		const char *h[] = { "rack1-gpu02.ib", "rack1-gpu01.ib", "rack2-gpu01.ib" };
		expect_fold(h, 3, "rack1-gpu[01-02].ib,rack2-gpu01.ib");
	}
	{
		const char *h[] = { "gpu1", "gpu1", "gpu2", "gpu2" };
		expect_fold(h, 4, "gpu[1-2]");
	}
	{
		const char *h[] = { "gpu1", "gpu01", "gpu3", "gpu02" };
		expect_fold(h, 4, "gpu[1,3],gpu[01-02]");
	}
	{
		const char *h[] = { "n1", "n3", "n5", "n6", "n7", "n100" };
		expect_fold(h, 6, "n[1,3,5-7,100]");
	}
	{
		const char *h[] = { "x1234567890123456789" };
		expect_fold(h, 1, "x1234567890123456789");
	}
	expect_fold(NULL, 0, "");
}

/* parse(fold(parse(e))) is the same set as parse(e). */
static void roundtrip(const char *expr)
{
	struct gs_hostlist a, b;
	char err[256] = "";
	char *f = NULL;
	size_t i;

	if (gs_hostlist_parse(expr, &a, err, sizeof(err)) != 0)
		fail_msg("parse '%s': %s", expr, err);
	assert_int_equal(gs_hostlist_fold(a.hosts, a.n, &f), 0);
	if (gs_hostlist_parse(f, &b, err, sizeof(err)) != 0)
		fail_msg("reparse '%s' (from '%s'): %s", f, expr, err);
	if (a.n != b.n)
		fail_msg("'%s' -> '%s': %zu hosts, then %zu", expr, f, a.n, b.n);
	for (i = 0; i < a.n; i++)
		if (gs_hostlist_index(&b, a.hosts[i]) < 0)
			fail_msg("'%s' -> '%s' lost %s", expr, f, a.hosts[i]);
	free(f);
	gs_hostlist_free(&a);
	gs_hostlist_free(&b);
}

static void test_fold_roundtrip(void **state)
{
	static const char *const exprs[] = {
		"gpu[01-16,20]", "n[8-10],n[08-10],n[008-010]", "rack[1-3]-gpu[01-04]",
		"root@gpu[1-3],admin@gpu[2-4],gpu[1-9]", "a,b,c[0-2]d,login", "n[0],n[00],n[000]",
		"n[98-102],n[098-102]", "10.0.[0-1].[1-3]", "x[1-1000]y", "gpu[001-099,100-120]",
	};
	char buf[4096];
	size_t i;
	unsigned seed = 12345;

	(void)state;
	for (i = 0; i < GS_ARRAY_SIZE(exprs); i++)
		roundtrip(exprs[i]);
	/* Random subsets of padded and natural names. */
	for (i = 0; i < 200; i++) {
		size_t o = 0, k;

		for (k = 0; k < 60; k++) {
			unsigned v;

			seed = seed * 1103515245u + 12345u;
			v = (seed >> 8) % 400;
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s%0*u", k ? "," : "",
					      (seed & 0x10) ? "gpu" : "n", (seed & 0x20) ? 3 : 0, v);
		}
		roundtrip(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_padding),
		cmocka_unit_test(test_products),
		cmocka_unit_test(test_lists_and_users),
		cmocka_unit_test(test_dedupe),
		cmocka_unit_test(test_append),
		cmocka_unit_test(test_exclude),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_as_slurm_and_pdsh_expand),
		cmocka_unit_test(test_huge),
		cmocka_unit_test(test_resolver),
		cmocka_unit_test(test_name_valid),
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_fold_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
