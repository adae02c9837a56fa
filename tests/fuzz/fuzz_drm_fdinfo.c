/* gs_drm_fdinfo_parse and gs_drm_usage: the drm- keys of an fdinfo, and
 * amdgpu's own keys of Linux 5.14-5.18. */
#include "fuzz.h"

#include <errno.h>

#include "proc/drm_fdinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct gs_drm_fdinfo fi;
	struct gs_drm_usage u = { 0 };
	struct gs_drm_totals t;
	uint64_t vram;
	int r;

	r = gs_drm_fdinfo_parse(text, &fi);
	FUZZ_CHECK(r == 0 || r == -ENODATA);
	if (r == 0) {
		/* the driver is a name, shown to users as it is */
		FUZZ_TERMINATED(fi.driver);
		FUZZ_CHECK(fi.driver[0] != '\0' && fuzz_printable(fi.driver));
		/* a client only by the common keys, or amdgpu's old ones: its
		 * device and its VM's PASID, never a guess */
		FUZZ_CHECK(strstr(text, "drm-driver") != NULL ||
			   (!strcmp(fi.driver, "amdgpu") && fi.pdev_known && fi.client_id_known && fi.client_id != 0 &&
			    strstr(text, "pdev") && strstr(text, "pasid") && strstr(text, " mem")));
		FUZZ_CHECK(fi.n_regions <= GS_DRM_REGIONS_MAX);
		for (size_t i = 0; i < fi.n_regions; i++) {
			FUZZ_TERMINATED(fi.regions[i].name);
			/* engine counters are never regions */
			FUZZ_CHECK(strncmp(fi.regions[i].name, "cycles-", 7) != 0);
		}
		if (fi.pdev_known)
			FUZZ_CHECK(fi.pdev.dev <= 0x1f && fi.pdev.fn <= 7);
		/* the same client twice is one client */
		FUZZ_CHECK(gs_drm_usage_add(&u, &fi) == 0);
		FUZZ_CHECK(gs_drm_usage_add(&u, &fi) == 0);
		FUZZ_CHECK(u.n_fds == 2);
		FUZZ_CHECK(u.n_clients == (fi.client_id_known ? 1u : 2u));
		gs_drm_usage_totals(&u, NULL, &t);
		if (gs_drm_fdinfo_vram(&fi, &vram) == 0 && fi.client_id_known)
			FUZZ_CHECK(t.vram_known && t.vram == vram);
		gs_drm_usage_free(&u);
	}
	free(text);
	return 0;
}
