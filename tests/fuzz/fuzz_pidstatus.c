/* gs_parse_pidstatus: /proc/PID/status (Uid:, NSpid:, SigBlk:, SigIgn:, SigCgt:). */
#include "fuzz.h"

#include <errno.h>

#include "proc/procinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct gs_pidstatus st, again;
	int r = gs_parse_pidstatus(text, &st);

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0) {
		const char *u = strstr(text, "Uid:");

		/* a Uid: line was found, and an NSpid is a real pid */
		FUZZ_CHECK(u != NULL);
		FUZZ_CHECK(!st.has_nspid || st.nspid > 0);
		FUZZ_CHECK(st.has_nspid || st.nspid == 0);
		/* pure: the same text gives the same answer */
		FUZZ_CHECK(gs_parse_pidstatus(text, &again) == 0);
		FUZZ_CHECK(again.uid == st.uid && again.nspid == st.nspid && again.has_nspid == st.has_nspid);
		FUZZ_CHECK(again.has_sigmasks == st.has_sigmasks && again.sig_blk == st.sig_blk &&
			   again.sig_ign == st.sig_ign && again.sig_cgt == st.sig_cgt);
		/* masks count only when all three were read; never half a reading */
		FUZZ_CHECK(st.has_sigmasks || (st.sig_blk | st.sig_ign | st.sig_cgt) == 0);
		FUZZ_CHECK(st.has_sigmasks || gs_pidstatus_term_fate(&st) == GS_TERM_UNKNOWN);
	}
	free(text);
	return 0;
}
