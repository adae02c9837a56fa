/* DRM fdinfo: parsing real captures and the kernel's documented formats,
 * counting each client once, and reading fdinfo of real fds (with the test
 * fixture that stands for the drm- keys). Sources in docs/amd-intel.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/drm_fdinfo.h"
#include "proc/drm_fdwatch.h"
#include "util/util.h"

#define KiB 1024ULL
#define MiB (1024ULL * 1024ULL)

/* amdgpu on a 2024 kernel, from Umio-Yasuno/amdgpu_top#87: legacy
 * drm-memory-* keys only (no drm-total/-resident yet), pasid first. The
 * kernel separates with tabs; "drm-memory-gtt: \t" has a blank before it. */
static const char amdgpu_legacy[] =
	"pos:\t0\n"
	"flags:\t02104002\n"
	"mnt_id:\t24\n"
	"ino:\t614\n"
	"pasid:\t32784\n"
	"drm-driver:\tamdgpu\n"
	"drm-pdev:\t0000:08:00.0\n"
	"drm-client-id:\t217\n"
	"drm-memory-vram:\t2068 KiB\n"
	"drm-memory-gtt: \t8192 KiB\n"
	"drm-memory-cpu: \t0 KiB\n"
	"drm-engine-gfx:\t107322799 ns\n";

/* The same capture as pasted in the issue, tabs turned into spaces. */
static const char amdgpu_legacy_spaces[] =
	"pos:    0\n"
	"flags:  02104002\n"
	"mnt_id: 24\n"
	"ino:    614\n"
	"pasid:  32784\n"
	"drm-driver:     amdgpu\n"
	"drm-pdev:       0000:08:00.0\n"
	"drm-client-id:  217\n"
	"drm-memory-vram:        2068 KiB\n"
	"drm-memory-gtt:         8192 KiB\n"
	"drm-memory-cpu:         0 KiB\n"
	"drm-engine-gfx: 107322799 ns\n";

/* amdgpu since the standard keys (amdgpu_fdinfo.c at torvalds/linux
 * 11aaec35): drm_print_memory_stats for every placement (total, shared,
 * resident, purgeable; bytes, KiB or MiB, whichever loses nothing), then the
 * legacy aliases in KiB. Constructed from that source for an MI300X job with
 * 64 GiB of VRAM, not captured. */
static const char amdgpu_standard[] =
	"pos:\t0\n"
	"flags:\t02100002\n"
	"mnt_id:\t27\n"
	"ino:\t1092\n"
	"drm-driver:\tamdgpu\n"
	"drm-client-id:\t1377\n"
	"drm-pdev:\t0000:c1:00.0\n"
	"pasid:\t32771\n"
	"drm-total-vram:\t65536 MiB\n"
	"drm-shared-vram:\t0\n"
	"drm-resident-vram:\t65536 MiB\n"
	"drm-purgeable-vram:\t0\n"
	"drm-total-gtt:\t2052 KiB\n"
	"drm-shared-gtt:\t0\n"
	"drm-resident-gtt:\t2052 KiB\n"
	"drm-purgeable-gtt:\t0\n"
	"drm-total-cpu:\t0\n"
	"drm-shared-cpu:\t0\n"
	"drm-resident-cpu:\t0\n"
	"drm-purgeable-cpu:\t0\n"
	"drm-total-doorbell:\t8 KiB\n"
	"drm-resident-doorbell:\t8 KiB\n"
	"drm-memory-vram:\t67108864 KiB\n"
	"drm-memory-gtt: \t2052 KiB\n"
	"drm-memory-cpu: \t0 KiB\n"
	"amd-evicted-vram:\t0 KiB\n"
	"amd-requested-vram:\t67108864 KiB\n"
	"amd-requested-gtt:\t2052 KiB\n"
	"drm-engine-compute:\t2512309911 ns\n";

/* xe, the example in the kernel's documentation (xe_drm_client.c, DOC: DRM
 * Client usage stats, docs.kernel.org/gpu/xe/xe-drm-usage-stats.html). */
