/* Unit tests for src/core/stopped.c: the stopped-state file that `restore`
 * runs commands from as root. Parsing (what a manager would take, and what
 * is refused), merging, the file checks (owner, mode, type) and the atomic
 * 0600 save, on real files in a temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/stopped.h"
#include "util/util.h"

static const char good[] =
	"{\"schema_version\": 1, \"stopped\": ["
	" {\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"trainer.service\", \"id\": null,"
	"  \"container\": null, \"stopped_at\": 100, \"reclaim\": {\"started_at\": 99, \"reason\": \"job 7\"},"
	"  \"state_before\": \"active\", \"enabled_before\": \"enabled\"},"
	" {\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"infer\\\\x2d0.service\", \"container\": \"129\","
	"  \"stopped_at\": 101, \"reclaim\": {\"started_at\": 99}},"
	" {\"kind\": \"container\", \"runtime\": \"podman\", \"name\": \"web\", \"id\": \"3f2a9c\","
	"  \"stopped_at\": 102, \"reclaim\": {\"started_at\": 98, \"reason\": null}, \"state_before\": \"running\"}]}";

static char dir[512];

static int setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/gs-test-stopped.XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_parse_good(void **state)
{
	struct gs_stopped s;
	char err[256] = "";

	(void)state;
	assert_int_equal(gs_stopped_parse(good, strlen(good), &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.recs[0].kind, GS_STOPPED_UNIT);
	assert_string_equal(s.recs[0].name, "trainer.service");
	assert_string_equal(s.recs[0].container, "");
	assert_string_equal(s.recs[0].reason, "job 7");
	assert_int_equal(s.recs[0].stopped_at, 100);
	assert_int_equal(s.recs[0].reclaim_at, 99);
	assert_string_equal(s.recs[0].state_before, "active");
	assert_string_equal(s.recs[0].enabled_before, "enabled");
	/* systemd's own escapes are kept as it writes them */
	assert_string_equal(s.recs[1].name, "infer\\x2d0.service");
	assert_string_equal(s.recs[1].container, "129");
	assert_int_equal(s.recs[2].kind, GS_STOPPED_CONTAINER);
	assert_string_equal(s.recs[2].runtime, "podman");
	assert_string_equal(s.recs[2].id, "3f2a9c");
	assert_string_equal(s.recs[2].reason, "");
	gs_stopped_free(&s);
}

/* One bad record refuses the whole file, with the record named. */
static void test_parse_refused(void **state)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "[]", "not a JSON object" },
		{ "{\"schema_version\": 2, \"stopped\": []}", "schema_version is not 1" },
		{ "{\"schema_version\": 1}", "\"stopped\" is not a list" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"--now\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: not a systemd unit" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a b.service\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: not a systemd unit" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"docker\", \"name\": \"a.service\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: not a systemd unit" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		  " \"container\": \"1;2\", \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: not a systemd unit" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"container\", \"runtime\": \"lxc\", \"id\": \"abc\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: not a docker or podman container" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"container\", \"runtime\": \"docker\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: not a docker or podman container" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"vm\", \"runtime\": \"systemd\", \"name\": \"a\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: unknown kind" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		  " \"stopped_at\": -1, \"reclaim\": {\"started_at\": 1}}]}",
		  "record 1: \"stopped_at\" is not a unix time" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		  " \"stopped_at\": 1}]}",
		  "record 1: no \"reclaim\" object" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1, \"reason\": \"two\\nlines\"}}]}",
		  "record 1: \"reason\" is not a short one-line string" },
		{ "{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a\\u0000b\","
		  " \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		  "not a JSON object" }, /* jansson refuses a NUL */
		{ "{\"schema_version\": 1, \"schema_version\": 1, \"stopped\": []}", "not a JSON object" },
	};

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(bad); i++) {
		struct gs_stopped s;
		char err[256] = "";

		assert_int_equal(gs_stopped_parse(bad[i].text, strlen(bad[i].text), &s, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].why))
			fail_msg("case %zu: [%s] does not say [%s]", i, err, bad[i].why);
		assert_null(s.recs);
		assert_int_equal(s.n, 0);
	}
}

/* The same unit (or CT unit, or container id) stopped again replaces its
 * record; another CT's unit of the same name is another record. */
