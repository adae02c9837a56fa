/* PCI addresses ("domain:bus:device.function"), the one key that joins what
 * sysfs, DRM fdinfo (drm-pdev), the KFD topology and NVML say about a GPU. */
#ifndef GS_PCI_H
#define GS_PCI_H

#include <stdbool.h>
#include <stdint.h>

struct gs_pci_addr {
	uint32_t domain;
	uint8_t bus, dev, fn;    /* dev 0..31, fn 0..7 */
};

/* Room for the longest formatted address ("ffffffff:ff:1f.7") and slack. */
#define GS_PCI_ADDR_LEN 20

/* Parse "dddd:bb:dd.f" exactly: hex in any case, 1 to 8 domain digits (the
 * kernel prints %04x, so VMD domains have 5), 2 bus and 2 device digits, one
 * function digit, nothing after. Returns 0 or -EINVAL. */
int gs_pci_addr_parse(const char *s, struct gs_pci_addr *ret);

/* The kernel's form, "0000:c1:00.0" (sysfs names, drm-pdev). */
void gs_pci_addr_format(const struct gs_pci_addr *a, char buf[GS_PCI_ADDR_LEN]);

/* NVML's form, "00000000:C1:00.0", so ids of every vendor compare alike. */
void gs_pci_addr_format_nvml(const struct gs_pci_addr *a, char buf[GS_PCI_ADDR_LEN]);

/* Order by domain, bus, device, function (for sorting GPUs). */
int gs_pci_addr_cmp(const struct gs_pci_addr *a, const struct gs_pci_addr *b);

static inline bool gs_pci_addr_equal(const struct gs_pci_addr *a, const struct gs_pci_addr *b)
{
	return gs_pci_addr_cmp(a, b) == 0;
}

#endif