static const char xe_doc[] =
	"pos:    0\n"
	"flags:  0100002\n"
	"mnt_id: 26\n"
	"ino:    685\n"
	"drm-driver:     xe\n"
	"drm-client-id:  3\n"
	"drm-pdev:       0000:03:00.0\n"
	"drm-total-system:       0\n"
	"drm-shared-system:      0\n"
	"drm-active-system:      0\n"
	"drm-resident-system:    0\n"
	"drm-purgeable-system:   0\n"
	"drm-total-gtt:  192 KiB\n"
	"drm-shared-gtt: 0\n"
	"drm-active-gtt: 0\n"
	"drm-resident-gtt:       192 KiB\n"
	"drm-total-vram0:        23992 KiB\n"
	"drm-shared-vram0:       16 MiB\n"
	"drm-active-vram0:       0\n"
	"drm-resident-vram0:     23992 KiB\n"
	"drm-total-stolen:       0\n"
	"drm-shared-stolen:      0\n"
	"drm-active-stolen:      0\n"
	"drm-resident-stolen:    0\n"
	"drm-cycles-rcs: 28257900\n"
	"drm-total-cycles-rcs:   7655183225\n"
	"drm-cycles-bcs: 0\n"
	"drm-total-cycles-bcs:   7655183225\n"
	"drm-cycles-vcs: 0\n"
	"drm-total-cycles-vcs:   7655183225\n"
	"drm-engine-capacity-vcs:        2\n"
	"drm-cycles-vecs:        0\n"
	"drm-total-cycles-vecs:  7655183225\n"
	"drm-engine-capacity-vecs:       2\n"
	"drm-cycles-ccs: 0\n"
	"drm-total-cycles-ccs:   7655183225\n"
	"drm-engine-capacity-ccs:        4\n";

/* i915 on an integrated GPU, the example of the proc(5) patch on dri-devel
 * (patchwork 20241206073828.1119464-4-irogers@google.com): system memory
 * regions only, no VRAM. */
static const char i915_igpu[] =
	"pos: 0\n"
	"flags: 02100002\n"
	"mnt_id: 26\n"
	"ino: 284\n"
	"drm-driver: i915\n"
	"drm-client-id: 39\n"
	"drm-pdev: 0000:00:02.0\n"
	"drm-total-system0: 6044 KiB\n"
	"drm-shared-system0: 0\n"
	"drm-active-system0: 0\n"
	"drm-resident-system0: 6044 KiB\n"
	"drm-purgeable-system0: 1688 KiB\n"
	"drm-total-stolen-system0: 0\n"
	"drm-shared-stolen-system0: 0\n"
	"drm-active-stolen-system0: 0\n"
	"drm-resident-stolen-system0: 0\n"
	"drm-purgeable-stolen-system0: 0\n"
	"drm-engine-render: 346249 ns\n"
	"drm-engine-copy: 0 ns\n"
	"drm-engine-video: 0 ns\n"
	"drm-engine-capacity-video: 2\n"
	"drm-engine-video-enhance: 0 ns\n";

/* amdgpu of Linux 5.14-5.18 (the first amdgpu_fdinfo.c): keys with blanks,
 * no drm-driver; gpuslate reads no memory from it (KFD or sysfs instead). */
static const char amdgpu_5_14[] =
	"pos:\t0\n"
	"flags:\t02100002\n"
	"mnt_id:\t24\n"
	"pdev:\t0000:0a:00.0\n"
	"pasid:\t32770\n"
	"vram mem:\t63488 kB\n"
	"gtt mem:\t8976 kB\n"
	"cpu mem:\t0 kB\n"
	"gfx0:\t0.00%\n";

static const struct gs_drm_region *region(const struct gs_drm_fdinfo *fi, const char *name)
{
	for (size_t i = 0; i < fi->n_regions; i++)
		if (strcmp(fi->regions[i].name, name) == 0)
			return &fi->regions[i];
	return NULL;
}

static void assert_pdev(const struct gs_drm_fdinfo *fi, const char *want)
{
	char buf[GS_PCI_ADDR_LEN];

	assert_true(fi->pdev_known);
	gs_pci_addr_format(&fi->pdev, buf);
	assert_string_equal(buf, want);
}

static void test_amdgpu_legacy_capture(void **state)
{
	const char *texts[] = { amdgpu_legacy, amdgpu_legacy_spaces };

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(texts); i++) {
		struct gs_drm_fdinfo fi;
		const struct gs_drm_region *r;
		uint64_t vram;

		assert_int_equal(gs_drm_fdinfo_parse(texts[i], &fi), 0);
		assert_string_equal(fi.driver, "amdgpu");
		assert_pdev(&fi, "0000:08:00.0");
		assert_true(fi.client_id_known);
		assert_int_equal(fi.client_id, 217);
		assert_int_equal(fi.n_bad, 0);
		assert_int_equal(fi.n_regions, 3);
		r = region(&fi, "vram");
		assert_non_null(r);
		assert_true(r->resident_known && r->resident_legacy);
		assert_false(r->total_known);
		assert_int_equal(r->resident, 2068 * KiB);
		r = region(&fi, "gtt");
		assert_non_null(r);
		assert_int_equal(r->resident, 8192 * KiB);
		assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), 0);
		assert_int_equal(vram, 2068 * KiB);
	}
}

