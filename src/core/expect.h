/* --expect: the targets an operator confirmed, checked against a fresh plan.
 *
 * A fleet controller asks every host for its plan first (reclaim --dry-run),
 * shows the plans and asks once; only then does it tell each host to act.
 * Between the two, a host's set of targets may change (a new job starts).
 * The controller passes what it showed for that host as
 * `--expect PID:STARTTIME,...` (or `none`), and the host stops nothing when
 * its fresh plan has a target that is not in that list: what was never shown
 * is never stopped. A target that was shown and is gone since is no
 * mismatch (there is nothing left of it to stop).
 *
 * STARTTIME is the process's start time in clock ticks since boot (field 22
 * of /proc/PID/stat), the same the plan identifies a process by, so a PID
 * reused by another process is a mismatch too. An item may name the
 * action shown for it (PID:STARTTIME:ACTION, a plan action word such as
 * signal or stop-unit): a target whose action changed since (a signal that
 * became a unit stop would end the unit's other processes) is a mismatch.
 *
 * The text travels between two gpuslates but arrives as a command-line
 * argument: it is parsed strictly (decimal digits only, no signs, blanks,
 * leading zeros or empty items; PIDs 1 to GS_EXPECT_PID_MAX; no repeats; at
 * most GS_EXPECT_MAX items). Library code: returns 0 or -errno, never prints. */
#ifndef GS_EXPECT_H
#define GS_EXPECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/plan.h"

/* The kernel's PID_MAX_LIMIT (4 * 1024 * 1024 on 64-bit). */
#define GS_EXPECT_PID_MAX 4194304
/* A list of that many fits one remote word (fleet/remote.h's
 * GS_REMOTE_WORD_MAX): "4194304:18446744073709551615:stop-supervised," is
 * 45 bytes. */
#define GS_EXPECT_ITEM_MAX 45
#define GS_EXPECT_MAX 1024

struct gs_expect_item {
	pid_t pid;
	uint64_t starttime;
	char action[24]; /* gs_action_str's word, "" when none was given */
};

struct gs_expect {
	struct gs_expect_item *items; /* NULL when n is 0 ("none") */
	size_t n;
};

/* Parse "none" or "PID:STARTTIME[:ACTION][,PID:STARTTIME[:ACTION]...]". -EINVAL with a
 * one-line reason in err (naming the bad item) for anything else; -ENOMEM.
 * Free with gs_expect_free. */
int gs_expect_parse(const char *text, struct gs_expect *ret, char *err, size_t errlen);
void gs_expect_free(struct gs_expect *e);

/* Does plan p stop only what e lists? 0 if so; -ESTALE with a one-line
 * reason in why ("not the confirmed plan: 1234 (python3) is a new
 * target; nothing was stopped") if p has
 * a target that e does not list (same PID and start time), or one whose
 * action is not the one listed for it. */
int gs_expect_check(const struct gs_expect *e, const struct gs_plan *p, char *why, size_t whylen);

/* gs_action_str's word for a, kept here for the parser (plan.c is not
 * linked into its fuzzer); "unknown" for none. */
const char *gs_expect_action_word(enum gs_action a);

/* The expectation text for a list of targets, as gs_expect_parse reads it:
 * "none" for n == 0. *ret is malloc'd. -EINVAL for a PID out of range. */
int gs_expect_format(const struct gs_expect_item *items, size_t n, char **ret);

#endif
