/* Who owns a process, from /proc/PID/cgroup (v1, v2 and hybrid): a systemd
 * unit, a container (docker, podman, Kubernetes, LXC/Proxmox, nspawn), a Slurm
 * job or a login session. A container's inner unit is kept too
 * (/lxc/129/ns/system.slice/x.service -> lxc 129, unit x.service). */
#ifndef GS_OWNER_H
#define GS_OWNER_H

#include <stdbool.h>
#include <stddef.h>

enum gs_owner_kind {
	GS_OWNER_NONE = 0,   /* root cgroup, kernel threads, unknown */
	GS_OWNER_UNIT,       /* system service or scope: /system.slice/x.service */
	GS_OWNER_USER_UNIT,  /* user@UID.service/.../x.service */
	GS_OWNER_SESSION,    /* /user.slice/user-UID.slice/session-N.scope */
	GS_OWNER_DOCKER,
	GS_OWNER_PODMAN,
	GS_OWNER_KUBERNETES,
	GS_OWNER_LXC,        /* LXC, LXD, Incus and Proxmox CTs */
	GS_OWNER_NSPAWN,
	GS_OWNER_SLURM,
};

struct gs_owner {
	enum gs_owner_kind kind;
	char name[256];      /* unit name, container id (full), pod uid, CT name/vmid, job id, session id */
	/* The unit inside a container (LXC/nspawn): the outermost one below the
	 * container's root. For a host unit (GS_OWNER_UNIT) the innermost unit
	 * of the subtree it delegated, when the process lives in one. "" when none. */
	char unit[256];
	char cgroup[1024];   /* the cgroup path used (v2 line, else name=systemd) */
	unsigned uid;        /* for user units and sessions; 0 otherwise */
	/* The process lives below a delegation boundary of its unit (a unit
	 * nested in a unit: a container's or a CI runner's own manager runs
	 * there). That unit's manager does not manage it: stopping the unit
	 * would take the whole subtree, and a unit of the inner name belongs to
	 * the inner manager, never to the host's. */
	bool delegated;
	/* Where the unit's cgroup is in `cgroup`, as its own manager names it
	 * (for a unit inside a container: relative to the container's root);
	 * unit_cg_len 0 when that cannot be said (no unit, or a path that
	 * leaves the reader's cgroup namespace). See gs_owner_unit_cgroup. */
	unsigned short unit_cg_start, unit_cg_len;
};

/* Classify the text of /proc/PID/cgroup. Returns 0, or -EINVAL when the text
 * has no usable line (owner->kind is then GS_OWNER_NONE). */
int gs_owner_from_cgroup(const char *text, struct gs_owner *ret);

/* The cgroup of the owner's unit (the host unit, or the unit inside an LXC
 * container) as that unit's manager reports it in ControlGroup=:
 * "/system.slice/ollama.service". Returns 0, or -ENOENT when there is none
 * to compare with (see unit_cg_len). */
int gs_owner_unit_cgroup(const struct gs_owner *o, char *buf, size_t len);

/* The manager of a user's units (systemd --user of UID), named in the one
 * string where other units name the LXC/Proxmox CT they run in (plan.h
 * gs_unit_stop.container, the restarter's, the stopped-state record's):
 * "user/UID". No CT id or name has a '/' (a cgroup path component never
 * does), so the two are never mistaken. gs_unit_scope_user returns buf. */
const char *gs_unit_scope_user(char *buf, size_t len, unsigned uid);
bool gs_unit_scope_is_user(const char *container, unsigned *ret_uid);
/* For people: " in CT 129", " of user 1000", "" on the host (escaped). */
const char *gs_unit_scope_text(const char *container, char *buf, size_t len);

/* Docker, podman, a Kubernetes pod, LXC/Proxmox or nspawn: what --container
 * names, and a runtime that may restart what is killed from outside. */
bool gs_owner_kind_is_container(enum gs_owner_kind k);

/* "unit", "user-unit", "session", "docker", "podman", "kubernetes", "lxc",
 * "nspawn", "slurm", "none". */
const char *gs_owner_kind_str(enum gs_owner_kind k);

#endif
