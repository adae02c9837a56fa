/* Unit tests for src/fleet/remote.c: POSIX single-quote quoting (checked by
 * running real shells through fork/exec, never system()), the remote argv
 * rebuilt from a struct gs_request (hostile values, '-'-leading values, -y and
 * --dry-run), and the local argv of every transport (ssh, pct, lxc, docker,
 * exec template). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "fleet/inventory.h"
#include "fleet/remote.h"
#include "util/util.h"

/* ---- helpers ---------------------------------------------------------- */

static size_t strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

/* The vector as one printable line, for failure messages: [w1] [w2] ...,
 * control and non-ASCII bytes as \xNN. A static buffer (cut when full), so
 * a failing assertion that longjmps out leaks nothing. */
static const char *strv_show(char *const *v)
{
	static char buf[1 << 16];
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; v && v[i] && o < sizeof(buf) - 16; i++) {
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s[", i ? " " : "");
		for (const unsigned char *p = (const unsigned char *)v[i]; *p && o < sizeof(buf) - 16; p++)
			o += (size_t)(*p >= 0x20 && *p < 0x7f ? snprintf(buf + o, sizeof(buf) - o, "%c", *p)
							       : snprintf(buf + o, sizeof(buf) - o, "\\x%02x", *p));
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "]");
	}
	return buf;
}

/* got == want (a NULL-terminated list), with a readable message if not. */
static void expect_strv(char *const *got, const char *const *want, const char *what)
{
	size_t n = 0;
	bool same = true;

	while (want[n])
		n++;
	if (strv_len(got) != n)
		same = false;
	for (size_t i = 0; same && i < n; i++)
		if (strcmp(got[i], want[i]) != 0)
			same = false;
	if (!same) {
		static char g[1 << 16];

		snprintf(g, sizeof(g), "%s", strv_show(got));
		fail_msg("%s:\n got  %s\n want %s", what, g, strv_show((char *const *)want));
	}
}

static void cli_init(struct gs_request *c, enum gs_cmd cmd)
{
	/* The parser's defaults (gs_request_defaults in src/core/options.c). */
	memset(c, 0, sizeof(*c));
	c->cmd = cmd;
	c->cmd_name = cmd == GS_CMD_STATUS ? "status" : cmd == GS_CMD_RECLAIM ? "reclaim" : cmd == GS_CMD_WAIT ? "wait" : "none";
	c->grace_ms = 10000;
	c->timeout_ms = 60000;
	c->tolerance_mib = 16;
	c->connect_timeout_ms = 10000;
}

/* Run argv (argv[0] a path) with fork/exec in a fresh empty directory,
 * stdin from /dev/null; return its stdout (malloc'd, *len bytes) and its
 * wait status. Fails the test if the command left anything in the
 * directory (a '>file' that was not quoted would). */
static char *run_capture(char *const argv[], size_t *len, int *wstatus)
{
	char dir[] = "/tmp/gs-test-remote-XXXXXX";
	int p[2];
	pid_t pid;
	char *buf = NULL;
	size_t cap = 0, n = 0;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 || chdir(dir) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		r = read(p[0], buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		assert_true(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(p[0]);
	assert_int_equal(waitpid(pid, wstatus, 0), pid);
	buf[n] = '\0';
	*len = n;
	/* rmdir fails on a directory that is not empty */
	if (rmdir(dir) != 0)
		fail_msg("the shell command left files in %s: quoting let a redirection through", dir);
	return buf;
}

/* What `SHELL -c "printf '%s\n' STRING"` prints must be exactly the words,
 * one per line (words never contain a newline: those are refused). */
static void expect_shell_words(const char *shell, const char *string, char *const *words)
{
	static const char pre[] = "printf '%s\\n' ";
	char *script, *out, *want;
	size_t len = 0, wl = 0, olen;
	int st;

	if (access(shell, X_OK) != 0) /* bash and zsh are optional */
		return;
	script = malloc(sizeof(pre) + strlen(string));
	assert_non_null(script);
	memcpy(script, pre, sizeof(pre) - 1);
	strcpy(script + sizeof(pre) - 1, string);
	for (size_t i = 0; words[i]; i++)
		wl += strlen(words[i]) + 1;
	want = malloc(wl + 1);
	assert_non_null(want);
	for (size_t i = 0; words[i]; i++) {
		size_t l = strlen(words[i]);

		memcpy(want + len, words[i], l);
		len += l;
		want[len++] = '\n';
	}
	want[len] = '\0';
	{
		char *argv[] = { (char *)shell, (char *)"-c", script, NULL };

		out = run_capture(argv, &olen, &st);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s -c exited with status 0x%x for: %s", shell, st, script);
	if (olen != len || memcmp(out, want, len) != 0) {
		fail_msg("%s: printed %zu bytes '%.2000s', want the words %s", shell, olen, out, strv_show(words));
	}
	free(out);
	free(want);
	free(script);
}

static const char *const shells[] = { "/bin/sh", "/bin/dash", "/bin/bash", "/bin/zsh" };

static void expect_all_shells(const char *string, char *const *words)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(shells); i++)
		expect_shell_words(shells[i], string, words);
}

static bool printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* ---- quoting ---------------------------------------------------------- */

static void expect_quote(const char *word, const char *want)
{
	char *q = NULL;
	int r = gs_sh_quote(word, &q);

	if (r != 0)
		fail_msg("gs_sh_quote('%s') = %d", word, r);
	if (strcmp(q, want) != 0)
		fail_msg("gs_sh_quote('%s') = [%s], want [%s]", word, q, want);
	free(q);
}

static void test_quote_exact(void **state)
{
	(void)state;
	expect_quote("abc", "'abc'");
	expect_quote("", "''");
	expect_quote("it's", "'it'\\''s'");
	expect_quote("'", "''\\'''");
	expect_quote("''", "''\\'''\\'''");
	expect_quote("a b", "'a b'");
	expect_quote("$HOME `id` $(id) ; | & * \\ \"", "'$HOME `id` $(id) ; | & * \\ \"'");
	expect_quote("-n", "'-n'");
	expect_quote("\xc3\xbc\xff", "'\xc3\xbc\xff'");
	expect_quote("\t\x01\x1b[0m", "'\t\x01\x1b[0m'");
}

static void test_quote_refused(void **state)
{
	static const char *const bad[] = { "\n", "a\nb", "trailing\n", "\r", "a\rb", "a\r\nb" };
	char *big = malloc(GS_REMOTE_WORD_MAX + 2), *q = NULL;

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(bad); i++) {
		q = (char *)0x1;
		assert_int_equal(gs_sh_quote(bad[i], &q), -EINVAL);
		assert_ptr_equal(q, (char *)0x1); /* untouched on error */
	}
	/* GS_REMOTE_WORD_MAX bytes is fine, one more is refused. */
	assert_non_null(big);
	memset(big, '\'', GS_REMOTE_WORD_MAX);
	big[GS_REMOTE_WORD_MAX] = '\0';
	assert_int_equal(gs_sh_quote(big, &q), 0);
	assert_int_equal(strlen(q), 2 + 4 * (size_t)GS_REMOTE_WORD_MAX);
	free(q);
	big[GS_REMOTE_WORD_MAX] = 'x';
	big[GS_REMOTE_WORD_MAX + 1] = '\0';
	assert_int_equal(gs_sh_quote(big, &q), -EINVAL);
	free(big);
}

