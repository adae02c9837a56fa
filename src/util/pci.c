#include "util/pci.h"

#include <errno.h>
#include <stdio.h>

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly min..max hex digits at *pp; advances *pp past them. */
static int take_hex(const char **pp, int min, int max, uint32_t *ret)
{
	const char *p = *pp;
	uint32_t v = 0;
	int n = 0, d;

	while (n < max && (d = hexval(p[n])) >= 0) {
		v = v << 4 | (uint32_t)d;
		n++;
	}
	if (n < min || hexval(p[n]) >= 0)
		return -EINVAL;
	*pp = p + n;
	*ret = v;
	return 0;
}

int gs_pci_addr_parse(const char *s, struct gs_pci_addr *ret)
{
	uint32_t domain, bus, dev, fn;
	const char *p = s;

	if (!s || !ret)
		return -EINVAL;
	if (take_hex(&p, 1, 8, &domain) < 0 || *p++ != ':')
		return -EINVAL;
	if (take_hex(&p, 2, 2, &bus) < 0 || *p++ != ':')
		return -EINVAL;
	if (take_hex(&p, 2, 2, &dev) < 0 || *p++ != '.')
		return -EINVAL;
	if (take_hex(&p, 1, 1, &fn) < 0 || *p != '\0')
		return -EINVAL;
	if (dev > 0x1f || fn > 7)
		return -EINVAL;
	ret->domain = domain;
	ret->bus = (uint8_t)bus;
	ret->dev = (uint8_t)dev;
	ret->fn = (uint8_t)fn;
	return 0;
}

void gs_pci_addr_format(const struct gs_pci_addr *a, char buf[GS_PCI_ADDR_LEN])
{
	snprintf(buf, GS_PCI_ADDR_LEN, "%04x:%02x:%02x.%x", (unsigned)a->domain, a->bus, a->dev, a->fn);
}

void gs_pci_addr_format_nvml(const struct gs_pci_addr *a, char buf[GS_PCI_ADDR_LEN])
{
	snprintf(buf, GS_PCI_ADDR_LEN, "%08X:%02X:%02X.%X", (unsigned)a->domain, a->bus, a->dev, a->fn);
}

int gs_pci_addr_cmp(const struct gs_pci_addr *a, const struct gs_pci_addr *b)
{
	if (a->domain != b->domain)
		return a->domain < b->domain ? -1 : 1;
	if (a->bus != b->bus)
		return a->bus < b->bus ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	return 0;
}
