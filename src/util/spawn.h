/* Running other programs (systemctl, pct, lxc-attach, ssh) without a shell:
 * an argv is exec'd directly, in its own process group so that a deadline can
 * end it together with everything it started. */
#ifndef GS_SPAWN_H
#define GS_SPAWN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gs_child {
	pid_t pid;      /* also the process group id */
	int out_fd;     /* read end of its stdout, -1 if not captured */
	int err_fd;     /* read end of its stderr, -1 if not captured */
	int in_fd;      /* write end of its stdin, -1 unless GS_SPAWN_STDIN */
};

enum {
	GS_SPAWN_CAPTURE = 1 << 0, /* pipes for stdout and stderr (else inherited) */
	GS_SPAWN_STDIN = 1 << 1,   /* a pipe for stdin (else /dev/null) */
};

/* Start argv (argv[0] searched in PATH). envp NULL: inherit. Returns 0 or -errno
 * (-ENOENT when the program does not exist). */
int gs_spawn(char *const argv[], char *const envp[], unsigned flags, struct gs_child *ret);

/* One step of the ending ladder of a child of ours that is not reaped yet
 * (so its pid and group id cannot have been reused), for its whole process
 * group: GS_END_TERM sends SIGTERM and SIGCONT (a stopped child must see
 * it), GS_END_KILL sends SIGKILL. gs_spawn_terminate climbs it blocking;
 * the fleet's runner one step per deadline in its event loop. */
enum gs_end_step { GS_END_TERM, GS_END_KILL };
void gs_child_end_step(pid_t pgid, enum gs_end_step step);

/* End the child's whole process group: SIGTERM, then SIGKILL after grace_ms.
 * Safe because the child is ours and not reaped yet, so its pid and group
 * id cannot have been reused. Reaps it. */
void gs_spawn_terminate(struct gs_child *c, uint64_t grace_ms);

struct gs_run_result {
	int exit_code;     /* exit status, or 128+signal, or -1 when timed out */
	bool timed_out;
	bool interrupted;
	char *out;         /* captured stdout (NUL-terminated, bounded) */
	char *err;         /* captured stderr */
};

/* Run to completion within timeout_ms, capturing at most max_out bytes of
 * each stream. Returns 0 (see result) or -errno when it could not start. */
int gs_spawn_run(char *const argv[], uint64_t timeout_ms, size_t max_out, struct gs_run_result *ret);
/* The same, ended early (like a timeout, with ret->interrupted set) as soon
 * as *interrupted becomes non-zero (Ctrl-C in the caller). */
int gs_spawn_run_interruptible(char *const argv[], uint64_t timeout_ms, size_t max_out,
			       volatile sig_atomic_t *interrupted, struct gs_run_result *ret);
/* Called about every every_ms while a tool runs, so that a caller can
 * show what it waits for (systemctl stop may take systemd's 90 s). */
struct gs_spawn_tick {
	void (*fn)(void *ud);
	void *ud;
	uint64_t every_ms;
};
/* gs_spawn_run_interruptible with a tick (NULL: none). */
int gs_spawn_run_ticking(char *const argv[], uint64_t timeout_ms, size_t max_out, volatile sig_atomic_t *interrupted,
			 const struct gs_spawn_tick *tick, struct gs_run_result *ret);
void gs_run_result_free(struct gs_run_result *r);

/* Is program found in PATH (or an existing executable path)? */
bool gs_program_exists(const char *name);

/* A wait status as a shell reports it: the exit code, 128 + the signal
 * that ended it, -1 for anything else. */
int gs_wait_status_code(int wstatus);

#endif
