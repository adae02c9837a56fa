/* gs_parse_pidstat: /proc/PID/stat, whose comm field the process chooses. */
#include "fuzz.h"

#include <errno.h>
#include <inttypes.h>

#include "proc/procinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct gs_pidstat st, again;
	int r = gs_parse_pidstat(text, &st);

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	FUZZ_TERMINATED(st.comm);
	if (r == 0) {
		const char *open = strchr(text, '('), *close = strrchr(text, ')'), *p;
		size_t want = (size_t)(close - open - 1);
		char tok[64], *line = NULL;
		size_t tl;
		int i;

		FUZZ_CHECK(st.pid > 0 && st.ppid >= 0 && st.pgrp >= 0 && st.session >= 0);
		/* comm: exactly the text between the first '(' and the last ')',
		 * cut to the buffer, no NUL inside (the input has none there) */
		if (want > sizeof(st.comm) - 1)
			want = sizeof(st.comm) - 1;
		FUZZ_CHECK(strlen(st.comm) == want && memcmp(st.comm, open + 1, want) == 0);
		FUZZ_CHECK(st.state == close[2] && st.state != ' ' && st.state != '\0');
		/* starttime: field 22, the 20th token after ") ", read on its own */
		p = close + 2;
		for (i = 3; i < 22; i++) {
			p += strcspn(p, " \n");
			FUZZ_CHECK(*p == ' ');
			p++;
		}
		tl = strcspn(p, " \n");
		FUZZ_CHECK(tl > 0 && tl < sizeof(tok));
		memcpy(tok, p, tl);
		tok[tl] = '\0';
		FUZZ_CHECK(tok[0] >= '0' && tok[0] <= '9');
		FUZZ_CHECK(strtoull(tok, NULL, 10) == st.starttime);

		/* A canonical line made of what was parsed parses to the same. */
		if (asprintf(&line, "%d (%s) %c %d %d %d 0 0 %u 0 0 0 0 0 0 0 0 0 0 0 0 %" PRIu64 " 0\n",
			     (int)st.pid, st.comm, st.state, (int)st.ppid, (int)st.pgrp, (int)st.session,
			     st.flags, st.starttime) < 0)
			abort();
		/* (a state of ')' would move the last ')' of the line) */
		if (st.state != ')') {
			FUZZ_CHECK(gs_parse_pidstat(line, &again) == 0);
			FUZZ_CHECK(again.pid == st.pid && again.state == st.state && again.ppid == st.ppid &&
				   again.pgrp == st.pgrp && again.session == st.session &&
				   again.flags == st.flags && again.starttime == st.starttime &&
				   strcmp(again.comm, st.comm) == 0);
		}
		free(line);
	}
	free(text);
	return 0;
}
