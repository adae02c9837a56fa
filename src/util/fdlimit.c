#include "util/fdlimit.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>

/* The limits gpuslate was started with; rlim_max 0 until raised. */
static struct rlimit started_with;

int gs_fdlimit_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur == rl.rlim_max)
		return 0;
	started_with = rl;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		started_with.rlim_max = 0;
		return -errno;
	}
	return 0;
}

void gs_fdlimit_restore(void)
{
	if (started_with.rlim_max)
		(void)setrlimit(RLIMIT_NOFILE, &started_with);
}

/* Descriptors open now, or -errno when /proc/self/fd cannot be listed. */
static long open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	long n = 0;

	if (!dir)
		return -errno;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n - 1; /* the directory's own descriptor */
}

size_t gs_fdlimit_spare(size_t reserve)
{
	struct rlimit rl;
	long open;
	rlim_t used;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	open = open_fds();
	/* Without /proc: assume the worst the limit allows, half of it used. */
	used = open >= 0 ? (rlim_t)open : rl.rlim_cur / 2;
	if (rl.rlim_cur == RLIM_INFINITY)
		return (size_t)1 << 20;
	if (rl.rlim_cur <= used + reserve)
		return 0;
	return (size_t)(rl.rlim_cur - used - reserve);
}