static void test_join_basic(void **state)
{
	char *none[] = { NULL };
	char *two[] = { (char *)"a", (char *)"", (char *)"b c", NULL };
	char *bad[] = { (char *)"ok", (char *)"x\ny", NULL };
	char *s = NULL;

	(void)state;
	assert_int_equal(gs_sh_join(none, &s), 0);
	assert_string_equal(s, "");
	free(s);
	assert_int_equal(gs_sh_join(two, &s), 0);
	assert_string_equal(s, "'a' '' 'b c'");
	free(s);
	s = NULL;
	assert_int_equal(gs_sh_join(bad, &s), -EINVAL);
	assert_null(s);
}

/* Every hostile word, through every POSIX shell here, comes back as itself. */
static void test_join_roundtrip_shells(void **state)
{
	static char long_word[GS_REMOTE_WORD_MAX + 1];
	char *words[] = {
		(char *)"plain", (char *)"two words", (char *)"  lead and trail  ", (char *)"\ttab\t",
		(char *)"it's", (char *)"'", (char *)"''", (char *)"'\\''", (char *)"\"double\" 'single'",
		(char *)"back\\slash", (char *)"\\", (char *)"\\n", (char *)"$HOME", (char *)"${IFS}",
		(char *)"$(id)", (char *)"`id`", (char *)"$((1+1))", (char *)"a;b", (char *)";",
		(char *)"a|b", (char *)"a&b", (char *)"&&", (char *)"||", (char *)"*", (char *)"?",
		(char *)"[a-z]*", (char *)"/*", (char *)"~", (char *)"~root", (char *)"#comment",
		(char *)"a#b", (char *)"-n", (char *)"-e", (char *)"--", (char *)"-", (char *)"!",
		(char *)"!!", (char *)"^x^y", (char *)">out", (char *)"<in", (char *)"2>&1",
		(char *)"(sub)", (char *)"{a,b}", (char *)"x=y", (char *)"%s%n%%", (char *)"",
		(char *)"\x01\x02\x1b[31m\x7f", (char *)"\xc3\xbc" "n\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac",
		(char *)"\xff\xfe\x80 invalid utf-8", (char *)"\xe2\x80\x8b zero-width", long_word, NULL,
	};
	char *s = NULL;

	(void)state;
	/* a maximal word made of quotes and spaces: quoting makes it 4x longer */
	for (size_t i = 0; i < GS_REMOTE_WORD_MAX; i++)
		long_word[i] = "' $`"[i % 4];
	long_word[GS_REMOTE_WORD_MAX] = '\0';
	assert_int_equal(gs_sh_join(words, &s), 0);
	expect_all_shells(s, words);
	free(s);
}

/* ---- the remote argv (tail) ------------------------------------------- */

static char **tail_of(const struct gs_request *c)
{
	char err[256] = "", **t = NULL;
	int r = gs_remote_tail(c, &t, err, sizeof(err));

	if (r != 0)
		fail_msg("gs_remote_tail: %d %s", r, err);
	return t;
}

static void test_tail_defaults(void **state)
{
	struct gs_request c;
	char **t;
	static const char *const st[] = { "--remote", "status", NULL };
	static const char *const rc[] = { "--remote", "--yes", "--grace", "10", "--timeout", "60", "--tolerance=16",
					  "reclaim", NULL };
	static const char *const wt[] = { "--remote", "--timeout", "60", "--tolerance=16", "wait", NULL };

	(void)state;
	cli_init(&c, GS_CMD_STATUS);
	t = tail_of(&c);
	expect_strv(t, st, "status");
	gs_strv_free(t);

	cli_init(&c, GS_CMD_RECLAIM);
	t = tail_of(&c);
	expect_strv(t, rc, "reclaim");
	gs_strv_free(t);

	cli_init(&c, GS_CMD_WAIT);
	t = tail_of(&c);
	expect_strv(t, wt, "wait");
	gs_strv_free(t);

	/* The text forms of status travel (the far side puts the text in its
	 * document), and -v for the text report. */
	{
		static const char *const qt[] = { "--remote", "--query-gpu=index,memory.used",
						  "--format=csv,noheader", "--verbose", "status", NULL };
		static const char *const ct[] = { "--remote", "--csv", "status", NULL };

		cli_init(&c, GS_CMD_STATUS);
		c.verbose = true;
		c.query_gpu = "index,memory.used";
		c.format = "csv,noheader";
		t = tail_of(&c);
		expect_strv(t, qt, "status query");
		gs_strv_free(t);
		cli_init(&c, GS_CMD_STATUS);
		c.csv = true;
		t = tail_of(&c);
		expect_strv(t, ct, "status csv");
		gs_strv_free(t);
	}
}

