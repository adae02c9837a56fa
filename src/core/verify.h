/* The "wait" and "verify" stages: poll GPU memory every few milliseconds
 * until each selected GPU is back at its baseline and no process the
 * selection targets holds it, with a deadline. Re-scans holders periodically
 * to catch respawns and leftovers, and to follow what may stay: the memory
 * of the holders left alone as it is now, not as it was when planning (one
 * that ends frees a share the targets' memory must not hide under). Never
 * sleeps a fixed time. */
#ifndef GS_VERIFY_H
#define GS_VERIFY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/plan.h"
#include "core/snapshot.h"

struct gs_gpu_verdict {
	unsigned gpu;            /* snapshot index */
	bool clean;
	bool mem_known;
	uint64_t before, after, baseline; /* bytes */
	bool released;           /* memory reached the baseline */
	/* The last reading had no figure (an Intel GPU, whose memory is its
	 * clients' fdinfo: one without usage stats appeared): not released,
	 * never clean, until a reading has one again. */
	bool figure_lost;
	uint64_t released_ms;    /* since t0, when it did */
	pid_t held_by[16];       /* processes the selection targets that still hold it */
	char held_comm[16][16];  /* their names */
	size_t n_held_by;
	bool holders_gone;       /* every holder exited, memory not yet back */
	bool unattributed;       /* memory above baseline with no holder to blame */
	/* Processes left alone (not protected daemons) that hold memory here,
	 * as the last re-scan found them: the GPU is not free. */
	pid_t others[8];
	char others_comm[8][16];
	uint64_t others_memory[8];  /* bytes */
	size_t n_others;            /* how many there are (more than listed) */
	uint64_t others_total;      /* bytes they hold together */
	/* Memory no live process holds (gs_snapshot_unowned), as the last
	 * re-scan found it: what only the driver keeps. */
	bool unowned_known;
	uint64_t unowned;           /* bytes */
};

struct gs_respawn {
	pid_t pid;
	char comm[64];
	char by[320];            /* "unit ollama.service", "parent 1234 (supervisor)" */
	char stop_with[320];     /* what would stop the restarter ("--include-parent"), "" when unknown */
	/* Seen as a new child of a watched parent with a stopped target's
	 * executable and command line, maybe before it opened the GPU. */
	bool by_identity;
	/* Not a process yet: the unit's manager has its restart scheduled
	 * (pid 0, comm ""; state is "ActiveState/SubState"). */
	bool scheduled;
	char state[96];
};

/* A supervising parent left running (restarter.h), and what it started. */
struct gs_watch_parent {
	pid_t pid;
	uint64_t starttime;
	char comm[64];
	char stop_with[320];
	/* A supervising parent (not an interactive shell, which is watched
	 * but restarts only a loop typed at it): one still alive when the
	 * watch ends is reported (gs_verify_result.alive). */
	bool restarter;
};

/* A supervising parent still running when the watch ended: the GPUs may be
 * clean now, but it may start its program again later than the watch. */
struct gs_alive_restarter {
	pid_t pid;
	char comm[64];
	char stop_with[320];
	bool restarted;          /* it started one again during the watch */
};

/* A unit's or container's cgroup whose manager may restart a target in
 * it (restarter.h): a new process there is looked at too. */
struct gs_watch_cgroup {
	char path[1024];         /* as in /proc/PID/cgroup (v2), below the cgroup mount */
	char by[320];            /* "unit x.service", "docker container <id>" */
	char stop_with[320];
};

/* A stopped target's identity: a new process with both is it, restarted. */
struct gs_watch_ident {
	pid_t parent;            /* the watched parent that started it, 0 for none */
	int cgroup;              /* index into the watched cgroups, -1 for none */
	char exe[512];           /* /proc/PID/exe */
	char *cmdline;           /* the whole command line */
	/* The stopped target's own executable: a new process running it
	 * below the parent (through launchers and wrapper scripts) is the
	 * program restarted, whatever its arguments (a run id, a port). */
	char target_exe[512];
	/* Whose identity it is: the target, or the launcher between it and
	 * the parent (that one outlives the target a moment; it is no respawn). */
	pid_t was;
	uint64_t was_starttime;
};

struct gs_respawn_watch {
	struct gs_watch_parent *parents;
	size_t n_parents;
	struct gs_watch_ident *idents;
	size_t n_idents;
	struct gs_watch_cgroup *cgroups;
	size_t n_cgroups;
	/* The watch is as long as it is only for these parents: once every
	 * one has exited nothing can restart through them, the watch ends. */
	bool parents_only;
	/* Boot time in clock ticks (as /proc/PID/stat's starttime) when the
	 * watch was built, before the stop: only a process started since can
	 * be a restart; 0: any. */
	uint64_t since_ticks;
};
void gs_respawn_watch_free(struct gs_respawn_watch *w);

struct gs_verify_opts {
	uint64_t timeout_ms;
	uint64_t poll_ms;        /* memory poll interval (default 5) */
	uint64_t rescan_ms;      /* holder re-scan interval (default 200) */
	uint64_t t0_ns;          /* when stopping began (release times count from here) */
	volatile sig_atomic_t *interrupted;
	bool keep_waiting_on_respawn; /* `wait`: new holders may still go away */
	/* After the GPUs look clean, keep re-scanning this long for a respawn
	 * (set when a stopped process has a live parent that may restart it). */
	uint64_t respawn_watch_ms;
	const struct gs_selection *sel;
	/* Called about every 200 ms while waiting (progress display). */
	void (*progress)(void *ud, const struct gs_gpu_verdict *v, size_t n, uint64_t elapsed_ms);
	void *progress_ud;
	/* Old targets, to tell a respawn from a leftover, and what was stopped. */
	const struct gs_plan *old_plan;
	const struct gs_snapshot *before;
	/* Supervising parents to watch for a restarted target (NULL: none). */
	const struct gs_respawn_watch *watch;
};

struct gs_verify_result {
	struct gs_gpu_verdict *gpus;
	size_t n_gpus;
	struct gs_respawn *respawns;
	size_t n_respawns;
	bool clean;              /* the selection is gone and memory at the baseline */
	bool others_hold;        /* ... but processes left alone hold memory (n_others) */
	bool timed_out;
	bool interrupted;
	bool driver_failed;
	char driver_error[256];
	int error;               /* the -errno that ended the wait early (driver_failed) */
	bool memory_unverified;  /* no memory figures (no NVML): holders only */
	uint64_t waited_ms;
	/* The respawn watch this run asked for (gs_verify_opts): how long the
	 * GPUs had to stay clean before the verdict; 0 none. */
	uint64_t respawn_watch_ms;
	bool begun;
	int tick_error;          /* first error seen by gs_verify_tick */
	bool watched_parents_gone; /* every watched parent exited (the last re-scan) */
	/* The supervising parents alive at the last re-scan. */
	struct gs_alive_restarter *alive;
	size_t n_alive;
};

/* Set up the per-GPU state (before stopping starts), so that memory can be
 * polled while the stop stage waits on its targets and release times are
 * measured from the signal, not from the end of the grace period. */
int gs_verify_begin(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *ret);
/* Poll memory once (the stop stage calls this on its beat). */
int gs_verify_tick(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *r);
/* Wait until clean, a respawn, the deadline, an interruption or a driver
 * failure; fills the verdict. Calls gs_verify_begin itself if needed. */
int gs_verify_wait(struct gs_discover *d, const struct gs_verify_opts *o, struct gs_verify_result *ret);
void gs_verify_result_free(struct gs_verify_result *r);

#endif
