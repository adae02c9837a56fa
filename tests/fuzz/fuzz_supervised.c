/* The process supervisors' words (proc/supervised.h): supervisord's argv
 * and its program's environment (NUL-separated, as /proc gives them), and
 * what supervisorctl, sv and s6-svstat print. */
#include "fuzz.h"

#include <errno.h>
#include <string.h>

#include "proc/supervised.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size), buf[64];
	pid_t pid;
	int r;

	/* A NUL-separated block may hold anything, and end without a NUL. */
	r = gs_supervisord_config_arg((const char *)data, size, buf, sizeof(buf));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
	if (r == 0) {
		FUZZ_TERMINATED(buf);
		FUZZ_CHECK(buf[0] != '\0');
		FUZZ_CHECK(memmem(data, size, buf, strlen(buf)) != NULL);
	}
	r = gs_environ_get((const char *)data, size, "SUPERVISOR_PROCESS_NAME", buf, sizeof(buf));
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
	if (r == 0)
		FUZZ_CHECK(memmem(data, size, buf, strlen(buf)) != NULL);
	for (int k = GS_SUP_NONE; k <= GS_SUP_S6; k++) {
		r = gs_sup_parse_pid((enum gs_sup_kind)k, text, &pid);
		FUZZ_CHECK(r == 0 || r == -EINVAL);
		/* A PID the stop would compare, never a negative one or -1. */
		FUZZ_CHECK(pid >= 0);
		r = gs_sup_parse_up((enum gs_sup_kind)k, text);
		FUZZ_CHECK(r == 0 || r == 1 || r == -EINVAL);
	}
	free(text);
	return 0;
}
