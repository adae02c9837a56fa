/* KFD: topology node properties (real captures), gpu_id to card mapping
 * (render minor, PCI address, partitions), and the per-process VRAM files
 * of a sys root built here. Sources in docs/amd-intel.md. */
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

#include "gpu/kfd.h"
#include "util/util.h"

/* A Raven Ridge APU node on a 2019 kernel, from ROCm/amdgpu#66: the node has
 * CPU cores and SIMDs, no "domain" line yet, render minor 129. */
static const char raven_apu[] =
	"cpu_cores_count 8\n"
	"simd_count 44\n"
	"mem_banks_count 1\n"
	"caches_count 13\n"
	"io_links_count 1\n"
	"cpu_core_id_base 0\n"
	"simd_id_base 0\n"
	"max_waves_per_simd 40\n"
	"lds_size_in_kb 64\n"
	"gds_size_in_kb 0\n"
	"wave_front_size 64\n"
	"array_count 1\n"
	"simd_arrays_per_engine 1\n"
	"cu_per_simd_array 11\n"
	"simd_per_cu 4\n"
	"max_slots_scratch_cu 32\n"
	"vendor_id 4098\n"
	"device_id 5597\n"
	"location_id 2560\n"
	"drm_render_minor 129\n"
	"max_engine_clk_fcompute 1250\n"
	"local_mem_size 0\n"
	"fw_version 363\n"
	"capability 8834\n"
	"max_engine_clk_ccompute 3600\n";

/* The dGPU of the same report, which KFD failed to set up: no vendor, no
 * location, no render node. It must never be attributed to a card. */
static const char fiji_failed[] =
	"cpu_cores_count 0\n"
	"simd_count 256\n"
	"vendor_id 0\n"
	"device_id 0\n"
	"location_id 0\n"
	"drm_render_minor 0\n";

/* An MI300X node as kfd_topology.c prints it (names and decimal values of
 * node_show; location_id 49408 = bus 0xc1, 00.0; unique_id as in
 * rocm_smi_lib#165's "Uuid: GPU-1f9de0957d137942"). Constructed. */
static const char mi300x[] =
	"cpu_cores_count 0\n"
	"simd_count 1216\n"
	"gfx_target_version 90402\n"
	"vendor_id 4098\n"
	"device_id 29857\n"
	"location_id 49408\n"
	"domain 0\n"
	"drm_render_minor 128\n"
	"hive_id 7393238713914476837\n"
	"num_xcc 8\n"
	"unique_id 2278223919172516162\n";

static void test_parse_real_apu_node(void **state)
{
	struct gs_kfd_node n;
	struct gs_pci_addr pci;
	char buf[GS_PCI_ADDR_LEN];

	(void)state;
	assert_int_equal(gs_kfd_parse_properties(raven_apu, &n), 0);
	assert_int_equal(n.vendor_id, 0x1002);
	assert_int_equal(n.device_id, 5597);
	assert_int_equal(n.simd_count, 44);
	assert_true(n.render_minor_known);
	assert_int_equal(n.render_minor, 129);
	/* Kernels of 2019 print no domain: the location alone is not enough. */
	assert_false(n.location_known);
	assert_int_equal(gs_kfd_node_pci(&n, &pci), -ENOENT);

	assert_int_equal(gs_kfd_parse_properties(mi300x, &n), 0);
	assert_true(n.location_known);
	assert_int_equal(gs_kfd_node_pci(&n, &pci), 0);
	gs_pci_addr_format(&pci, buf);
	assert_string_equal(buf, "0000:c1:00.0");
	assert_int_equal(n.unique_id, 0x1f9de0957d137942ULL);
	assert_int_equal(n.gpu_id, 0);
}

