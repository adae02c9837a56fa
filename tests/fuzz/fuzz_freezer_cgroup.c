/* gs_freezer_parse_cgroup: /proc/PID/cgroup, whose paths delegated users and
 * container managers name; the paths found are appended to /sys/fs/cgroup. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "proc/freezer.h"

/* Absolute, and no component that climbs out of the hierarchy. */
static int sane_path(const char *p)
{
	size_t n = strlen(p);

	if (p[0] != '/')
		return 0;
	for (size_t i = 0; i + 3 <= n; i++)
		if (p[i] == '/' && p[i + 1] == '.' && p[i + 2] == '.' && (i + 3 == n || p[i + 3] == '/'))
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	char v2[256], v1[256];
	int r = gs_freezer_parse_cgroup(text, v2, sizeof(v2), v1, sizeof(v1));

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	FUZZ_TERMINATED(v2);
	FUZZ_TERMINATED(v1);
	FUZZ_CHECK(r == 0 ? (v2[0] || v1[0]) : (!v2[0] && !v1[0]));
	if (v2[0])
		FUZZ_CHECK(sane_path(v2) && strstr(text, v2) != NULL && !strchr(v2, '\n'));
	if (v1[0])
		FUZZ_CHECK(sane_path(v1) && strstr(text, v1) != NULL && !strchr(v1, '\n'));
	free(text);
	return 0;
}
