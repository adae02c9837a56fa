/* The NVML-free GPU list from /proc/driver/nvidia look-alike trees. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "util/root.h"
#include "util/util.h"

/* As nv-procfs.c prints it: "Key:" then tabs/spaces, values with colons. */
static const char info_h200[] =
	"Model: \t\t NVIDIA H200\n"
	"IRQ:   \t\t 45\n"
	"GPU UUID: \t GPU-bad0ed85-f3f5-31e6-d053-4c3b26d90bcf\n"
	"Video BIOS: \t 96.00.af.00.01\n"
	"Bus Type: \t PCIe\n"
	"DMA Size: \t 52 bits\n"
	"DMA Mask: \t 0xfffffffffffff\n"
	"Bus Location: \t 0000:00:06.0\n"
	"Device Minor: \t 0\n"
	"GPU Firmware: \t 580.159.04\n"
	"GPU Excluded:\t No\n";

static void test_parse_realistic(void **state)
{
	struct gs_gpu g;

	(void)state;
	memset(&g, 0x55, sizeof(g));
	assert_int_equal(gs_procfs_nvidia_parse_information(info_h200, &g), 0);
	assert_int_equal(g.index, 0);
	assert_int_equal(g.minor, 0);
	assert_string_equal(g.name, "NVIDIA H200");
	assert_string_equal(g.uuid, "GPU-bad0ed85-f3f5-31e6-d053-4c3b26d90bcf");
	/* NVML's form, so both backends' ids compare equal. */
	assert_string_equal(g.pci_bus_id, "00000000:00:06.0");
	assert_false(g.mem_known);
	assert_int_equal(g.mem_total, 0);
}

static void test_parse_variants(void **state)
{
	struct gs_gpu g;

	(void)state;
	/* Spaces instead of tabs, CRLF, no UUID (cache not valid), hex bus. */
	assert_int_equal(gs_procfs_nvidia_parse_information("Model:   Tesla V100-SXM2-16GB  \r\n"
							    "Bus Location:  0001:b3:1f.7\r\n"
							    "Device Minor:\t\t12\r\n", &g), 0);
	assert_string_equal(g.name, "Tesla V100-SXM2-16GB");
	assert_string_equal(g.uuid, "");
	assert_string_equal(g.pci_bus_id, "00000001:B3:1F.7");
	assert_int_equal(g.minor, 12);

	/* The minor is the join key: without it, or out of range, no GPU. */
	assert_int_equal(gs_procfs_nvidia_parse_information("Model: X\n", &g), -EBADMSG);
	assert_int_equal(gs_procfs_nvidia_parse_information("Device Minor: 248\n", &g), -EBADMSG);
	assert_int_equal(gs_procfs_nvidia_parse_information("Device Minor: -1\n", &g), -EBADMSG);
	assert_int_equal(gs_procfs_nvidia_parse_information("Device Minor: 1x\n", &g), -EBADMSG);
	assert_int_equal(gs_procfs_nvidia_parse_information("Device Minor: 1\nBus Location: nope\n", &g),
			 -EBADMSG);
	assert_int_equal(gs_procfs_nvidia_parse_information("", &g), -EBADMSG);
	assert_int_equal(gs_procfs_nvidia_parse_information(NULL, &g), -EINVAL);
	/* Unknown keys and lines without ':' are ignored. */
	assert_int_equal(gs_procfs_nvidia_parse_information("garbage\nFoo: bar\nDevice Minor: 247\n", &g), 0);
	assert_int_equal(g.minor, 247);
}

struct tree {
	char dir[64];
};

static void put(const char *dir, const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void mkdirf(const char *dir, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "/tmp/gs-test-procfs-XXXXXX");
	if (!mkdtemp(t->dir))
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	if (system(cmd) != 0)
		return -1;
	free(t);
	return 0;
}

static int open_tree(const struct tree *t, struct gs_root *root, struct gs_gpu_backend **b)
{
	struct gs_root_paths paths = { .nvidia_procfs = t->dir };

	assert_int_equal(gs_root_open(root, &paths), 0);
	return gs_procfs_nvidia_open(root, b);
}

