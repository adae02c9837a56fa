/* A process is a reference, never a bare PID: (pid, start time, pidfd).
 * A pidfd is opened only while /proc/PID/stat still shows the start time
 * recorded at discovery, so a reused PID is never signalled. On kernels
 * without pidfd_open, kill(2) is used after re-checking the start time. */
#ifndef GS_PIDREF_H
#define GS_PIDREF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct gs_pidref {
	pid_t pid;
	uint64_t starttime;  /* field 22 of /proc/PID/stat at discovery */
	int pidfd;           /* -1 when not open (or no pidfd support) */
	bool no_pidfd;       /* kernel lacks pidfd_open: kill(2) guarded by start time */
	/* Verified, then its pidfd closed to stay within the open-file limit:
	 * each signal goes through a pidfd opened for it (the start time
	 * checked again), exit is read from /proc/PID/stat. */
	bool parked;
};

/* Open a pidfd for pid and verify the start time after opening it.
 * Returns 0; -ESRCH if the process is gone or the PID now belongs to another
 * process (start time differs); -EPERM/-EACCES; other -errno.
 * proc_fd is the /proc directory fd of the root context. */
int gs_pidref_open(struct gs_pidref *ref, int proc_fd, pid_t pid, uint64_t starttime);

/* Close the pidfd of a verified reference but keep its identity (see
 * parked). Returns 0, or -EBADF when ref holds no pidfd. */
int gs_pidref_park(struct gs_pidref *ref);

/* Hold a pidfd again for a parked reference, opened while the recorded
 * start time still matches. Returns 0; -ESRCH when the process is gone
 * (the reference is then closed); other -errno (EMFILE) leaves it parked. */
int gs_pidref_unpark(struct gs_pidref *ref, int proc_fd);

/* Send sig. Returns 0, -ESRCH (already gone), -EPERM; for a parked
 * reference also what opening its pidfd failed with (-EMFILE). Never
 * signals a process whose identity could not be verified. */
int gs_pidref_kill(struct gs_pidref *ref, int proc_fd, int sig);

/* Wait until the process has exited (pidfd readable) or timeout_ms passes.
 * Returns 1 exited, 0 still running, -errno. timeout_ms 0 polls once. */
int gs_pidref_wait_exit(struct gs_pidref *ref, int proc_fd, uint64_t timeout_ms);

/* Non-blocking: 1 if the process is gone or a zombie, 0 if alive. */
int gs_pidref_exited(struct gs_pidref *ref, int proc_fd);

void gs_pidref_close(struct gs_pidref *ref);

#endif
