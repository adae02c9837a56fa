/* The identities of the NVIDIA device nodes: driver majors from /proc/devices
 * and, for each node under the dev root, its (st_dev, st_ino) and st_rdev. Holders are
 * matched by these identities, never by path text, so bind-mounted or renamed
 * nodes (containers) are found, and tests can use plain files (--dev-root). */
#ifndef GS_DEVSET_H
#define GS_DEVSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/root.h"

enum gs_node_kind {
	GS_NODE_NONE = 0,
	GS_NODE_GPU,     /* /dev/nvidia<minor>, minor 0..247 */
	GS_NODE_CTL,     /* /dev/nvidiactl (195:255) */
	GS_NODE_MODESET, /* /dev/nvidia-modeset (195:254) */
	GS_NODE_UVM,     /* /dev/nvidia-uvm, nvidia-uvm-tools */
	GS_NODE_CAPS,    /* /dev/nvidia-caps/... */
};

struct gs_node_id {
	dev_t dev;       /* st_dev of the node (or plain file) */
	ino_t ino;
	enum gs_node_kind kind;
	unsigned minor;  /* GPU minor for GS_NODE_GPU */
};

struct gs_devset {
	unsigned nvidia_major;  /* 195 unless /proc/devices says otherwise */
	unsigned uvm_major;     /* 0 when not loaded */
	unsigned caps_major;    /* 0 when not loaded */
	struct gs_node_id *ids; /* identities of the nodes found under the dev root */
	size_t n_ids, cap_ids;
};

/* Parse the text of /proc/devices (character section) into the majors. Pure. */
int gs_devset_parse_proc_devices(const char *text, struct gs_devset *ds);

/* The major of the character driver registered as name ("kfd", whose
 * major is dynamic; "drm", 226) in /proc/devices text. -ENOENT when the
 * driver is not loaded. Pure. */
int gs_devset_char_major(const char *text, const char *name, unsigned *ret);

/* Majors from root's /proc/devices, identities of dev root's nvidia<N>,
 * nvidiactl, nvidia-modeset, nvidia-uvm, nvidia-uvm-tools, nvidia-caps/<*>. */
int gs_devset_load(const struct gs_root *root, struct gs_devset *ret);
void gs_devset_free(struct gs_devset *ds);

/* Remember an identity learned elsewhere (e.g. from a holder's fd), so
 * mappings of the same node in other processes match too. */
int gs_devset_add(struct gs_devset *ds, dev_t dev, ino_t ino, enum gs_node_kind kind, unsigned minor);

/* Classify a stat result of an open fd: by st_rdev for character devices with
 * the NVIDIA majors, else by (st_dev, st_ino) against the known identities. */
enum gs_node_kind gs_devset_classify_stat(const struct gs_devset *ds, const struct stat *st, unsigned *ret_minor);
/* Classify a mapping by its (dev, inode) as printed in /proc/PID/maps. */
enum gs_node_kind gs_devset_classify_ino(const struct gs_devset *ds, dev_t dev, ino_t ino, unsigned *ret_minor);

#endif
