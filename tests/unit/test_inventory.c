/* Unit tests for src/fleet/inventory.c: the documented example, every
 * transport, group references, lookups, and each error with its line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet/inventory.h"
#include "util/util.h"

static const char example[] =
	"# GPU fleet\n"
	"login1                                   # outside any group\n"
	"\n"
	"[tuning]                 # a group; hosts below belong to it\n"
	"gpu[01-04]  user=root port=2222 ssh-opt=\"-o ProxyJump=bastion\"\n"
	"ct129       via=pve1 pct=129\n"
	"\t ct130 via=root@pve1 lxc=web-1   \r\n"
	"box         docker=trainer remote-cmd=/opt/gpuslate/bin/gpuslate\n"
	"odd         exec=\"myconnect --to %h --pct 50%%\"\n"
	"[inference]\n"
	"gpu05       remote-cmd='sudo -n \"/opt/my gpuslate\"' ssh-opt=-4 ssh-opt='-o \"ProxyCommand=ssh -W %h:%p b\"'\n"
	"admin@gpu06\n"
	"gpu01                                    # bare: joins the group, keeps line 5's settings\n"
	"[everything]\n"
	"@tuning,@inference\n"
	"extra\n";

static void test_example(void **state)
{
	struct gs_inventory inv;
	const struct gs_host_entry *e;
	const struct gs_hostlist *g;
	char err[512] = "";

	(void)state;
	if (gs_inventory_parse(example, "hosts", &inv, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(inv.n_entries, 12);
	assert_int_equal(inv.n_groups, 3);

	e = gs_inventory_find(&inv, "login1");
	assert_non_null(e);
	assert_int_equal(e->line, 0);
	assert_int_equal(e->transport, GS_TRANSPORT_SSH);
	assert_null(e->user);
	assert_null(e->remote_cmd);

	e = gs_inventory_find(&inv, "gpu03");
	assert_non_null(e);
	assert_string_equal(e->name, "gpu03");
	assert_string_equal(e->user, "root");
	assert_int_equal(e->port, 2222);
	assert_int_equal(e->n_ssh_opts, 2);
	assert_string_equal(e->ssh_opts[0], "-o");
	assert_string_equal(e->ssh_opts[1], "ProxyJump=bastion");
	assert_null(e->ssh_opts[2]);
	assert_int_equal(e->line, 5);

	e = gs_inventory_find(&inv, "ct129");
	assert_int_equal(e->transport, GS_TRANSPORT_PCT);
	assert_string_equal(e->via, "pve1");
	assert_int_equal(e->vmid, 129);

	e = gs_inventory_find(&inv, "ct130");
	assert_int_equal(e->transport, GS_TRANSPORT_LXC);
	assert_string_equal(e->via, "root@pve1");
	assert_string_equal(e->container, "web-1");
	assert_int_equal(e->line, 7);

	e = gs_inventory_find(&inv, "box");
	assert_int_equal(e->transport, GS_TRANSPORT_DOCKER);
	assert_string_equal(e->container, "trainer");
	assert_null(e->via);
	assert_int_equal(e->n_remote_cmd, 1);
	assert_string_equal(e->remote_cmd[0], "/opt/gpuslate/bin/gpuslate");

	e = gs_inventory_find(&inv, "odd");
	assert_int_equal(e->transport, GS_TRANSPORT_EXEC);
	assert_int_equal(e->n_exec_argv, 5);
	assert_string_equal(e->exec_argv[0], "myconnect");
	assert_string_equal(e->exec_argv[2], "odd");
	assert_string_equal(e->exec_argv[4], "50%");
	assert_null(e->exec_argv[5]);

	e = gs_inventory_find(&inv, "gpu05");
	assert_int_equal(e->n_remote_cmd, 3);
	assert_string_equal(e->remote_cmd[0], "sudo");
	assert_string_equal(e->remote_cmd[2], "/opt/my gpuslate");
	assert_int_equal(e->n_ssh_opts, 3);
	assert_string_equal(e->ssh_opts[0], "-4");
	assert_string_equal(e->ssh_opts[1], "-o");
	assert_string_equal(e->ssh_opts[2], "ProxyCommand=ssh -W %h:%p b");

	/* user@ in the file is the user setting; the entry is the plain name. */
	e = gs_inventory_find(&inv, "gpu06");
	assert_non_null(e);
	assert_string_equal(e->user, "admin");
	/* A user@ on the lookup is ignored for the match. */
	assert_ptr_equal(gs_inventory_find(&inv, "someone@gpu06"), e);
	assert_null(gs_inventory_find(&inv, "gpu99"));
	assert_null(gs_inventory_find(NULL, "gpu01"));

	g = gs_inventory_group(&inv, "tuning");
	assert_non_null(g);
	assert_int_equal(g->n, 8);
	assert_string_equal(g->hosts[0], "gpu01");
	assert_string_equal(g->hosts[7], "odd");
	g = gs_inventory_group(&inv, "inference");
	assert_int_equal(g->n, 3);
	assert_string_equal(g->hosts[1], "gpu06");
	assert_string_equal(g->hosts[2], "gpu01");
	g = gs_inventory_group(&inv, "everything");
	assert_int_equal(g->n, 11); /* 8 + gpu05, gpu06 (gpu01 once) + extra */
	assert_string_equal(g->hosts[10], "extra");
	g = gs_inventory_group(&inv, "all");
	assert_int_equal(g->n, 12);
	assert_string_equal(g->hosts[0], "login1");
	assert_null(gs_inventory_group(&inv, "nope"));
	assert_string_equal(inv.source, "hosts");

	gs_inventory_free(&inv);
	gs_inventory_free(&inv);
}

