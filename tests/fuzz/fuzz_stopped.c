/* gs_stopped_parse: the stopped-state file that `restore` runs commands
 * from as root. Whatever it accepts must be what a manager would take
 * (checked names, known kinds and runtimes), one record per identity.
 * (The save and parse round trip is test_stopped.c's: it writes files.) */
#include "fuzz.h"

#include <errno.h>

#include "core/stopped.h"

static void check_rec(const struct gs_stopped_rec *r)
{
	FUZZ_CHECK(r->kind == GS_STOPPED_UNIT || r->kind == GS_STOPPED_CONTAINER);
	if (r->kind == GS_STOPPED_UNIT) {
		FUZZ_CHECK(!strcmp(r->runtime, "systemd"));
		FUZZ_CHECK(gs_stopped_name_ok(r->name, sizeof(r->name)));
		FUZZ_CHECK(r->id[0] == '\0');
		FUZZ_CHECK(!r->container[0] || gs_stopped_name_ok(r->container, sizeof(r->container)));
	} else {
		FUZZ_CHECK(!strcmp(r->runtime, "docker") || !strcmp(r->runtime, "podman"));
		FUZZ_CHECK(gs_stopped_name_ok(r->id, sizeof(r->id)));
		FUZZ_CHECK(r->container[0] == '\0');
	}
	FUZZ_CHECK(r->stopped_at >= 0 && r->reclaim_at >= 0);
	for (const char *p = r->reason; *p; p++)
		FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_stopped s;
	char err[512];
	int r;

	err[0] = '\0';
	r = gs_stopped_parse((const char *)data, size, &s, err, sizeof(err));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM || r == -E2BIG);
	FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL);
	if (r < 0) {
		FUZZ_CHECK(s.n == 0 && s.recs == NULL);
		return 0;
	}
	FUZZ_CHECK(s.n <= GS_STOPPED_MAX_RECORDS);
	for (size_t i = 0; i < s.n; i++) {
		check_rec(&s.recs[i]);
		for (size_t k = 0; k < i; k++)
			FUZZ_CHECK(!gs_stopped_same(&s.recs[i], &s.recs[k]));
	}
	gs_stopped_free(&s);
	return 0;
}
