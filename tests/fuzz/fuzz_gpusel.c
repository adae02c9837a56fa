/* gs_gpusel_check / gs_gpusel_resolve: -g selections ("0,2-3", UUIDs).
 * First byte: how many GPUs the host has (0..16) and how their NVML indices
 * are laid out; the rest is the expression. */
#include "fuzz.h"

#include <errno.h>

#include "core/gpusel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_gpu gpus[16];
	struct gs_gpuset set, set2;
	char err[256], err2[256], *expr;
	size_t n;
	int rc, rr;

	if (size < 1)
		return 0;
	n = data[0] % 17;
	memset(gpus, 0, sizeof(gpus));
	for (size_t i = 0; i < n; i++) {
		/* bit 5: indices in reverse order; bit 6: UUIDs sharing a long prefix */
		gpus[i].index = (data[0] & 0x20) ? (unsigned)(n - 1 - i) : (unsigned)i;
		snprintf(gpus[i].uuid, sizeof(gpus[i].uuid),
			 (data[0] & 0x40) ? "GPU-a2983c1e-0000-4000-8000-00000000000%zx" : "GPU-%08zx-0000-4000-8000-000000000000",
			 i);
	}
	expr = fuzz_cstr(data + 1, size - 1);

	err[0] = err2[0] = '\0';
	rc = gs_gpusel_check(expr, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -EINVAL);
	FUZZ_TERMINATED(err);
	if (rc < 0)
		FUZZ_CHECK(err[0] != '\0');

	memset(&set, 0, sizeof(set));
	rr = gs_gpusel_resolve(expr, gpus, n, &set, err2, sizeof(err2));
	FUZZ_CHECK(rr == 0 || rr == -EINVAL || rr == -ENOENT);
	FUZZ_TERMINATED(err2);
	if (rr < 0) {
		FUZZ_CHECK(err2[0] != '\0');
	} else {
		/* a selection that resolves is well-formed */
		FUZZ_CHECK(rc == 0);
		/* only GPUs that exist are selected */
		for (unsigned i = (unsigned)n; i < 256; i++)
			FUZZ_CHECK(!gs_gpuset_has(&set, i));
		/* and the answer is stable */
		memset(&set2, 0, sizeof(set2));
		FUZZ_CHECK(gs_gpusel_resolve(expr, gpus, n, &set2, err2, sizeof(err2)) == 0);
		FUZZ_CHECK(memcmp(&set, &set2, sizeof(set)) == 0);
		if (n > 0 && *expr)
			FUZZ_CHECK(!gs_gpuset_empty(&set));
	}
	/* a syntax error is an error whatever the host has */
	if (rc == -EINVAL)
		FUZZ_CHECK(rr != 0);
	free(expr);
	return 0;
}
