/* AMD KFD (ROCm compute): the topology under /sys/class/kfd/kfd/topology
 * (which GPU a gpu_id is) and the per-process VRAM under
 * /sys/class/kfd/kfd/proc/<pid>/vram_<gpu_id>. KFD knows the processes that
 * opened /dev/kfd and allocated through it, like NVML's compute list; a
 * forked child has no KFD process of its own (KFD binds to the creator's mm)
 * but can keep the creator's memory through inherited fds. Readers take the
 * sys root's directory fd (--sys-root); parsers are pure. docs/amd-intel.md. */
#ifndef GS_KFD_H
#define GS_KFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/pci.h"

struct gs_kfd_node {
	unsigned id;             /* topology/nodes/<id> */
	uint32_t gpu_id;         /* topology/nodes/<id>/gpu_id: the <gpu_id> of vram_<gpu_id> */
	uint32_t vendor_id, device_id;
	uint32_t simd_count;     /* 0 on CPU nodes */
	bool location_known;     /* domain and location_id were given */
	uint32_t domain;
	/* pci_dev_id(): bus << 8 | device << 3 | function, with the partition's
	 * node id ORed into the low bits when one device has several nodes. */
	uint32_t location_id;
	bool render_minor_known;
	uint32_t render_minor;   /* drm_render_minor: /dev/dri/renderD<minor> */
	uint64_t unique_id;      /* 0 when not reported */
};

/* Parse the text of topology/nodes/<id>/properties ("name value" lines, all
 * decimal) into ret (id and gpu_id left 0). Unknown names are ignored; a
 * known one whose value is not a number leaves that fact unknown. Returns 0,
 * -EINVAL for NULL, -EBADMSG when no line parses. */
int gs_kfd_parse_properties(const char *text, struct gs_kfd_node *ret);

/* The PCI address the node's domain and location_id say, taken literally. */
int gs_kfd_node_pci(const struct gs_kfd_node *n, struct gs_pci_addr *ret);

/* A DRM card as the KFD mapping needs it. */
struct gs_kfd_card {
	struct gs_pci_addr pci;
	bool render_minor_known;
	uint32_t render_minor;
};

/* The card a GPU node belongs to (index into cards), -ENOENT if none: by
 * drm_render_minor first, then by exact PCI address, then, for a partition
 * node (location_id with its node id in the function bits), by the one card
 * at that bus and device with function 0. Anything ambiguous is -ENOENT:
 * memory is then shown unattributed rather than put on a wrong GPU. */
int gs_kfd_node_card(const struct gs_kfd_node *n, const struct gs_kfd_card *cards, size_t n_cards);

/* The GPU nodes of <sys>/class/kfd/kfd/topology/nodes (CPU nodes, gpu_id 0,
 * are skipped), sorted by id; *ret is malloc'd. -ENOENT without KFD (no
 * amdgpu, or built without HSA_AMD); 0 with *ret_n 0 when KFD has no GPU. */
int gs_kfd_topology_load(int sys_fd, struct gs_kfd_node **ret, size_t *ret_n);

/* The pids that have a KFD process (<sys>/class/kfd/kfd/proc/<pid>), sorted.
 * These are host pids, and a listed pid may be dead: KFD keeps the process
 * until the last reference to it (an fd a child inherited) is gone. *ret is
 * malloc'd; -ENOENT without KFD. */
int gs_kfd_proc_list(int sys_fd, pid_t **ret, size_t *ret_n);

struct gs_kfd_vram {
	uint32_t gpu_id;
	bool known;              /* false: unreadable (a device cgroup denies it) */
	uint64_t bytes;
};

/* VRAM of one KFD process per GPU (its vram_<gpu_id> files); *ret is
 * malloc'd. -ENOENT when pid has no KFD process (any more). */
int gs_kfd_proc_vram(int sys_fd, pid_t pid, struct gs_kfd_vram **ret, size_t *ret_n);

#endif
