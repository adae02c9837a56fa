/* Launchers: processes that start one program and end with it (timeout,
 * env, nice, setsid, sudo, stdbuf, a container's shim, ...) and shells,
 * which may be one too (`bash -c 'cd /x && python y'`, a wrapper script
 * that runs its job without exec). The ONE list that every rule looking
 * through such a process uses: the restarter search (core/restarter.c),
 * the unit-main rule (core/plan.c), the respawn watch (core/reclaim.c,
 * core/verify.c).
 *
 * A process is recognised by its executable, not by its comm: comm is the
 * process's own word (PR_SET_NAME, a script's file name), the executable
 * is what the kernel runs. The executable counts only when it is owned by
 * root and writable by nobody else (a binary the administrator installed);
 * comm is the answer only when the executable cannot be read at all. */
#ifndef GS_LAUNCHER_H
#define GS_LAUNCHER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct gs_ptable;
struct gs_pidstat;

enum gs_launch_kind {
	GS_LAUNCH_NONE = 0,   /* a program of its own: maybe a supervisor, maybe the job */
	GS_LAUNCH_LAUNCHER,   /* runs one program once and exits with it */
	GS_LAUNCH_SHELL,      /* a shell: a wrapper, a loop, or one a person types into */
};

/* Is name (an executable's basename, or a comm) one of the launchers? */
bool gs_launcher_name(const char *name);
/* Is name one of the shells (bash, sh, dash, zsh, ...)? */
bool gs_shell_name(const char *name);

/* What name is: launcher, shell or neither. */
enum gs_launch_kind gs_launch_kind_of_name(const char *name);

/* What process pid (whose comm is comm) is, from /proc/PID/exe under
 * proc_fd: the executable's basename when the file is root's and not
 * group- or world-writable; GS_LAUNCH_NONE for any other executable;
 * comm's kind only when exe cannot be read. The signature of
 * gs_launch_kind_fn, with proc_fd passed as (void *)(intptr_t). */
enum gs_launch_kind gs_launch_kind_proc(void *proc_fd, pid_t pid, const char *comm);

/* How pure code (plans, restarters) asks: tests answer from literals;
 * NULL means by comm (gs_launch_kind_of_name). */
typedef enum gs_launch_kind (*gs_launch_kind_fn)(void *ud, pid_t pid, const char *comm);
enum gs_launch_kind gs_launch_kind_ask(gs_launch_kind_fn fn, void *ud, const struct gs_pidstat *st);

/* The nearest ancestor from ppid on that is no launcher (shells are not
 * skipped: whether one is a wrapper is the caller's question). NULL when
 * the chain leaves the table or is longer than any real one. */
const struct gs_pidstat *gs_launcher_skip(const struct gs_ptable *pt, pid_t ppid, gs_launch_kind_fn fn, void *ud);

/* Is anc reached from pid's parent upward through launchers and shells
 * only (anc itself may be either, or pid's parent)? A unit's main process
 * `timeout 1d python` or `bash -c '... && python'` ends when python ends. */
bool gs_launcher_chain_to(const struct gs_ptable *pt, pid_t pid, pid_t anc, gs_launch_kind_fn fn, void *ud);

#endif
