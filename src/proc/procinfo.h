/* Parsers for /proc/PID/stat and /proc/PID/status, and a reader that fills one
 * struct per process through a PID directory fd. The parsers are pure
 * functions over text so that unit tests and fuzzers can feed them anything. */
#ifndef GS_PROCINFO_H
#define GS_PROCINFO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "proc/owner.h"

#define GS_PF_KTHREAD 0x00200000u /* task->flags bit of kernel threads */

struct gs_pidstat {
	pid_t pid;
	char comm[64];           /* text between the first '(' and the LAST ')' */
	char state;              /* R S D Z T t X I ... */
	pid_t ppid;
	pid_t pgrp;
	pid_t session;
	unsigned flags;          /* field 9 */
	uint64_t starttime;      /* field 22, clock ticks since boot */
};

struct gs_pidstatus {
	uid_t uid;               /* real uid (first of Uid:) */
	pid_t nspid;             /* innermost NSpid, equals pid when not in a child ns */
	bool has_nspid;
	/* SigBlk:, SigIgn:, SigCgt: (bit n-1 for signal n, the first 64
	 * signals): blocked by the main thread, ignored, caught by a handler.
	 * has_sigmasks only when all three were read. */
	bool has_sigmasks;
	uint64_t sig_blk, sig_ign, sig_cgt;
};

/* What the kernel does with a SIGTERM sent from gpuslate's namespace. */
enum gs_term_fate {
	GS_TERM_UNKNOWN,     /* dispositions not read: the ladder as usual */
	GS_TERM_DELIVERED,   /* a handler, the default action, or blocked for now */
	GS_TERM_IGNORED,     /* set to SIG_IGN and not blocked: dropped */
	/* PID 1 of its own PID namespace with no handler and not blocked: the
	 * kernel drops signals from outside that the init did not ask for */
	GS_TERM_NS_INIT,
};

/* Parse the text of /proc/PID/stat. Returns 0 or -EINVAL. */
int gs_parse_pidstat(const char *text, struct gs_pidstat *ret);
/* Parse the text of /proc/PID/status (Uid:, NSpid:, SigBlk:, SigIgn:,
 * SigCgt:). Returns 0 or -EINVAL (no valid Uid:, a bad NSpid:); masks that
 * do not parse only leave has_sigmasks false. */
int gs_parse_pidstatus(const char *text, struct gs_pidstatus *ret);

/* Would a SIGTERM be dropped? Blocked counts as delivered: the handler may
 * change before it is unblocked, as the kernel itself reasons. */
enum gs_term_fate gs_pidstatus_term_fate(const struct gs_pidstatus *s);
static inline bool gs_term_futile(enum gs_term_fate f)
{
	return f == GS_TERM_IGNORED || f == GS_TERM_NS_INIT;
}
/* "ignored", "namespace-init", NULL for the others (docs/json.md). */
const char *gs_term_fate_str(enum gs_term_fate f);

/* The fate of a SIGTERM to pid now, from a fresh /proc/PID/status, checked
 * against the start time afterwards (a reused PID answers -ESRCH). Returns 0
 * or -errno. */
int gs_term_fate_read(int proc_fd, pid_t pid, uint64_t starttime, enum gs_term_fate *ret);
/* Is the process the init of its own PID namespace (the last NSpid field
 * is 1)? 1 or 0 from a fresh /proc/PID/status checked against the start
 * time, or -errno (-ESRCH for a reused PID). */
int gs_pidns_init_read(int proc_fd, pid_t pid, uint64_t starttime);

struct gs_procinfo {
	struct gs_pidstat st;
	struct gs_pidstatus status;
	char user[64];           /* name from getpwuid_r, else the number */
	char name[64];           /* basename of argv[0], else comm */
	/* argv joined with spaces, bytes as written (outputs escape them), CUT to fit: for
	 * tables only. Selection reads the whole line (gs_procinfo_read_cmdline). */
	char cmdline[512];
	size_t argv0_len;        /* argv[0] is cmdline[0..argv0_len) (what NVML names) */
	char wchan[64];          /* only filled for state D */
	struct gs_owner owner;
	/* The executable (/proc/PID/exe): what a process cannot rename. comm
	 * and argv are the process's own words (PR_SET_NAME, exec -a). */
	bool exe_ok;             /* exe_name was read */
	char exe_name[64];       /* basename of the path, " (deleted)" removed */
	/* exe_uid and exe_mode were read (gs_procinfo_read_exe_stat): only
	 * for processes that claim a protected name, since a stat of the
	 * executable reaches its file system (a hung NFS or FUSE server). */
	bool exe_stat_ok;
	uid_t exe_uid;           /* owner of the executable file */
	mode_t exe_mode;
	/* Its PID namespace (/proc/PID/ns/pid): signalling the init of a
	 * namespace (status.nspid 1) ends every process in it. */
	bool pidns_ok;
	dev_t pidns_dev;
	ino_t pidns_ino;
};

/* Read stat, status, cmdline and cgroup of one process through its /proc/PID
 * directory fd. Returns 0, -ENOENT/-ESRCH when the process is gone, -EACCES. */
int gs_procinfo_read(int pid_dirfd, pid_t pid, struct gs_procinfo *ret);

/* Owner and mode of the executable (/proc/PID/exe), into exe_uid and
 * exe_mode (exe_stat_ok set). Cached attributes only: never waits on a
 * network or FUSE server. Returns 0 or -errno. */
int gs_procinfo_read_exe_stat(int pid_dirfd, struct gs_procinfo *pi);

/* The kernel caps argv plus the environment at 3/4 of _STK_LIM (6 MiB),
 * whatever RLIMIT_STACK says; /proc/PID/cmdline can run into the
 * environment (setproctitle), never past that. */
#define GS_CMDLINE_MAX (6u * 1024 * 1024 + 4096)

/* The whole command line through a /proc/PID directory fd: arguments joined
 * by spaces, every other byte as the process wrote it, NUL-terminated and
 * malloc'd in *ret. Returns 0 (an empty string for kernel threads and
 * zombies), or -errno. */
int gs_procinfo_read_cmdline(int pid_dirfd, char **ret);

/* Read only /proc/PID/stat (the cheap identity check). */
int gs_pidstat_read(int proc_fd, pid_t pid, struct gs_pidstat *ret);

#endif
