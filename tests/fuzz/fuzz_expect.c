/* gs_expect_parse: reclaim --expect, the list a fleet controller passes to
 * each host ("PID:STARTTIME,..." or "none"). Whatever it accepts must read
 * back the same through gs_expect_format; whatever it refuses must say why
 * in one line. */
#include "fuzz.h"

#include <errno.h>
#include <stdlib.h>

#include "core/expect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_expect e, back;
	char err[256], *text, *again = NULL;
	int rc;

	text = fuzz_cstr(data, size);
	err[0] = '\0';
	rc = gs_expect_parse(text, &e, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	FUZZ_TERMINATED(err);
	if (rc < 0) {
		FUZZ_CHECK(err[0] != '\0' && !strchr(err, '\n'));
		FUZZ_CHECK(e.n == 0 && e.items == NULL);
		free(text);
		return 0;
	}
	FUZZ_CHECK(e.n <= GS_EXPECT_MAX);
	for (size_t i = 0; i < e.n; i++) {
		FUZZ_CHECK(e.items[i].pid >= 1 && e.items[i].pid <= GS_EXPECT_PID_MAX);
		for (size_t k = 0; k < i; k++)
			FUZZ_CHECK(e.items[k].pid != e.items[i].pid);
	}
	/* The round trip: formatted, parsed again, the same list. */
	FUZZ_CHECK(gs_expect_format(e.items, e.n, &again) == 0);
	FUZZ_CHECK(gs_expect_parse(again, &back, err, sizeof(err)) == 0);
	FUZZ_CHECK(back.n == e.n);
	for (size_t i = 0; i < e.n; i++)
		FUZZ_CHECK(back.items[i].pid == e.items[i].pid && back.items[i].starttime == e.items[i].starttime &&
			   !strcmp(back.items[i].action, e.items[i].action));
	gs_expect_free(&back);
	gs_expect_free(&e);
	free(again);
	free(text);
	return 0;
}
