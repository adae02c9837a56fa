/* Who owns a process, from /proc/PID/cgroup (v1, v2 and hybrid): a systemd
 * unit, a container (docker, podman, Kubernetes, LXC/Proxmox, nspawn), a Slurm
 * job or a login session. A container's inner unit is kept too
 * (/lxc/129/ns/system.slice/x.service -> lxc 129, unit x.service). */
#ifndef GS_OWNER_H
#define GS_OWNER_H

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
	char unit[256];      /* unit inside a container (LXC/nspawn), "" when none */
	char cgroup[1024];   /* the cgroup path used (v2 line, else name=systemd) */
	unsigned uid;        /* for user units and sessions; 0 otherwise */
};

/* Classify the text of /proc/PID/cgroup. Returns 0, or -EINVAL when the text
 * has no usable line (owner->kind is then GS_OWNER_NONE). */
int gs_owner_from_cgroup(const char *text, struct gs_owner *ret);

/* "unit", "user-unit", "session", "docker", "podman", "kubernetes", "lxc",
 * "nspawn", "slurm", "none". */
const char *gs_owner_kind_str(enum gs_owner_kind k);

#endif
