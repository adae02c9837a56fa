/* Device-node identities: /proc/devices parsing, loading a dev root of plain
 * files (and real char nodes when mknod is allowed), classification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proc/devset.h"
#include "util/root.h"
#include "util/util.h"

static char tmpdir[256];

static void touch(const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
}

static void stat_in(const char *name, struct stat *st)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	assert_int_equal(stat(path, st), 0);
}

static void rm_tree(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	assert_int_equal(system(cmd), 0);
}

static void test_parse_proc_devices(void **state)
{
	struct gs_devset ds = { 0 };
	const char *text =
		"Character devices:\n"
		"  1 mem\n"
		"195 nvidia-frontend\n"
		"238 nvidia-uvm\n"
		"240 nvidia-caps-imex-channels\n"
		"241 nvidia-caps\n"
		"242 nvidia-nvswitch\n"
		"abc nvidia\n"
		" -5 nvidia-uvm\n"
		"99999 nvidia-caps\n"
		"\n"
		"Block devices:\n"
		"  8 sd\n"
		"200 nvidia\n"
		"250 nvidia-uvm\n";

	(void)state;
	assert_int_equal(gs_devset_parse_proc_devices(text, &ds), 0);
	assert_int_equal(ds.nvidia_major, 195);
	assert_int_equal(ds.uvm_major, 238);
	assert_int_equal(ds.caps_major, 241);

	/* Older drivers register "nvidia"; majors may move. */
	assert_int_equal(gs_devset_parse_proc_devices("Character devices:\n 203 nvidia\n", &ds), 0);
	assert_int_equal(ds.nvidia_major, 203);
	assert_int_equal(ds.uvm_major, 0);
	assert_int_equal(ds.caps_major, 0);

	/* Nothing loaded: the fixed default major. */
	assert_int_equal(gs_devset_parse_proc_devices("", &ds), 0);
	assert_int_equal(ds.nvidia_major, 195);
	assert_int_equal(gs_devset_parse_proc_devices("Character devices:\n1 mem", &ds), 0);
	assert_int_equal(ds.nvidia_major, 195);
	assert_int_equal(gs_devset_parse_proc_devices(NULL, &ds), -EINVAL);
}

/* KFD's major is dynamic: register_chrdev(0, "kfd") in kfd_chardev.c. */
static void test_char_major_by_name(void **state)
{
	const char *text =
		"Character devices:\n"
		"  1 mem\n"
		"195 nvidia-frontend\n"
		"226 drm\n"
		"243 media\n"
		"244 mei\n"
		"245 kfd\n"
		"261 accel\n"
		"\n"
		"Block devices:\n"
		"  7 loop\n"
		"250 kfdx\n"
		"259 blkext\n";
	unsigned major = 0;

	(void)state;
	assert_int_equal(gs_devset_char_major(text, "kfd", &major), 0);
	assert_int_equal(major, 245);
	assert_int_equal(gs_devset_char_major(text, "drm", &major), 0);
	assert_int_equal(major, 226);
	/* Exact names, character section only. */
	assert_int_equal(gs_devset_char_major(text, "kfdx", &major), -ENOENT);
	assert_int_equal(gs_devset_char_major(text, "loop", &major), -ENOENT);
	assert_int_equal(gs_devset_char_major(text, "kf", &major), -ENOENT);
	assert_int_equal(gs_devset_char_major("", "kfd", &major), -ENOENT);
	assert_int_equal(gs_devset_char_major(NULL, "kfd", &major), -EINVAL);
	assert_int_equal(major, 226);
}

static void test_classify_rdev(void **state)
{
	struct gs_devset ds = { .nvidia_major = 195, .uvm_major = 238, .caps_major = 241 };
	struct stat st = { .st_mode = S_IFCHR | 0666 };
	unsigned m = 999;

	(void)state;
	st.st_rdev = makedev(195, 0);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_GPU);
	assert_int_equal(m, 0);
	st.st_rdev = makedev(195, 247);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_GPU);
	assert_int_equal(m, 247);
	st.st_rdev = makedev(195, 250);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_NONE);
	st.st_rdev = makedev(195, 254);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_MODESET);
	st.st_rdev = makedev(195, 255);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_CTL);
	st.st_rdev = makedev(238, 1);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_UVM);
	st.st_rdev = makedev(241, 2);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_CAPS);
	st.st_rdev = makedev(1, 3);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_NONE);
	/* A regular file with a stray rdev is not a device. */
	st.st_mode = S_IFREG | 0644;
	st.st_rdev = makedev(195, 0);
	st.st_dev = 5;
	st.st_ino = 77;
	assert_int_equal(gs_devset_classify_stat(&ds, &st, NULL), GS_NODE_NONE);
	/* uvm not loaded: its old major means nothing. */
	ds.uvm_major = 0;
	st.st_mode = S_IFCHR;
	st.st_rdev = makedev(238, 0);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_NONE);
}

