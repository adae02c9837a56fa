/* Host list expressions in the Slurm/pdsh syntax, for -w and -x.
 *
 *   gpu[01-16,20]            ranges and single numbers; zero padding is kept:
 *                            the lower bound's digits set the width, the upper
 *                            bound's do not, as Slurm and pdsh expand them
 *                            (gpu[08-10] -> gpu08 gpu09 gpu10; n[1-010] -> n1..n10)
 *   rack[1-2]-gpu[01-02]     several bracket groups: cartesian product, the last
 *                            group varying fastest
 *   root@gpu[1-2],login1     comma lists at top level (commas inside brackets
 *                            belong to the range); a user@ prefix stays with every
 *                            host expanded from that element; empty elements
 *                            (n1,,n2 or a trailing ',') are skipped
 *   "gpu1 gpu2\ngpu3"        whitespace and newlines separate too (-w - reads
 *                            standard input); '#' starts a comment to end of line
 *   @tuning                  a group reference, resolved by a caller-supplied
 *                            function (the inventory); refused without one
 *
 * Names may contain ASCII letters, digits, '.', '-' and '_' (the user part the
 * same); a name never starts with '-' (ssh would read it as an option). Every
 * other character (spaces, quotes, '$', ';', backticks, '/', ':') is refused,
 * so a host name can never be interpreted by a remote shell. At most
 * GS_HOSTLIST_MAX hosts: the count is computed before anything is expanded,
 * so n[0-99999999] is refused at once without allocating it.
 *
 * Lists are ordered and duplicate-free (first occurrence wins). Functions
 * return 0 or -EINVAL (bad expression), -E2BIG (too many hosts), -ENOMEM; on
 * error a one-line message naming the offending element is written to err
 * (err may be NULL). */
#ifndef GS_HOSTLIST_H
#define GS_HOSTLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GS_HOSTLIST_MAX 65536
/* Longest host part (DNS limit) and user part accepted in a name. */
#define GS_HOSTNAME_MAX 253
#define GS_USERNAME_MAX 64

struct gs_hostlist {
	char **hosts;   /* n entries, each "host" or "user@host" */
	size_t n;
	/* private: capacity and a hash index of hosts, so lookups, dedupe and
	 * exclude stay linear for 65536 hosts */
	size_t cap;
	uint32_t *slots; /* index + 1, 0 = empty */
	size_t nslots;
};

#define GS_HOSTLIST_INIT { 0 }

/* Resolves "@name" elements: append the members of group name (without the
 * '@') to into. Returns 0 or -errno with a message in err. */
typedef int (*gs_hostlist_resolve_fn)(void *userdata, const char *name,
				      struct gs_hostlist *into, char *err, size_t errlen);

/* ret is initialised here; on error it is left empty (nothing to free). */
int gs_hostlist_parse(const char *expr, struct gs_hostlist *ret, char *err, size_t errlen);
/* Parse expr and append its hosts to l (repeated -w), skipping ones already
 * there. On a parse error l is unchanged. */
int gs_hostlist_append(struct gs_hostlist *l, const char *expr, char *err, size_t errlen);
/* The same, with "@name" elements passed to resolve (NULL: refused). */
int gs_hostlist_append_ex(struct gs_hostlist *l, const char *expr, gs_hostlist_resolve_fn resolve,
			  void *userdata, char *err, size_t errlen);
/* Append one host as it is (no expansion, no validation); 0 if it was already
 * there. -E2BIG beyond GS_HOSTLIST_MAX. */
int gs_hostlist_add(struct gs_hostlist *l, const char *host);
/* Append every host of src not already in l. */
int gs_hostlist_merge(struct gs_hostlist *l, const struct gs_hostlist *src);
/* Remove from l every host listed in x (-x). An entry of x without a user@
 * matches the host under any user; "root@gpu1" matches only "root@gpu1". */
int gs_hostlist_exclude(struct gs_hostlist *l, const struct gs_hostlist *x);
/* Index of host in l (exact string), or -1. */
ssize_t gs_hostlist_index(const struct gs_hostlist *l, const char *host);
void gs_hostlist_free(struct gs_hostlist *l);

/* Whether s is one valid name: [user@]host with the rules above, no brackets. */
bool gs_hostname_valid(const char *s);

/* Fold hosts into a compact expression, the way dshbak -c does: hosts that
 * differ only in their last number are grouped and written as ranges,
 * numerically sorted, padding kept: gpu01..gpu12,gpu14 -> "gpu[01-12,14]".
 * Groups are sorted by prefix; duplicates are dropped. For valid names the
 * result parses back to the same set. *ret is malloc'd ("" for n == 0). */
int gs_hostlist_fold(char *const *hosts, size_t n, char **ret);

#endif
