#include "core/gpusel.h"
#include "util/pci.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int parse_item(const char *item, const struct gs_gpu *gpus, size_t n_gpus, bool check_only,
		      struct gs_gpuset *set, char *err, size_t errlen)
{
	const char *dash;
	uint32_t lo, hi;

	if (strcmp(item, "all") == 0) {
		for (size_t i = 0; i < n_gpus; i++)
			gs_gpuset_add(set, (unsigned)i);
		return 0;
	}
	if (strchr(item, ':')) {
		/* A PCI address, any vendor, in the kernel's form
		 * (0000:c1:00.0) or NVML's (00000000:C1:00.0): the stable
		 * identifier of a GPU that has no UUID (Intel, older AMD). */
		struct gs_pci_addr want, have;

		if (gs_pci_addr_parse(item, &want) < 0) {
			snprintf(err, errlen, "invalid GPU PCI address '%s' (expected e.g. 0000:c1:00.0)", item);
			return -EINVAL;
		}
		if (check_only)
			return 0;
		for (size_t i = 0; i < n_gpus; i++)
			if (gs_pci_addr_parse(gpus[i].pci_bus_id, &have) == 0 && gs_pci_addr_equal(&have, &want)) {
				gs_gpuset_add(set, (unsigned)i);
				return 0;
			}
		snprintf(err, errlen, "no GPU at PCI address '%s'", item);
		return -ENOENT;
	}
	if (isdigit((unsigned char)item[0])) {
		char a[32], b[32];

		dash = strchr(item, '-');
		if (strlen(item) >= sizeof(a)) {
			snprintf(err, errlen, "invalid GPU selection '%s'", item);
			return -EINVAL;
		}
		if (dash) {
			gs_strlcpy(a, item, (size_t)(dash - item) + 1 < sizeof(a) ? (size_t)(dash - item) + 1 : sizeof(a));
			gs_strlcpy(b, dash + 1, sizeof(b));
		} else {
			gs_strlcpy(a, item, sizeof(a));
			gs_strlcpy(b, item, sizeof(b));
		}
		if (gs_parse_u32(a, &lo) < 0 || gs_parse_u32(b, &hi) < 0 || lo > hi || hi >= 256) {
			snprintf(err, errlen, "invalid GPU index or range '%s'", item);
			return -EINVAL;
		}
		if (check_only)
			return 0;
		for (uint32_t v = lo; v <= hi; v++) {
			size_t i;

			for (i = 0; i < n_gpus; i++)
				if (gpus[i].index == v)
					break;
			if (i == n_gpus) {
				if (n_gpus)
					snprintf(err, errlen, "no GPU with index %u (this host has %zu GPU%s)", v,
						 n_gpus, n_gpus == 1 ? "" : "s");
				else
					snprintf(err, errlen, "no GPU with index %u (no GPUs found)", v);
				return -ENOENT;
			}
			gs_gpuset_add(set, (unsigned)i);
		}
		return 0;
	}
	if (strncasecmp(item, "GPU-", 4) == 0 || strncasecmp(item, "MIG-", 4) == 0) {
		size_t len = strlen(item), match = (size_t)-1, count = 0;

		if (len < 8) {
			snprintf(err, errlen, "GPU UUID prefix '%s' is too short (8 characters at least)", item);
			return -EINVAL;
		}
		for (const char *p = item; *p; p++)
			if (!isalnum((unsigned char)*p) && *p != '-') {
				snprintf(err, errlen, "invalid GPU UUID '%s'", item);
				return -EINVAL;
			}
		if (check_only)
			return 0;
		for (size_t i = 0; i < n_gpus; i++) {
			if (strcasecmp(gpus[i].uuid, item) == 0) {
				match = i;
				count = 1;
				break;
			}
			if (strncasecmp(gpus[i].uuid, item, len) == 0) {
				match = i;
				count++;
			}
		}
		if (count == 0) {
			snprintf(err, errlen, "no GPU with UUID '%s'", item);
			return -ENOENT;
		}
		if (count > 1) {
			/* Which ones: the user picks one by its index. */
			size_t off = (size_t)snprintf(err, errlen, "GPU UUID prefix '%s' matches %zu GPUs:", item, count);
			bool first = true;

			for (size_t i = 0; i < n_gpus && off < errlen; i++) {
				if (strncasecmp(gpus[i].uuid, item, len))
					continue;
				off += (size_t)snprintf(err + off, errlen - off, "%s %u (%s)", first ? "" : ",", gpus[i].index,
							gpus[i].uuid);
				first = false;
			}
			return -EINVAL;
		}
		gs_gpuset_add(set, (unsigned)match);
		return 0;
	}
	snprintf(err, errlen, "invalid GPU selection '%s' (expected indices, ranges, UUIDs or PCI addresses)", item);
	return -EINVAL;
}

static int resolve(const char *expr, const struct gs_gpu *gpus, size_t n_gpus, bool check_only,
		   struct gs_gpuset *ret, char *err, size_t errlen)
{
	struct gs_gpuset set = { 0 };
	char buf[1024];
	char *save = NULL, *tok;
	int r;

	if (!expr || !*expr) {
		for (size_t i = 0; i < n_gpus; i++)
			gs_gpuset_add(&set, (unsigned)i);
		if (ret)
			*ret = set;
		return 0;
	}
	if (strlen(expr) >= sizeof(buf)) {
		snprintf(err, errlen, "GPU selection is too long");
		return -EINVAL;
	}
	gs_strlcpy(buf, expr, sizeof(buf));
	if (buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,")) {
		snprintf(err, errlen, "invalid GPU selection '%s' (empty item)", expr);
		return -EINVAL;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		gs_strstrip(tok);
		r = parse_item(tok, gpus, n_gpus, check_only, &set, err, errlen);
		if (r < 0)
			return r;
	}
	if (ret)
		*ret = set;
	return 0;
}

int gs_gpusel_resolve(const char *expr, const struct gs_gpu *gpus, size_t n_gpus,
		      struct gs_gpuset *ret, char *err, size_t errlen)
{
	return resolve(expr, gpus, n_gpus, false, ret, err, errlen);
}

int gs_gpusel_check(const char *expr, char *err, size_t errlen)
{
	return resolve(expr, NULL, 0, true, NULL, err, errlen);
}