static void test_add_and_classify_ino(void **state)
{
	struct gs_devset ds = { .nvidia_major = 195 };
	struct stat st = { .st_mode = S_IFREG, .st_dev = makedev(0, 42), .st_ino = 1234 };
	unsigned m = 0;

	(void)state;
	assert_int_equal(gs_devset_add(&ds, makedev(0, 42), 1234, GS_NODE_NONE, 0), -EINVAL);
	assert_int_equal(gs_devset_add(&ds, makedev(0, 42), 1234, GS_NODE_GPU, 3), 0);
	/* The same identity again (hard link, second fd): first wins. */
	assert_int_equal(gs_devset_add(&ds, makedev(0, 42), 1234, GS_NODE_CTL, 0), 0);
	assert_int_equal(ds.n_ids, 1);
	for (unsigned i = 0; i < 40; i++)
		assert_int_equal(gs_devset_add(&ds, makedev(0, 42), 2000 + i, GS_NODE_UVM, 0), 0);
	assert_int_equal(ds.n_ids, 41);
	assert_int_equal(gs_devset_classify_ino(&ds, makedev(0, 42), 1234, &m), GS_NODE_GPU);
	assert_int_equal(m, 3);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_GPU);
	assert_int_equal(gs_devset_classify_ino(&ds, makedev(0, 42), 2039, NULL), GS_NODE_UVM);
	/* Same inode number on another filesystem: not ours. */
	assert_int_equal(gs_devset_classify_ino(&ds, makedev(0, 43), 1234, &m), GS_NODE_NONE);
	gs_devset_free(&ds);
	assert_null(ds.ids);
	gs_devset_free(&ds);
}

static void test_load_plain_files(void **state)
{
	static const struct {
		const char *name;
		enum gs_node_kind kind;
		unsigned minor;
	} want[] = {
		{ "nvidia0", GS_NODE_GPU, 0 },
		{ "nvidia1", GS_NODE_GPU, 1 },
		{ "nvidia12", GS_NODE_GPU, 12 },
		{ "nvidia247", GS_NODE_GPU, 247 },
		{ "nvidiactl", GS_NODE_CTL, 0 },
		{ "nvidia-modeset", GS_NODE_MODESET, 0 },
		{ "nvidia-uvm", GS_NODE_UVM, 0 },
		{ "nvidia-uvm-tools", GS_NODE_UVM, 0 },
		{ "nvidia-caps/nvidia-cap1", GS_NODE_CAPS, 0 },
		{ "nvidia-caps/nvidia-cap2", GS_NODE_CAPS, 0 },
		/* Not node names: never matched, whatever they contain. */
		{ "nvidia", GS_NODE_NONE, 0 },
		{ "nvidia007", GS_NODE_NONE, 0 },
		{ "nvidia248", GS_NODE_NONE, 0 },
		{ "nvidia-1", GS_NODE_NONE, 0 },
		{ "nvidiafoo", GS_NODE_NONE, 0 },
		{ "null", GS_NODE_NONE, 0 },
	};
	struct gs_root root;
	struct gs_devset ds;
	char path[512], path2[512];
	struct stat st;
	unsigned m;

	(void)state;
	snprintf(path, sizeof(path), "%s/nvidia-caps", tmpdir);
	assert_int_equal(mkdir(path, 0755), 0);
	for (size_t i = 0; i < GS_ARRAY_SIZE(want); i++)
		touch(want[i].name);
	/* A hard link under another name is the same node (bind mounts in
	 * containers look like this): matched by identity, not by name. */
	snprintf(path, sizeof(path), "%s/nvidia1", tmpdir);
	snprintf(path2, sizeof(path2), "%s/renamed-gpu", tmpdir);
	assert_int_equal(link(path, path2), 0);

	assert_int_equal(gs_root_open(&root, &(struct gs_root_paths){ .dev = tmpdir }), 0);
	assert_int_equal(gs_devset_load(&root, &ds), 0);
	assert_int_equal(ds.n_ids, 10);
	for (size_t i = 0; i < GS_ARRAY_SIZE(want); i++) {
		m = 999;
		stat_in(want[i].name, &st);
		assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), want[i].kind);
		if (want[i].kind == GS_NODE_GPU)
			assert_int_equal(m, want[i].minor);
	}
	stat_in("renamed-gpu", &st);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_GPU);
	assert_int_equal(m, 1);
	/* Same name elsewhere is another file. */
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_NONE);
	gs_devset_free(&ds);
	gs_root_close(&root);
}

static void test_load_empty_dev_root(void **state)
{
	struct gs_root root;
	struct gs_devset ds;

	(void)state;
	assert_int_equal(gs_root_open(&root, &(struct gs_root_paths){ .dev = tmpdir }), 0);
	assert_int_equal(gs_devset_load(&root, &ds), 0);
	assert_int_equal(ds.n_ids, 0);
	assert_true(ds.nvidia_major > 0);
	gs_devset_free(&ds);
	gs_root_close(&root);
}

