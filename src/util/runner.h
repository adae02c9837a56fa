/* Running commands side by side (one per host for a fleet), at most
 * `fanout` at once, in one poll() loop: the shape of git's
 * run_processes_parallel. Each child's stdout and
 * stderr are buffered whole (bounded), so outputs never interleave.
 *
 * Each child runs in its own process group with a pipe on its stdin that
 * the runner keeps open: the remote side (gpuslate --remote) ends itself
 * when that stdin reaches EOF. Ending a child, at its deadline or on an
 * interrupt, is therefore a ladder that never blocks the loop:
 *   close its stdin (ssh forwards the EOF; the remote gpuslate ends and ssh
 *   exits on its own), after end_grace_ms SIGTERM to its process group,
 *   after another end_grace_ms SIGKILL.
 *
 * Library code: returns 0 or -errno, never prints. */
#ifndef GS_RUNNER_H
#define GS_RUNNER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gs_run_state {
	GS_RUN_NOT_STARTED = 0, /* interrupted before it was started */
	GS_RUN_EXITED,          /* ran to its end: see exit_code */
	GS_RUN_TIMED_OUT,       /* ended by the runner at its deadline */
	GS_RUN_INTERRUPTED,     /* ended by the runner on an interrupt */
	GS_RUN_SPAWN_FAILED,    /* could not be started: see spawn_errno */
};

struct gs_run_output {
	enum gs_run_state state;
	int exit_code;          /* exit status, 128+signal; -1 when never reaped normally */
	int spawn_errno;
	char *out;              /* NUL-terminated, at most max_out bytes kept */
	size_t out_len;
	bool out_truncated;
	char *err;
	size_t err_len;
	bool err_truncated;
	uint64_t elapsed_ms;
};

struct gs_runner_opts {
	unsigned fanout;               /* children at once (>= 1) */
	uint64_t deadline_ms;          /* per child, from its start; 0: none */
	uint64_t end_grace_ms;         /* each step of the ending ladder (default 2000) */
	size_t max_out, max_err;       /* kept per child; the rest is read and dropped */
	/* Set asynchronously (SIGINT handler): start nothing more, end the
	 * running children. Checked at least every 100 ms. */
	const volatile sig_atomic_t *interrupted;
	/* Called in the loop when child i is finished (its output complete). */
	void (*finished)(void *ud, size_t i, const struct gs_run_output *o);
	/* Called when the loop wakes up, at most every 100 ms while waiting. */
	void (*tick)(void *ud);
	void *ud;
};

/* Run argvs[0..n) (argv[0] searched in PATH). results[n] is filled in;
 * free each with gs_run_output_free. Returns 0 or -errno for a failure of
 * the loop itself (children started so far are ended and reaped). */
int gs_runner_run(char **const *argvs, size_t n, const struct gs_runner_opts *o, struct gs_run_output *results);
void gs_run_output_free(struct gs_run_output *o);

#endif
