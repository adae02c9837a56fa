/* The inventory file: named groups of hosts and how to reach each host.
 * docs/inventory.md describes the format for users; in short:
 *
 *   # comment
 *   [tuning]                                  group header; hosts below join it
 *   gpu[01-04]  user=root port=2222 ssh-opt="-o ProxyJump=bastion"
 *   ct129       via=pve1 pct=129              ssh pve1 -- pct exec 129 -- gpuslate ...
 *   ct130       via=pve1 lxc=web              ssh pve1 -- lxc-attach -n web -- ...
 *   box         docker=trainer                ssh box -- docker exec trainer gpuslate ...
 *   odd         exec="myconnect %h"           command template, %h = host
 *   gpu05       remote-cmd=/opt/gpuslate/bin/gpuslate
 *   @other                                    every host of group other joins too
 *
 * The first word of a host line is a host list (hostlist.h syntax, with
 * @group references to groups defined above); every further word is
 * key=value. Quoting is shell-like but nothing is ever given to a shell:
 * "..." (with \" and \\) and '...' (literal) group blanks into one word.
 * Values that hold argv words (ssh-opt, exec, remote-cmd) are split again
 * into words at blanks, double quotes grouping.
 *
 * The paths (--hosts-file, ~/.config/gpuslate/hosts, /etc/gpuslate/hosts)
 * are the CLI's business. Library code: returns 0 or -errno, never prints. */
#ifndef GS_INVENTORY_H
#define GS_INVENTORY_H

#include <stddef.h>
#include <stdint.h>

#include "fleet/hostlist.h"
#include "util/strv.h"

/* Largest inventory file read. */
#define GS_INVENTORY_MAX_BYTES (4u * 1024u * 1024u)

enum gs_transport {
	GS_TRANSPORT_SSH = 0, /* ssh [opts] [-p port] [-l user] TARGET -- remote-cmd ... */
	GS_TRANSPORT_PCT,     /* ssh ... VIA -- pct exec VMID -- remote-cmd ... */
	GS_TRANSPORT_LXC,     /* ssh ... VIA -- lxc-attach -n NAME -- remote-cmd ... */
	GS_TRANSPORT_DOCKER,  /* ssh ... TARGET -- docker exec NAME remote-cmd ... */
	GS_TRANSPORT_EXEC,    /* exec_argv... remote-cmd ... (no ssh at all) */
};

struct gs_host_entry {
	char *name;            /* host name as listed, without any user@ */
	enum gs_transport transport;
	char *user;            /* user= or a user@ prefix; NULL: ssh's default */
	uint16_t port;         /* port=; 0: ssh's default */
	char **ssh_opts;       /* ssh-opt= words in order, NULL-terminated */
	size_t n_ssh_opts;
	char *via;             /* via=: the host ssh connects to instead of name
	                        * (may hold user@); NULL: name itself */
	uint32_t vmid;         /* pct= (GS_TRANSPORT_PCT) */
	char *container;       /* lxc= or docker= name */
	char **exec_argv;      /* exec= words, %h already replaced; NULL-terminated */
	size_t n_exec_argv;
	char **remote_cmd;     /* remote-cmd= words, NULL-terminated; NULL: "gpuslate" */
	size_t n_remote_cmd;
	unsigned line;         /* line that gave the settings; 0: listed bare only */
};

struct gs_inventory_group {
	char *name;
	struct gs_hostlist members; /* entry names, file order */
	unsigned line;
};

struct gs_inventory {
	char *source;                   /* file name used in messages */
	struct gs_host_entry *entries;  /* parallel to all.hosts */
	size_t n_entries;
	size_t cap_entries;             /* private */
	struct gs_hostlist all;         /* every host, file order; also "@all" */
	struct gs_inventory_group *groups;
	size_t n_groups;
};

/* Read and parse path. Errors: "FILE:LINE: reason" in err (or "FILE: reason"
 * for unreadable or oversized files); -ENOENT etc. from open, -EINVAL for a
 * bad file, -E2BIG, -EFBIG for an oversized file, -ENOMEM. On error *ret is
 * empty (nothing to free). */
int gs_inventory_load(const char *path, struct gs_inventory *ret, char *err, size_t errlen);
/* Parse text; name_for_errors names it in messages. */
int gs_inventory_parse(const char *text, const char *name_for_errors, struct gs_inventory *ret,
		       char *err, size_t errlen);
void gs_inventory_free(struct gs_inventory *inv);

/* The entry for host. A "user@" prefix on host is ignored for the match (the
 * caller decides which user wins; a user given on the command line should).
 * NULL when the inventory (which may be NULL) does not list it. */
const struct gs_host_entry *gs_inventory_find(const struct gs_inventory *inv, const char *host);
/* The group called name (without '@'); "all" is every host. NULL if none. */
const struct gs_hostlist *gs_inventory_group(const struct gs_inventory *inv, const char *name);

/* Append a -w/-x expression to l, resolving @group elements in inv (inv may
 * be NULL: then @group is refused with a message saying an inventory is
 * needed). An unknown group is -EINVAL with "unknown group '@x' in FILE".
 * Group members are plain names: look each up with gs_inventory_find. */
int gs_inventory_hostlist_append(const struct gs_inventory *inv, struct gs_hostlist *l, const char *expr,
				 char *err, size_t errlen);

/* Split s into argv words at blanks; "..." groups (with \" and \\ escapes),
 * nothing else is special (no shell: '$', ';', '\'' stay literal). *ret is
 * NULL-terminated and malloc'd; free it with gs_strv_free. Also fit
 * for GPUSLATE_SSH. -EINVAL for an unterminated quote, -ENOMEM. */
int gs_inventory_split_words(const char *s, char ***ret, size_t *ret_n);

#endif
