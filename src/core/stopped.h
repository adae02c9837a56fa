/* The state file of what reclaims on this host stopped through a manager
 * (systemd units on the host, units inside an LXC/Proxmox container, and
 * docker/podman containers stopped through their runtime), so that
 * `gpuslate restore` (and `gpuslate run --restore`) can start them again.
 *
 * The file is JSON (docs/json.md, "The stopped-state file"): {schema_version,
 * stopped: [record...]}. It drives commands run as root, so it is written
 * atomically (a temporary file, then rename), mode 0600, and read only when
 * it is a regular file owned by root or by us that nobody else may write.
 *
 * Lifetime: each reclaim that stopped something through a manager merges its
 * records in (the same unit or container stopped again replaces its older
 * record); a reclaim that stopped nothing leaves the file alone; restore
 * removes the records it started or found running again and keeps the
 * others (a failed start can be retried). An empty set removes the file.
 *
 * Library code: returns 0 or -errno, never prints. */
#ifndef GS_STOPPED_H
#define GS_STOPPED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_STOPPED_SCHEMA_VERSION 1
/* Larger files are refused: a host does not stop thousands of units. */
#define GS_STOPPED_MAX_BYTES (1024u * 1024u)
#define GS_STOPPED_MAX_RECORDS 4096u

enum gs_stopped_kind {
	GS_STOPPED_UNIT,       /* a systemd unit (runtime "systemd") */
	GS_STOPPED_CONTAINER,  /* a docker or podman container */
	/* a program of a process supervisor (runtime "supervisord", "runit"
	 * or "s6"): name is GROUP:NAME or the service directory */
	GS_STOPPED_SUPERVISED,
};

struct gs_stopped_rec {
	enum gs_stopped_kind kind;
	char runtime[16];        /* "systemd", "docker", "podman", "supervisord", "runit", "s6" */
	char name[256];          /* unit name; container name ("" unknown) */
	char id[128];            /* container id; "" for a unit */
	char container[64];      /* LXC/Proxmox CT of a unit inside one; "" on the host */
	int64_t stopped_at;      /* unix seconds */
	int64_t reclaim_at;      /* unix seconds the stopping reclaim started */
	char reason[256];        /* that reclaim's --reason, "" none */
	/* The state before the stop, as the manager said: ActiveState
	 * ("active") or the runtime's ("running"); UnitFileState ("enabled",
	 * "static", ...), "" unknown. Restore starts what was running; it
	 * never changes whether a unit is enabled (reclaim does not either). */
	char state_before[32];
	char enabled_before[32];
	/* supervisord's: how supervisorctl reaches it ("-c" FILE or "-s"
	 * URL); "" for the others. */
	char control_opt[4];
	char control[1024];
};

struct gs_stopped {
	struct gs_stopped_rec *recs;
	size_t n, cap;
};

/* GPUSLATE_STOPPED_FILE; else beside GPUSLATE_STATE_FILE (its path +
 * ".stopped"), so that whoever moves the last-reclaim record moves this one
 * with it; else /run/gpuslate.stopped for root, /tmp/gpuslate-UID.stopped. */
const char *gs_stopped_path(char *buf, size_t len);

/* Parse the file's text. Every field is checked (names a manager would
 * take, no control bytes, known kinds and runtimes): -EINVAL with the
 * reason in err. */
int gs_stopped_parse(const char *text, size_t len, struct gs_stopped *ret, char *err, size_t errlen);

/* Load path: a missing file is an empty set (0). -EPERM (with the reason)
 * when it is not a regular file owned by root or us, or group/world
 * writable; -EINVAL when it does not parse. */
int gs_stopped_load(const char *path, struct gs_stopped *ret, char *err, size_t errlen);

/* Write the set to path atomically, 0600; an empty set removes the file. */
int gs_stopped_save(const char *path, const struct gs_stopped *s);

/* Merge one record in: one of the same identity (kind, runtime, CT, unit
 * name or container id) is replaced. */
int gs_stopped_add(struct gs_stopped *s, const struct gs_stopped_rec *r);
/* Remove record i (order kept). */
void gs_stopped_remove(struct gs_stopped *s, size_t i);
bool gs_stopped_same(const struct gs_stopped_rec *a, const struct gs_stopped_rec *b);

/* Is this a name the file may hold for that field? (Also used by the
 * parser.) Units: systemd's characters; containers: a runtime id or name;
 * CT ids: what pct and lxc-attach take. Never empty, never starting '-'. */
bool gs_stopped_name_ok(const char *s, size_t max);

const char *gs_stopped_kind_str(enum gs_stopped_kind k);
void gs_stopped_free(struct gs_stopped *s);

#endif