static void test_amdgpu_standard_and_alias(void **state)
{
	struct gs_drm_fdinfo fi;
	const struct gs_drm_region *r;
	uint64_t vram;

	(void)state;
	assert_int_equal(gs_drm_fdinfo_parse(amdgpu_standard, &fi), 0);
	assert_pdev(&fi, "0000:c1:00.0");
	assert_int_equal(fi.client_id, 1377);
	r = region(&fi, "vram");
	assert_non_null(r);
	/* The standard key wins over the alias that follows it; the alias
	 * carries the same figure, counted once. */
	assert_false(r->resident_legacy);
	assert_int_equal(r->resident, 65536 * MiB);
	assert_int_equal(r->total, 65536 * MiB);
	assert_non_null(region(&fi, "doorbell"));
	assert_null(region(&fi, "cycles-gfx"));
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), 0);
	assert_int_equal(vram, 64ULL << 30);
	assert_int_equal(fi.n_bad, 0);

	/* Alias first, standard key after: the standard key still wins. */
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver: amdgpu\n"
					     "drm-memory-vram: 1 KiB\n"
					     "drm-resident-vram: 3 KiB\n"
					     "drm-memory-vram: 2 KiB\n", &fi), 0);
	assert_int_equal(region(&fi, "vram")->resident, 3 * KiB);
}

/* The larger figure of Syllo/nvtop#492 (kernel 6.18, an APU whose model
 * lives in GTT): 25258000 KiB parse without loss and are not VRAM. */
static void test_amdgpu_apu_gtt(void **state)
{
	struct gs_drm_fdinfo fi;
	uint64_t vram;

	(void)state;
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver:\tamdgpu\n"
					     "drm-memory-cpu:         0 KiB\n"
					     "drm-memory-gtt:  25258000 KiB\n"
					     "drm-memory-vram:     5348 KiB\n", &fi), 0);
	assert_int_equal(region(&fi, "gtt")->resident, 25258000ULL * KiB);
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), 0);
	assert_int_equal(vram, 5348 * KiB);
	assert_false(fi.pdev_known);
	assert_false(fi.client_id_known);
}

static void test_xe_doc_example(void **state)
{
	struct gs_drm_fdinfo fi;
	const struct gs_drm_region *r;
	uint64_t vram;

	(void)state;
	assert_int_equal(gs_drm_fdinfo_parse(xe_doc, &fi), 0);
	assert_string_equal(fi.driver, "xe");
	assert_pdev(&fi, "0000:03:00.0");
	assert_int_equal(fi.client_id, 3);
	/* system, gtt, vram0, stolen: drm-total-cycles-* are engines. */
	assert_int_equal(fi.n_regions, 4);
	r = region(&fi, "vram0");
	assert_non_null(r);
	assert_int_equal(r->total, 23992 * KiB);
	assert_int_equal(r->resident, 23992 * KiB);
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), 0);
	assert_int_equal(vram, 23992 * KiB);
	assert_int_equal(fi.n_bad, 0);

	/* No key makes a "cycles-" region (found by fuzzing). */
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver: xe\ndrm-resident-cycles-rcs: 5\n"
					     "drm-memory-cycles-bcs: 1\n", &fi), 0);
	assert_int_equal(fi.n_regions, 0);
}

static void test_i915_igpu_has_no_vram(void **state)
{
	struct gs_drm_fdinfo fi;
	struct gs_drm_usage u = { 0 };
	struct gs_drm_totals t;
	uint64_t vram = 77;

	(void)state;
	assert_int_equal(gs_drm_fdinfo_parse(i915_igpu, &fi), 0);
	assert_string_equal(fi.driver, "i915");
	assert_non_null(region(&fi, "stolen-system0"));
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), -ENODATA);
	assert_int_equal(vram, 77);
	/* It still holds memory: system RAM buffers count as "holds". */
	assert_int_equal(gs_drm_usage_add(&u, &fi), 0);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_false(t.vram_known);
	assert_true(t.mem_known);
	assert_int_equal(t.mem, 6044 * KiB);
	gs_drm_usage_free(&u);
}

/* Linux 5.14-5.18: amdgpu's own text is read (device, PASID as the client,
 * "vram mem" in KiB as resident VRAM). */
