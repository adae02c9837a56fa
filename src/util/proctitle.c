#include "util/proctitle.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

/* Fields 48 and 49 of /proc/self/stat (since Linux 3.5): where the
 * kernel reads /proc/PID/cmdline from. */
static int arg_area(uintptr_t *start, uintptr_t *end)
{
	_cleanup_free_ char *txt = NULL;
	char *p, *tok, *save = NULL;
	unsigned long long v[2];
	int field = 3, r;

	r = gs_read_file_at(AT_FDCWD, "/proc/self/stat", 4096, &txt, NULL);
	if (r < 0)
		return r;
	p = strrchr(txt, ')'); /* comm may hold spaces and parentheses */
	if (!p)
		return -EINVAL;
	for (tok = strtok_r(p + 1, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), field++) {
		if (field == 48 || field == 49) {
			char *e;

			errno = 0;
			v[field - 48] = strtoull(tok, &e, 10);
			if (errno || *e)
				return -EINVAL;
			if (field == 49)
				break;
		}
	}
	if (field != 49 || v[1] <= v[0])
		return -EINVAL;
	*start = (uintptr_t)v[0];
	*end = (uintptr_t)v[1];
	return 0;
}

int gs_proctitle_set(const char *name)
{
	uintptr_t start, end;
	size_t len = strlen(name);
	int r;

	if (prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0) < 0)
		return -errno;
	r = arg_area(&start, &end);
	if (r < 0)
		return r;
	/* Only memory that is provably argv's: glibc points
	 * program_invocation_name at argv[0], the start of the area. */
	if ((uintptr_t)program_invocation_name != start || end - start <= len)
		return -ENOSPC;
	memset(program_invocation_name, 0, end - start);
	memcpy(program_invocation_name, name, len + 1); /* area > len: room for the NUL */
	return 0;
}