static void test_merge(void **state)
{
	struct gs_stopped s = { 0 };
	struct gs_stopped_rec a = { .kind = GS_STOPPED_UNIT, .runtime = "systemd", .name = "x.service", .stopped_at = 1 };
	struct gs_stopped_rec b = a, c = a, d = { .kind = GS_STOPPED_CONTAINER, .runtime = "docker", .id = "abc" };

	(void)state;
	b.stopped_at = 2;
	gs_strlcpy(c.container, "129", sizeof(c.container));
	assert_int_equal(gs_stopped_add(&s, &a), 0);
	assert_int_equal(gs_stopped_add(&s, &c), 0);
	assert_int_equal(gs_stopped_add(&s, &d), 0);
	assert_int_equal(gs_stopped_add(&s, &b), 0);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.recs[0].stopped_at, 2);
	assert_string_equal(s.recs[1].container, "129");
	gs_stopped_remove(&s, 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.recs[0].container, "129");
	assert_string_equal(s.recs[1].id, "abc");
	gs_stopped_free(&s);
}

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void test_save_load(void **state)
{
	struct gs_stopped s, back;
	char path[600], err[256] = "";
	struct stat st;

	(void)state;
	path_in(path, sizeof(path), "stopped");
	assert_int_equal(gs_stopped_parse(good, strlen(good), &s, err, sizeof(err)), 0);
	assert_int_equal(gs_stopped_save(path, &s), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(gs_stopped_load(path, &back, err, sizeof(err)), 0);
	assert_int_equal(back.n, s.n);
	for (size_t i = 0; i < s.n; i++)
		assert_memory_equal(&back.recs[i], &s.recs[i], sizeof(s.recs[i]));
	gs_stopped_free(&back);
	/* No temporary file is left beside it. */
	{
		char tmp[700];

		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
		assert_int_equal(access(tmp, F_OK), -1);
	}
	/* An empty set removes the file; loading nothing is an empty set. */
	s.n = 0;
	assert_int_equal(gs_stopped_save(path, &s), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(gs_stopped_load(path, &back, err, sizeof(err)), 0);
	assert_int_equal(back.n, 0);
	gs_stopped_free(&s);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* What drives commands run as root is read only from a regular file of
 * root or us that nobody else may write. */
static void test_load_refused(void **state)
{
	struct gs_stopped s;
	char path[600], link[600], err[256];

	(void)state;
	path_in(path, sizeof(path), "f");
	write_file(path, good, 0620);
	assert_int_equal(gs_stopped_load(path, &s, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "others may write it (group or world writable)");
	assert_int_equal(chmod(path, 0602), 0);
	assert_int_equal(gs_stopped_load(path, &s, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(gs_stopped_load(path, &s, err, sizeof(err)), 0);
	gs_stopped_free(&s);

	path_in(link, sizeof(link), "link");
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(gs_stopped_load(link, &s, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "it is a symbolic link");

	path_in(path, sizeof(path), "fifo");
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(gs_stopped_load(path, &s, err, sizeof(err)), -EPERM);
	assert_string_equal(err, "not a regular file");

	if (geteuid() == 0) {
		path_in(path, sizeof(path), "theirs");
		write_file(path, good, 0600);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(gs_stopped_load(path, &s, err, sizeof(err)), -EPERM);
		assert_string_equal(err, "owned by another user");
	}
}

/* A user's unit (issue 28): "user": UID, kept as the user scope, saved
 * back as it was; refused on a container, beside a CT, or not a uid. */
static void test_user_units(void **state)
{
	static const char user[] =
		"{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\","
		" \"name\": \"jupyter.service\", \"container\": null, \"user\": 1000, \"stopped_at\": 100,"
		" \"reclaim\": {\"started_at\": 99}}]}";
	static const char *const bad[] = {
		"{\"schema_version\": 1, \"stopped\": [{\"kind\": \"container\", \"runtime\": \"docker\", \"id\": \"3f2a\","
		" \"user\": 0, \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		"{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		" \"container\": \"129\", \"user\": 0, \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		"{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		" \"user\": -1, \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		"{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		" \"user\": \"root\", \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
		/* The scope's spelling is no CT name the file may carry. */
		"{\"schema_version\": 1, \"stopped\": [{\"kind\": \"unit\", \"runtime\": \"systemd\", \"name\": \"a.service\","
		" \"container\": \"user/0\", \"stopped_at\": 1, \"reclaim\": {\"started_at\": 1}}]}",
	};
	struct gs_stopped s, back;
	char path[600], err[256] = "";

	(void)state;
	assert_int_equal(gs_stopped_parse(user, strlen(user), &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.recs[0].container, "user/1000");
	path_in(path, sizeof(path), "stopped-user");
	assert_int_equal(gs_stopped_save(path, &s), 0);
	assert_int_equal(gs_stopped_load(path, &back, err, sizeof(err)), 0);
	assert_int_equal(back.n, 1);
	assert_memory_equal(&back.recs[0], &s.recs[0], sizeof(s.recs[0]));
	gs_stopped_free(&back);
	gs_stopped_free(&s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (gs_stopped_parse(bad[i], strlen(bad[i]), &s, err, sizeof(err)) != -EINVAL)
			print_error("accepted: %s\n", bad[i]);
		assert_int_equal(gs_stopped_parse(bad[i], strlen(bad[i]), &s, err, sizeof(err)), -EINVAL);
	}
}

static void test_path(void **state)
{
	char buf[256];

	(void)state;
	setenv("GPUSLATE_STATE_FILE", "/x/last-reclaim", 1);
	setenv("GPUSLATE_STOPPED_FILE", "/y/stopped", 1);
	assert_string_equal(gs_stopped_path(buf, sizeof(buf)), "/y/stopped");
	unsetenv("GPUSLATE_STOPPED_FILE");
	assert_string_equal(gs_stopped_path(buf, sizeof(buf)), "/x/last-reclaim.stopped");
	unsetenv("GPUSLATE_STATE_FILE");
	if (geteuid() == 0)
		assert_string_equal(gs_stopped_path(buf, sizeof(buf)), "/run/gpuslate.stopped");
}

static void test_names(void **state)
{
	(void)state;
	assert_true(gs_stopped_name_ok("a-b_c.d@e:f\\x2d.service", 256));
	assert_false(gs_stopped_name_ok("", 256));
	assert_false(gs_stopped_name_ok("-x", 256));
	assert_false(gs_stopped_name_ok("a/b", 256));
	assert_false(gs_stopped_name_ok("a b", 256));
	assert_false(gs_stopped_name_ok("a\nb", 256));
	assert_false(gs_stopped_name_ok("abcd", 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_refused),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_save_load),
		cmocka_unit_test(test_load_refused),
		cmocka_unit_test(test_user_units),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
