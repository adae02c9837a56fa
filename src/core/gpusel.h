/* GPU selections from the command line: "0,2-3", "GPU-a2983c1e", "all". */
#ifndef GS_GPUSEL_H
#define GS_GPUSEL_H

#include <stddef.h>

#include "core/snapshot.h"

/* Resolve expr against the snapshot's GPUs into a set of snapshot indices.
 * Items: an NVML index ("2"), a range ("0-3"), a UUID or a unique UUID prefix
 * of at least 8 characters ("GPU-a2983c1e"; an AMD GPU's is GPU-<unique_id>),
 * a PCI address ("0000:c1:00.0" or NVML's "00000000:C1:00.0"), "all". NULL or
 * "" selects all.
 * Returns 0, or -EINVAL / -ENOENT with a one-line reason in err naming the
 * offending item. */
int gs_gpusel_resolve(const char *expr, const struct gs_gpu *gpus, size_t n_gpus,
		      struct gs_gpuset *ret, char *err, size_t errlen);

/* Syntax check only (no GPUs known yet, e.g. before contacting a fleet). */
int gs_gpusel_check(const char *expr, char *err, size_t errlen);

#endif
