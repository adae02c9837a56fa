/* A table of every process's identity and tree links (pid, ppid, process
 * group, start time, flags), read from /proc/PID/stat in one pass. The plan
 * uses it to find gpuslate's own ancestors, targets' descendants and process
 * group members; the stop stage re-checks identities against it. */
#ifndef GS_PTABLE_H
#define GS_PTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/procinfo.h"

struct gs_ptable {
	struct gs_pidstat *procs; /* sorted by pid */
	size_t n;
};

int gs_ptable_load(int proc_fd, struct gs_ptable *ret);
void gs_ptable_free(struct gs_ptable *t);
const struct gs_pidstat *gs_ptable_find(const struct gs_ptable *t, pid_t pid);

/* Is anc an ancestor of pid (or pid itself)? Walks ppid links; bounded. */
bool gs_ptable_is_ancestor(const struct gs_ptable *t, pid_t anc, pid_t pid);

/* Kernel threads: the PF_KTHREAD flag (field 9 of /proc/PID/stat). */
bool gs_pidstat_is_kthread(const struct gs_pidstat *st);

#endif