static void test_amdgpu_5_14(void **state)
{
	struct gs_drm_fdinfo fi, fi2;
	uint64_t vram = 0;
	char pci[GS_PCI_ADDR_LEN];

	(void)state;
	assert_int_equal(gs_drm_fdinfo_parse(amdgpu_5_14, &fi), 0);
	assert_string_equal(fi.driver, "amdgpu");
	assert_true(fi.pdev_known);
	gs_pci_addr_format(&fi.pdev, pci);
	assert_string_equal(pci, "0000:0a:00.0");
	assert_true(fi.client_id_known);
	assert_int_equal(fi.client_id, 32770);
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), 0);
	assert_int_equal(vram, 63488 * KiB);
	assert_non_null(region(&fi, "gtt"));
	assert_int_equal(region(&fi, "gtt")->resident, 8976 * KiB);
	assert_int_equal(fi.n_bad, 0);
	/* Without its PASID or its device it is nobody's client. */
	assert_int_equal(gs_drm_fdinfo_parse("pdev:\t0000:0a:00.0\nvram mem:\t4 kB\n", &fi2), -ENODATA);
	assert_int_equal(gs_drm_fdinfo_parse("pasid:\t32770\nvram mem:\t4 kB\n", &fi2), -ENODATA);
	assert_int_equal(gs_drm_fdinfo_parse("pdev:\t0000:0a:00.0\npasid:\t32770\ngfx0:\t0.00%\n", &fi2), -ENODATA);
	/* A figure in another unit is no figure: the client, no VRAM. */
	assert_int_equal(gs_drm_fdinfo_parse("pdev:\t0000:0a:00.0\npasid:\t7\nvram mem:\t4 MB\n", &fi2), 0);
	assert_int_equal(fi2.n_bad, 1);
	assert_int_equal(gs_drm_fdinfo_vram(&fi2, &vram), -ENODATA);
	/* The common format's own keys win: old-style lines beside a
	 * drm-driver key are not read. */
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver:\tamdgpu\ndrm-client-id:\t5\nvram mem:\t4 kB\n", &fi2), 0);
	assert_int_equal(fi2.n_regions, 0);
	assert_int_equal(fi2.client_id, 5);
}

static void test_no_usage_stats(void **state)
{
	struct gs_drm_fdinfo fi;

	(void)state;
	/* A plain file's fdinfo, a DRM fd on a kernel before 5.19. */
	assert_int_equal(gs_drm_fdinfo_parse("pos:\t0\nflags:\t02\nmnt_id:\t26\nino:\t9\n", &fi), -ENODATA);
	assert_int_equal(gs_drm_fdinfo_parse("", &fi), -ENODATA);
	assert_int_equal(gs_drm_fdinfo_parse(NULL, &fi), -EINVAL);
	/* Client known, no memory keys: parses, no VRAM figure. */
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver:\tamdgpu\ndrm-client-id:\t5\n", &fi), 0);
	assert_int_equal(fi.n_regions, 0);
}

static void test_bad_values_are_unknown(void **state)
{
	struct gs_drm_fdinfo fi;
	uint64_t vram;

	(void)state;
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver: xe\r\n"
					     "drm-pdev: 0000:03:00\r\n"
					     "drm-client-id: -1\r\n"
					     "drm-resident-vram0: 12 kB\r\n"
					     "drm-resident-vram1: 3 GiB\r\n"
					     "drm-total-vram0: 18446744073709551615 KiB\r\n"
					     "drm-total-gtt: 12KiB\r\n"
					     "drm-resident-gtt: 0x10\r\n"
					     "drm-resident-: 1\r\n", &fi), 0);
	assert_string_equal(fi.driver, "xe");
	assert_false(fi.pdev_known);
	assert_false(fi.client_id_known);
	assert_int_equal(fi.n_bad, 8);
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), -ENODATA);

	/* Largest value that fits; CRLF; blanks around the value. */
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver:\txe\r\n"
					     "drm-resident-vram0:\t \t16777215 MiB \r\n", &fi), 0);
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), 0);
	assert_int_equal(vram, 16777215ULL * MiB);

	/* A driver name that is not a name is refused, not echoed. */
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver: a\033[2Jb\n", &fi), -ENODATA);
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver: \n", &fi), -ENODATA);
	assert_int_equal(gs_drm_fdinfo_parse("drm-driver: abcdefghijabcdefghijabcdefghijabc\n", &fi), -ENODATA);
}