/* Local-only options never travel; status carries no acting options, wait
 * none of reclaim's selection (the far side's parser refuses them there). */
static void test_tail_what_travels(void **state)
{
	struct gs_request c;
	char **t;
	static const char *const st[] = { "--remote", "--gpus=0-3", "--nvml-timeout", "2.500", "--no-nvml", "status", NULL };
	static const char *const wt[] = { "--remote", "--gpus=1", "--timeout", "0.001", "--tolerance=0", "--reason=r", "wait", NULL };

	(void)state;
	cli_init(&c, GS_CMD_STATUS);
	c.gpus = "0-3";
	c.no_nvml = true;
	c.nvml_timeout_ms = 2500;
	/* none of these may appear */
	c.json = c.quiet = c.verbose = true;
	c.nvml_lib = "/my/libnvidia-ml.so";
	c.dev_root = "/my/dev";
	c.proc_root = "/my/proc";
	c.hosts[0] = "gpu01";
	c.n_hosts = 1;
	c.ssh_cmd = "ssh -v";
	c.remote_cmd = "gs";
	c.units[0] = "x.service";
	c.n_units = 1;
	c.reason = "ignored for status";
	c.yes = true;
	c.dry_run = true;
	t = tail_of(&c);
	expect_strv(t, st, "status with local options");
	gs_strv_free(t);

	cli_init(&c, GS_CMD_WAIT);
	c.gpus = "1";
	c.timeout_ms = 1;
	c.tolerance_mib = 0;
	c.reason = "r";
	c.units[0] = "x.service";
	c.n_units = 1;
	c.users[0] = "alice";
	c.n_users = 1;
	c.match = "m";
	c.yes = true;
	c.dry_run = true;
	c.grace_ms = 1;
	t = tail_of(&c);
	expect_strv(t, wt, "wait");
	gs_strv_free(t);
}

/* reclaim: the operator confirmed here (or gave -y), so the far side gets
 * --yes; --dry-run replaces it; never both. */
static void test_tail_yes_dry_run(void **state)
{
	struct gs_request c;
	char **t;
	int yes, dry;

	(void)state;
	for (yes = 0; yes < 2; yes++)
		for (dry = 0; dry < 2; dry++) {
			size_t n_yes = 0, n_dry = 0;

			cli_init(&c, GS_CMD_RECLAIM);
			c.yes = yes;
			c.dry_run = dry;
			t = tail_of(&c);
			for (size_t i = 0; t[i]; i++) {
				n_yes += !strcmp(t[i], "--yes") || !strcmp(t[i], "-y");
				n_dry += !strcmp(t[i], "--dry-run") || !strcmp(t[i], "-n");
			}
			assert_int_equal(n_yes, dry ? 0 : 1);
			assert_int_equal(n_dry, dry ? 1 : 0);
			assert_string_equal(t[strv_len(t) - 1], "reclaim");
			gs_strv_free(t);
		}
}

static void test_tail_seconds_roundtrip(void **state)
{
	static const uint64_t ms[] = { 0, 1, 10, 999, 1000, 1001, 1500, 10000, 59999, 3600000, 604800000 };
	struct gs_request c;

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(ms); i++) {
		char **t;
		uint64_t back = UINT64_MAX;

		cli_init(&c, GS_CMD_RECLAIM);
		c.grace_ms = ms[i];
		c.timeout_ms = ms[i];
		c.nvml_timeout_ms = (unsigned)(ms[i] > 600000 ? 600000 : ms[i]);
		t = tail_of(&c);
		for (size_t k = 0; t[k]; k++)
			if (!strcmp(t[k], "--grace") || !strcmp(t[k], "--timeout") || !strcmp(t[k], "--nvml-timeout")) {
				uint64_t want = !strcmp(t[k], "--nvml-timeout") ? c.nvml_timeout_ms : ms[i];

				assert_non_null(t[k + 1]);
				if (gs_parse_seconds(t[k + 1], &back) != 0 || back != want)
					fail_msg("%s %s reads back as %llu ms, want %llu", t[k], t[k + 1],
						 (unsigned long long)back, (unsigned long long)want);
			}
		gs_strv_free(t);
	}
}

static void test_tail_not_a_fleet_command(void **state)
{
	struct gs_request c;
	char err[128] = "", **t = NULL;

	(void)state;
	cli_init(&c, GS_CMD_NONE);
	assert_int_equal(gs_remote_tail(&c, &t, err, sizeof(err)), -EINVAL);
	assert_null(t);
	assert_non_null(strstr(err, "no fleet command"));
}

/* The far side's own getopt tables (src/cli/options.c, from core/options.c), to read the tail
 * back with GNU getopt_long exactly as the remote gpuslate does. */

/* Parse argv (a program name, then the tail) into a struct gs_request as the far
 * side would; fails on an option it did not expect. */
