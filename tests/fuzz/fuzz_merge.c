/* gs_host_result_make: the remote JSON report (and ssh's stderr) a host
 * sends back in fleet mode, then the fleet report built from it. Everything
 * here comes from the remote host, so besides memory safety the invariant is
 * that no remote byte reaches the terminal unsanitized: every line, error
 * and stderr text is printable ASCII.
 *
 * Input: byte 0 picks the command asked for (status/reclaim/wait) and the
 * run state, byte 1 the exit code; the rest is stdout, up to the first NUL,
 * then stderr. */
#include "fuzz.h"

#include <errno.h>

#include "fleet/merge.h"
#include "fleet/prom.h"

static const char *const commands[] = { "status", "reclaim", "wait" };

static void check_result(const struct gs_host_result *r)
{
	FUZZ_CHECK((r->failure == GS_HF_NONE) == (r->verdict != GS_HV_FAILED));
	if (r->failure != GS_HF_NONE) {
		FUZZ_CHECK(r->error != NULL && r->line == NULL && r->report == NULL);
		FUZZ_CHECK(gs_host_failure_str(r->failure) != NULL);
	} else {
		FUZZ_CHECK(r->line != NULL && r->report != NULL && r->error == NULL);
	}
	if (r->error && !fuzz_printable(r->error)) {
		fprintf(stderr, "unsanitized error: [%s]\n", r->error);
		abort();
	}
	if (r->line && !fuzz_printable(r->line)) {
		fprintf(stderr, "unsanitized line: [%s]\n", r->line);
		abort();
	}
	if (r->stderr_text)
		FUZZ_CHECK(fuzz_printable(r->stderr_text));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_run_output o;
	struct gs_merge_opts m = { 0 };
	struct gs_host_result res[2];
	const uint8_t *nul;
	char *text = NULL;
	json_t *j;
	int r;

	if (size < 2)
		return 0;
	memset(&o, 0, sizeof(o));
	m.command = commands[(data[0] & 3) % 3];
	m.deadline_ms = 1000;
	m.tolerance_mib = (data[0] & 4) ? 0 : 64;
	/* mostly an exited command; sometimes the runner's other states */
	o.state = (data[0] & 0x70) == 0x70 ? (enum gs_run_state)((data[0] >> 7) ? GS_RUN_TIMED_OUT : GS_RUN_SPAWN_FAILED)
					   : GS_RUN_EXITED;
	o.spawn_errno = ENOENT;
	o.exit_code = data[1] == 0xff ? -1 : data[1];
	data += 2;
	size -= 2;
	nul = memchr(data, '\0', size);
	o.out_len = nul ? (size_t)(nul - data) : size;
	o.out = fuzz_cstr(data, o.out_len);
	if (nul) {
		o.err_len = size - o.out_len - 1;
		o.err = fuzz_cstr(nul + 1, o.err_len);
	}
	o.elapsed_ms = 42;

	r = gs_host_result_make(&res[0], "gpu01", &o, &m);
	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r == 0) {
		check_result(&res[0]);
		/* a second host with the same output folds with the first */
		FUZZ_CHECK(gs_host_result_make(&res[1], "gpu02", &o, &m) == 0);
		check_result(&res[1]);
		FUZZ_CHECK(gs_fleet_render_text("reclaim", res, 2, false, &text) == 0);
		FUZZ_CHECK(text != NULL);
		for (const char *p = text; *p; p++)
			FUZZ_CHECK(*p == '\n' || ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f));
		free(text);
		/* A host's exposition is remote text: the merged one holds
		 * only printable lines, each a HELP, a TYPE or a sample
		 * that carries the host label first. */
		FUZZ_CHECK(gs_fleet_render_prometheus(res, 2, &text, NULL) == 0);
		for (const char *p = text; *p; p++)
			FUZZ_CHECK(*p == '\n' || ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f));
		for (const char *p = text; *p;) {
			const char *nl = strchr(p, '\n');

			FUZZ_CHECK(nl != NULL);
			FUZZ_CHECK(!strncmp(p, "# HELP ", 7) || !strncmp(p, "# TYPE ", 7) ||
				   (strstr(p, "{host=\"gpu0") && strstr(p, "{host=\"gpu0") < nl));
			p = nl + 1;
		}
		free(text);
		j = gs_fleet_json(res, 2, m.command, false);
		FUZZ_CHECK(j != NULL);
		json_decref(j);
		gs_host_result_free(&res[1]);
	}
	gs_host_result_free(&res[0]);
	free(o.out);
	free(o.err);
	return 0;
}