static void test_region_names(void **state)
{
	(void)state;
	assert_true(gs_drm_region_is_vram("amdgpu", "vram"));
	assert_false(gs_drm_region_is_vram("amdgpu", "gtt"));
	assert_false(gs_drm_region_is_vram("amdgpu", "vram0"));
	assert_true(gs_drm_region_is_vram("xe", "vram0"));
	assert_true(gs_drm_region_is_vram("xe", "vram1"));
	assert_false(gs_drm_region_is_vram("xe", "vram"));
	assert_false(gs_drm_region_is_vram("xe", "stolen"));
	assert_true(gs_drm_region_is_vram("i915", "local0"));
	assert_false(gs_drm_region_is_vram("i915", "system0"));
	assert_false(gs_drm_region_is_vram("i915", "stolen-local0"));
	assert_false(gs_drm_region_is_vram("i915", "local"));
}

static struct gs_drm_fdinfo client(const char *driver, const char *pdev, long long id, uint64_t vram_kib)
{
	char text[256];
	struct gs_drm_fdinfo fi;
	int n;

	n = snprintf(text, sizeof(text), "drm-driver:\t%s\n", driver);
	if (pdev)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "drm-pdev:\t%s\n", pdev);
	if (id >= 0)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "drm-client-id:\t%lld\n", id);
	snprintf(text + n, sizeof(text) - (size_t)n, "drm-resident-%s:\t%llu KiB\n",
		 strcmp(driver, "xe") == 0 ? "vram0" : "vram", (unsigned long long)vram_kib);
	assert_int_equal(gs_drm_fdinfo_parse(text, &fi), 0);
	return fi;
}

/* Two fds of one client (a dup, or the fd a forked worker inherited) are one
 * client: its memory counts once. */
static void test_usage_shared_client_counted_once(void **state)
{
	struct gs_drm_usage u = { 0 };
	struct gs_drm_fdinfo a = client("amdgpu", "0000:c1:00.0", 42, 1024);
	struct gs_drm_fdinfo b = client("amdgpu", "0000:c1:00.0", 42, 2048);
	struct gs_drm_totals t;

	(void)state;
	assert_int_equal(gs_drm_usage_add(&u, &a), 0);
	assert_int_equal(gs_drm_usage_add(&u, &b), 0);
	assert_int_equal(u.n_clients, 1);
	assert_int_equal(u.n_fds, 2);
	assert_int_equal(u.clients[0].n_fds, 2);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_int_equal(t.n_clients, 1);
	assert_true(t.vram_known);
	/* Two reads of one client: the larger, not the sum. */
	assert_int_equal(t.vram, 2048 * KiB);
	gs_drm_usage_free(&u);
	assert_null(u.clients);
	assert_int_equal(u.n_clients, 0);
}

static void test_usage_distinct_clients(void **state)
{
	struct gs_drm_usage u = { 0 };
	struct gs_drm_fdinfo fis[] = {
		client("amdgpu", "0000:c1:00.0", 1, 100),
		client("amdgpu", "0000:c1:00.0", 2, 200),
		/* same id on another device: another client */
		client("amdgpu", "0000:c2:00.0", 1, 400),
		/* no drm-client-id: cannot be merged with anything */
		client("xe", "0000:83:00.0", -1, 800),
		client("xe", "0000:83:00.0", -1, 800),
		/* no drm-pdev: ids are global then, another client than pdev'd 1 */
		client("amdgpu", NULL, 1, 1600),
	};
	struct gs_pci_addr c1, c2, x;
	struct gs_drm_totals t;

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(fis); i++)
		assert_int_equal(gs_drm_usage_add(&u, &fis[i]), 0);
	assert_int_equal(gs_drm_usage_add(&u, NULL), 0);
	assert_int_equal(u.n_clients, 6);
	assert_int_equal(u.n_fds, 7);
	assert_int_equal(u.n_no_stats, 1);
	assert_int_equal(gs_pci_addr_parse("0000:c1:00.0", &c1), 0);
	assert_int_equal(gs_pci_addr_parse("0000:C2:00.0", &c2), 0);
	assert_int_equal(gs_pci_addr_parse("0000:83:00.0", &x), 0);
	gs_drm_usage_totals(&u, &c1, &t);
	assert_int_equal(t.n_clients, 2);
	assert_int_equal(t.vram, 300 * KiB);
	gs_drm_usage_totals(&u, &c2, &t);
	assert_int_equal(t.vram, 400 * KiB);
	gs_drm_usage_totals(&u, &x, &t);
	assert_int_equal(t.n_clients, 2);
	assert_int_equal(t.vram, 1600 * KiB);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_int_equal(t.vram, 3900 * KiB);
	gs_drm_usage_free(&u);
}

