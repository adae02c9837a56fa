/* Which process supervisor runs a process: supervisord (a program of its
 * config), runit (runsv's service directory) or s6 (s6-supervise's service
 * directory). Each restarts what is killed from outside, and each has a
 * control tool that stops its program for good (supervisorctl stop, sv
 * down, s6-svc -d): that is the owner to stop, as a systemd unit is.
 *
 * Found from the process table: the nearest ancestor that is one of the
 * three, recognised by its executable (root's, writable by nobody else, as
 * proc/launcher.h trusts launchers) and its command line, never by a comm
 * alone; supervisord's program also by the environment supervisord gives
 * its children. The name found here is only a claim: the stop stage asks
 * the control tool which PID runs under that name and stops it only when it
 * is the program found here (core/stop.c). */
#ifndef GS_SUPERVISED_H
#define GS_SUPERVISED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gs_ptable;

enum gs_sup_kind {
	GS_SUP_NONE = 0,
	GS_SUP_SUPERVISORD,
	GS_SUP_RUNIT,
	GS_SUP_S6,
};

struct gs_supervised {
	enum gs_sup_kind kind;
	/* The supervisor: supervisord, runsv or s6-supervise. */
	pid_t sup_pid;
	uint64_t sup_starttime;
	uid_t sup_uid;
	/* Its child on the way to the process: the program it runs (and
	 * restarts), which may be the process itself. */
	pid_t main_pid;
	uint64_t main_starttime;
	/* supervisord: "GROUP:NAME"; runit and s6: the service directory
	 * (absolute, as the supervisor's working directory reads). */
	char name[256];
	/* supervisord only: how supervisorctl reaches it, "-c" with the
	 * config file supervisord was started with, or "-s" with the server
	 * URL it gave its program (SUPERVISOR_SERVER_URL). "" otherwise. */
	char control_opt[4];
	char control[1024];
};

/* The supervisor of pid (with starttime), walking up from pid itself
 * (a supervisor's own process is never "supervised"). Only a supervisor
 * in gpuslate's mount namespace counts: its paths and socket are ours to
 * use. Returns 1 with *ret, 2 when a supervisor runs it under a name that
 * could not be read (*ret without name or control: it is watched, never
 * asked), 0 when none runs it, or -errno (-ENOMEM). */
int gs_supervised_find(int proc_fd, const struct gs_ptable *pt, pid_t pid, struct gs_supervised *ret);

/* The same, with proc_fd passed as (void *)(intptr_t) (core/restarter.h's
 * question). */
int gs_supervised_find_proc(void *proc_fd, const struct gs_ptable *pt, pid_t pid, struct gs_supervised *ret);

/* "supervisord", "runit", "s6", "none". */
const char *gs_sup_kind_str(enum gs_sup_kind k);
/* The inverse, for the stopped-state file; GS_SUP_NONE when unknown. */
enum gs_sup_kind gs_sup_kind_from_str(const char *s);

/* supervisord's config file from its argv (NUL-separated, len bytes):
 * "-c FILE", "-cFILE", "--configuration FILE", "--configuration=FILE".
 * 0 with the file in buf, -ENOENT when not given, -EINVAL when cut. */
int gs_supervisord_config_arg(const char *argv, size_t len, char *buf, size_t buflen);

/* One variable of an environment block (NUL-separated): 0 with its value
 * in buf, -ENOENT when absent. */
int gs_environ_get(const char *env, size_t len, const char *key, char *buf, size_t buflen);

/* The PID the control tool reports for the program, from its output:
 * `supervisorctl pid G:N` ("1234", "0" when not running), `sv status DIR`
 * ("run: DIR: (pid 1234) 5s; ..."; down: 0), `s6-svstat -o pid DIR`
 * ("1234", "-1" when down: 0). -EINVAL when the output says neither. */
int gs_sup_parse_pid(enum gs_sup_kind k, const char *out, pid_t *ret);

/* Is the program up, from the control tool's status output (the state
 * before a stop, and restore's check): 1 up, 0 down, -EINVAL unreadable.
 * supervisorctl status: "NAME  RUNNING ..." (STARTING, BACKOFF count as
 * up: it is on its way); sv status: "run:"; s6-svstat -o up: "true". */
int gs_sup_parse_up(enum gs_sup_kind k, const char *out);

#endif
