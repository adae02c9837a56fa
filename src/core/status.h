/* The verdict of `status`: are the selected GPUs free right now? Judged
 * here, once, and written into status's JSON, so that a fleet controller
 * reads the host's verdict instead of working it out again. */
#ifndef GS_STATUS_H
#define GS_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/snapshot.h"
#include "core/verdict.h"

/* Not clean when a compute holder holds a selected GPU, or a selected GPU
 * uses more memory than its protected holders account for plus
 * tolerance_mib (memory nobody visible holds); clean otherwise. sel_all:
 * every GPU is selected. */
enum gs_verdict gs_status_verdict(const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
				  uint64_t tolerance_mib);

#endif
