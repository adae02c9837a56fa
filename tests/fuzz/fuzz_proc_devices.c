/* gs_devset_parse_proc_devices: /proc/devices (driver majors). */
#include "fuzz.h"

#include <errno.h>

#include "proc/devset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct gs_devset ds;
	int r;

	memset(&ds, 0, sizeof(ds));
	r = gs_devset_parse_proc_devices(text, &ds);
	FUZZ_CHECK(r == 0);
	/* majors are 12 bits; nvidia's is never 0 (195 by default) */
	FUZZ_CHECK(ds.nvidia_major >= 1 && ds.nvidia_major <= 4095);
	FUZZ_CHECK(ds.uvm_major <= 4095 && ds.caps_major <= 4095);
	/* the identities are untouched by the pure parser */
	FUZZ_CHECK(ds.ids == NULL && ds.n_ids == 0);
	/* a major other than the default is named in the text */
	if (ds.nvidia_major != 195) {
		char num[16];

		snprintf(num, sizeof(num), "%u", ds.nvidia_major);
		FUZZ_CHECK(strstr(text, num) != NULL);
	}
	free(text);
	return 0;
}
