/* One pass over /proc finding every process that holds a GPU device node
 * (NVIDIA's, and the DRM and KFD nodes of AMD/Intel GPUs, whose fdinfo is
 * read for the DRM client usage):
 * open fds (the link /proc/PID/fd/N, then a stat of those under /dev or the
 * dev root) and, for processes with such fds, mappings in /proc/PID/maps.
 * The PIDs NVML lists get a closer look: their mappings are read even
 * without an NVIDIA fd (a holder that mapped the node and closed the fd),
 * and the fd tables of their threads that have their own
 * (unshare(CLONE_FILES)). Races (processes exiting mid-scan) are normal and
 * skipped; permission errors are counted and reported, never hidden. */
#ifndef GS_HOLDERSCAN_H
#define GS_HOLDERSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/devset.h"
#include "proc/drm_fdinfo.h"
#include "util/root.h"
#include "util/set256.h"

struct gs_minorset {
	uint64_t bits[GS_SET256_WORDS]; /* minors 0..255 */
};

static inline void gs_minorset_add(struct gs_minorset *s, unsigned m)
{
	gs_set256_add(s->bits, m);
}
static inline int gs_minorset_has(const struct gs_minorset *s, unsigned m)
{
	return gs_set256_has(s->bits, m);
}
static inline int gs_minorset_empty(const struct gs_minorset *s)
{
	return gs_set256_empty(s->bits);
}

struct gs_scan_proc {
	pid_t pid;
	struct gs_minorset fd_gpus;  /* /dev/nvidia<N> open as fds */
	struct gs_minorset map_gpus; /* /dev/nvidia<N> mapped (marks a CUDA context) */
	unsigned n_fds;              /* NVIDIA fds of any kind */
	bool fd_ctl, fd_uvm, map_ctl, map_uvm;
	bool maps_denied;            /* fds seen, maps unreadable */
	/* AMD/Intel (GS_NODE_DRM, GS_NODE_KFD), by DRM backend index. */
	struct gs_minorset drm_fd_gpus;  /* a card or render node open */
	struct gs_minorset drm_map_gpus; /* one mapped (a context's buffers) */
	unsigned n_drm_fds;          /* DRM and KFD fds (not in n_fds) */
	bool fd_kfd, map_kfd;        /* /dev/kfd open / mapped (a ROCm context maps it) */
	/* The DRM clients of its fds (fdinfo), each once; malloc'd, owned by
	 * the scan result. An fd whose fdinfo could not be read or had no
	 * usage stats counts in drm.n_no_stats. */
	struct gs_drm_usage drm;
};

struct gs_scan_result {
	struct gs_scan_proc *procs;  /* sorted by pid */
	size_t n_procs;
	size_t n_scanned;            /* processes looked at */
	size_t n_denied;             /* processes whose fds we could not read */
	pid_t *denied;               /* their pids (up to n_denied), malloc'd */
};

struct gs_scan_opts {
	pid_t skip_pid;              /* our own pid: never reported (0: none) */
	bool read_maps;              /* read /proc/PID/maps of fd holders (default true) */
	/* PIDs to look at closely (NVML's lists), sorted ascending: maps
	 * read (with read_maps) even without an NVIDIA fd, and every thread's
	 * own fd table. A listed PID with nothing found is not reported. */
	const pid_t *listed;
	size_t n_listed;
	/* Test fixtures standing for the drm- keys of fdinfo
	 * (GPUSLATE_FDINFO_SHADOW, gs_drm_fdinfo_read); -1: none. Only the
	 * caller's zeroed opts would make it 0, so gs_scan_holders takes 0 as
	 * none too (fd 0 is stdin, never a directory of ours). */
	int fdinfo_shadow_fd;
};

int gs_scan_holders(const struct gs_root *root, struct gs_devset *ds,
		    const struct gs_scan_opts *opts, struct gs_scan_result *ret);
void gs_scan_result_free(struct gs_scan_result *r);

/* Is an fd whose link (/proc/PID/fd/N) reads link[0..len) worth a stat?
 * Only paths under /dev/ or under dev_prefix (the dev root as the kernel
 * writes it): a stat of anything else could wait on a hung NFS or FUSE
 * server, and no NVIDIA node lives there. Pure, for tests. */
bool gs_scan_link_is_candidate(const char *link, size_t len, const char *dev_prefix);

/* Parse one line of /proc/PID/maps into (dev, inode); returns 0 when the line
 * has a non-zero inode, -EINVAL otherwise. Pure, for tests. */
int gs_parse_maps_line(const char *line, dev_t *ret_dev, ino_t *ret_ino);

#endif