static void far_parse(char *const *tail, struct gs_request *ret)
{
	size_t n = strv_len(tail);
	char **argv = calloc(n + 2, sizeof(*argv));
	int c, argc = (int)n + 1;
	const struct option *lo;
	const char *so;

	assert_non_null(argv);
	argv[0] = (char *)"gpuslate";
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = tail[i];
	memset(ret, 0, sizeof(*ret));
	optind = 0; /* full re-initialisation of GNU getopt */
	opterr = 0;
	gs_cli_getopt_tables(&lo, &so);
	while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		switch (c) {
		case 'g': ret->gpus = optarg; break;
		case 'u': ret->users[ret->n_users++] = optarg; break;
		case OPT_UNIT: ret->units[ret->n_units++] = optarg; break;
		case OPT_CONTAINER: ret->containers[ret->n_containers++] = optarg; break;
		case OPT_MATCH: ret->match = optarg; break;
		case OPT_INCLUDE_CLIENTS: ret->include_clients = true; break;
		case OPT_INCLUDE: ret->includes[ret->n_includes++] = optarg; break;
		case 'y': ret->yes = true; break;
		case 'n': ret->dry_run = true; break;
		case OPT_GRACE: assert_int_equal(gs_parse_seconds(optarg, &ret->grace_ms), 0); break;
		case OPT_TIMEOUT: assert_int_equal(gs_parse_seconds(optarg, &ret->timeout_ms), 0); break;
		case OPT_TOLERANCE: ret->tolerance_mib = strtoull(optarg, NULL, 10); break;
		case OPT_NO_UNITS: ret->no_units = true; break;
		case OPT_REASON: ret->reason = optarg; break;
		case OPT_NO_NVML: ret->no_nvml = true; break;
		case OPT_REMOTE: ret->remote = true; break;
		default:
			fail_msg("the far side would see option %d ('%s') at argv[%d]", c,
				 optind > 0 && optind <= argc ? argv[optind - 1] : "?", optind - 1);
		}
	}
	assert_int_equal(optind, argc - 1); /* exactly one operand: the command */
	ret->cmd_name = argv[optind];
	free(argv);
}

/* Hostile selection values come back from the far side's getopt as exactly
 * themselves; values that look like options stay values. */
static void test_tail_hostile_values_reparse(void **state)
{
	static const char *const hostile[] = {
		"-y", "--yes", "--dry-run", "-n", "--", "-", "--remote", "--unit=evil", "-uroot",
		"--grace=0", "status", "a b", "x';rm -rf ~;'", "$(reboot)", "`halt`", "a;b|c&d", "*",
		"", "=", "--reason", "\xc3\xbc\xe6\x97\xa5", "\x1b]0;title\x07",
	};
	struct gs_request c, back;
	char **t;

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(hostile); i++) {
		const char *v = hostile[i];

		cli_init(&c, GS_CMD_RECLAIM);
		c.users[0] = v;
		c.users[1] = "alice";
		c.n_users = 2;
		c.units[0] = v;
		c.n_units = 1;
		c.containers[0] = v;
		c.n_containers = 1;
		c.match = v;
		c.includes[0] = v;
		c.n_includes = 1;
		c.reason = v;
		c.gpus = v;
		c.dry_run = true;
		t = tail_of(&c);
		far_parse(t, &back);
		assert_true(back.remote);
		assert_string_equal(back.cmd_name, "reclaim");
		assert_true(back.dry_run);
		assert_false(back.yes);
		assert_int_equal(back.n_users, 2);
		assert_string_equal(back.users[0], v);
		assert_string_equal(back.users[1], "alice");
		assert_int_equal(back.n_units, 1);
		assert_string_equal(back.units[0], v);
		assert_int_equal(back.n_containers, 1);
		assert_string_equal(back.containers[0], v);
		assert_string_equal(back.match, v);
		assert_int_equal(back.n_includes, 1);
		assert_string_equal(back.includes[0], v);
		assert_string_equal(back.reason, v);
		assert_string_equal(back.gpus, v);
		assert_int_equal(back.grace_ms, 10000);
		assert_int_equal(back.timeout_ms, 60000);
		assert_int_equal(back.tolerance_mib, 16);
		gs_strv_free(t);

		/* wait: --reason; status: -g */
		cli_init(&c, GS_CMD_WAIT);
		c.reason = v;
		t = tail_of(&c);
		far_parse(t, &back);
		assert_string_equal(back.cmd_name, "wait");
		assert_string_equal(back.reason, v);
		assert_false(back.yes);
		assert_false(back.dry_run);
		gs_strv_free(t);

		cli_init(&c, GS_CMD_STATUS);
		c.gpus = v;
		t = tail_of(&c);
		far_parse(t, &back);
		assert_string_equal(back.cmd_name, "status");
		assert_string_equal(back.gpus, v);
		gs_strv_free(t);
	}
}

/* Everything in one reclaim, exact words, and through the shell: the ssh
 * command string a login shell runs gives back exactly these words. */