static void test_parse_refuses(void **state)
{
	struct gs_kfd_node n;

	(void)state;
	assert_int_equal(gs_kfd_parse_properties("", &n), -EBADMSG);
	assert_int_equal(gs_kfd_parse_properties("garbage\nmore garbage\n", &n), -EBADMSG);
	assert_int_equal(gs_kfd_parse_properties(NULL, &n), -EINVAL);
	/* A value that is not a decimal leaves that fact unknown. */
	assert_int_equal(gs_kfd_parse_properties("location_id 0xc100\ndomain 0\n"
						 "drm_render_minor -1\nsimd_count 4\n", &n), 0);
	assert_false(n.location_known);
	assert_false(n.render_minor_known);
	assert_int_equal(gs_kfd_parse_properties("location_id 49408\ndomain 4294967296\n", &n), 0);
	assert_false(n.location_known);
	/* location_id wider than 16 bits is no PCI bus/devfn. */
	assert_int_equal(gs_kfd_parse_properties("location_id 65536\ndomain 0\n", &n), 0);
	assert_true(n.location_known);
	{
		struct gs_pci_addr pci;

		assert_int_equal(gs_kfd_node_pci(&n, &pci), -ENOENT);
	}
}

static struct gs_kfd_card card(const char *pci, long render_minor)
{
	struct gs_kfd_card c = { 0 };

	assert_int_equal(gs_pci_addr_parse(pci, &c.pci), 0);
	c.render_minor_known = render_minor >= 0;
	c.render_minor = render_minor >= 0 ? (uint32_t)render_minor : 0;
	return c;
}

static struct gs_kfd_node node(unsigned location, unsigned domain, long render_minor)
{
	struct gs_kfd_node n = { 0 };

	n.location_known = true;
	n.location_id = location;
	n.domain = domain;
	n.render_minor_known = render_minor >= 0;
	n.render_minor = render_minor >= 0 ? (uint32_t)render_minor : 0;
	n.gpu_id = 1;
	return n;
}

static void test_node_to_card(void **state)
{
	struct gs_kfd_card cards[] = {
		card("0000:05:00.0", 128),
		card("0000:c1:00.0", 129),
		card("0001:c1:00.0", 130),
		card("0000:83:00.0", -1),
	};
	struct gs_kfd_node n;
	size_t nc = GS_ARRAY_SIZE(cards);

	(void)state;
	/* The render minor decides, whatever the location says. */
	n = node(0xc100, 0, 128);
	assert_int_equal(gs_kfd_node_card(&n, cards, nc), 0);
	/* No render minor: the exact PCI address, domain included. */
	n = node(0xc100, 1, -1);
	assert_int_equal(gs_kfd_node_card(&n, cards, nc), 2);
	n = node(0x8300, 0, 0);
	assert_int_equal(gs_kfd_node_card(&n, cards, nc), 3);
	/* An MI300X in CPX mode: 8 nodes, node id ORed into location_id,
	 * render nodes of their own (the partitions' platform devices). */
	for (unsigned k = 1; k < 8; k++) {
		n = node(0xc100 | k, 0, 200 + k);
		assert_int_equal(gs_kfd_node_card(&n, cards, nc), 1);
	}
	/* Nothing fits: not attributed. */
	n = node(0x4200, 0, 250);
	assert_int_equal(gs_kfd_node_card(&n, cards, nc), -ENOENT);
	assert_int_equal(gs_kfd_node_card(&n, cards, 0), -ENOENT);
}

/* Two functions of one device both function 0 is impossible, but two cards
 * at bus:dev with function 1 and 2 leave a partition node ambiguous. */
static void test_partition_needs_function_zero(void **state)
{
	struct gs_kfd_card cards[] = { card("0000:c1:00.1", -1), card("0000:c1:00.2", -1) };
	struct gs_kfd_node n = node(0xc103, 0, -1);

	(void)state;
	assert_int_equal(gs_kfd_node_card(&n, cards, 2), -ENOENT);
}

static void test_failed_node_never_mapped(void **state)
{
	struct gs_kfd_card cards[] = { card("0000:00:00.0", 0), card("0000:0a:00.0", 129) };
	struct gs_kfd_node n;

	(void)state;
	assert_int_equal(gs_kfd_parse_properties(fiji_failed, &n), 0);
	/* render minor 0 is "none", and there is no domain line. */
	assert_int_equal(gs_kfd_node_card(&n, cards, 2), -ENOENT);
}

/* ---- readers over a sys root ---------------------------------------------- */

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256], cmd[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "we");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int open_root(void)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/gs-test-kfd-XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