static void test_cli_expressions(void **state)
{
	struct gs_inventory inv;
	struct gs_hostlist l = GS_HOSTLIST_INIT, x = GS_HOSTLIST_INIT;
	char err[512] = "";

	(void)state;
	assert_int_equal(gs_inventory_parse(example, "/etc/gpuslate/hosts", &inv, err, sizeof(err)), 0);
	/* -w @inference,gpu[10-11] -x @tuning */
	assert_int_equal(gs_inventory_hostlist_append(&inv, &l, "@inference,gpu[10-11]", err, sizeof(err)), 0);
	assert_int_equal(l.n, 5);
	assert_int_equal(gs_inventory_hostlist_append(&inv, &x, "@tuning", err, sizeof(err)), 0);
	assert_int_equal(gs_hostlist_exclude(&l, &x), 0);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.hosts[0], "gpu05");
	assert_string_equal(l.hosts[3], "gpu11");
	assert_int_equal(gs_inventory_hostlist_append(&inv, &l, "@all", err, sizeof(err)), 0);
	assert_int_equal(l.n, 14);

	assert_int_equal(gs_inventory_hostlist_append(&inv, &l, "a,@nope", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "unknown group '@nope' in /etc/gpuslate/hosts");
	assert_int_equal(l.n, 14);
	/* No inventory: a group reference says what is missing. */
	assert_int_equal(gs_inventory_hostlist_append(NULL, &l, "@tuning", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "needs an inventory"));
	assert_int_equal(gs_inventory_hostlist_append(NULL, &l, "zz", err, sizeof(err)), 0);
	assert_int_equal(l.n, 15);
	gs_hostlist_free(&l);
	gs_hostlist_free(&x);
	gs_inventory_free(&inv);
}

static void expect_words(const char *s, size_t n, const char *const *want)
{
	char **w = NULL;
	size_t m = 99, i;

	assert_int_equal(gs_inventory_split_words(s, &w, &m), 0);
	assert_non_null(w);
	assert_int_equal(m, n);
	for (i = 0; i < n; i++)
		assert_string_equal(w[i], want[i]);
	assert_null(w[n]);
	gs_strv_free(w);
}

static void test_split_words(void **state)
{
	char **w = (char **)1;
	size_t n = 7;

	(void)state;
	expect_words("", 0, NULL);
	expect_words("  \t ", 0, NULL);
	{
		const char *const want[] = { "ssh", "-F", "/tmp/x y", "" };
		expect_words(" ssh -F \"/tmp/x y\" \"\"", 4, want);
	}
	{
		/* Nothing but the double quote is special: no shell. */
		const char *const want[] = { "$(id)", ";", "`x`", "'a", "b'", "a\\b", "q\"q", "\\" };
		expect_words("$(id) ; `x` 'a b' a\\b \"q\\\"q\" \"\\\\\"", 8, want);
	}
	{
		const char *const want[] = { "ab cd" };
		expect_words("a\"b c\"d", 1, want);
	}
	assert_int_equal(gs_inventory_split_words("a \"b", &w, &n), -EINVAL);
	assert_null(w);
}

struct bad {
	const char *text;
	const char *want; /* whole "FILE:LINE: reason" or its start */
	int r;
};

