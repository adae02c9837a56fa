#include "proc/ptable.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

static int cmp_pidstat(const void *a, const void *b)
{
	pid_t x = ((const struct gs_pidstat *)a)->pid, y = ((const struct gs_pidstat *)b)->pid;

	return (x > y) - (x < y);
}

int gs_ptable_load(int proc_fd, struct gs_ptable *ret)
{
	struct gs_pidstat *v = NULL;
	size_t n = 0, cap = 0;
	DIR *dir;
	struct dirent *de;
	int dfd;

	dfd = openat(proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	dir = fdopendir(dfd);
	if (!dir) {
		int e = errno;

		close(dfd);
		return -e;
	}
	while ((de = readdir(dir))) {
		pid_t pid;

		if (gs_parse_pid(de->d_name, &pid) < 0)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 512;
			struct gs_pidstat *nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				free(v);
				closedir(dir);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		/* A process that exits between readdir and the read is simply absent. */
		if (gs_pidstat_read(proc_fd, pid, &v[n]) == 0)
			n++;
	}
	closedir(dir);
	if (n)
		qsort(v, n, sizeof(*v), cmp_pidstat);
	ret->procs = v;
	ret->n = n;
	return 0;
}

void gs_ptable_free(struct gs_ptable *t)
{
	free(t->procs);
	t->procs = NULL;
	t->n = 0;
}

const struct gs_pidstat *gs_ptable_find(const struct gs_ptable *t, pid_t pid)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->procs[mid].pid == pid)
			return &t->procs[mid];
		if (t->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool gs_ptable_is_ancestor(const struct gs_ptable *t, pid_t anc, pid_t pid)
{
	/* Bounded walk: a corrupt or racing table must not loop forever. */
	for (int depth = 0; depth < 4096 && pid > 0; depth++) {
		const struct gs_pidstat *st;

		if (pid == anc)
			return true;
		st = gs_ptable_find(t, pid);
		if (!st || st->ppid == pid)
			return false;
		pid = st->ppid;
	}
	return false;
}

bool gs_pidstat_is_kthread(const struct gs_pidstat *st)
{
	/* Only the kernel's own flag: in a PID namespace (a container) PID 2
	 * and its children are ordinary processes. */
	return (st->flags & GS_PF_KTHREAD) != 0;
}
