/* Building the command that runs gpuslate on one host of a fleet.
 *
 * The far side always runs `REMOTE-CMD --remote [options] COMMAND`, rebuilt
 * from the parsed options (never the user's argv: local-only options such as
 * -w, --ssh or --dev-root must not travel, and a reconstructed argv cannot
 * smuggle anything the parser did not accept).
 *
 * Transports (enum gs_transport in inventory.h):
 *   ssh     SSH... -o BatchMode=yes -o ConnectTimeout=N [ssh-opt...] [-p P] [-l U] HOST -- STRING
 *   pct     SSH... VIA -- STRING of: pct exec VMID -- REMOTE...
 *   lxc     SSH... VIA -- STRING of: lxc-attach -n NAME -- REMOTE...
 *   docker  SSH... HOST|VIA -- STRING of: docker exec -i NAME REMOTE...
 *   exec    TEMPLATE-WORDS... REMOTE...   (local argv, no shell, %h already replaced)
 * SSH is $GPUSLATE_SSH or --ssh split into words without a shell (default
 * "ssh"). STRING is every word quoted for a POSIX shell and joined with
 * blanks: OpenSSH hands the command to the remote user's login shell as one
 * string, so gpuslate does the quoting, never the user. pct exec, lxc-attach
 * and docker exec take an argv, so one level of quoting is all there is.
 *
 * The far side must keep stdin open (remote mode ends itself at EOF), so
 * docker gets -i; an exec template must pass stdin through too.
 *
 * Quoting: every word goes inside '...', a ' becomes '\'' . Inside single
 * quotes a POSIX shell takes every byte literally, newline included, but csh
 * and tcsh login shells do not (an unmatched quote at the newline), and no
 * unit name, user or pattern needs one: words with a newline or carriage
 * return are refused (-EINVAL), as are words longer than GS_REMOTE_WORD_MAX.
 * (A NUL cannot occur in a C string argument.) The remote login shell must be
 * POSIX-like (sh, dash, bash, ksh, zsh).
 *
 * Library code: returns 0 or -errno, never prints. */
#ifndef GS_REMOTE_H
#define GS_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "core/request.h"
#include "fleet/inventory.h"

/* A word of the remote command line: far below the kernel's 128 KiB for
 * one argument (the remote shell's -c), room for --expect's largest list
 * (core/expect.h). */
#define GS_REMOTE_WORD_MAX 65536

/* Everything the per-host commands share, made once from the options. */
struct gs_remote_ctx {
	char **ssh;             /* ssh command words, NULL-terminated */
	char **remote_cmd;      /* default remote command words (--remote-cmd or "gpuslate") */
	char **tail;            /* "--remote" and the options and command after remote_cmd */
	uint64_t connect_timeout_ms;
	const struct gs_inventory *inv; /* borrowed; may be NULL */
};

/* Quote one word for a POSIX shell: abc -> 'abc', it's -> 'it'\''s.
 * -EINVAL for a newline, carriage return or an over-long word. */
int gs_sh_quote(const char *word, char **ret);
/* Quote every word and join them with single blanks. */
int gs_sh_join(char *const *words, char **ret);

/* The options part of the remote argv, after the remote command words:
 * --remote, selection and acting options, then the command. req->cmd must be
 * status, reclaim, wait or restore. -EINVAL (with a reason in err) for a word that
 * cannot be quoted. */
int gs_remote_tail(const struct gs_request *req, char ***ret, char *err, size_t errlen);

/* Fill ctx from the options: ssh words from req->ssh_cmd (default "ssh"),
 * remote command from req->remote_cmd (default "gpuslate"), the tail. inv is
 * borrowed. Errors are described in err. */
int gs_remote_ctx_init(struct gs_remote_ctx *ctx, const struct gs_request *req, const struct gs_inventory *inv,
		       char *err, size_t errlen);
void gs_remote_ctx_free(struct gs_remote_ctx *ctx);

/* The local argv that runs gpuslate for host ("host" or "user@host", as
 * listed by -w). A user@ on the command line wins over the inventory's
 * user=. Free with gs_strv_free. */
int gs_remote_argv(const struct gs_remote_ctx *ctx, const char *host, char ***ret, char *err, size_t errlen);
/* The same with this host's own words (NULL-terminated, e.g. the
 * "--expect=..." of a confirmed plan) among the options, before the
 * command word. -EINVAL for a word that cannot be passed. */
int gs_remote_argv_with(const struct gs_remote_ctx *ctx, const char *host, char *const *extra, char ***ret,
			char *err, size_t errlen);

#endif