static void test_errors(void **state)
{
	static const struct bad cases[] = {
		{ "a\nb badkey=1\n", "f:2: unknown key 'badkey'", -EINVAL },
		{ "a port=0", "f:1: bad port '0' (1-65535)", -EINVAL },
		{ "a port=70000", "f:1: bad port '70000'", -EINVAL },
		{ "a port=-1", "f:1: bad port '-1'", -EINVAL },
		{ "a port=22x", "f:1: bad port '22x'", -EINVAL },
		{ "\n\ngpu[1-", "f:3: unbalanced '[' in 'gpu[1-'", -EINVAL },
		{ "#c\ngpu[5-1] user=x", "f:2: reversed range '5-1'", -EINVAL },
		{ "a exec=\"foo", "f:1: unterminated quote", -EINVAL },
		{ "a\n\na user='x", "f:3: unterminated quote", -EINVAL },
		{ "a ssh-opt='-o \"x'", "f:1: unterminated quote in ssh-opt= value", -EINVAL },
		{ "[g]\nx\n[g]", "f:3: duplicate group 'g' (first at line 1)", -EINVAL },
		{ "a\n@nope", "f:2: unknown group '@nope'", -EINVAL },
		{ "x\n[h]\n@h", "f:3: group 'h' cannot include itself", -EINVAL },
		{ "[g]\n@h\n[h]\nx", "f:2: unknown group '@h' (groups must be defined above their use)", -EINVAL },
		{ "a pct=129", "f:1: pct= needs via=", -EINVAL },
		{ "a lxc=web", "f:1: lxc= needs via=", -EINVAL },
		{ "a via=p pct=1 docker=x", "f:1: pct= and docker= cannot be combined", -EINVAL },
		{ "a via=p lxc=x docker=y", "f:1: lxc= and docker= cannot be combined", -EINVAL },
		{ "a exec=x docker=y", "f:1: exec= and docker= cannot be combined", -EINVAL },
		{ "a pct=0 via=p", "f:1: bad container id '0' for pct=", -EINVAL },
		{ "a pct=1000000000 via=p", "f:1: bad container id", -EINVAL },
		{ "a exec=\"x %h\" user=root", "f:1: exec= replaces ssh; user= cannot be combined with it", -EINVAL },
		{ "a exec=x via=b", "f:1: exec= replaces ssh; via= cannot", -EINVAL },
		{ "root@a exec=x", "f:1: exec= replaces ssh; 'root@a' cannot have a user@", -EINVAL },
		{ "a exec=\"x %u\"", "f:1: unknown '%u' in exec=", -EINVAL },
		{ "a exec=\"x %\"", "f:1: exec= ends in a lone '%'", -EINVAL },
		{ "a exec=\" \"", "f:1: empty value for exec=", -EINVAL },
		{ "a user=root user=admin", "f:1: user= given twice", -EINVAL },
		{ "root@a user=x", "f:1: user given twice for 'root@a'", -EINVAL },
		{ "a user=x\nb\na port=1", "f:3: host 'a' already has settings from line 1", -EINVAL },
		{ "a[1-3] user=x\nadmin@a2", "f:2: host 'a2' already has settings from line 1", -EINVAL },
		{ "a foo", "f:1: expected key=value, got 'foo'", -EINVAL },
		{ "a =x", "f:1: unknown key ''", -EINVAL },
		{ "[1bad]", "f:1: bad group name '1bad'", -EINVAL },
		{ "[01-04] user=x", "f:1: unexpected 'user=x' after group header", -EINVAL },
		{ "[01-04]", "f:1: bad group name '01-04'", -EINVAL },
		{ "[all]", "f:1: group name 'all' is reserved", -EINVAL },
		{ "[g] x", "f:1: unexpected 'x' after group header", -EINVAL },
		{ "[g", "f:1: group header '[g' lacks its ']'", -EINVAL },
		{ "[]", "f:1: bad group name ''", -EINVAL },
		{ "a via=\"x;y\"", "f:1: bad host name 'x;y' for via=", -EINVAL },
		{ "a via=-oProxyCommand=x", "f:1: bad host name", -EINVAL },
		{ "a docker=-x", "f:1: bad container name '-x' for docker=", -EINVAL },
		{ "a via=p lxc=a/b", "f:1: bad container name 'a/b' for lxc=", -EINVAL },
		{ "a user=", "f:1: empty value for user=", -EINVAL },
		{ "a user=-l", "f:1: bad user name '-l'", -EINVAL },
		{ "a remote-cmd=\"\"", "f:1: empty value for remote-cmd=", -EINVAL },
		{ "a ssh-opt=\"  \"", "f:1: empty value for ssh-opt=", -EINVAL },
		{ "a;rm", "f:1: invalid character ';' in 'a;rm'", -EINVAL },
		{ "'a b'", "f:1: invalid character ' ' in host list 'a b'", -EINVAL },
		{ "a\x1b[2J user=x", "f:1: invalid character \\x1b in 'a\\x1b[2J'", -EINVAL },
		{ "a user=\x1b", "f:1: bad user name '\\x1b'", -EINVAL },
		{ "n[0-99999999]", "f:1: 'n[0-99999999]' expands to more than 65536 hosts", -E2BIG },
		{ "a[0-40000]\nb[0-40000]", "f:2: more than 65536 hosts in the inventory", -E2BIG },
	};
	size_t i;

	(void)state;
	for (i = 0; i < GS_ARRAY_SIZE(cases); i++) {
		struct gs_inventory inv;
		char err[512] = "";
		int r = gs_inventory_parse(cases[i].text, "f", &inv, err, sizeof(err));

		if (r != cases[i].r || strncmp(err, cases[i].want, strlen(cases[i].want)) != 0)
			fail_msg("case %zu: got %d '%s', want %d '%s'", i, r, err, cases[i].r, cases[i].want);
		for (const char *p = err; *p; p++)
			assert_true(*p >= 0x20 && *p < 0x7f);
		assert_int_equal(inv.n_entries, 0);
		assert_null(inv.entries);
		assert_null(inv.source);
	}
}

