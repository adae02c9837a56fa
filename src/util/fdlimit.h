/* The open-file limit. gpuslate holds one pidfd per process it stops (and a
 * /proc directory per scan thread): under the common soft limit of 1024 a
 * reclaim of a thousand processes would run out. The soft limit is raised to
 * the hard one once at start, and the stop stage asks how many descriptors
 * it may still hold before it pins its targets. */
#ifndef GS_FDLIMIT_H
#define GS_FDLIMIT_H

#include <stddef.h>

/* Raise RLIMIT_NOFILE's soft limit to the hard one. Returns 0 or -errno
 * (the limit then stays as it was). Call once, before any threads start. */
int gs_fdlimit_raise(void);

/* In a child about to exec another program: put the soft limit back to
 * what gpuslate was started with (select()-based programs expect at most
 * FD_SETSIZE). Async-signal-safe. */
void gs_fdlimit_restore(void);

/* How many more descriptors this process may open now: the soft limit less
 * the descriptors open (counted in /proc/self/fd), less reserve kept for
 * everything else (pipes to child processes, files read meanwhile). 0 when
 * there is no room beyond the reserve. */
size_t gs_fdlimit_spare(size_t reserve);

#endif