static void test_tail_hostile_through_shell(void **state)
{
	struct gs_request c;
	struct gs_remote_ctx ctx;
	char err[256] = "", **argv = NULL;
	static const char *const want[] = {
		"gpuslate", "--remote", "--gpus=0,2",
		"--user=-rf", "--user=alice bob",
		"--unit=a b.service", "--unit=x';rm -rf ~;'.service",
		"--container=c$(id)",
		"--match=^(python|--help)$ `id` ; echo pwned | sh & *",
		"--include-clients", "--include=-y",
		"--dry-run", "--grace", "1.500", "--timeout", "0", "--tolerance=0", "--no-units",
		"--reason=-- $(reboot) `halt`; echo 'pwned' | sh & * \\ \"q\" \xc3\xbc",
		"--nvml-timeout", "0.250",
		"reclaim", NULL,
	};
	size_t n;

	(void)state;
	cli_init(&c, GS_CMD_RECLAIM);
	c.gpus = "0,2";
	c.nvml_timeout_ms = 250;
	c.users[0] = "-rf";
	c.users[1] = "alice bob";
	c.n_users = 2;
	c.units[0] = "a b.service";
	c.units[1] = "x';rm -rf ~;'.service";
	c.n_units = 2;
	c.containers[0] = "c$(id)";
	c.n_containers = 1;
	c.match = "^(python|--help)$ `id` ; echo pwned | sh & *";
	c.include_clients = true;
	c.includes[0] = "-y";
	c.n_includes = 1;
	c.no_units = true;
	c.grace_ms = 1500;
	c.timeout_ms = 0;
	c.tolerance_mib = 0;
	c.dry_run = true;
	c.yes = true;
	c.reason = "-- $(reboot) `halt`; echo 'pwned' | sh & * \\ \"q\" \xc3\xbc";
	assert_int_equal(gs_remote_ctx_init(&ctx, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(gs_remote_argv(&ctx, "gpu01", &argv, err, sizeof(err)), 0);
	n = strv_len(argv);
	assert_true(n == 8);
	assert_string_equal(argv[n - 2], "--");
	expect_all_shells(argv[n - 1], (char *const *)want);
	gs_strv_free(argv);
	gs_remote_ctx_free(&ctx);
}

static void test_tail_refused_words(void **state)
{
	struct gs_request c;
	struct gs_remote_ctx ctx;
	char err[256] = "", **t = NULL;
	char *big = malloc(GS_REMOTE_WORD_MAX + 1);

	(void)state;
	cli_init(&c, GS_CMD_WAIT);
	c.reason = "line one\nline two";
	assert_int_equal(gs_remote_tail(&c, &t, err, sizeof(err)), -EINVAL);
	assert_null(t);
	assert_non_null(strstr(err, "line break"));

	cli_init(&c, GS_CMD_RECLAIM);
	c.units[0] = "carriage\rreturn.service";
	c.n_units = 1;
	memset(&ctx, 0x5a, sizeof(ctx));
	assert_int_equal(gs_remote_ctx_init(&ctx, &c, NULL, err, sizeof(err)), -EINVAL);
	assert_null(ctx.ssh);
	assert_null(ctx.remote_cmd);
	assert_null(ctx.tail);
	assert_non_null(strstr(err, "line break"));

	/* --match=VALUE over GS_REMOTE_WORD_MAX bytes */
	assert_non_null(big);
	memset(big, 'a', GS_REMOTE_WORD_MAX);
	big[GS_REMOTE_WORD_MAX] = '\0';
	cli_init(&c, GS_CMD_RECLAIM);
	c.match = big;
	assert_int_equal(gs_remote_tail(&c, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "too long"));
	assert_true(printable(err));
	free(big);
}

/* Regression (remote.c gs_remote_tail, fixed): the refusal message quotes the first 40
 * bytes of the refused word raw, so the line break that caused the refusal
 * (or a CR, or an escape sequence before it) is printed to the terminal in
 * the middle of a one-line "gpuslate: ..." error. The inventory and host
 * list messages show such bytes escaped. */
static void test_tail_refusal_message_is_escaped(void **state)
{
	struct gs_request c;
	char err[256] = "", **t = NULL;

	(void)state;
	cli_init(&c, GS_CMD_WAIT);
	c.reason = "a\rgpuslate: all hosts clean\x1b[K";
	assert_int_equal(gs_remote_tail(&c, &t, err, sizeof(err)), -EINVAL);
	if (!printable(err))
		fail_msg("refusal message carries raw control bytes: \"%s\"",
			 strv_show((char *const[]){ err, NULL }));
}

/* ---- context and transports ------------------------------------------- */

static void ctx_make(struct gs_remote_ctx *ctx, const struct gs_request *c, const struct gs_inventory *inv)
{
	char err[256] = "";
	int r = gs_remote_ctx_init(ctx, c, inv, err, sizeof(err));

	if (r != 0)
		fail_msg("gs_remote_ctx_init: %d %s", r, err);
}

static void expect_argv(const struct gs_remote_ctx *ctx, const char *host, const char *const *want)
{
	char err[256] = "", **argv = NULL;
	int r = gs_remote_argv(ctx, host, &argv, err, sizeof(err));

	if (r != 0)
		fail_msg("gs_remote_argv(%s): %d %s", host, r, err);
	expect_strv(argv, want, host);
	gs_strv_free(argv);
}

static void test_argv_plain_ssh(void **state)
{
	struct gs_request c;
	struct gs_remote_ctx ctx;
	static const char *const plain[] = { "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "gpu01", "--",
					     "'gpuslate' '--remote' 'status'", NULL };
	static const char *const user[] = { "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-l", "alice",
					    "gpu01", "--", "'gpuslate' '--remote' 'status'", NULL };

	(void)state;
	cli_init(&c, GS_CMD_STATUS);
	ctx_make(&ctx, &c, NULL);
	expect_argv(&ctx, "gpu01", plain);
	expect_argv(&ctx, "alice@gpu01", user);
	gs_remote_ctx_free(&ctx);
	gs_remote_ctx_free(&ctx); /* idempotent */
}

static void test_argv_connect_timeout(void **state)
{
	static const struct {
		uint64_t ms;
		const char *word;
	} cases[] = {
		{ 0, "ConnectTimeout=1" },    { 1, "ConnectTimeout=1" },     { 500, "ConnectTimeout=1" },
		{ 1000, "ConnectTimeout=1" }, { 1001, "ConnectTimeout=2" },  { 10000, "ConnectTimeout=10" },
		{ 10500, "ConnectTimeout=11" }, { 604800000, "ConnectTimeout=604800" },
	};
	struct gs_request c;

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(cases); i++) {
		struct gs_remote_ctx ctx;
		char err[64], **argv;

		cli_init(&c, GS_CMD_STATUS);
		c.connect_timeout_ms = cases[i].ms;
		ctx_make(&ctx, &c, NULL);
		assert_int_equal(gs_remote_argv(&ctx, "h", &argv, err, sizeof(err)), 0);
		assert_string_equal(argv[1], "-o");
		assert_string_equal(argv[2], "BatchMode=yes");
		assert_string_equal(argv[3], "-o");
		assert_string_equal(argv[4], cases[i].word);
		gs_strv_free(argv);
		gs_remote_ctx_free(&ctx);
	}
}

static void test_argv_custom_ssh_and_remote_cmd(void **state)
{
	struct gs_request c;
	struct gs_remote_ctx ctx;
	char err[256] = "";
	static const char *const want[] = { "/usr/bin/ssh", "-F", "/my config", "-J", "bastion", "-o", "BatchMode=yes",
					    "-o", "ConnectTimeout=3", "gpu01", "--",
					    "'sudo' '-n' '/opt/gpuslate/bin/gpuslate' '--remote' 'status'", NULL };

	(void)state;
	cli_init(&c, GS_CMD_STATUS);
	c.ssh_cmd = "/usr/bin/ssh -F \"/my config\" -J bastion";
	c.remote_cmd = "sudo -n /opt/gpuslate/bin/gpuslate";
	c.connect_timeout_ms = 2500;
	ctx_make(&ctx, &c, NULL);
	expect_argv(&ctx, "gpu01", want);
	gs_remote_ctx_free(&ctx);

	/* empty means the default */
	cli_init(&c, GS_CMD_STATUS);
	c.ssh_cmd = "";
	c.remote_cmd = "";
	ctx_make(&ctx, &c, NULL);
	assert_string_equal(ctx.ssh[0], "ssh");
	assert_null(ctx.ssh[1]);
	assert_string_equal(ctx.remote_cmd[0], "gpuslate");
	assert_null(ctx.remote_cmd[1]);
	gs_remote_ctx_free(&ctx);

	/* unusable ones are refused with a reason */
	cli_init(&c, GS_CMD_STATUS);
	c.ssh_cmd = "ssh \"-o unterminated";
	assert_int_equal(gs_remote_ctx_init(&ctx, &c, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unterminated quote"));
	c.ssh_cmd = "   \t ";
	assert_int_equal(gs_remote_ctx_init(&ctx, &c, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "empty"));
	c.ssh_cmd = NULL;
	c.remote_cmd = "'gpuslate \"x";
	assert_int_equal(gs_remote_ctx_init(&ctx, &c, NULL, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--remote-cmd"));
}

static const char inventory_text[] =
	"# test inventory\n"
	"[plain]\n"
	"gpu[01-02] user=root port=2222 ssh-opt=\"-o ProxyJump=bastion -o StrictHostKeyChecking=yes\"\n"
	"gpu05 remote-cmd=/opt/gpuslate/bin/gpuslate\n"
	"gpu06 remote-cmd=\"sudo -n /opt/gs/bin/gpuslate\"\n"
	"[containers]\n"
	"ct129 via=pve1 pct=129\n"
	"ct130 via=pve1 lxc=web user=admin\n"
	"ct201 via=root@pve2 pct=201 user=alice\n"
	"box docker=trainer\n"
	"box2 via=dock1 docker=trainer2 port=2200\n"
	"odd exec=\"myconnect --to %h --pct=%%\"\n"
	"odd2 exec=\"docker exec -i trainer\" remote-cmd=/usr/local/bin/gpuslate\n";

static void inventory_make(struct gs_inventory *inv)
{
	char err[256] = "";
	int r = gs_inventory_parse(inventory_text, "test-hosts", inv, err, sizeof(err));

	if (r != 0)
		fail_msg("inventory: %d %s", r, err);
}

#define SSH_HEAD "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"

static void test_argv_transports(void **state)
{
	struct gs_request c;
	struct gs_inventory inv;
	struct gs_remote_ctx ctx;
	static const char *const gpu01[] = { SSH_HEAD, "-o", "ProxyJump=bastion", "-o", "StrictHostKeyChecking=yes",
					     "-p", "2222", "-l", "root", "gpu01", "--",
					     "'gpuslate' '--remote' 'status'", NULL };
	/* a user@ given with -w wins over user= */
	static const char *const bob01[] = { SSH_HEAD, "-o", "ProxyJump=bastion", "-o", "StrictHostKeyChecking=yes",
					     "-p", "2222", "-l", "bob", "gpu02", "--",
					     "'gpuslate' '--remote' 'status'", NULL };
	static const char *const gpu05[] = { SSH_HEAD, "gpu05", "--", "'/opt/gpuslate/bin/gpuslate' '--remote' 'status'",
					     NULL };
	static const char *const gpu06[] = { SSH_HEAD, "gpu06", "--",
					     "'sudo' '-n' '/opt/gs/bin/gpuslate' '--remote' 'status'", NULL };
	static const char *const unlisted[] = { SSH_HEAD, "gpu99", "--", "'gs-cli' '--remote' 'status'", NULL };
	static const char *const ct129[] = { SSH_HEAD, "pve1", "--",
					     "'pct' 'exec' '129' '--' 'gs-cli' '--remote' 'status'", NULL };
	static const char *const ct130[] = { SSH_HEAD, "-l", "admin", "pve1", "--",
					     "'lxc-attach' '-n' 'web' '--' 'gs-cli' '--remote' 'status'", NULL };
	/* via=user@host names its own user: no -l to fight it */
	static const char *const ct201[] = { SSH_HEAD, "root@pve2", "--",
					     "'pct' 'exec' '201' '--' 'gs-cli' '--remote' 'status'", NULL };
	static const char *const box[] = { SSH_HEAD, "box", "--",
					   "'docker' 'exec' '-i' 'trainer' 'gs-cli' '--remote' 'status'", NULL };
	static const char *const box2[] = { SSH_HEAD, "-p", "2200", "dock1", "--",
					    "'docker' 'exec' '-i' 'trainer2' 'gs-cli' '--remote' 'status'", NULL };
	/* exec: the template, %h replaced, %% a percent, then the words unquoted */
	static const char *const odd[] = { "myconnect", "--to", "odd", "--pct=%", "gs-cli", "--remote", "status", NULL };
	static const char *const odd2[] = { "docker", "exec", "-i", "trainer", "/usr/local/bin/gpuslate", "--remote",
					    "status", NULL };

	(void)state;
	inventory_make(&inv);
	cli_init(&c, GS_CMD_STATUS);
	ctx_make(&ctx, &c, &inv);
	expect_argv(&ctx, "gpu01", gpu01);
	expect_argv(&ctx, "bob@gpu02", bob01);
	expect_argv(&ctx, "gpu05", gpu05);
	expect_argv(&ctx, "gpu06", gpu06);
	gs_remote_ctx_free(&ctx);

	/* --remote-cmd: the default for hosts without remote-cmd= */
	c.remote_cmd = "gs-cli";
	ctx_make(&ctx, &c, &inv);
	expect_argv(&ctx, "gpu06", gpu06); /* the inventory's remote-cmd= wins */
	expect_argv(&ctx, "gpu99", unlisted);
	expect_argv(&ctx, "ct129", ct129);
	expect_argv(&ctx, "ct130", ct130);
	expect_argv(&ctx, "ct201", ct201);
	expect_argv(&ctx, "box", box);
	expect_argv(&ctx, "box2", box2);
	expect_argv(&ctx, "odd", odd);
	expect_argv(&ctx, "odd2", odd2);
	gs_remote_ctx_free(&ctx);
	gs_inventory_free(&inv);
}

/* docs/fleet.md, "Proxmox": the exact command shown for ct129. */
static void test_argv_docs_proxmox_example(void **state)
{
	struct gs_request c;
	struct gs_inventory inv;
	struct gs_remote_ctx ctx;
	char err[256] = "";
	static const char *const want[] = {
		SSH_HEAD, "root@pve1", "--",
		"'pct' 'exec' '129' '--' 'gpuslate' '--remote' '--unit=ollama.service' '--yes' '--grace' '10' "
		"'--timeout' '60' '--tolerance=16' 'reclaim'",
		NULL,
	};

	(void)state;
	assert_int_equal(gs_inventory_parse("[inference]\nct129  via=root@pve1 pct=129\nct130  via=root@pve1 pct=130\n",
					    "hosts", &inv, err, sizeof(err)), 0);
	cli_init(&c, GS_CMD_RECLAIM);
	c.yes = true;
	c.units[0] = "ollama.service";
	c.n_units = 1;
	ctx_make(&ctx, &c, &inv);
	expect_argv(&ctx, "ct129", want);
	gs_remote_ctx_free(&ctx);
	gs_inventory_free(&inv);
}

/* For every transport, with hostile values: "--" right after the
 * destination and one command string after it; that string, run by a POSIX
 * login shell, gives exactly the inner words (container entry, remote
 * command, tail). exec templates get the words themselves. */
static void test_argv_hostile_every_transport(void **state)
{
	static const char *const hosts[] = { "gpu01", "carol@gpu02", "gpu06", "ct129", "ct130", "ct201", "box",
					     "box2", "gpu99" };
	static const char *const targets[] = { "gpu01", "gpu02", "gpu06", "pve1", "pve1", "root@pve2", "box",
					       "dock1", "gpu99" };
	struct gs_request c;
	struct gs_inventory inv;
	struct gs_remote_ctx ctx;
	const char *v = "-y ' \"; $(touch pwned) `touch pwned2` >pwned3 | cat & * ~ \\";

	(void)state;
	inventory_make(&inv);
	cli_init(&c, GS_CMD_RECLAIM);
	c.units[0] = v;
	c.n_units = 1;
	c.match = v;
	c.reason = v;
	c.users[0] = "-oProxyCommand=touch pwned4";
	c.n_users = 1;
	ctx_make(&ctx, &c, &inv);
	for (size_t i = 0; i < GS_ARRAY_SIZE(hosts); i++) {
		char err[256] = "", **argv = NULL, **inner;
		size_t n, k = 0, ni;
		const struct gs_host_entry *e = gs_inventory_find(&inv, hosts[i]);

		assert_int_equal(gs_remote_argv(&ctx, hosts[i], &argv, err, sizeof(err)), 0);
		n = strv_len(argv);
		assert_true(n >= 8);
		assert_string_equal(argv[n - 2], "--");
		assert_string_equal(argv[n - 3], targets[i]);
		/* inner words: entry, remote command, tail */
		ni = strv_len(ctx.tail) + 8;
		inner = calloc(ni + 1, sizeof(*inner));
		assert_non_null(inner);
		if (e && e->transport == GS_TRANSPORT_PCT) {
			static char vmid[16];

			snprintf(vmid, sizeof(vmid), "%u", e->vmid);
			inner[k++] = (char *)"pct", inner[k++] = (char *)"exec", inner[k++] = vmid, inner[k++] = (char *)"--";
		} else if (e && e->transport == GS_TRANSPORT_LXC) {
			inner[k++] = (char *)"lxc-attach", inner[k++] = (char *)"-n", inner[k++] = e->container,
			inner[k++] = (char *)"--";
		} else if (e && e->transport == GS_TRANSPORT_DOCKER) {
			inner[k++] = (char *)"docker", inner[k++] = (char *)"exec", inner[k++] = (char *)"-i",
			inner[k++] = e->container;
		}
		for (char **w = e && e->remote_cmd ? e->remote_cmd : ctx.remote_cmd; *w; w++)
			inner[k++] = *w;
		for (size_t t = 0; ctx.tail[t]; t++)
			inner[k++] = ctx.tail[t];
		inner[k] = NULL;
		expect_all_shells(argv[n - 1], inner);
		free(inner);
		gs_strv_free(argv);
	}
	/* exec: the template's words, then the words themselves, unquoted */
	{
		char err[256] = "", **argv = NULL;
		size_t n, nt = strv_len(ctx.tail);

		assert_int_equal(gs_remote_argv(&ctx, "odd", &argv, err, sizeof(err)), 0);
		n = strv_len(argv);
		assert_int_equal(n, 4 + 1 + nt);
		assert_string_equal(argv[4], "gpuslate");
		for (size_t t = 0; t < nt; t++)
			assert_string_equal(argv[5 + t], ctx.tail[t]);
		gs_strv_free(argv);
	}
	gs_remote_ctx_free(&ctx);
	gs_inventory_free(&inv);
}

/* Every option the table forwards, set on this side, reaches the far side
 * as given: the tail is read back by the real parser (gs_cli_parse), and
 * the value lands in the same field. A new option that travels is covered
 * the day it enters the table. */
static void set_sample(const struct gs_option *o, struct gs_request *c)
{
	char *base = (char *)c;

	switch (o->type) {
	case GS_OT_FLAG:
		*(bool *)(base + o->off) = true;
		break;
	case GS_OT_STRING: {
		static char vals[64][48];
		size_t k = (size_t)(o - gs_options) % 64;

		snprintf(vals[k], sizeof(vals[k]), "-v-%s", o->name);
		*(const char **)(base + o->off) = vals[k];
		break;
	}
	case GS_OT_LIST: {
		const char **v = (const char **)(base + o->off);
		size_t *n = (size_t *)(base + o->count_off);

		/* --include takes protected names only */
		v[0] = o->key == OPT_INCLUDE ? "nvidia-persistenced" : "-first value";
		v[1] = o->key == OPT_INCLUDE ? "nv-hostengine" : "second";
		*n = 2;
		break;
	}
	case GS_OT_GPUS:
		*(const char **)(base + o->off) = "0,2-3";
		break;
	case GS_OT_MS:
		*(uint64_t *)(base + o->off) = 1500;
		break;
	case GS_OT_MS_SHORT:
		*(unsigned *)(base + o->off) = 2500;
		break;
	case GS_OT_MIB:
		*(uint64_t *)(base + o->off) = 7;
		break;
	case GS_OT_FORMAT:
		*(const char **)(base + o->off) = "prometheus";
		c->prometheus = true;
		break;
	case GS_OT_CSV:
		*(bool *)(base + o->off) = true;
		c->csv_processes = true;
		break;
	default:
		fail_msg("--%s: a forwarded option of a type this test does not know", o->name);
	}
}

static void expect_same(const struct gs_option *o, const struct gs_request *a, const struct gs_request *b)
{
	const char *x = (const char *)a, *y = (const char *)b;

	switch (o->type) {
	case GS_OT_FLAG:
		assert_int_equal(*(const bool *)(x + o->off), *(const bool *)(y + o->off));
		break;
	case GS_OT_CSV:
		assert_int_equal(*(const bool *)(x + o->off), *(const bool *)(y + o->off));
		assert_int_equal(a->csv_processes, b->csv_processes);
		break;
	case GS_OT_STRING:
	case GS_OT_GPUS:
	case GS_OT_FORMAT:
		assert_string_equal(*(const char *const *)(x + o->off), *(const char *const *)(y + o->off));
		break;
	case GS_OT_LIST: {
		size_t n = *(const size_t *)(x + o->count_off);

		assert_int_equal(n, *(const size_t *)(y + o->count_off));
		for (size_t i = 0; i < n; i++)
			assert_string_equal(((const char *const *)(x + o->off))[i], ((const char *const *)(y + o->off))[i]);
		break;
	}
	case GS_OT_MS:
	case GS_OT_MIB:
		assert_int_equal(*(const uint64_t *)(x + o->off), *(const uint64_t *)(y + o->off));
		break;
	case GS_OT_MS_SHORT:
		assert_int_equal(*(const unsigned *)(x + o->off), *(const unsigned *)(y + o->off));
		break;
	default:
		break;
	}
}

static void test_every_forwarded_option_reaches_the_far_side_as_given(void **state)
{
	static const enum gs_cmd cmds[] = { GS_CMD_RECLAIM, GS_CMD_WAIT, GS_CMD_STATUS };
	size_t checked = 0;

	(void)state;
	for (const struct gs_option *o = gs_options; o->name; o++) {
		if (o->forward == GS_FWD_NO || o->forward == GS_FWD_SPECIAL)
			continue;
		for (size_t k = 0; k < GS_ARRAY_SIZE(cmds); k++) {
			struct gs_request c, back;
			char **t, **argv;
			size_t n;

			if (!gs_option_valid_for(o, cmds[k]))
				continue;
			cli_init(&c, cmds[k]);
			c.yes = true;
			set_sample(o, &c);
			t = tail_of(&c);
			n = strv_len(t);
			argv = calloc(n + 2, sizeof(*argv));
			assert_non_null(argv);
			argv[0] = (char *)"gpuslate";
			memcpy(argv + 1, t, n * sizeof(*argv));
			memset(&back, 0, sizeof(back));
			optind = 0;
			if (gs_cli_parse((int)n + 1, argv, &back) != 0)
				fail_msg("--%s for '%s': the far side refused %s", o->name, c.cmd_name, strv_show(t));
			assert_true(back.remote);
			assert_int_equal(back.cmd, cmds[k]);
			expect_same(o, &c, &back);
			checked++;
			free(argv);
			gs_strv_free(t);
		}
	}
	assert_true(checked >= 15); /* the table's forwarded options, per command */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quote_exact),
		cmocka_unit_test(test_quote_refused),
		cmocka_unit_test(test_join_basic),
		cmocka_unit_test(test_join_roundtrip_shells),
		cmocka_unit_test(test_tail_defaults),
		cmocka_unit_test(test_tail_what_travels),
		cmocka_unit_test(test_tail_yes_dry_run),
		cmocka_unit_test(test_tail_seconds_roundtrip),
		cmocka_unit_test(test_tail_not_a_fleet_command),
		cmocka_unit_test(test_tail_hostile_values_reparse),
		cmocka_unit_test(test_every_forwarded_option_reaches_the_far_side_as_given),
		cmocka_unit_test(test_tail_hostile_through_shell),
		cmocka_unit_test(test_tail_refused_words),
		cmocka_unit_test(test_tail_refusal_message_is_escaped),
		cmocka_unit_test(test_argv_plain_ssh),
		cmocka_unit_test(test_argv_connect_timeout),
		cmocka_unit_test(test_argv_custom_ssh_and_remote_cmd),
		cmocka_unit_test(test_argv_transports),
		cmocka_unit_test(test_argv_docs_proxmox_example),
		cmocka_unit_test(test_argv_hostile_every_transport),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