static void test_edge_cases(void **state)
{
	struct gs_inventory inv;
	char err[512] = "";

	(void)state;
	/* Empty text, comments only, an empty group, no final newline. */
	assert_int_equal(gs_inventory_parse("", "f", &inv, err, sizeof(err)), 0);
	assert_int_equal(inv.n_entries, 0);
	assert_non_null(gs_inventory_group(&inv, "all"));
	gs_inventory_free(&inv);
	assert_int_equal(gs_inventory_parse("# x\n  # y\n[empty]\n[g]\nh port=1", "f", &inv, err, sizeof(err)), 0);
	assert_int_equal(gs_inventory_group(&inv, "empty")->n, 0);
	assert_int_equal(gs_inventory_find(&inv, "h")->port, 1);
	gs_inventory_free(&inv);
	/* '#' only starts a comment at the start of a word. */
	assert_int_equal(gs_inventory_parse("h exec=\"a#b %h\"  #c", "f", &inv, err, sizeof(err)), 0);
	assert_string_equal(gs_inventory_find(&inv, "h")->exec_argv[0], "a#b");
	gs_inventory_free(&inv);
	/* Bare mention first, settings later: allowed. */
	assert_int_equal(gs_inventory_parse("[g]\nh\n[k]\nh user=u", "f", &inv, err, sizeof(err)), 0);
	assert_string_equal(gs_inventory_find(&inv, "h")->user, "u");
	assert_int_equal(gs_inventory_find(&inv, "h")->line, 4);
	gs_inventory_free(&inv);
	/* A large inventory stays fast (hash lookups). */
	{
		uint64_t t0 = gs_now_ms();

		assert_int_equal(gs_inventory_parse("[big]\nn[0-19999] user=root\n[again]\n@big\nn[0-19999]", "f",
						    &inv, err, sizeof(err)),
				 0);
		assert_int_equal(inv.n_entries, 20000);
		assert_string_equal(gs_inventory_find(&inv, "n19999")->user, "root");
		assert_int_equal(gs_inventory_group(&inv, "again")->n, 20000);
		assert_true(gs_now_ms() - t0 < 5000);
		gs_inventory_free(&inv);
	}
}

static void test_load(void **state)
{
	char path[] = "/tmp/gs-inv-XXXXXX";
	struct gs_inventory inv;
	char err[512] = "";
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[g]\nh1 user=u\nh2 port=x\n", 24), 24);
	assert_int_equal(gs_inventory_load(path, &inv, err, sizeof(err)), -EINVAL);
	{
		char want[600];

		snprintf(want, sizeof(want), "%s:3: bad port 'x'", path);
		assert_int_equal(strncmp(err, want, strlen(want)), 0);
	}
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "[g]\nh1 user=u\n", 14, 0), 14);
	assert_int_equal(gs_inventory_load(path, &inv, err, sizeof(err)), 0);
	assert_string_equal(inv.source, path);
	assert_string_equal(gs_inventory_find(&inv, "h1")->user, "u");
	gs_inventory_free(&inv);
	/* A NUL byte is refused at its line rather than silently ending the file. */
	assert_int_equal(pwrite(fd, "h2\n\0h3\n", 7, 14), 7);
	assert_int_equal(gs_inventory_load(path, &inv, err, sizeof(err)), -EINVAL);
	{
		char want[600];

		snprintf(want, sizeof(want), "%s:4: NUL byte in file", path);
		assert_string_equal(err, want);
	}
	close(fd);
	unlink(path);
	assert_int_equal(gs_inventory_load(path, &inv, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
	assert_null(inv.entries);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_cli_expressions),
		cmocka_unit_test(test_split_words),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_edge_cases),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
