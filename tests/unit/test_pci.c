/* PCI addresses: the join key of sysfs, drm-pdev, KFD and NVML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "util/pci.h"

static void test_parse_and_format(void **state)
{
	struct gs_pci_addr a, b;
	char buf[GS_PCI_ADDR_LEN];

	(void)state;
	assert_int_equal(gs_pci_addr_parse("0000:c1:00.0", &a), 0);
	gs_pci_addr_format(&a, buf);
	assert_string_equal(buf, "0000:c1:00.0");
	gs_pci_addr_format_nvml(&a, buf);
	assert_string_equal(buf, "00000000:C1:00.0");
	/* NVML's form and upper case parse to the same address. */
	assert_int_equal(gs_pci_addr_parse("00000000:C1:00.0", &b), 0);
	assert_true(gs_pci_addr_equal(&a, &b));
	/* A VMD domain has five digits in sysfs. */
	assert_int_equal(gs_pci_addr_parse("10000:e1:1f.7", &a), 0);
	assert_int_equal(a.domain, 0x10000);
	assert_int_equal(a.bus, 0xe1);
	assert_int_equal(a.dev, 0x1f);
	assert_int_equal(a.fn, 7);
	gs_pci_addr_format(&a, buf);
	assert_string_equal(buf, "10000:e1:1f.7");
	gs_pci_addr_format_nvml(&a, buf);
	assert_string_equal(buf, "00010000:E1:1F.7");
}

static void test_parse_refuses(void **state)
{
	static const char *const bad[] = {
		"", "0000:c1:00", "0000:c1:00.", "0000:c1:0.0", "0000:c1:000.0", "0000:1c1:00.0",
		"0000:c1:20.0", "0000:c1:00.8", "000000000:c1:00.0", "0000:c1:00.0 ", " 0000:c1:00.0",
		"0000:g1:00.0", "0000-c1:00.0", ":c1:00.0", "0000:c1:00.0\n",
	};
	struct gs_pci_addr a = { 1, 2, 3, 4 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(gs_pci_addr_parse(bad[i], &a), -EINVAL);
	assert_int_equal(gs_pci_addr_parse(NULL, &a), -EINVAL);
	/* Untouched on failure. */
	assert_int_equal(a.domain, 1);
	assert_int_equal(a.fn, 4);
}

static void test_order(void **state)
{
	struct gs_pci_addr a, b;

	(void)state;
	assert_int_equal(gs_pci_addr_parse("0000:18:00.0", &a), 0);
	assert_int_equal(gs_pci_addr_parse("0000:2a:00.0", &b), 0);
	assert_true(gs_pci_addr_cmp(&a, &b) < 0);
	assert_true(gs_pci_addr_cmp(&b, &a) > 0);
	assert_int_equal(gs_pci_addr_parse("0001:00:00.0", &b), 0);
	assert_true(gs_pci_addr_cmp(&a, &b) < 0);
	assert_int_equal(gs_pci_addr_parse("0000:18:00.1", &b), 0);
	assert_true(gs_pci_addr_cmp(&a, &b) < 0);
	assert_int_equal(gs_pci_addr_cmp(&a, &a), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_format),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
