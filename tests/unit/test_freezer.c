/* The cgroup freezer: which cgroup freezes a process, from /proc/PID/cgroup
 * and the freezer files, on fixture trees (a proc and a sys directory made
 * here) for cgroup v2 (pure and hybrid layouts) and the v1 freezer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/freezer.h"
#include "util/root.h"
#include "util/util.h"

static char base[256];

static void put(const char *rel, const char *text)
{
	char path[1024], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	/* mkdir -p of the parents */
	for (slash = strchr(path + strlen(base) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		(void)mkdir(path, 0755);
		*slash = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void open_root(struct gs_root *root)
{
	char proc[512], sys[512], dev[512];

	snprintf(proc, sizeof(proc), "%s/proc", base);
	snprintf(sys, sizeof(sys), "%s/sys", base);
	snprintf(dev, sizeof(dev), "%s/dev", base);
	(void)mkdir(proc, 0755);
	(void)mkdir(sys, 0755);
	(void)mkdir(dev, 0755);
	assert_int_equal(gs_root_open(root, &(struct gs_root_paths){ .proc = proc, .sys = sys, .dev = dev }), 0);
}

static void test_parse(void **state)
{
	char v2[256], v1[256];

	(void)state;
	assert_int_equal(gs_freezer_parse_cgroup("0::/docker/abc\n", v2, sizeof(v2), v1, sizeof(v1)), 0);
	assert_string_equal(v2, "/docker/abc");
	assert_string_equal(v1, "");
	assert_int_equal(gs_freezer_parse_cgroup("12:pids:/x\n6:freezer:/docker/abc\n1:name=systemd:/y\n0::/z\n", v2,
						 sizeof(v2), v1, sizeof(v1)), 0);
	assert_string_equal(v1, "/docker/abc");
	assert_string_equal(v2, "/z");
	/* Co-mounted controllers; a name= hierarchy called "freezer" is not it. */
	assert_int_equal(gs_freezer_parse_cgroup("3:cpu,freezer:/a\n", v2, sizeof(v2), v1, sizeof(v1)), 0);
	assert_string_equal(v1, "/a");
	assert_int_equal(gs_freezer_parse_cgroup("3:name=freezer:/a\n", v2, sizeof(v2), v1, sizeof(v1)), -EINVAL);
	/* Outside our cgroup namespace, or not a path: unusable. */
	assert_int_equal(gs_freezer_parse_cgroup("0::/../../x\n", v2, sizeof(v2), v1, sizeof(v1)), -EINVAL);
	assert_int_equal(gs_freezer_parse_cgroup("0::/a/..\n", v2, sizeof(v2), v1, sizeof(v1)), -EINVAL);
	assert_int_equal(gs_freezer_parse_cgroup("0::rel\n", v2, sizeof(v2), v1, sizeof(v1)), -EINVAL);
	assert_int_equal(gs_freezer_parse_cgroup("0::/a..b\n", v2, sizeof(v2), v1, sizeof(v1)), 0);
	assert_string_equal(v2, "/a..b");
	assert_int_equal(gs_freezer_parse_cgroup("", v2, sizeof(v2), v1, sizeof(v1)), -EINVAL);
	assert_int_equal(gs_freezer_parse_cgroup("garbage", v2, sizeof(v2), v1, sizeof(v1)), -EINVAL);
	assert_int_equal(gs_freezer_parse_cgroup(NULL, v2, sizeof(v2), v1, sizeof(v1)), -EINVAL);
	/* Too long for the buffer: left out rather than cut. */
	assert_int_equal(gs_freezer_parse_cgroup("0::/0123456789\n", v2, 8, v1, sizeof(v1)), -EINVAL);
}

/* Hybrid host (v1 controllers, v2 in unified/): frozen by a parent's
 * cgroup.freeze, which the innermost setter names. */
static void test_v2_parent_frozen(void **state)
{
	struct gs_root root;
	struct gs_frozen fz;

	(void)state;
	put("proc/100/cgroup", "6:freezer:/\n0::/slice/ct/job\n");
	put("proc/101/cgroup", "6:freezer:/\n0::/slice/other\n");
	put("sys/fs/cgroup/unified/cgroup.controllers", "");
	put("sys/fs/cgroup/unified/slice/cgroup.freeze", "0\n");
	put("sys/fs/cgroup/unified/slice/ct/cgroup.freeze", "1\n");
	put("sys/fs/cgroup/unified/slice/ct/job/cgroup.freeze", "0\n");
	put("sys/fs/cgroup/unified/slice/other/cgroup.freeze", "0\n");
	open_root(&root);
	assert_int_equal(gs_freezer_check(&root, 100, &fz), 0);
	assert_int_equal(fz.kind, GS_FREEZER_V2);
	assert_string_equal(fz.cgroup, "/slice/ct");
	assert_true(gs_endswith(fz.control, "/sys/fs/cgroup/unified/slice/ct/cgroup.freeze"));
	assert_string_equal(gs_freezer_str(fz.kind), "cgroup v2");
	assert_int_equal(gs_freezer_check(&root, 101, &fz), 0);
	assert_int_equal(fz.kind, GS_FREEZER_NONE);
	/* No such process. */
	assert_int_equal(gs_freezer_check(&root, 102, &fz), -ESRCH);
	gs_root_close(&root);
}

/* The v1 freezer: FROZEN or FREEZING; the cgroup that asked is the one
 * with freezer.self_freezing 1. It wins over v2 (SIGKILL waits there). */
static void test_v1(void **state)
{
	struct gs_root root;
	struct gs_frozen fz;

	(void)state;
	put("proc/200/cgroup", "6:freezer:/docker/abc/inner\n0::/\n");
	put("proc/201/cgroup", "6:freezer:/docker/def\n0::/\n");
	put("proc/202/cgroup", "6:freezer:/thawed\n0::/\n");
	put("sys/fs/cgroup/freezer/docker/abc/freezer.state", "FROZEN\n");
	put("sys/fs/cgroup/freezer/docker/abc/freezer.self_freezing", "1\n");
	put("sys/fs/cgroup/freezer/docker/abc/inner/freezer.state", "FROZEN\n");
	put("sys/fs/cgroup/freezer/docker/abc/inner/freezer.self_freezing", "0\n");
	put("sys/fs/cgroup/freezer/docker/def/freezer.state", "FREEZING\n");
	put("sys/fs/cgroup/freezer/docker/def/freezer.self_freezing", "1\n");
	put("sys/fs/cgroup/freezer/thawed/freezer.state", "THAWED\n");
	open_root(&root);
	assert_int_equal(gs_freezer_check(&root, 200, &fz), 0);
	assert_int_equal(fz.kind, GS_FREEZER_V1);
	assert_string_equal(fz.cgroup, "/docker/abc");
	assert_true(gs_endswith(fz.control, "/sys/fs/cgroup/freezer/docker/abc/freezer.state"));
	assert_int_equal(gs_freezer_check(&root, 201, &fz), 0);
	assert_int_equal(fz.kind, GS_FREEZER_V1);
	assert_string_equal(fz.cgroup, "/docker/def");
	assert_int_equal(gs_freezer_check(&root, 202, &fz), 0);
	assert_int_equal(fz.kind, GS_FREEZER_NONE);
	gs_root_close(&root);
}

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/gs-test-freezer.XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_v2_parent_frozen),
		cmocka_unit_test(test_v1),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
