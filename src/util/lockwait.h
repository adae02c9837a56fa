/* Taking an exclusive flock(2) with a deadline that cannot be lost: the
 * lock is only ever tried without blocking, and the wait between tries is
 * a poll with a timeout, woken early when the holder closes the lock file.
 * (A one-shot timer armed before a blocking flock() can fire before flock()
 * is entered, which then blocks for ever.) */
#ifndef GS_LOCKWAIT_H
#define GS_LOCKWAIT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The longest sleep between two tries: what a release that no close of the
 * file announces (flock LOCK_UN, the file replaced, no inotify) can cost. */
#define GS_LOCK_POLL_MS 50

/* Lock fd (open on path) exclusively, waiting up to timeout_ms for whoever
 * holds it. waiting(ud), when not NULL, is called once when the lock is
 * found held. Returns 0; -EBUSY when it is still held at the deadline;
 * -EINTR when *interrupted was set (checked between tries; a signal without
 * SA_RESTART ends the sleep); another -errno when flock() itself fails. */
int gs_lock_wait(int fd, const char *path, uint64_t timeout_ms, volatile sig_atomic_t *interrupted,
		 void (*waiting)(void *ud), void *ud);

/* Who holds the flock on fd's file now, as the kernel lists it in
 * /proc/locks (FLOCK ... WRITE PID MAJ:MIN:INODE). Returns 0 with
 * *ret_pid, -ENOENT when no holder is listed, or -errno. */
int gs_lock_holder(int fd, pid_t *ret_pid);

/* "PID 1234 (gpuslate reclaim -y)": the holder of fd's lock for a
 * message, or "" when it is not known. */
void gs_lock_holder_text(int fd, char *buf, size_t len);

#endif
