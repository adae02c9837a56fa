/* gs_procfs_nvidia_parse_information: /proc/driver/nvidia/gpus/<pci>/information. */
#include "fuzz.h"

#include <errno.h>

#include "gpu/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct gs_gpu g;
	int r;

	memset(&g, 0xa5, sizeof(g));
	r = gs_procfs_nvidia_parse_information(text, &g);
	FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOMEM);
	if (r == 0) {
		FUZZ_CHECK(g.minor < GS_MAX_GPUS);
		FUZZ_TERMINATED(g.uuid);
		FUZZ_TERMINATED(g.name);
		FUZZ_TERMINATED(g.pci_bus_id);
		FUZZ_CHECK(!g.mem_known);
		FUZZ_CHECK(strchr(g.name, '\n') == NULL && strchr(g.uuid, '\n') == NULL);
		/* the bus id is empty or NVML's form "DDDDDDDD:BB:DD.F" */
		if (g.pci_bus_id[0]) {
			unsigned d, b, v, f;
			char extra;

			FUZZ_CHECK(strlen(g.pci_bus_id) >= 16);
			FUZZ_CHECK(sscanf(g.pci_bus_id, "%x:%x:%x.%x%c", &d, &b, &v, &f, &extra) == 4);
			FUZZ_CHECK(b <= 0xff && v <= 0x1f && f <= 7);
		}
	}
	free(text);
	return 0;
}