/* A host total from per-process counts: the parent and the forked worker
 * that inherited its fd both show client 9; the host counts it once. */
static void test_usage_merge_across_processes(void **state)
{
	struct gs_drm_usage parent = { 0 }, worker = { 0 }, host = { 0 };
	struct gs_drm_fdinfo fi = client("amdgpu", "0000:c1:00.0", 9, 4096);
	struct gs_drm_fdinfo other = client("amdgpu", "0000:c1:00.0", 10, 1);
	struct gs_drm_totals t;

	(void)state;
	assert_int_equal(gs_drm_usage_add(&parent, &fi), 0);
	assert_int_equal(gs_drm_usage_add(&worker, &fi), 0);
	assert_int_equal(gs_drm_usage_add(&worker, &other), 0);
	assert_int_equal(gs_drm_usage_merge(&host, &parent), 0);
	assert_int_equal(gs_drm_usage_merge(&host, &worker), 0);
	assert_int_equal(host.n_clients, 2);
	assert_int_equal(host.n_fds, 3);
	gs_drm_usage_totals(&host, NULL, &t);
	assert_int_equal(t.vram, 4097 * KiB);
	gs_drm_usage_free(&parent);
	gs_drm_usage_free(&worker);
	gs_drm_usage_free(&host);
}

/* ---- reading real fds --------------------------------------------------- */

struct fixture {
	char dir[64];
	int node_fd;     /* our fd on the fake render node */
	ino_t ino;
	int proc_fd, shadow_fd;
	uint64_t mnt_id;
};

static uint64_t real_field(pid_t pid, int fd, const char *name)
{
	char path[64], line[128];
	unsigned long long v = 0;
	size_t n = strlen(name);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, fd);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, n) == 0 && line[n] == ':')
			v = strtoull(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char path[128];
	struct stat st;

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/gs-test-fdinfo-XXXXXX");
	if (!mkdtemp(fx->dir))
		return -1;
	snprintf(path, sizeof(path), "%s/renderD128", fx->dir);
	fx->node_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fx->node_fd < 0 || fstat(fx->node_fd, &st) < 0)
		return -1;
	fx->ino = st.st_ino;
	snprintf(path, sizeof(path), "%s/shadow", fx->dir);
	if (mkdir(path, 0755) < 0)
		return -1;
	fx->shadow_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fx->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fx->shadow_fd < 0 || fx->proc_fd < 0)
		return -1;
	fx->mnt_id = real_field(getpid(), fx->node_fd, "mnt_id");
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	char cmd[128];

	close(fx->node_fd);
	close(fx->shadow_fd);
	close(fx->proc_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->dir);
	if (system(cmd) != 0)
		return -1;
	free(fx);
	return 0;
}

/* What a test holder writes for the kernel: the fdinfo of (pid, fd) with the
 * real ino and mnt_id, and the drm- keys of its simulated client. */
static void write_shadow(struct fixture *fx, pid_t pid, int fd, uint64_t ino, uint64_t mnt_id, const char *drm)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/shadow/%d", fx->dir, (int)pid);
	(void)mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/shadow/%d/%d", fx->dir, (int)pid, fd);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "pos:\t0\nflags:\t02100002\nmnt_id:\t%llu\nino:\t%llu\n%s",
		(unsigned long long)mnt_id, (unsigned long long)ino, drm);
	assert_int_equal(fclose(f), 0);
}

static const char xe_client[] =
	"drm-driver:\txe\ndrm-client-id:\t77\ndrm-pdev:\t0000:83:00.0\ndrm-resident-vram0:\t4 MiB\n";

static void test_read_real_fd_and_shadow(void **state)
{
	struct fixture *fx = *state;
	struct gs_drm_fdinfo fi;
	uint64_t vram;
	pid_t self = getpid();

	/* A plain file has no drm- keys: no stats, as on a kernel without. */
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, -1, self, fx->node_fd, fx->ino, &fi), -ENODATA);
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, self, fx->node_fd, fx->ino, &fi),
			 -ENODATA);

	write_shadow(fx, self, fx->node_fd, fx->ino, fx->mnt_id, xe_client);
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, self, fx->node_fd, fx->ino, &fi), 0);
	assert_string_equal(fi.driver, "xe");
	assert_int_equal(fi.client_id, 77);
	assert_int_equal(gs_drm_fdinfo_vram(&fi, &vram), 0);
	assert_int_equal(vram, 4 * MiB);
	/* Without the shadow directory the fixture is never read. */
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, -1, self, fx->node_fd, fx->ino, &fi), -ENODATA);
	/* The caller saw another file under that fd number: reused. */
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, self, fx->node_fd, fx->ino + 1, &fi),
			 -ESTALE);
	/* No such fd, no such process. */
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, self, 999999, 0, &fi), -ENOENT);
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, 0, fx->node_fd, 0, &fi), -EINVAL);
}