/* Real char nodes (needs CAP_MKNOD): the rdev decides, not the name. */
static void test_load_char_nodes(void **state)
{
	struct gs_root root;
	struct gs_devset ds;
	char path[512];
	struct stat st;
	unsigned m = 999;

	(void)state;
	snprintf(path, sizeof(path), "%s/nvidia3", tmpdir);
	if (mknod(path, S_IFCHR | 0600, makedev(195, 3)) < 0) {
		skip();
		return;
	}
	/* Named like a GPU but it is /dev/null's number: never recorded. */
	snprintf(path, sizeof(path), "%s/nvidia5", tmpdir);
	assert_int_equal(mknod(path, S_IFCHR | 0600, makedev(1, 3)), 0);
	/* Named like a GPU, rdev says control device. */
	snprintf(path, sizeof(path), "%s/nvidia6", tmpdir);
	assert_int_equal(mknod(path, S_IFCHR | 0600, makedev(195, 255)), 0);

	assert_int_equal(gs_root_open(&root, &(struct gs_root_paths){ .dev = tmpdir }), 0);
	assert_int_equal(gs_devset_load(&root, &ds), 0);
	assert_int_equal(ds.n_ids, 2);
	stat_in("nvidia3", &st);
	assert_int_equal(gs_devset_classify_ino(&ds, st.st_dev, st.st_ino, &m), GS_NODE_GPU);
	assert_int_equal(m, 3);
	stat_in("nvidia5", &st);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_NONE);
	assert_int_equal(gs_devset_classify_ino(&ds, st.st_dev, st.st_ino, &m), GS_NODE_NONE);
	stat_in("nvidia6", &st);
	assert_int_equal(gs_devset_classify_ino(&ds, st.st_dev, st.st_ino, &m), GS_NODE_CTL);
	gs_devset_free(&ds);
	gs_root_close(&root);
}

/* AMD/Intel nodes: only the cards the DRM backend names are recorded (a
 * BMC's card0 stays unknown, so its Xorg is never a GPU holder), by
 * identity for plain files and by the sysfs rdev for char nodes; /dev/kfd
 * only once a DRM GPU exists. */
static void test_drm_nodes(void **state)
{
	struct gs_root root;
	struct gs_devset ds = { 0 };
	char path[512];
	struct stat st;
	unsigned m = 999;

	(void)state;
	snprintf(path, sizeof(path), "%s/dri", tmpdir);
	assert_int_equal(mkdir(path, 0755), 0);
	touch("dri/card0");
	touch("dri/card3");
	touch("dri/renderD130");
	touch("kfd");
	assert_int_equal(gs_root_open(&root, &(struct gs_root_paths){ .dev = tmpdir }), 0);
	assert_int_equal(gs_devset_parse_proc_devices("Character devices:\n226 drm\n237 kfd\n", &ds), 0);
	assert_int_equal(ds.kfd_major, 237);
	/* Before any DRM GPU: /dev/kfd's number is nobody's GPU. */
	st = (struct stat){ .st_mode = S_IFCHR | 0666, .st_rdev = makedev(237, 0) };
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_NONE);

	assert_int_equal(gs_devset_add_drm(&ds, root.dev_fd, 1, 3, makedev(226, 3), 130, makedev(226, 130)), 0);
	stat_in("dri/card3", &st);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_DRM);
	assert_int_equal(m, 1);
	stat_in("dri/renderD130", &st);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_DRM);
	assert_int_equal(m, 1);
	stat_in("kfd", &st);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, NULL), GS_NODE_KFD);
	stat_in("dri/card0", &st);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, NULL), GS_NODE_NONE);
	/* Real nodes by rdev: ours, the BMC's card0 (226:0) not. */
	st = (struct stat){ .st_mode = S_IFCHR | 0666, .st_rdev = makedev(226, 130) };
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_DRM);
	assert_int_equal(m, 1);
	st.st_rdev = makedev(226, 0);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_NONE);
	st.st_rdev = makedev(237, 0);
	assert_int_equal(gs_devset_classify_stat(&ds, &st, &m), GS_NODE_KFD);
	gs_devset_free(&ds);
	gs_root_close(&root);
}

static int setup(void **state)
{
	const char *base = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/gs-devset-XXXXXX", base && *base ? base : "/tmp");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	rm_tree();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_proc_devices),
		cmocka_unit_test(test_char_major_by_name),
		cmocka_unit_test(test_classify_rdev),
		cmocka_unit_test(test_add_and_classify_ino),
		cmocka_unit_test_setup_teardown(test_load_plain_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_empty_dev_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_char_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drm_nodes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