#define TOPO "class/kfd/kfd/topology/nodes/"
#define PROC "class/kfd/kfd/proc/"

static void test_topology_load(void **state)
{
	_cleanup_free_ struct gs_kfd_node *nodes = NULL;
	_cleanup_close_ int fd = -1;
	size_t n = 0;

	(void)state;
	fd = open_root();
	/* No KFD at all. */
	assert_int_equal(gs_kfd_topology_load(fd, &nodes, &n), -ENOENT);
	assert_int_equal(gs_kfd_topology_load(-1, &nodes, &n), -ENOENT);

	put(TOPO "0/gpu_id", "0\n");
	put(TOPO "0/properties", "cpu_cores_count 192\nsimd_count 0\n");
	put(TOPO "2/gpu_id", "13290\n");
	put(TOPO "2/properties", mi300x);
	put(TOPO "10/gpu_id", "50599\n");
	put(TOPO "10/properties", "simd_count 4\nlocation_id 33536\ndomain 0\ndrm_render_minor 129\n");
	/* Not nodes: ignored. */
	put(TOPO "01/gpu_id", "1\n");
	put(TOPO "x/gpu_id", "1\n");
	assert_int_equal(gs_kfd_topology_load(fd, &nodes, &n), 0);
	assert_int_equal(n, 2);
	/* Sorted by id, numerically. */
	assert_int_equal(nodes[0].id, 2);
	assert_int_equal(nodes[0].gpu_id, 13290);
	assert_int_equal(nodes[0].render_minor, 128);
	assert_int_equal(nodes[1].id, 10);
	assert_int_equal(nodes[1].gpu_id, 50599);
	free(nodes);
	nodes = NULL;

	/* A GPU node with a broken gpu_id is an error, not silence. */
	put(TOPO "3/gpu_id", "twelve\n");
	put(TOPO "3/properties", mi300x);
	assert_int_equal(gs_kfd_topology_load(fd, &nodes, &n), -EINVAL);
}

static void test_proc_list_and_vram(void **state)
{
	_cleanup_free_ struct gs_kfd_vram *v = NULL;
	_cleanup_free_ pid_t *pids = NULL;
	_cleanup_close_ int fd = -1;
	size_t n = 0;

	(void)state;
	fd = open_root();
	assert_int_equal(gs_kfd_proc_list(fd, &pids, &n), -ENOENT);
	/* The figure of ROC-smi#60's "rocm-smi --showpids" (VRAM USED of a
	 * pt_main_thread on GPU 1), as KFD prints it: bytes, decimal. */
	put(PROC "1168514/pasid", "32771\n");
	put(PROC "1168514/vram_13290", "177386942464\n");
	put(PROC "1168514/sdma_13290", "0\n");
	put(PROC "3722222/vram_13290", "0\n");
	put(PROC "3722222/vram_50599", "1048576\n");
	put(PROC "999/vram_13290", "oops\n");
	put(PROC "notapid/vram_1", "1\n");
	assert_int_equal(gs_kfd_proc_list(fd, &pids, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(pids[0], 999);
	assert_int_equal(pids[1], 1168514);
	assert_int_equal(pids[2], 3722222);

	assert_int_equal(gs_kfd_proc_vram(fd, 1168514, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0].gpu_id, 13290);
	assert_true(v[0].known);
	assert_int_equal(v[0].bytes, 177386942464ULL);
	free(v);
	v = NULL;

	assert_int_equal(gs_kfd_proc_vram(fd, 3722222, &v, &n), 0);
	assert_int_equal(n, 2);
	free(v);
	v = NULL;

	/* Unreadable or garbled: present, figure unknown (never 0). */
	assert_int_equal(gs_kfd_proc_vram(fd, 999, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_false(v[0].known);
	free(v);
	v = NULL;

	assert_int_equal(gs_kfd_proc_vram(fd, 4242, &v, &n), -ENOENT);
	assert_int_equal(gs_kfd_proc_vram(fd, 0, &v, &n), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_real_apu_node),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_node_to_card),
		cmocka_unit_test(test_partition_needs_function_zero),
		cmocka_unit_test(test_failed_node_never_mapped),
		cmocka_unit_test_setup_teardown(test_topology_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proc_list_and_vram, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