/* A fixture left from another process that had this pid, or written for
 * another file, describes another open file: ignored. */
static void test_stale_shadow_ignored(void **state)
{
	struct fixture *fx = *state;
	struct gs_drm_fdinfo fi;
	pid_t self = getpid();

	write_shadow(fx, self, fx->node_fd, fx->ino + 1, fx->mnt_id, xe_client);
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, self, fx->node_fd, fx->ino, &fi),
			 -ENODATA);
	write_shadow(fx, self, fx->node_fd, fx->ino, fx->mnt_id + 1, xe_client);
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, self, fx->node_fd, fx->ino, &fi),
			 -ENODATA);
}

/* A forked worker reads the same client through the fd it inherited: its
 * own fixture entry, same client id, and the host counts it once. */
static void test_forked_worker_shares_client(void **state)
{
	struct fixture *fx = *state;
	struct gs_drm_usage host = { 0 };
	struct gs_drm_fdinfo fi;
	struct gs_drm_totals t;
	int go[2], ready[2];
	pid_t child;
	char c;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		/* Keep the inherited fd; wait to be told to go. */
		close(go[1]);
		close(ready[0]);
		(void)!write(ready[1], "r", 1);
		(void)!read(go[0], &c, 1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);

	write_shadow(fx, getpid(), fx->node_fd, fx->ino, fx->mnt_id, xe_client);
	write_shadow(fx, child, fx->node_fd, fx->ino, real_field(child, fx->node_fd, "mnt_id"), xe_client);
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, getpid(), fx->node_fd, fx->ino, &fi), 0);
	assert_int_equal(gs_drm_usage_add(&host, &fi), 0);
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, child, fx->node_fd, fx->ino, &fi), 0);
	assert_int_equal(gs_drm_usage_add(&host, &fi), 0);
	gs_drm_usage_totals(&host, NULL, &t);
	assert_int_equal(t.n_clients, 1);
	assert_int_equal(host.n_fds, 2);
	assert_int_equal(t.vram, 4 * MiB);
	gs_drm_usage_free(&host);

	close(go[1]);
	close(ready[0]);
	assert_int_equal(waitpid(child, NULL, 0), child);
	/* Gone: its fdinfo no longer exists, whatever the fixture says. */
	assert_int_equal(gs_drm_fdinfo_read(fx->proc_fd, fx->shadow_fd, child, fx->node_fd, fx->ino, &fi), -ENOENT);
}

/* The wait loop's poll of an Intel GPU re-reads the fds the last full scan
 * saw, each against the inode the scan saw: a dup of the same client counts
 * once; an fd number now naming another file, or closed, is dropped (its
 * reference to the client is gone); an fd without usage stats keeps the
 * figure unknown; another GPU's fds are not read. */
