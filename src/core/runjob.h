/* `gpuslate run`'s second half: after a clean reclaim (core/reclaim.c),
 * run COMMAND while the reclaim lock stays held, watch the selected GPUs
 * for intruders, pass signals on to COMMAND, and report how it ended.
 * It prints nothing: the caller's hooks report intruders as they appear.
 *
 * COMMAND runs in gpuslate's own process group with stdin, stdout, stderr,
 * environment and credentials inherited: at a terminal it is in the
 * foreground group, so it can read the terminal and Ctrl-C reaches it
 * directly (gpuslate then only waits for it). A SIGINT, SIGTERM or SIGHUP
 * sent to gpuslate alone (kill, a scheduler) is passed on to COMMAND.
 * gpuslate becomes a child subreaper, so COMMAND's descendants that
 * double-fork stay below it and are never taken for intruders. */
#ifndef GS_RUNJOB_H
#define GS_RUNJOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/snapshot.h"
#include "proc/ptable.h"

struct gs_reclaim;
struct gs_request;

/* A new holder of a selected GPU outside COMMAND's tree. */
struct gs_intruder {
	pid_t pid;
	uint64_t starttime;
	uid_t uid;
	char user[64];
	char comm[64];
	char cmdline[256];
	unsigned gpu;             /* NVML index of the first selected GPU it holds */
	bool mem_known;
	uint64_t mem;             /* bytes, NVML's figure */
	uint64_t seen_ms;         /* after COMMAND started */
	/* --guard: "stopped", "not stopped: <why>"; else "left running". */
	char outcome[160];
	bool stopped;
};

struct gs_runjob_hooks {
	void *ud;
	/* An intruder is seen (once per process). */
	void (*intruder)(void *ud, const struct gs_intruder *in);
	/* --guard acted on it (in->outcome says how it went). */
	void (*guarded)(void *ud, const struct gs_intruder *in);
};

struct gs_runjob {
	bool started;             /* COMMAND was started */
	pid_t pid;
	uint64_t started_unix_ms;
	uint64_t run_ms;
	int exit_code;            /* when it exited */
	int term_signal;          /* when a signal ended it, else 0 */
	int status;               /* the shell's status: exit code, 128+signal, 126/127 exec failure */
	int exec_errno;           /* exec failed: why */
	int forwarded[3];         /* signals passed on, by gs_runjob_signal(i): how many times */
	struct gs_intruder *intruders;
	size_t n_intruders;
	int watch_error;          /* last intruder scan failure (-errno), 0 when none */
};

/* Note the signal dispositions gpuslate was started with, before the
 * reclaim installs its handlers: COMMAND gets the ignored ones ignored. */
void gs_runjob_save_dispositions(void);

/* Where execvp would find COMMAND (argv[0]): a name with a '/' as it is,
 * else the first executable regular file of that name along PATH (the
 * default search path when PATH is unset). Asked before the reclaim, so a
 * typo stops nothing (issue 26). 0 with the path in buf; -ENOENT (the
 * shell's 127) or -EACCES (126: found, but not an executable file);
 * -ENOEXEC (127): a script whose "#!" interpreter does not exist, named in
 * buf (a venv whose python is gone). */
int gs_runjob_resolve(const char *file, char *buf, size_t len);

/* Run req->run_argv after the clean reclaim rc (its lock held, its
 * discovery used for the intruder scans). Returns 0 with ret filled when
 * COMMAND was started or its exec failed (ret->exec_errno); -EINTR when
 * a signal reached gpuslate after the reclaim (COMMAND not started);
 * -errno when it could not be started at all. */
int gs_runjob_run(struct gs_reclaim *rc, const struct gs_request *req, const struct gs_runjob_hooks *hooks,
		  struct gs_runjob *ret);
void gs_runjob_free(struct gs_runjob *j);

/* The signal counted in gs_runjob.forwarded[i]: SIGINT, SIGTERM, SIGHUP. */
int gs_runjob_signal(int i);

/* Identities already accounted for: (pid, start time) pairs. */
struct gs_pidset {
	struct { pid_t pid; uint64_t starttime; } *v;
	size_t n, cap;
};
bool gs_pidset_has(const struct gs_pidset *s, pid_t pid, uint64_t starttime);
int gs_pidset_add(struct gs_pidset *s, pid_t pid, uint64_t starttime);
void gs_pidset_free(struct gs_pidset *s);

/* Is holder h an intruder? A live compute holder of a GPU in sel (or a
 * process with the driver open that NVML lists with memory on one) that is
 * not already known (one the reclaim left alone, one reported), not
 * in COMMAND's tree (below child, or seen there before: tree), and not
 * below gpuslate itself (self: its helpers, orphans it reaped as subreaper).
 * Pure: from the snapshot's holder and the process table. */
bool gs_runjob_is_intruder(const struct gs_holder *h, const struct gs_gpuset *sel, const struct gs_ptable *pt,
			   pid_t self, pid_t child, const struct gs_pidset *known, const struct gs_pidset *tree);

#endif