static void test_open_sorted(void **state)
{
	struct tree *t = *state;
	struct gs_gpu_backend *b = NULL;
	struct gs_root root;
	struct gs_gpu g;
	struct gs_gpu_mem m;
	struct gs_gpu_proc *p = (struct gs_gpu_proc *)&m; /* must be reset */
	size_t n = 7;
	unsigned count;

	put(t->dir, "version",
	    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Nov 11 00:00:00 UTC 2026\n"
	    "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n");
	mkdirf(t->dir, "gpus");
	/* readdir order is arbitrary: bus 0x41 first here, index must sort. */
	mkdirf(t->dir, "gpus/0000:41:00.0");
	put(t->dir, "gpus/0000:41:00.0/information",
	    "Model: \t\t NVIDIA H200\nGPU UUID: \t GPU-1\nBus Location: \t 0000:41:00.0\nDevice Minor: \t 1\n");
	mkdirf(t->dir, "gpus/0000:06:00.0");
	put(t->dir, "gpus/0000:06:00.0/information",
	    "Model: \t\t NVIDIA H200\nGPU UUID: \t GPU-0\nBus Location: \t 0000:06:00.0\nDevice Minor: \t 0\n");
	/* No Bus Location line: the directory name stands in. */
	mkdirf(t->dir, "gpus/0000:0a:00.0");
	put(t->dir, "gpus/0000:0a:00.0/information", "Model: \t\t NVIDIA H100\nDevice Minor: \t 5\n");
	/* A broken entry loses that GPU only. */
	mkdirf(t->dir, "gpus/0000:99:00.0");
	put(t->dir, "gpus/0000:99:00.0/information", "Model: \t\t half written\n");
	mkdirf(t->dir, "gpus/0000:98:00.0"); /* no information file at all */

	assert_int_equal(open_tree(t, &root, &b), 0);
	assert_non_null(b);
	assert_string_equal(b->ops->name, "procfs");
	assert_string_equal(b->driver_version, "580.159.04");
	assert_int_equal(b->ops->count(b, &count), 0);
	assert_int_equal(count, 3);

	assert_int_equal(b->ops->info(b, 0, &g), 0);
	assert_int_equal(g.index, 0);
	assert_int_equal(g.minor, 0);
	assert_string_equal(g.uuid, "GPU-0");
	assert_string_equal(g.pci_bus_id, "00000000:06:00.0");
	assert_int_equal(b->ops->info(b, 1, &g), 0);
	assert_int_equal(g.index, 1);
	assert_int_equal(g.minor, 5);
	assert_string_equal(g.name, "NVIDIA H100");
	assert_string_equal(g.pci_bus_id, "00000000:0A:00.0");
	assert_int_equal(b->ops->info(b, 2, &g), 0);
	assert_int_equal(g.index, 2);
	assert_int_equal(g.minor, 1);
	assert_false(g.mem_known);
	assert_int_equal(b->ops->info(b, 3, &g), -EINVAL);

	assert_int_equal(b->ops->memory(b, 0, &m), -EOPNOTSUPP);
	assert_int_equal(b->ops->processes(b, 0, &p, &n), 0);
	assert_null(p);
	assert_int_equal(n, 0);

	gs_gpu_backend_close(b);
	gs_root_close(&root);
}

static void test_open_open_module_version(void **state)
{
	struct tree *t = *state;
	struct gs_gpu_backend *b = NULL;
	struct gs_root root;

	put(t->dir, "version",
	    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  595.45.04  Release Build  (dvs-builder@U22)\n");
	mkdirf(t->dir, "gpus");
	mkdirf(t->dir, "gpus/0000:00:06.0");
	put(t->dir, "gpus/0000:00:06.0/information", info_h200);
	assert_int_equal(open_tree(t, &root, &b), 0);
	assert_string_equal(b->driver_version, "595.45.04");
	gs_gpu_backend_close(b);
	gs_root_close(&root);
}

static void test_open_missing(void **state)
{
	struct tree *t = *state;
	struct gs_gpu_backend *b = NULL;
	struct gs_root root = { .drv_fd = -1 };
	char path[128];

	/* No driver directory at all. */
	assert_int_equal(gs_procfs_nvidia_open(&root, &b), -ENOENT);

	/* Driver directory without gpus/. */
	assert_int_equal(open_tree(t, &root, &b), -ENOENT);
	gs_root_close(&root);

	/* gpus/ with nothing usable; no version file is fine. */
	mkdirf(t->dir, "gpus");
	assert_int_equal(open_tree(t, &root, &b), -ENODEV);
	gs_root_close(&root);
	assert_null(b);

	snprintf(path, sizeof(path), "%s/gpus/0000:00:06.0", t->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	put(t->dir, "gpus/0000:00:06.0/information", info_h200);
	assert_int_equal(open_tree(t, &root, &b), 0);
	assert_string_equal(b->driver_version, "");
	gs_gpu_backend_close(b);
	gs_root_close(&root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_realistic),
		cmocka_unit_test(test_parse_variants),
		cmocka_unit_test_setup_teardown(test_open_sorted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_open_module_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_missing, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
