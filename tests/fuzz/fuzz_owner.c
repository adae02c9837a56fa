/* gs_owner_from_cgroup: /proc/PID/cgroup, whose paths delegated users and
 * container managers name. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "proc/owner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct gs_owner o;
	int r = gs_owner_from_cgroup(text, &o);
	const char *ks;

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	FUZZ_CHECK(o.kind >= GS_OWNER_NONE && o.kind <= GS_OWNER_SLURM);
	FUZZ_TERMINATED(o.name);
	FUZZ_TERMINATED(o.unit);
	FUZZ_TERMINATED(o.cgroup);
	ks = gs_owner_kind_str(o.kind);
	FUZZ_CHECK(ks != NULL && *ks != '\0');
	if (r < 0) {
		FUZZ_CHECK(o.kind == GS_OWNER_NONE && o.name[0] == '\0' && o.cgroup[0] == '\0');
	} else {
		/* the path used comes from the text and is absolute */
		FUZZ_CHECK(o.cgroup[0] == '/');
		FUZZ_CHECK(strstr(text, o.cgroup) != NULL);
		/* names never carry a line break or a path separator out */
		FUZZ_CHECK(strchr(o.name, '\n') == NULL && strchr(o.unit, '\n') == NULL);
		FUZZ_CHECK(strchr(o.name, '/') == NULL && strchr(o.unit, '/') == NULL);
		if (o.kind == GS_OWNER_NONE)
			FUZZ_CHECK(o.unit[0] == '\0');
		if (o.kind != GS_OWNER_USER_UNIT && o.kind != GS_OWNER_SESSION)
			FUZZ_CHECK(o.uid == 0);
		{
			/* a unit's cgroup, when there is one, is a piece of the
			 * path that starts at a component and ends with a unit */
			char cg[sizeof(o.cgroup)];

			if (gs_owner_unit_cgroup(&o, cg, sizeof(cg)) == 0) {
				size_t n = strlen(cg);

				FUZZ_CHECK(cg[0] == '/' && strstr(o.cgroup, cg) != NULL);
				FUZZ_CHECK((n > 8 && !strcmp(cg + n - 8, ".service")) ||
					   (n > 6 && !strcmp(cg + n - 6, ".scope")));
				FUZZ_CHECK(o.kind == GS_OWNER_UNIT || o.kind == GS_OWNER_USER_UNIT ||
					   o.kind == GS_OWNER_LXC);
			}
		}
	}
	free(text);
	return 0;
}
