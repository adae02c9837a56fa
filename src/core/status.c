/* The verdict of `status`; see status.h. */
#include "core/status.h"
#include "util/util.h"

enum gs_verdict gs_status_verdict(const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
				  uint64_t tolerance_mib)
{
	for (size_t g = 0; g < s->n_gpus; g++) {
		const struct gs_gpu *gpu = &s->gpus[g];
		uint64_t protected_mib = 0;

		if (!sel_all && !gs_gpuset_has(sel, (unsigned)g))
			continue;
		for (size_t i = 0; i < s->n_holders; i++) {
			const struct gs_holder *h = &s->holders[i];

			if (!gs_gpuset_has(&h->gpus, (unsigned)g))
				continue;
			if (h->role == GS_ROLE_COMPUTE)
				return GS_VERDICT_NOT_CLEAN;
			/* A protected daemon's figure is its whole use (every
			 * GPU), as the JSON shows it: generous, never short. */
			if (h->role == GS_ROLE_PROTECTED && h->mem_known)
				protected_mib += h->mem_used / GS_MIB;
		}
		if (gpu->mem_known && gpu->mem_used / GS_MIB > protected_mib + tolerance_mib)
			return GS_VERDICT_NOT_CLEAN;
	}
	return GS_VERDICT_CLEAN;
}