static void test_fdwatch_rereads_and_drops(void **state)
{
	struct fixture *fx = *state;
	struct gs_scan_result scan = { 0 };
	struct gs_scan_proc proc = { .pid = getpid() };
	struct gs_drm_fdwatch w = { 0 };
	struct gs_drm_usage u;
	struct gs_drm_totals t;
	char path[128];
	int dup_fd = dup(fx->node_fd), other_fd, a_fd;
	struct stat st;

	assert_true(dup_fd >= 0);
	snprintf(path, sizeof(path), "%s/other", fx->dir);
	other_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	assert_true(other_fd >= 0);
	assert_int_equal(fstat(other_fd, &st), 0);
	/* The first fd of the client, kept apart from the fixture's own so
	 * that closing it leaves the fixture intact. */
	a_fd = dup(fx->node_fd);
	assert_true(a_fd >= 0);
	write_shadow(fx, proc.pid, a_fd, fx->ino, fx->mnt_id, xe_client);
	write_shadow(fx, proc.pid, dup_fd, fx->ino, fx->mnt_id, xe_client);
	assert_int_equal(gs_drm_usage_note_fd(&proc.drm, &(struct gs_drm_fdref){ proc.pid, a_fd, fx->ino, 0, false }), 0);
	assert_int_equal(gs_drm_usage_note_fd(&proc.drm, &(struct gs_drm_fdref){ proc.pid, dup_fd, fx->ino, 0, false }),
			 0);
	/* GPU 1's fd: a plain file, no fixture: no usage stats. */
	assert_int_equal(gs_drm_usage_note_fd(&proc.drm,
					      &(struct gs_drm_fdref){ proc.pid, other_fd, st.st_ino, 1, true }), 0);
	scan.procs = &proc;
	scan.n_procs = 1;
	assert_int_equal(gs_drm_fdwatch_set(&w, &scan), 0);
	gs_drm_usage_free(&proc.drm);
	assert_int_equal(gs_drm_fdwatch_count(&w, 0), 2);

	assert_int_equal(gs_drm_fdwatch_usage(&w, fx->proc_fd, fx->shadow_fd, 0, &u), 0);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_int_equal(t.n_clients, 1);
	assert_int_equal(t.vram, 4 * MiB);
	assert_int_equal(u.n_fds, 2);
	assert_int_equal(u.n_no_stats, 0);
	gs_drm_usage_free(&u);

	/* The dup's number now names another file: not the same client. */
	assert_true(dup2(other_fd, dup_fd) == dup_fd);
	assert_int_equal(gs_drm_fdwatch_usage(&w, fx->proc_fd, fx->shadow_fd, 0, &u), 0);
	assert_int_equal(u.n_fds, 1);
	gs_drm_usage_free(&u);
	assert_int_equal(gs_drm_fdwatch_count(&w, 0), 1);

	/* Closed: the client is gone from the figure. */
	close(a_fd);
	assert_int_equal(gs_drm_fdwatch_usage(&w, fx->proc_fd, fx->shadow_fd, 0, &u), 0);
	gs_drm_usage_totals(&u, NULL, &t);
	assert_int_equal(t.n_clients, 0);
	assert_int_equal(u.n_fds, 0);
	gs_drm_usage_free(&u);
	assert_int_equal(gs_drm_fdwatch_count(&w, 0), 0);

	/* GPU 1: read only when asked, and without stats it stays listed. */
	assert_int_equal(gs_drm_fdwatch_usage(&w, fx->proc_fd, fx->shadow_fd, 1, &u), 0);
	assert_int_equal(u.n_no_stats, 1);
	gs_drm_usage_free(&u);
	assert_int_equal(gs_drm_fdwatch_count(&w, 1), 1);
	gs_drm_fdwatch_free(&w);

	/* A client on GPU 0's node whose fdinfo names no PCI device: its
	 * figure belongs to no GPU, so GPU 0's is unknown, not 0. */
	a_fd = dup(fx->node_fd);
	assert_true(a_fd >= 0);
	write_shadow(fx, proc.pid, a_fd, fx->ino, fx->mnt_id,
		     "drm-driver:\txe\ndrm-client-id:\t78\ndrm-resident-vram0:\t8 MiB\n");
	memset(&proc.drm, 0, sizeof(proc.drm));
	assert_int_equal(gs_drm_usage_note_fd(&proc.drm, &(struct gs_drm_fdref){ proc.pid, a_fd, fx->ino, 0, false }), 0);
	assert_int_equal(gs_drm_fdwatch_set(&w, &scan), 0);
	gs_drm_usage_free(&proc.drm);
	assert_int_equal(gs_drm_fdwatch_usage(&w, fx->proc_fd, fx->shadow_fd, 0, &u), 0);
	assert_int_equal(u.n_fds, 1);
	assert_int_equal(u.n_no_stats, 1);
	gs_drm_usage_free(&u);
	gs_drm_fdwatch_free(&w);
	close(a_fd);
	close(dup_fd);
	close(other_fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_amdgpu_legacy_capture),
		cmocka_unit_test(test_amdgpu_standard_and_alias),
		cmocka_unit_test(test_amdgpu_apu_gtt),
		cmocka_unit_test(test_xe_doc_example),
		cmocka_unit_test(test_i915_igpu_has_no_vram),
		cmocka_unit_test(test_amdgpu_5_14),
		cmocka_unit_test(test_no_usage_stats),
		cmocka_unit_test(test_bad_values_are_unknown),
		cmocka_unit_test(test_region_names),
		cmocka_unit_test(test_usage_shared_client_counted_once),
		cmocka_unit_test(test_usage_distinct_clients),
		cmocka_unit_test(test_usage_merge_across_processes),
		cmocka_unit_test_setup_teardown(test_read_real_fd_and_shadow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_shadow_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forked_worker_shares_client, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fdwatch_rereads_and_drops, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
