/* `run --restore`'s seam (restore.h). A stub until the state file and
 * `gpuslate restore` (issue 14 §3) land: it restores nothing and says so,
 * so `run --restore` reports "restored: nothing". */
#include "core/restore.h"

int gs_restore_after_run(const struct gs_reclaim *rc, struct gs_restored *ret, size_t max, size_t *n)
{
	(void)rc;
	(void)ret;
	(void)max;
	*n = 0;
	return 0;
}
