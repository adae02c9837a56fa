/* The identities of the GPU device nodes: driver majors from /proc/devices
 * and, for each node under the dev root, its (st_dev, st_ino) and st_rdev.
 * NVIDIA's nodes are found by name and major; AMD/Intel DRM nodes
 * (dri/card<N>, dri/renderD<M>) only as the DRM backend names them
 * (gs_devset_add_drm), and /dev/kfd by its dynamic major. Holders are
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
	GS_NODE_DRM,     /* dri/card<N> or dri/renderD<M> of an AMD/Intel GPU: minor = its DRM backend index */
	GS_NODE_KFD,     /* /dev/kfd (AMD ROCm compute, every AMD GPU) */
};

#define GS_DEVSET_DRM_MAX 64u /* DRM GPUs whose nodes are matched by rdev */

struct gs_node_id {
	dev_t dev;       /* st_dev of the node (or plain file) */
	ino_t ino;
	enum gs_node_kind kind;
	unsigned minor;  /* GPU minor for GS_NODE_GPU, DRM backend index for GS_NODE_DRM */
};

/* A DRM node of ours by its st_rdev (real char devices: 226:<minor>). */
struct gs_drm_rdev {
	dev_t rdev;
	unsigned gpu;    /* DRM backend index */
};

struct gs_devset {
	unsigned nvidia_major;  /* 195 unless /proc/devices says otherwise */
	unsigned uvm_major;     /* 0 when not loaded */
	unsigned caps_major;    /* 0 when not loaded */
	unsigned kfd_major;     /* "kfd" in /proc/devices, 0 when not loaded */
	struct gs_drm_rdev drm[2 * GS_DEVSET_DRM_MAX]; /* card and render node of each DRM GPU */
	size_t n_drm;
	bool drm_gpus;          /* gs_devset_add_drm was called: /dev/kfd is ours */
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

/* Record the nodes of DRM GPU gpu (its backend index): their st_rdev as
 * sysfs gives them (card_dev/render_dev, 0 when unknown), and the identity
 * of <dev root>/dri/card<card> and dri/renderD<render_minor> (render_minor
 * UINT_MAX: none), plain files in tests. Nodes of other cards (a BMC's
 * display, nvidia-drm) are never recorded, so their holders are not GPU
 * holders. Also records <dev root>/kfd once (by the "kfd" major when it is
 * a char device, by name when a plain file). Missing nodes are normal. */
int gs_devset_add_drm(struct gs_devset *ds, int dev_fd, unsigned gpu, unsigned card, dev_t card_dev,
		      unsigned render_minor, dev_t render_dev);

/* Remember an identity learned elsewhere (e.g. from a holder's fd), so
 * mappings of the same node in other processes match too. */
int gs_devset_add(struct gs_devset *ds, dev_t dev, ino_t ino, enum gs_node_kind kind, unsigned minor);

/* Classify a stat result of an open fd: by st_rdev for character devices with
 * the NVIDIA majors, else by (st_dev, st_ino) against the known identities. */
enum gs_node_kind gs_devset_classify_stat(const struct gs_devset *ds, const struct stat *st, unsigned *ret_minor);
/* Classify a mapping by its (dev, inode) as printed in /proc/PID/maps. */
enum gs_node_kind gs_devset_classify_ino(const struct gs_devset *ds, dev_t dev, ino_t ino, unsigned *ret_minor);

#endif
