/* Unit tests for src/fleet/merge.c: judging each host from what its command
 * left (documents as a real `gpuslate --remote` prints them, made on the
 * simulated host of docs/testing.md; ssh failures; garbage), the folded human
 * report, the JSON document and the exit status rule. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "fleet/merge.h"
#include "fleet/prom.h"
#include "util/util.h"

/* ---- host documents ---------------------------------------------------- */

/* Real output of `gpuslate --remote status` on a 2-GPU simulated host
 * (tests/fakes/mkhost.sh), nothing holding a GPU. */
static const char status_clean[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"version\": \"0.1.0\", \"command\": \"status\", \"host\": \"vm\", "
	"\"gpu_source\": \"nvml\", \"driver_version\": \"580.159.04\", \"warnings\": [], \"gpus\": [{\"index\": 0, "
	"\"minor\": 0, \"uuid\": \"GPU-a2983c1e-0000-4000-8000-000000000000\", \"name\": \"NVIDIA H200\", "
	"\"pci_bus_id\": \"00000000:18:00.0\", \"memory_used_mib\": 0, \"memory_reserved_mib\": 615, "
	"\"memory_total_mib\": 143771, \"holders\": 0}, {\"index\": 1, \"minor\": 1, \"uuid\": "
	"\"GPU-a2983c1e-0000-4000-8000-000000000001\", \"name\": \"NVIDIA H200\", \"pci_bus_id\": \"00000000:2A:00.0\", "
	"\"memory_used_mib\": 0, \"memory_reserved_mib\": 615, \"memory_total_mib\": 143771, \"holders\": 0}], "
	"\"processes\": [], \"visibility\": {\"as_root\": true, \"processes_scanned\": 71, \"processes_denied\": 1}}\n";

/* The same host with gs-holder (pid 21831) holding 1024 MiB on GPU 0.
 * COMM is replaced by the test (printf format: one %s). */
static const char status_busy_fmt[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"version\": \"0.1.0\", \"command\": \"status\", \"host\": \"vm\", "
	"\"gpu_source\": \"nvml\", \"driver_version\": \"580.159.04\", \"warnings\": [], \"gpus\": [{\"index\": 0, "
	"\"minor\": 0, \"uuid\": \"GPU-a2983c1e-0000-4000-8000-000000000000\", \"name\": \"NVIDIA H200\", "
	"\"pci_bus_id\": \"00000000:18:00.0\", \"memory_used_mib\": 1024, \"memory_reserved_mib\": 615, "
	"\"memory_total_mib\": 143771, \"holders\": 1}, {\"index\": 1, \"minor\": 1, \"uuid\": "
	"\"GPU-a2983c1e-0000-4000-8000-000000000001\", \"name\": \"NVIDIA H200\", \"pci_bus_id\": \"00000000:2A:00.0\", "
	"\"memory_used_mib\": 0, \"memory_reserved_mib\": 615, \"memory_total_mib\": 143771, \"holders\": 0}], "
	"\"processes\": [{\"pid\": 21831, \"alive\": true, \"comm\": \"%s\", \"name\": \"gs-holder\", \"cmdline\": "
	"\"build/fakes/gs-holder --state /tmp/gsh/nvml --dev-root /tmp/gsh/dev --gpu 0 --mib 1024\", \"user\": \"root\", "
	"\"uid\": 0, \"state\": \"S\", \"ppid\": 1, \"pgid\": 21828, \"start_time\": 619168, \"nspid\": null, \"gpus\": [0], "
	"\"memory_mib\": 1024, \"role\": \"compute\", \"nvml_listed\": true, \"maps_gpu\": true, \"nvidia_fds\": 3, "
	"\"owner\": {\"kind\": \"none\", \"name\": null, \"unit\": null, \"cgroup\": \"/\"}}], \"visibility\": "
	"{\"as_root\": true, \"processes_scanned\": 72, \"processes_denied\": 1}}\n";

/* Real `gpuslate --remote status` with NVML not loaded: exit 3. */
static const char status_driver_failure[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"version\": \"0.1.0\", \"command\": \"status\", \"host\": \"vm\", "
	"\"gpu_source\": \"none\", \"driver_version\": null, \"warnings\": [\"NVML unusable (nvmlInit_v2: Driver Not "
	"Loaded)\"], \"gpus\": [], \"processes\": [], \"visibility\": {\"as_root\": true, \"processes_scanned\": 71, "
	"\"processes_denied\": 1}}\n";
static const char status_driver_failure_err[] =
	"gpuslate: warning: NVML unusable (nvmlInit_v2: Driver Not Loaded); holders from the fd scan only\n"
	"gpuslate: no GPU information could be read (NVML unusable (nvmlInit_v2: Driver Not Loaded))\n";

/* A status where GPU 0 has a protected holder (persistenced, 300 MiB) and
 * USED MiB in use (printf format: one %d). */
static const char status_protected_fmt[] =
	"{\"schema_version\": 1, \"command\": \"status\", \"gpus\": [{\"index\": 0, \"memory_used_mib\": %d}], "
	"\"processes\": [{\"pid\": 900, \"comm\": \"nvidia-persiste\", \"gpus\": [0], \"memory_mib\": 300, "
	"\"role\": \"protected\"}, {\"pid\": 901, \"comm\": \"nvidia-smi\", \"gpus\": [0], \"memory_mib\": null, "
	"\"role\": \"client\"}]}";

/* Real `gpuslate --remote reclaim --yes --grace 1` after which the GPUs were free. */
static const char reclaim_clean[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"version\": \"0.1.0\", \"command\": \"reclaim\", \"host\": \"vm\", "
	"\"verdict\": \"clean\", \"exit_status\": 0, \"dry_run\": false, \"summary\": \"gpuslate: clean (2 GPUs)\", "
	"\"reason\": \"gpuslate: clean (2 GPUs)\", \"elapsed_s\": 0.007, \"gpu_source\": \"nvml\", \"plan\": {\"gpus\": "
	"[0, 1], \"targets\": [{\"pid\": 21831, \"comm\": \"gs-holder\", \"user\": \"root\", \"gpus\": [0], "
	"\"memory_mib\": 1024, \"owner\": {\"kind\": \"none\", \"name\": null, \"unit\": null, \"cgroup\": \"/\"}, "
	"\"action\": \"signal\", \"unit\": null, \"container\": null, \"why\": \"holds a selected GPU\"}], "
	"\"left_alone\": []}, \"units\": [], \"processes\": [{\"pid\": 21831, \"comm\": \"gs-holder\", \"action\": "
	"\"signal\", \"signals\": [\"SIGTERM\", \"SIGCONT\"], \"outcome\": \"exited-after-term\", \"exited_after_s\": 0.0, "
	"\"wchan\": null}], \"interrupted\": false, \"timed_out\": false, \"memory_verified\": true, \"driver_error\": "
	"null, \"waited_s\": 0.003, \"gpus\": [{\"index\": 0, \"uuid\": \"GPU-a2983c1e-0000-4000-8000-000000000000\", "
	"\"name\": \"NVIDIA H200\", \"clean\": true, \"memory_before_mib\": 1024, \"memory_after_mib\": 0, "
	"\"baseline_mib\": 16, \"memory_total_mib\": 143771, \"released_after_s\": 0.0, \"held_by\": [], "
	"\"unattributed\": false}, {\"index\": 1, \"uuid\": \"GPU-a2983c1e-0000-4000-8000-000000000001\", \"name\": "
	"\"NVIDIA H200\", \"clean\": true, \"memory_before_mib\": 0, \"memory_after_mib\": 0, \"baseline_mib\": 16, "
	"\"memory_total_mib\": 143771, \"released_after_s\": null, \"held_by\": [], \"unattributed\": false}], "
	"\"respawns\": []}\n";

/* Real `gpuslate --remote reclaim --dry-run` with gs-holder on GPU 0. */
static const char reclaim_dry[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"version\": \"0.1.0\", \"command\": \"reclaim\", \"host\": \"vm\", "
	"\"verdict\": \"dry-run\", \"exit_status\": 0, \"dry_run\": true, \"summary\": \"gpuslate: dry-run\", "
	"\"reason\": \"gpuslate: dry-run\", \"elapsed_s\": 0.004, \"gpu_source\": \"nvml\", \"plan\": {\"gpus\": [0, 1], "
	"\"targets\": [{\"pid\": 21831, \"comm\": \"gs-holder\", \"user\": \"root\", \"gpus\": [0], \"memory_mib\": 1024, "
	"\"owner\": {\"kind\": \"none\", \"name\": null, \"unit\": null, \"cgroup\": \"/\"}, \"action\": \"signal\", "
	"\"unit\": null, \"container\": null, \"why\": \"holds a selected GPU\"}], \"left_alone\": []}, \"units\": [], "
	"\"processes\": [], \"interrupted\": false, \"gpus\": [{\"index\": 0, \"uuid\": "
	"\"GPU-a2983c1e-0000-4000-8000-000000000000\", \"name\": \"NVIDIA H200\", \"clean\": null, "
	"\"memory_before_mib\": 1024, \"memory_after_mib\": null, \"baseline_mib\": 16, \"memory_total_mib\": 143771}, "
	"{\"index\": 1, \"uuid\": \"GPU-a2983c1e-0000-4000-8000-000000000001\", \"name\": \"NVIDIA H200\", \"clean\": "
	"null, \"memory_before_mib\": 0, \"memory_after_mib\": null, \"baseline_mib\": 16, \"memory_total_mib\": "
	"143771}], \"respawns\": []}\n";

/* A reclaim that left GPU 0 held (a survivor) and saw a respawn; GPU 1 has
 * memory nobody visible holds. Shaped on the documents above. */
static const char reclaim_not_clean[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"command\": \"reclaim\", \"verdict\": \"not-clean\", "
	"\"exit_status\": 1, \"summary\": \"gpuslate: not clean: GPU 0 3590 MiB used held by 1234\", "
	"\"plan\": {\"gpus\": [0, 1], \"targets\": [{\"pid\": 1234, \"comm\": \"python3\"}], \"left_alone\": []}, "
	"\"processes\": [{\"pid\": 1234, \"comm\": \"python3\", \"outcome\": \"d-state\"}], "
	"\"gpus\": [{\"index\": 0, \"clean\": false, \"memory_before_mib\": 3590, \"memory_after_mib\": 3590, "
	"\"held_by\": [1234]}, {\"index\": 1, \"clean\": false, \"memory_before_mib\": 600, \"memory_after_mib\": 512, "
	"\"held_by\": []}], \"respawns\": [{\"pid\": 4321, \"comm\": \"python3\", \"by\": \"unit trainer.service\"}]}";

/* wait --json, real shape: timed out, GPU 0 still held. */
static const char wait_busy[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"version\": \"0.1.0\", \"command\": \"wait\", \"host\": \"vm\", "
	"\"verdict\": \"not-clean\", \"exit_status\": 1, \"dry_run\": false, \"summary\": \"gpuslate: not clean: GPU 0 "
	"2048 MiB used held by 20908\", \"elapsed_s\": 0.309, \"gpu_source\": \"nvml\", \"plan\": {\"gpus\": [0, 1], "
	"\"targets\": [{\"pid\": 20908, \"comm\": \"gs-holder\", \"gpus\": [0], \"memory_mib\": 2048}], \"left_alone\": "
	"[{\"pid\": 20910, \"comm\": \"nvidia-persiste\", \"role\": \"protected\", \"gpus\": [1], \"memory_mib\": 300}]}, "
	"\"units\": [], \"processes\": [], \"interrupted\": false, \"timed_out\": true, \"memory_verified\": true, "
	"\"driver_error\": null, \"waited_s\": 0.3, \"gpus\": [{\"index\": 0, \"clean\": false, \"memory_before_mib\": "
	"2048, \"memory_after_mib\": 2048, \"baseline_mib\": 16, \"held_by\": [20908]}, {\"index\": 1, \"clean\": true, "
	"\"memory_before_mib\": 300, \"memory_after_mib\": 300, \"baseline_mib\": 316, \"held_by\": []}], "
	"\"respawns\": []}";

/* reclaim -u 1000 on a host where another user's job (left alone) holds
 * GPU 0: the selection is gone, the GPU is not free. */
static const char reclaim_selection_gone[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"command\": \"reclaim\", \"verdict\": \"selection-gone\", "
	"\"exit_status\": 6, \"summary\": \"gpuslate: selection gone, but processes left alone hold memory: GPU 0 "
	"8192 MiB held by 4242 (serve)\", \"unmatched\": [], "
	"\"plan\": {\"gpus\": [0], \"targets\": [{\"pid\": 1234, \"comm\": \"train\"}], \"left_alone\": "
	"[{\"pid\": 4242, \"comm\": \"serve\", \"role\": \"compute\", \"reason\": \"not selected\"}]}, "
	"\"gpus\": [{\"index\": 0, \"clean\": true, \"memory_before_mib\": 12288, \"memory_after_mib\": 8192, "
	"\"held_by\": [], \"left_alone_holders\": [{\"pid\": 4242, \"comm\": \"serve\", \"memory_mib\": 8192}]}], "
	"\"respawns\": []}";

/* pdsh habit: `gpuslate -w node03 -u 30 reclaim -y`, no process of uid 30. */
static const char reclaim_no_match[] =
	"{\"schema_version\": 1, \"tool\": \"gpuslate\", \"command\": \"reclaim\", \"verdict\": \"no-match\", "
	"\"exit_status\": 7, \"summary\": \"gpuslate: nothing matched: -u 30 matches no process\", "
	"\"unmatched\": [\"-u 30\"], \"plan\": {\"gpus\": [0], \"targets\": [], \"left_alone\": []}, "
	"\"gpus\": [{\"index\": 0, \"clean\": true, \"memory_before_mib\": 3590, \"memory_after_mib\": 3590, "
	"\"held_by\": [], \"left_alone_holders\": []}], \"respawns\": []}";

/* ---- helpers ----------------------------------------------------------- */

static bool printable(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

/* What fuzz_merge checks too: a verdict xor a failure, and no remote byte
 * reaches a terminal raw. */
static void check_invariants(const struct gs_host_result *r)
{
	assert_true((r->failure == GS_HF_NONE) == (r->verdict != GS_HV_FAILED));
	if (r->failure != GS_HF_NONE) {
		assert_non_null(r->error);
		assert_null(r->line);
		assert_null(r->report);
		assert_non_null(gs_host_failure_str(r->failure));
	} else {
		assert_null(r->error);
		assert_non_null(r->line);
		assert_non_null(r->report);
	}
	if (!printable(r->error))
		fail_msg("error not printable: %s", r->error);
	if (!printable(r->line))
		fail_msg("line not printable: %s", r->line);
	assert_true(printable(r->stderr_text));
}

static struct gs_merge_opts mopts(const char *command)
{
	struct gs_merge_opts m = { .command = command, .deadline_ms = 2000, .tolerance_mib = 16 };

	return m;
}

/* Judge one exited command: stdout out, stderr err (NULL: none). */
static void judge_ex(struct gs_host_result *r, const char *host, const char *command, int code, const char *out,
		     size_t out_len, bool cut, const char *err)
{
	struct gs_run_output o = { 0 };
	struct gs_merge_opts m = mopts(command);

	o.state = GS_RUN_EXITED;
	o.exit_code = code;
	o.out = (char *)(out ? out : "");
	o.out_len = out_len;
	o.out_truncated = cut;
	o.err = (char *)(err ? err : "");
	o.err_len = err ? strlen(err) : 0;
	o.elapsed_ms = 480;
	assert_int_equal(gs_host_result_make(r, host, &o, &m), 0);
	assert_string_equal(r->host, host);
	assert_int_equal(r->exit_code, code);
	check_invariants(r);
}

static void judge(struct gs_host_result *r, const char *host, const char *command, int code, const char *out,
		  const char *err)
{
	judge_ex(r, host, command, code, out, out ? strlen(out) : 0, false, err);
}

static void expect_line(const char *command, int code, const char *out, const char *err,
			enum gs_host_verdict verdict, const char *line)
{
	struct gs_host_result r;

	static char got[2048];
	enum gs_host_verdict v;

	judge(&r, "h1", command, code, out, err);
	/* copy, free, then judge: a failed assertion must not leak */
	snprintf(got, sizeof(got), "%s%s%s", r.failure ? gs_host_failure_str(r.failure) : "",
		 r.failure ? ": " : "", r.failure ? r.error : r.line);
	v = r.verdict;
	gs_host_result_free(&r);
	if (strcmp(got, line) != 0)
		fail_msg("%s line:\n got  [%s]\n want [%s]", command, got, line);
	assert_int_equal(v, verdict);
}

static void expect_failure(const char *command, int code, const char *out, const char *err,
			   enum gs_host_failure failure, const char *error)
{
	struct gs_host_result r;

	static char got[2048];
	enum gs_host_failure f;

	judge(&r, "gpu15", command, code, out, err);
	snprintf(got, sizeof(got), "%s", r.error ? r.error : r.line);
	f = r.failure;
	gs_host_result_free(&r);
	if (f != failure)
		fail_msg("exit %d: failure %s (%s), want %s", code, f ? gs_host_failure_str(f) : "none", got,
			 gs_host_failure_str(failure));
	if (strcmp(got, error) != 0)
		fail_msg("error:\n got  [%s]\n want [%s]", got, error);
}

/* ---- judging one host --------------------------------------------------- */

static void test_status_documents(void **state)
{
	char busy[4096];
	struct gs_host_result r;

	(void)state;
	expect_line("status", 0, status_clean, NULL, GS_HV_CLEAN, "clean, 2 GPUs, 0 MiB");
	snprintf(busy, sizeof(busy), status_busy_fmt, "gs-holder");
	expect_line("status", 0, busy, NULL, GS_HV_NOT_CLEAN, "not clean, 2 GPUs, 1024 MiB: GPU 0 held by 21831 (gs-holder)");
	expect_line("status", 3, status_driver_failure, status_driver_failure_err, GS_HV_NOT_CLEAN,
		    "driver failure, 0 GPUs, memory unknown: GPU driver failure: NVML unusable (nvmlInit_v2: Driver Not Loaded)");

	/* the document kept is the host's own, stderr kept sanitized */
	judge(&r, "gpu01", "status", 3, status_driver_failure, status_driver_failure_err);
	assert_string_equal(json_string_value(json_object_get(r.report, "gpu_source")), "none");
	assert_non_null(r.stderr_text);
	assert_non_null(strstr(r.stderr_text, "holders from the fd scan only\\x0agpuslate: no GPU"));
	assert_int_equal(r.elapsed_ms, 480);
	gs_host_result_free(&r);
	gs_host_result_free(&r); /* idempotent */
}

/* Protected holders' memory plus the tolerance (16 MiB) may stay. */
static void test_status_tolerance(void **state)
{
	char doc[1024];

	(void)state;
	snprintf(doc, sizeof(doc), status_protected_fmt, 316);
	expect_line("status", 0, doc, NULL, GS_HV_CLEAN, "clean, 1 GPU, 316 MiB");
	snprintf(doc, sizeof(doc), status_protected_fmt, 317);
	expect_line("status", 0, doc, NULL, GS_HV_NOT_CLEAN,
		    "not clean, 1 GPU, 317 MiB: GPU 0: 317 MiB used by no visible process");
	/* procfs: no memory figures: memory unknown, judged by holders alone */
	expect_line("status", 0,
		    "{\"schema_version\":1,\"command\":\"status\",\"gpu_source\":\"procfs\",\"gpus\":[{\"index\":0,"
		    "\"memory_used_mib\":null},{\"index\":1,\"memory_used_mib\":null}],\"processes\":[{\"pid\":7,"
		    "\"comm\":\"nvtop\",\"gpus\":[1],\"role\":\"client\"}]}",
		    NULL, GS_HV_CLEAN, "clean, 2 GPUs, memory unknown");
}

/* A host that writes its own status verdict (core/status.c) is taken at its
 * word: the controller names the holders, it does not judge again. */
static void test_status_host_verdict_is_taken_at_its_word(void **state)
{
	(void)state;
	/* 317 MiB with 300 protected: the controller's rule says not clean,
	 * the host (its own tolerance) says clean. */
	expect_line("status", 0,
		    "{\"schema_version\":1,\"command\":\"status\",\"verdict\":\"clean\",\"gpus\":[{\"index\":0,"
		    "\"memory_used_mib\":317}],\"processes\":[]}",
		    NULL, GS_HV_CLEAN, "clean, 1 GPU, 317 MiB");
	expect_line("status", 0,
		    "{\"schema_version\":1,\"command\":\"status\",\"verdict\":\"not-clean\",\"gpus\":[{\"index\":0,"
		    "\"memory_used_mib\":0}],\"processes\":[]}",
		    NULL, GS_HV_NOT_CLEAN, "not clean, 1 GPU, 0 MiB");
}

static void test_reclaim_documents(void **state)
{
	(void)state;
	/* What was stopped is part of the line: it never folds with idle hosts. */
	expect_line("reclaim", 0, reclaim_clean, NULL, GS_HV_CLEAN, "clean, 2 GPUs, 0 MiB, stopped 1 process (gs-holder)");
	/* dry run: memory_after is null, so the memory before is shown */
	expect_line("reclaim", 0, reclaim_dry, NULL, GS_HV_DRY_RUN, "dry run, 2 GPUs, 1024 MiB: would stop 21831 (gs-holder)");
	expect_line("reclaim", 1, reclaim_not_clean, NULL, GS_HV_NOT_CLEAN,
		    "not clean, 2 GPUs, 4102 MiB: GPU 0 held by 1234 (python3); GPU 1: 512 MiB still used; "
		    "4321 respawned by unit trainer.service");
	expect_line("wait", 1, wait_busy, NULL, GS_HV_NOT_CLEAN, "not clean, 2 GPUs, 2348 MiB: GPU 0 held by 20908 (gs-holder)");
	/* a restart systemd has scheduled: no process yet, pid null */
	expect_line("reclaim", 1,
		    "{\"schema_version\":1,\"command\":\"reclaim\",\"verdict\":\"not-clean\",\"exit_status\":1,"
		    "\"gpus\":[{\"index\":0,\"clean\":true,\"memory_before_mib\":4096,\"memory_after_mib\":0,"
		    "\"held_by\":[]}],\"respawns\":[{\"pid\":null,\"comm\":null,\"by\":\"unit trainer.service\","
		    "\"scheduled\":true,\"unit_state\":\"activating/auto-restart\"}]}",
		    NULL, GS_HV_NOT_CLEAN, "not clean, 1 GPU, 0 MiB: restart scheduled by unit trainer.service");
	/* refused and friends: the host's own one-liner, without "gpuslate: " */
	expect_line("reclaim", 5,
		    "{\"schema_version\":1,\"command\":\"reclaim\",\"verdict\":\"refused\",\"exit_status\":5,"
		    "\"summary\":\"gpuslate: refused: another reclaim holds the lock\",\"gpus\":[]}",
		    NULL, GS_HV_NOT_CLEAN, "refused, 0 GPUs, memory unknown: refused: another reclaim holds the lock");
	expect_line("reclaim", 0,
		    "{\"schema_version\":1,\"command\":\"reclaim\",\"verdict\":\"dry-run\",\"plan\":{\"targets\":[]},"
		    "\"gpus\":[{\"index\":0,\"memory_before_mib\":0,\"memory_after_mib\":null}]}",
		    NULL, GS_HV_DRY_RUN, "dry run, 1 GPU, 0 MiB: nothing to stop");
}

/* restore: no GPUs; the verdict and what became of each record. */
static void test_restore_documents(void **state)
{
	struct gs_fleet_summary sum = { .hosts = 2, .clean = 1, .not_clean = 1 };

	(void)state;
	expect_line("restore", 0,
		    "{\"schema_version\":1,\"command\":\"restore\",\"verdict\":\"nothing-to-restore\",\"exit_status\":0,"
		    "\"summary\":\"nothing to restore\",\"items\":[]}",
		    NULL, GS_HV_CLEAN, "nothing to restore");
	expect_line("restore", 0,
		    "{\"schema_version\":1,\"command\":\"restore\",\"verdict\":\"restored\",\"exit_status\":0,\"items\":["
		    "{\"kind\":\"unit\",\"name\":\"a.service\",\"outcome\":\"started\"},"
		    "{\"kind\":\"unit\",\"name\":\"b.service\",\"outcome\":\"already-running\"},"
		    "{\"kind\":\"container\",\"name\":null,\"id\":\"3f2a\",\"outcome\":\"started\"}]}",
		    NULL, GS_HV_CLEAN, "restored: started a.service, 3f2a; already running b.service");
	expect_line("restore", 8,
		    "{\"schema_version\":1,\"command\":\"restore\",\"verdict\":\"not-restored\",\"exit_status\":8,\"items\":["
		    "{\"kind\":\"unit\",\"name\":\"a.service\",\"outcome\":\"started\"},"
		    "{\"kind\":\"unit\",\"name\":\"b\\u001b[2J\",\"outcome\":\"failed\"}]}",
		    NULL, GS_HV_NOT_CLEAN, "not restored: started a.service; failed b\\x1b[2J");
	expect_line("restore", 0,
		    "{\"schema_version\":1,\"command\":\"restore\",\"verdict\":\"dry-run\",\"exit_status\":0,\"items\":["
		    "{\"kind\":\"unit\",\"name\":\"a.service\",\"outcome\":\"pending\",\"will_start\":true}]}",
		    NULL, GS_HV_DRY_RUN, "dry run: would start a.service");
	expect_line("restore", 5,
		    "{\"schema_version\":1,\"command\":\"restore\",\"verdict\":\"refused\",\"exit_status\":5,"
		    "\"summary\":\"refused: not confirmed\",\"items\":[]}",
		    NULL, GS_HV_NOT_CLEAN, "refused: not confirmed");
	/* not restored somewhere, no host failed: 8, as on one host */
	assert_int_equal(gs_fleet_exit_for("restore", &sum), 8);
	assert_int_equal(gs_fleet_exit_for("reclaim", &sum), 1);
	sum.failed = 1;
	assert_int_equal(gs_fleet_exit_for("restore", &sum), 4);
}

static void test_document_mismatches(void **state)
{
	(void)state;
	/* a status document where reclaim was asked for */
	expect_failure("reclaim", 0, status_clean, NULL, GS_HF_BAD_OUTPUT,
		       "bad output: a 'status' document where 'reclaim' was asked for");
	expect_failure("status", 0, "{\"schema_version\":1}", NULL, GS_HF_BAD_OUTPUT,
		       "bad output: a '?' document where 'status' was asked for");
	expect_failure("reclaim", 0, "{\"schema_version\":1,\"command\":\"reclaim\",\"gpus\":[]}", NULL,
		       GS_HF_BAD_OUTPUT, "bad output: a document without a verdict");
	/* a newer gpuslate */
	expect_failure("status", 0, "{\"schema_version\": 2, \"command\": \"status\", \"gpus\": []}", NULL,
		       GS_HF_SCHEMA, "gpuslate on gpu15 speaks schema 2; this gpuslate understands 1");
	expect_failure("status", 0, "{\"schema_version\": 0}", NULL, GS_HF_SCHEMA,
		       "gpuslate on gpu15 speaks schema 0; this gpuslate understands 1");
	/* schema_version that is not an integer: not a gpuslate document */
	expect_failure("status", 0, "{\"schema_version\": \"1\", \"command\": \"status\"}", NULL, GS_HF_BAD_OUTPUT,
		       "bad output (exit 0, 44 bytes), starting \"{\"schema_version\": \"1\", \"command\": \"status\"}\"");
}

static void test_ssh_failures(void **state)
{
	(void)state;
	expect_failure("status", 255, NULL, "ssh: connect to host gpu15 port 22: Connection refused\r\n",
		       GS_HF_UNREACHABLE, "unreachable: ssh: connect to host gpu15 port 22: Connection refused");
	expect_failure("status", 255, NULL,
		       "Warning: Permanently added 'gpu15' (ED25519) to the list of known hosts.\r\n"
		       "alice@gpu15: Permission denied (publickey).\r\n",
		       GS_HF_AUTH, "authentication refused: alice@gpu15: Permission denied (publickey).");
	/* a warning after the reason is not the reason */
	expect_failure("status", 255, NULL,
		       "root@gpu15: Permission denied (publickey,password).\n"
		       "** WARNING: connection is not using a post-quantum key exchange algorithm.\n",
		       GS_HF_AUTH, "authentication refused: root@gpu15: Permission denied (publickey,password).");
	expect_failure("status", 255, NULL, "Host key verification failed.\r\n", GS_HF_AUTH,
		       "authentication refused: Host key verification failed.");
	expect_failure("status", 255, NULL, "ssh: Could not resolve hostname gpu15: Name or service not known\r\n",
		       GS_HF_UNREACHABLE, "unreachable: ssh: Could not resolve hostname gpu15: Name or service not known");
	expect_failure("status", 255, NULL, "ssh: connect to host gpu15 port 22: Connection timed out\r\n",
		       GS_HF_UNREACHABLE, "unreachable: ssh: connect to host gpu15 port 22: Connection timed out");
	expect_failure("status", 255, NULL, "kex_exchange_identification: read: Connection reset by peer\r\n",
		       GS_HF_UNREACHABLE, "unreachable: kex_exchange_identification: read: Connection reset by peer");
	expect_failure("status", 255, NULL, NULL, GS_HF_UNREACHABLE, "unreachable: ssh failed (exit 255)");
}

static void test_remote_failures(void **state)
{
	(void)state;
	expect_failure("status", 127, NULL, "bash: line 1: gpuslate: command not found\n", GS_HF_MISSING,
		       "gpuslate missing on the host: bash: line 1: gpuslate: command not found");
	expect_failure("status", 127, NULL, NULL, GS_HF_MISSING, "gpuslate missing on the host: command not found");
	expect_failure("status", 1, NULL, "sudo: /opt/gpuslate/bin/gpuslate: command not found\n", GS_HF_MISSING,
		       "gpuslate missing on the host: sudo: /opt/gpuslate/bin/gpuslate: command not found");
	expect_failure("status", 2, NULL,
		       "gpuslate: unknown option '--remote'\nTry 'gpuslate --help' for more information.\n",
		       GS_HF_TOO_OLD, "gpuslate on the host is too old (no --remote mode): install this version there");
	expect_failure("status", 2, NULL,
		       "gpuslate: no GPU with index 7 (this host has 2 GPUs)\n", GS_HF_REMOTE_ERROR,
		       "gpuslate failed (exit 2): gpuslate: no GPU with index 7 (this host has 2 GPUs)");
	expect_failure("reclaim", 139, NULL, NULL, GS_HF_REMOTE_ERROR, "gpuslate failed (exit 139)");
}

/* Real `gpuslate --remote reclaim -y --timeout 0.2` while another reclaim
 * held the lock, and `gpuslate --remote status -g 7` on a 2-GPU host: the
 * documents of early failures (docs/json.md), exit 5 and 2. */
static const char reclaim_lock_refused[] =
	"{\"schema_version\":1,\"tool\":\"gpuslate\",\"version\":\"0.1.0\",\"command\":\"reclaim\",\"host\":\"vm\","
	"\"verdict\":\"refused\",\"exit_status\":5,\"summary\":\"gpuslate: another gpuslate reclaim still holds the "
	"lock after 0 s\",\"error\":\"another gpuslate reclaim still holds the lock after 0 s\",\"reason\":\"gpuslate: "
	"another gpuslate reclaim still holds the lock after 0 s\",\"gpus\":[],\"processes\":[],\"dry_run\":false,"
	"\"unmatched\":[],\"plan\":null,\"units\":[],\"respawns\":[],\"interrupted\":false}\n";
static const char status_usage_error[] =
	"{\"schema_version\":1,\"tool\":\"gpuslate\",\"version\":\"0.1.0\",\"command\":\"status\",\"host\":\"vm\","
	"\"verdict\":\"usage-error\",\"exit_status\":2,\"summary\":\"gpuslate: no GPU with index 7 (this host has 2 "
	"GPUs)\",\"error\":\"no GPU with index 7 (this host has 2 GPUs)\",\"reason\":\"gpuslate: no GPU with index 7 "
	"(this host has 2 GPUs)\",\"gpus\":[],\"processes\":[],\"warnings\":[]}\n";

/* A host whose gpuslate stopped early is a failed host, with the reason its
 * document gives, not "gpuslate failed (exit N)", and never "clean, 0 GPUs"
 * (a status document with no GPUs and no processes would read clean). */
static void test_remote_early_failure_documents(void **state)
{
	struct gs_host_result r;

	(void)state;
	expect_failure("reclaim", 5, reclaim_lock_refused,
		       "gpuslate: another gpuslate reclaim still holds the lock after 0 s\n", GS_HF_REMOTE_ERROR,
		       "refused (exit 5): another gpuslate reclaim still holds the lock after 0 s");
	expect_failure("status", 2, status_usage_error, "gpuslate: no GPU with index 7 (this host has 2 GPUs)\n",
		       GS_HF_REMOTE_ERROR, "usage error (exit 2): no GPU with index 7 (this host has 2 GPUs)");
	judge(&r, "gpu15", "status", 2, status_usage_error, NULL);
	assert_int_equal(r.verdict, GS_HV_FAILED);
	assert_null(r.line);
	gs_host_result_free(&r);
	/* the host's words are escaped like every remote text */
	expect_failure("reclaim", 3,
		       "{\"schema_version\":1,\"command\":\"reclaim\",\"verdict\":\"driver-failure\",\"exit_status\":3,"
		       "\"error\":\"no driver\\u001b[2J\\nVerdict: clean\"}",
		       NULL, GS_HF_REMOTE_ERROR, "driver failure (exit 3): no driver\\x1b[2J\\x0aVerdict: clean");
	/* an early document of a command the fleet did not ask for is still
	 * the host's failure, with its reason */
	expect_failure("wait", 2,
		       "{\"schema_version\":1,\"command\":null,\"verdict\":\"usage-error\",\"exit_status\":2,"
		       "\"error\":\"unknown option '--frob'\"}",
		       NULL, GS_HF_REMOTE_ERROR, "usage error (exit 2): unknown option '--frob'");
}

/* Regression (merge.c classify_failure, fixed): "not found" / "No such file or directory"
 * anywhere in stderr with no stdout, at any exit status, is taken for a
 * missing gpuslate, before the "gpuslate ran and failed" case. A gpuslate
 * that ran and failed says so too: with a wrong GPUSLATE_DEV_ROOT (or no
 * /proc in a container) the real binary exits 2 printing exactly the stderr
 * below (checked with build/gpuslate --remote --dev-root /nonexistent
 * status), and the fleet report says "gpuslate missing on the host",
 * "failure": "missing". */
static void test_remote_error_not_taken_for_missing(void **state)
{
	struct gs_host_result r;

	(void)state;
	judge(&r, "gpu15", "status", 2, NULL,
	      "gpuslate: cannot open the device directory '/nonexistent' (--dev-root or GPUSLATE_DEV_ROOT): No such file or directory\n");
	if (r.failure != GS_HF_REMOTE_ERROR) {
		char got[512];

		snprintf(got, sizeof(got), "%s: %s", gs_host_failure_str(r.failure), r.error);
		gs_host_result_free(&r);
		fail_msg("a gpuslate that ran and failed is reported as %s", got);
	}
	gs_host_result_free(&r);
}

static void test_bad_output(void **state)
{
	struct gs_host_result r;
	char cut[sizeof(status_clean)];
	size_t half = sizeof(status_clean) / 2;

	(void)state;
	expect_failure("status", 0, "hello\x1b[2J world\n", NULL, GS_HF_BAD_OUTPUT,
		       "bad output (exit 0, 16 bytes), starting \"hello\\x1b[2J world\\x0a\"");
	expect_failure("status", 0, "[]", NULL, GS_HF_BAD_OUTPUT, "bad output (exit 0, 2 bytes), starting \"[]\"");
	expect_failure("status", 0, "null", NULL, GS_HF_BAD_OUTPUT, "bad output (exit 0, 4 bytes), starting \"null\"");
	/* duplicate keys are refused, not resolved */
	expect_failure("status", 0, "{\"schema_version\":1,\"command\":\"status\",\"command\":\"reclaim\"}", NULL,
		       GS_HF_BAD_OUTPUT,
		       "bad output (exit 0, 59 bytes), starting \"{\"schema_version\":1,\"command\":\"status\",\"command\":\"reclaim\"}\"");
	/* two documents */
	judge(&r, "gpu15", "status", 0, "{\"schema_version\":1,\"command\":\"status\",\"gpus\":[]}{}", NULL);
	assert_int_equal(r.failure, GS_HF_BAD_OUTPUT);
	gs_host_result_free(&r);

	/* truncated JSON: a document cut in half by a dropped connection */
	memcpy(cut, status_clean, half);
	cut[half] = '\0';
	judge(&r, "gpu15", "status", 255, cut, "Connection to gpu15 closed by remote host.\r\n");
	/* NOTE: OpenSSH's "Connection to HOST closed by remote host." does not
	 * contain "Connection closed", so with partial output this is bad
	 * output (exit 255), not unreachable; pinned as it is. */
	assert_int_equal(r.failure, GS_HF_BAD_OUTPUT);
	assert_non_null(strstr(r.error, "bad output (exit 255, "));
	gs_host_result_free(&r);
	judge(&r, "gpu15", "status", 0, cut, NULL);
	assert_int_equal(r.failure, GS_HF_BAD_OUTPUT);
	assert_non_null(strstr(r.error, "bad output (exit 0, "));
	assert_non_null(strstr(r.error, "...\""));
	gs_host_result_free(&r);

	/* a whole document the runner cut at its limit is not trusted */
	judge_ex(&r, "gpu15", "status", 0, status_clean, strlen(status_clean), true, NULL);
	assert_int_equal(r.failure, GS_HF_BAD_OUTPUT);
	assert_non_null(strstr(r.error, ", cut), starting"));
	gs_host_result_free(&r);

	/* a NUL inside the output */
	judge_ex(&r, "gpu15", "status", 0, "{\"schema_version\":1,\0\"x\":1}", 26, false, NULL);
	assert_int_equal(r.failure, GS_HF_BAD_OUTPUT);
	assert_non_null(strstr(r.error, "\\x00"));
	gs_host_result_free(&r);
}

/* Remote strings with control characters never reach the report raw. */
static void test_control_characters(void **state)
{
	char busy[4096];
	struct gs_host_result r;

	(void)state;
	snprintf(busy, sizeof(busy), status_busy_fmt, "py\\u001b[31mthon\\u0007\\n\\r");
	judge(&r, "gpu01", "status", 0, busy, "warn: \x1b]0;pwned\x07 done\n");
	assert_int_equal(r.verdict, GS_HV_NOT_CLEAN);
	assert_string_equal(r.line, "not clean, 2 GPUs, 1024 MiB: GPU 0 held by 21831 (py\\x1b[31mthon\\x07\\x0a\\x0d)");
	assert_string_equal(r.stderr_text, "warn: \\x1b]0;pwned\\x07 done\\x0a");
	/* JSON keeps the line break (JSON escapes it) but not the escapes. */
	assert_string_equal(json_string_value(r.stderr_json), "warn: \\x1b]0;pwned\\x07 done\n");
	gs_host_result_free(&r);
	/* Bytes that are not UTF-8 are escaped; the lines stay lines. */
	judge(&r, "gpu01", "status", 0, status_clean, "bad \xff byte\n");
	assert_string_equal(json_string_value(r.stderr_json), "bad \\xff byte\n");
	gs_host_result_free(&r);

	/* the verdict word itself */
	judge(&r, "gpu01", "reclaim", 1,
	      "{\"schema_version\":1,\"command\":\"reclaim\",\"verdict\":\"x\\u001b[2Jy\",\"summary\":\"gpuslate: a\\nb\\u009b\","
	      "\"gpus\":[]}",
	      NULL);
	assert_int_equal(r.verdict, GS_HV_NOT_CLEAN);
	assert_string_equal(r.line, "x?[2Jy, 0 GPUs, memory unknown: a\\x0ab\\xc2\\x9b");
	gs_host_result_free(&r);

	/* the command word of a mismatched document */
	judge(&r, "gpu01", "status", 0, "{\"schema_version\":1,\"command\":\"\\u001b[2J\"}", NULL);
	assert_int_equal(r.failure, GS_HF_BAD_OUTPUT);
	assert_string_equal(r.error, "bad output: a '\\x1b[2J' document where 'status' was asked for");
	gs_host_result_free(&r);

	/* respawn "by" and ssh's error line */
	judge(&r, "gpu01", "reclaim", 1,
	      "{\"schema_version\":1,\"command\":\"reclaim\",\"verdict\":\"not-clean\",\"gpus\":[],"
	      "\"respawns\":[{\"pid\":5,\"by\":\"unit \\u001b[1mx\"}]}",
	      NULL);
	assert_string_equal(r.line, "not clean, 0 GPUs, memory unknown: 5 respawned by unit \\x1b[1mx");
	gs_host_result_free(&r);
	expect_failure("status", 255, NULL, "ssh: connect to host \x1b[2Jgpu15: Connection refused\r\n",
		       GS_HF_UNREACHABLE, "unreachable: ssh: connect to host \\x1b[2Jgpu15: Connection refused");
}

static void test_run_states(void **state)
{
	static const struct {
		enum gs_run_state st;
		enum gs_host_failure f;
		const char *error;
	} cases[] = {
		{ GS_RUN_NOT_STARTED, GS_HF_NOT_STARTED, "not started: interrupted" },
		{ GS_RUN_SPAWN_FAILED, GS_HF_LOCAL_ERROR, "cannot run the transport command: No such file or directory" },
		{ GS_RUN_TIMED_OUT, GS_HF_TIMED_OUT, "timed out after 2.0 s; the remote command was ended" },
		{ GS_RUN_INTERRUPTED, GS_HF_INTERRUPTED, "interrupted; the remote command was ended" },
	};

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(cases); i++) {
		struct gs_run_output o = { 0 };
		struct gs_merge_opts m = mopts("status");
		struct gs_host_result r;

		o.state = cases[i].st;
		o.exit_code = -1;
		o.spawn_errno = ENOENT;
		/* even a complete document does not count once the run was ended */
		o.out = (char *)status_clean;
		o.out_len = strlen(status_clean);
		assert_int_equal(gs_host_result_make(&r, "gpu09", &o, &m), 0);
		check_invariants(&r);
		assert_int_equal(r.failure, cases[i].f);
		assert_string_equal(r.error, cases[i].error);
		gs_host_result_free(&r);
	}
}

static void test_failure_strings(void **state)
{
	static const char *const want[] = { NULL, "unreachable", "authentication", "missing", "too-old", "schema",
					    "bad-output", "remote-error", "timed-out", "interrupted", "not-started",
					    "local-error" };

	(void)state;
	for (int f = GS_HF_NONE; f <= GS_HF_LOCAL_ERROR; f++) {
		const char *s = gs_host_failure_str((enum gs_host_failure)f);

		if (!want[f])
			assert_null(s);
		else
			assert_string_equal(s, want[f]);
	}
}

/* ---- the fleet report ---------------------------------------------------- */

struct fleet {
	struct gs_host_result r[16];
	size_t n;
};

static void fleet_add(struct fleet *f, const char *host, const char *command, int code, const char *out,
		      const char *err)
{
	assert_true(f->n < GS_ARRAY_SIZE(f->r));
	judge(&f->r[f->n++], host, command, code, out, err);
}

static void fleet_free(struct fleet *f)
{
	for (size_t i = 0; i < f->n; i++)
		gs_host_result_free(&f->r[i]);
	f->n = 0;
}

static void expect_text(const struct fleet *f, bool interrupted, const char *want)
{
	char *text = NULL;

	assert_int_equal(gs_fleet_render_text("reclaim", f->r, f->n, interrupted, &text), 0);
	if (strcmp(text, want) != 0) {
		char got[4096];

		snprintf(got, sizeof(got), "%s", text);
		free(text);
		fail_msg("report:\n--- got\n%s--- want\n%s", got, want);
	}
	free(text);
}

static int exit_of(const struct fleet *f)
{
	struct gs_fleet_summary s;

	gs_fleet_summarize(f->r, f->n, &s);
	return gs_fleet_exit_status(&s);
}

/* Issue 11 item 9: the fleet folded a host whose filter matched nothing,
 * and one whose GPUs others still hold, into "clean". */
static void test_reclaim_selection_gone_and_no_match(void **state)
{
	struct fleet f = { 0 };
	char *text = NULL;

	(void)state;
	expect_line("reclaim", 6, reclaim_selection_gone, NULL, GS_HV_SELECTION_GONE,
		    "selection gone, 1 GPU, 8192 MiB: GPU 0 held by 4242 (serve) (left alone)");
	expect_line("reclaim", 7, reclaim_no_match, NULL, GS_HV_NO_MATCH,
		    "no match, 1 GPU, 3590 MiB: nothing matched: -u 30 matches no process");

	/* one host, nothing matched: the fleet says so (exit 7) */
	fleet_add(&f, "node03", "reclaim", 7, reclaim_no_match, NULL);
	assert_int_equal(exit_of(&f), 7);
	assert_int_equal(gs_fleet_render_text("reclaim", f.r, f.n, false, &text), 0);
	assert_non_null(strstr(text, "node03: no match, 1 GPU, 3590 MiB: nothing matched: -u 30 matches no process\n"));
	assert_non_null(strstr(text, "1 host: 0 clean, 0 not clean, 0 failed, 1 no match\n"));
	free(text);
	/* the unit runs on another host, cleaned there: not a failure */
	fleet_add(&f, "node04", "reclaim", 0, reclaim_clean, NULL);
	assert_int_equal(exit_of(&f), 0);
	/* a host whose GPU stays busy with what the selection left alone */
	fleet_add(&f, "node05", "reclaim", 6, reclaim_selection_gone, NULL);
	assert_int_equal(exit_of(&f), 6);
	fleet_add(&f, "node06", "reclaim", 1, reclaim_not_clean, NULL);
	assert_int_equal(exit_of(&f), 1);
	fleet_free(&f);
}

static void test_text_folding(void **state)
{
	struct fleet f = { 0 };
	char busy[4096];

	(void)state;
	snprintf(busy, sizeof(busy), status_busy_fmt, "gs-holder");
	fleet_add(&f, "host01", "status", 0, status_clean, NULL);
	fleet_add(&f, "host02", "status", 0, status_clean, NULL);
	fleet_add(&f, "host03", "status", 0, status_clean, NULL);
	fleet_add(&f, "host04", "status", 0, busy, NULL);
	fleet_add(&f, "host05", "status", 255, NULL, "ssh: connect to host host05 port 22: Connection refused\r\n");
	expect_text(&f, false,
		    "host[01-03]: clean, 2 GPUs, 0 MiB\n"
		    "host04: not clean, 2 GPUs, 1024 MiB: GPU 0 held by 21831 (gs-holder)\n"
		    "host05: unreachable: ssh: connect to host host05 port 22: Connection refused\n"
		    "5 hosts: 3 clean, 1 not clean, 1 failed\n");
	assert_int_equal(exit_of(&f), 4);
	fleet_free(&f);

	/* groups in the order of their first host; non-adjacent hosts fold;
	 * failures are never folded */
	fleet_add(&f, "gpu01", "status", 0, status_clean, NULL);
	fleet_add(&f, "gpu02", "status", 0, busy, NULL);
	fleet_add(&f, "gpu03", "status", 0, status_clean, NULL);
	fleet_add(&f, "gpu04", "status", 0, busy, NULL);
	fleet_add(&f, "gpu05", "status", 0, status_clean, NULL);
	fleet_add(&f, "gpu07", "status", 127, NULL, "sh: 1: gpuslate: not found\n");
	fleet_add(&f, "gpu08", "status", 127, NULL, "sh: 1: gpuslate: not found\n");
	expect_text(&f, false,
		    "gpu[01,03,05]: clean, 2 GPUs, 0 MiB\n"
		    "gpu[02,04]: not clean, 2 GPUs, 1024 MiB: GPU 0 held by 21831 (gs-holder)\n"
		    "gpu07: gpuslate missing on the host: sh: 1: gpuslate: not found\n"
		    "gpu08: gpuslate missing on the host: sh: 1: gpuslate: not found\n"
		    "7 hosts: 3 clean, 2 not clean, 2 failed\n");
	fleet_free(&f);

	/* the key is the whole line: different GPU counts do not fold */
	fleet_add(&f, "a1", "status", 0, status_clean, NULL);
	fleet_add(&f, "a2", "status", 0,
		  "{\"schema_version\":1,\"command\":\"status\",\"gpus\":[{\"index\":0,\"memory_used_mib\":0}]}", NULL);
	fleet_add(&f, "a3", "status", 0, status_clean, NULL);
	expect_text(&f, false,
		    "a[1,3]: clean, 2 GPUs, 0 MiB\n"
		    "a2: clean, 1 GPU, 0 MiB\n"
		    "3 hosts: 3 clean, 0 not clean, 0 failed\n");
	assert_int_equal(exit_of(&f), 0);
	fleet_free(&f);
}

static void test_text_dry_run_interrupted_empty(void **state)
{
	struct fleet f = { 0 };
	struct gs_run_output o = { 0 };
	struct gs_merge_opts m = mopts("reclaim");

	(void)state;
	fleet_add(&f, "gpu01", "reclaim", 0, reclaim_dry, NULL);
	fleet_add(&f, "gpu02", "reclaim", 0, reclaim_dry, NULL);
	expect_text(&f, false,
		    "gpu[01-02]: dry run, 2 GPUs, 1024 MiB: would stop 21831 (gs-holder)\n"
		    "2 hosts: 0 clean, 0 not clean, 0 failed, 2 dry run\n");
	assert_int_equal(exit_of(&f), 0);

	o.state = GS_RUN_NOT_STARTED;
	o.exit_code = -1;
	assert_int_equal(gs_host_result_make(&f.r[f.n++], "gpu03", &o, &m), 0);
	expect_text(&f, true,
		    "gpu[01-02]: dry run, 2 GPUs, 1024 MiB: would stop 21831 (gs-holder)\n"
		    "gpu03: not started: interrupted\n"
		    "3 hosts: 0 clean, 0 not clean, 1 failed, 2 dry run (interrupted)\n");
	assert_int_equal(exit_of(&f), 4);
	fleet_free(&f);

	fleet_add(&f, "solo", "reclaim", 0, reclaim_clean, NULL);
	expect_text(&f, false,
		    "solo: clean, 2 GPUs, 0 MiB, stopped 1 process (gs-holder)\n1 host: 1 clean, 0 not clean, 0 failed\n");
	fleet_free(&f);

	expect_text(&f, false, "0 hosts: 0 clean, 0 not clean, 0 failed\n");
	assert_int_equal(exit_of(&f), 0);
}

static void test_exit_status_rule(void **state)
{
	static const struct {
		struct gs_fleet_summary s;
		int want;
	} cases[] = {
		{ { 0, 0, 0, 0, 0, 0, 0, 0 }, 0 },  { { 3, 3, 0, 0, 0, 0, 0, 0 }, 0 }, { { 3, 1, 0, 2, 0, 0, 0, 0 }, 0 },
		{ { 3, 0, 0, 3, 0, 0, 0, 0 }, 0 },  { { 3, 2, 1, 0, 0, 0, 0, 0 }, 1 }, { { 3, 0, 3, 0, 0, 0, 0, 0 }, 1 },
		{ { 3, 1, 0, 1, 1, 0, 0, 0 }, 4 },  { { 3, 1, 1, 0, 1, 0, 0, 0 }, 4 }, { { 1, 0, 0, 0, 1, 0, 0, 0 }, 4 },
		/* hosts, clean, not clean, dry run, failed, selection gone, no match, busy */
		{ { 2, 1, 0, 0, 0, 1, 0, 0 }, 6 }, { { 2, 0, 1, 0, 0, 1, 0, 0 }, 1 }, { { 2, 0, 0, 0, 1, 1, 0, 0 }, 4 },
		{ { 1, 0, 0, 0, 0, 0, 1, 0 }, 7 }, { { 2, 1, 0, 0, 0, 0, 1, 0 }, 0 }, { { 2, 0, 0, 1, 0, 0, 1, 0 }, 0 },
		{ { 2, 0, 0, 0, 0, 1, 1, 0 }, 6 },
		/* ..., busy (of not clean: a status that worked and found the GPUs held) */
		{ { 2, 1, 1, 0, 0, 0, 0, 1 }, 0 }, { { 2, 0, 2, 0, 0, 0, 0, 1 }, 1 },
		{ { 2, 0, 1, 0, 1, 0, 0, 1 }, 4 },
	};
	struct fleet f = { 0 };

	(void)state;
	for (size_t i = 0; i < GS_ARRAY_SIZE(cases); i++)
		assert_int_equal(gs_fleet_exit_status(&cases[i].s), cases[i].want);

	/* from real results */
	fleet_add(&f, "a", "reclaim", 0, reclaim_clean, NULL);
	assert_int_equal(exit_of(&f), 0);
	fleet_add(&f, "b", "reclaim", 1, reclaim_not_clean, NULL);
	assert_int_equal(exit_of(&f), 1);
	fleet_add(&f, "c", "reclaim", 0, "{\"schema_version\":2}", NULL);
	assert_int_equal(exit_of(&f), 4);
	fleet_free(&f);

	/* status: 0 when every host could read its GPUs, whatever holds them
	 * (as on one host); a host whose driver failed is not clean (1). */
	{
		char busy[sizeof(status_busy_fmt) + 64];

		snprintf(busy, sizeof(busy), status_busy_fmt, "gs-holder");
		fleet_add(&f, "a", "status", 0, status_clean, NULL);
		fleet_add(&f, "b", "status", 0, busy, NULL);
		assert_int_equal(f.r[1].verdict, GS_HV_NOT_CLEAN);
		assert_true(f.r[1].status_busy);
		assert_int_equal(exit_of(&f), 0);
		fleet_add(&f, "c", "status", 3, status_driver_failure, status_driver_failure_err);
		assert_false(f.r[2].status_busy);
		assert_int_equal(exit_of(&f), 1);
		fleet_free(&f);
	}
}

/* A fleet query: each host's "output", every line prefixed with the host,
 * in list order; control bytes escaped; failed hosts add nothing. */
static void test_render_prefixed(void **state)
{
	struct gs_host_result r[3];
	char *text = NULL;

	(void)state;
	judge(&r[0], "gpu02", "status", 0,
	      "{\"schema_version\":1,\"command\":\"status\",\"gpus\":[],\"processes\":[],"
	      "\"output\":\"0, 1024 MiB\\n1, 0 MiB\\n\"}", NULL);
	judge(&r[1], "gpu15", "status", 255, NULL, "ssh: connect to host gpu15 port 22: Connection refused\n");
	judge(&r[2], "gpu01", "status", 0,
	      "{\"schema_version\":1,\"command\":\"status\",\"gpus\":[],\"processes\":[],"
	      "\"output\":\"0, \\u001b[31mred\\r\\nno newline at the end\"}", NULL);
	assert_int_equal(r[1].verdict, GS_HV_FAILED);
	assert_int_equal(gs_fleet_render_prefixed(r, 3, &text), 0);
	assert_string_equal(text, "gpu02: 0, 1024 MiB\ngpu02: 1, 0 MiB\n"
				  "gpu01: 0, \\x1b[31mred\\x0d\ngpu01: no newline at the end\n");
	free(text);
	for (size_t i = 0; i < 3; i++)
		gs_host_result_free(&r[i]);
}

static void test_json_document(void **state)
{
	struct fleet f = { 0 };
	struct gs_run_output o = { 0 };
	struct gs_merge_opts m = mopts("status");
	json_t *j, *hosts, *h, *sum;
	char busy[4096], *dump;

	(void)state;
	snprintf(busy, sizeof(busy), status_busy_fmt, "gs-holder");
	fleet_add(&f, "gpu01", "status", 0, status_clean, "gpuslate: warning: 3 processes could not be read\n");
	fleet_add(&f, "gpu02", "status", 0, busy, NULL);
	fleet_add(&f, "gpu15", "status", 255, NULL, "ssh: connect to host gpu15 port 22: Connection refused\n");
	fleet_add(&f, "gpu16", "status", 0, "{\"schema_version\":2,\"command\":\"status\"}", NULL);
	o.state = GS_RUN_SPAWN_FAILED;
	o.exit_code = -1;
	o.spawn_errno = ENOENT;
	assert_int_equal(gs_host_result_make(&f.r[f.n++], "gpu17", &o, &m), 0);

	j = gs_fleet_json(f.r, f.n, "status", false);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "schema_version")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "tool")), "gpuslate");
	assert_string_equal(json_string_value(json_object_get(j, "version")), GS_VERSION);
	assert_string_equal(json_string_value(json_object_get(j, "command")), "status");
	assert_true(json_is_false(json_object_get(j, "interrupted")));
	hosts = json_object_get(j, "hosts");
	assert_int_equal(json_array_size(hosts), 5);

	h = json_array_get(hosts, 0);
	assert_string_equal(json_string_value(json_object_get(h, "host")), "gpu01");
	assert_true(json_is_true(json_object_get(h, "ok")));
	assert_string_equal(json_string_value(json_object_get(h, "verdict")), "clean");
	assert_true(json_is_null(json_object_get(h, "failure")));
	assert_true(json_is_null(json_object_get(h, "error")));
	assert_string_equal(json_string_value(json_object_get(h, "summary")), "clean, 2 GPUs, 0 MiB");
	assert_int_equal(json_integer_value(json_object_get(h, "exit_status")), 0);
	assert_true(json_is_real(json_object_get(h, "elapsed_s")));
	assert_true(json_real_value(json_object_get(h, "elapsed_s")) > 0.479 &&
		    json_real_value(json_object_get(h, "elapsed_s")) < 0.481);
	assert_string_equal(json_string_value(json_object_get(h, "stderr")),
			    "gpuslate: warning: 3 processes could not be read\n");
	/* the host's own document, as it printed it */
	assert_ptr_equal(json_object_get(h, "report"), f.r[0].report);
	{
		json_t *orig = json_loads(status_clean, 0, NULL);

		assert_true(json_equal(json_object_get(h, "report"), orig));
		json_decref(orig);
	}

	h = json_array_get(hosts, 1);
	assert_string_equal(json_string_value(json_object_get(h, "verdict")), "not-clean");
	assert_true(json_is_true(json_object_get(h, "ok")));
	assert_true(json_is_null(json_object_get(h, "stderr")));

	h = json_array_get(hosts, 2);
	assert_string_equal(json_string_value(json_object_get(h, "host")), "gpu15");
	assert_true(json_is_false(json_object_get(h, "ok")));
	assert_string_equal(json_string_value(json_object_get(h, "verdict")), "failed");
	assert_string_equal(json_string_value(json_object_get(h, "failure")), "unreachable");
	assert_string_equal(json_string_value(json_object_get(h, "error")),
			    "unreachable: ssh: connect to host gpu15 port 22: Connection refused");
	assert_true(json_is_null(json_object_get(h, "summary")));
	assert_int_equal(json_integer_value(json_object_get(h, "exit_status")), 255);
	assert_string_equal(json_string_value(json_object_get(h, "stderr")),
			    "ssh: connect to host gpu15 port 22: Connection refused\n");
	assert_true(json_is_null(json_object_get(h, "report")));

	h = json_array_get(hosts, 3);
	assert_string_equal(json_string_value(json_object_get(h, "failure")), "schema");
	assert_true(json_is_null(json_object_get(h, "report")));

	h = json_array_get(hosts, 4);
	assert_string_equal(json_string_value(json_object_get(h, "failure")), "local-error");
	assert_true(json_is_null(json_object_get(h, "exit_status"))); /* never exited: null, not -1 */

	sum = json_object_get(j, "summary");
	assert_int_equal(json_integer_value(json_object_get(sum, "hosts")), 5);
	assert_int_equal(json_integer_value(json_object_get(sum, "clean")), 1);
	assert_int_equal(json_integer_value(json_object_get(sum, "not_clean")), 1);
	assert_int_equal(json_integer_value(json_object_get(sum, "dry_run")), 0);
	assert_int_equal(json_integer_value(json_object_get(sum, "failed")), 3);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_status")), 4);

	/* it serialises, and the report survives the results being freed */
	dump = json_dumps(j, JSON_COMPACT);
	assert_non_null(dump);
	free(dump);
	fleet_free(&f);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(hosts, 0), "report"), "host")),
			    "vm");
	json_decref(j);

	/* interrupted, dry run, empty */
	fleet_add(&f, "d1", "reclaim", 0, reclaim_dry, NULL);
	j = gs_fleet_json(f.r, f.n, "reclaim", true);
	assert_true(json_is_true(json_object_get(j, "interrupted")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "hosts"), 0), "verdict")),
			    "dry-run");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "summary"), "dry_run")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_status")), 0);
	json_decref(j);
	fleet_free(&f);
	j = gs_fleet_json(f.r, 0, "wait", false);
	assert_int_equal(json_array_size(json_object_get(j, "hosts")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "summary"), "hosts")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_status")), 0);
	json_decref(j);
}

/* The stopped words: processes counted, names once each; the outcomes that
 * are not a stop (gone before, refused) count for nothing. The plan's
 * --expect text from a dry run: PIDs with start times, or refused. */
static void test_stopped_words_and_expect(void **state)
{
	static const char doc[] =
		"{\"schema_version\": 1, \"command\": \"reclaim\", \"verdict\": \"clean\", \"gpus\": "
		"[{\"index\": 0, \"memory_after_mib\": 0}], \"processes\": ["
		"{\"pid\": 10, \"comm\": \"vllm\", \"outcome\": \"exited-after-term\"},"
		"{\"pid\": 11, \"comm\": \"python3\", \"outcome\": \"killed\"},"
		"{\"pid\": 12, \"comm\": \"vllm\", \"outcome\": \"stopped-with-unit\"},"
		"{\"pid\": 13, \"comm\": \"gone\", \"outcome\": \"already-gone\"},"
		"{\"pid\": 14, \"comm\": \"root\", \"outcome\": \"permission-denied\"}]}";
	static const char dry[] =
		"{\"schema_version\": 1, \"command\": \"reclaim\", \"verdict\": \"dry-run\", \"gpus\": [], "
		"\"plan\": {\"targets\": [{\"pid\": 10, \"start_time\": 555, \"comm\": \"vllm\", \"action\": \"stop-unit\"}, "
		"{\"pid\": 11, \"start_time\": 0, \"comm\": \"x\", \"action\": \"signal\"}]}}";
	static const char dry_newer[] =
		"{\"schema_version\": 1, \"command\": \"reclaim\", \"verdict\": \"dry-run\", \"gpus\": [], "
		"\"plan\": {\"targets\": [{\"pid\": 10, \"start_time\": 555, \"comm\": \"vllm\", \"action\": \"teleport\"}]}}";
	static const char dry_old[] =
		"{\"schema_version\": 1, \"command\": \"reclaim\", \"verdict\": \"dry-run\", \"gpus\": [], "
		"\"plan\": {\"targets\": [{\"pid\": 10, \"comm\": \"vllm\"}]}}";
	static const char dry_none[] =
		"{\"schema_version\": 1, \"command\": \"reclaim\", \"verdict\": \"dry-run\", \"gpus\": [], "
		"\"plan\": {\"targets\": []}}";
	struct gs_host_result r;
	char *e = NULL;

	(void)state;
	expect_line("reclaim", 0, doc, NULL, GS_HV_CLEAN, "clean, 1 GPU, 0 MiB, stopped 3 processes (vllm, python3)");
	judge(&r, "h", "reclaim", 0, dry, NULL);
	assert_int_equal(gs_host_result_expect(&r, &e), 0);
	assert_string_equal(e, "10:555:stop-unit,11:0:signal");
	free(e);
	gs_host_result_free(&r);
	/* An action word this gpuslate does not know: not asked to act. */
	judge(&r, "h", "reclaim", 0, dry_newer, NULL);
	assert_int_equal(gs_host_result_expect(&r, &e), -EINVAL);
	gs_host_result_free(&r);
	judge(&r, "h", "reclaim", 0, dry_old, NULL);
	assert_int_equal(gs_host_result_expect(&r, &e), -EPROTO);
	gs_host_result_free(&r);
	judge(&r, "h", "reclaim", 0, dry_none, NULL);
	assert_int_equal(gs_host_result_expect(&r, &e), 0);
	assert_string_equal(e, "none");
	free(e);
	gs_host_result_free(&r);
	judge(&r, "h", "reclaim", 255, NULL, "ssh: connect to host h port 22: Connection refused\n");
	assert_int_equal(gs_host_result_expect(&r, &e), -ENODATA);
	gs_host_result_free(&r);
}

/* A fleet's Prometheus: one exposition; a host's junk lines are dropped,
 * never copied; its own host label becomes exported_host. */
static void test_prometheus_merge(void **state)
{
	static const char a[] =
		"{\"schema_version\": 1, \"command\": \"status\", \"verdict\": \"clean\", \"gpus\": [], \"output\": "
		"\"# HELP gpuslate_up up.\\n# TYPE gpuslate_up gauge\\ngpuslate_up 1\\n"
		"# HELP m_last last.\\n# TYPE m_last gauge\\nm_last{host=\\\"vm\\\",v=\\\"a\\\\\\\"b\\\"} 1\\n\"}";
	static const char b[] =
		"{\"schema_version\": 1, \"command\": \"status\", \"verdict\": \"clean\", \"gpus\": [], \"output\": "
		"\"# HELP gpuslate_up up.\\n# TYPE gpuslate_up gauge\\ngpuslate_up 1\\n"
		"junk line\\n# TYPE x bogus\\nm_last{v=\\\"\\u001b[31m\\\"} 2\\nm_last 3 4\\nm_last{a=\\\"1\\\"} 1; rm\\n\"}";
	struct fleet f = { .n = 0 };
	size_t dropped = 99;
	char *text = NULL;

	(void)state;
	fleet_add(&f, "h1", "status", 0, a, NULL);
	fleet_add(&f, "h2", "status", 0, b, NULL);
	fleet_add(&f, "h3", "status", 255, NULL, "ssh: connect to host h3 port 22: Connection refused\n");
	assert_int_equal(gs_fleet_render_prometheus(f.r, f.n, &text, &dropped), 0);
	assert_string_equal(text, "# HELP gpuslate_up up.\n# TYPE gpuslate_up gauge\n"
				  "gpuslate_up{host=\"h1\"} 1\ngpuslate_up{host=\"h2\"} 1\ngpuslate_up{host=\"h3\"} 0\n"
				  "# HELP m_last last.\n# TYPE m_last gauge\n"
				  "m_last{host=\"h1\",exported_host=\"vm\",v=\"a\\\"b\"} 1\n"
				  "m_last{host=\"h2\"} 3 4\n");
	assert_int_equal(dropped, 4);
	free(text);
	fleet_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_documents),
		cmocka_unit_test(test_status_tolerance),
		cmocka_unit_test(test_status_host_verdict_is_taken_at_its_word),
		cmocka_unit_test(test_reclaim_documents),
		cmocka_unit_test(test_restore_documents),
		cmocka_unit_test(test_reclaim_selection_gone_and_no_match),
		cmocka_unit_test(test_document_mismatches),
		cmocka_unit_test(test_ssh_failures),
		cmocka_unit_test(test_remote_failures),
		cmocka_unit_test(test_remote_early_failure_documents),
		cmocka_unit_test(test_remote_error_not_taken_for_missing),
		cmocka_unit_test(test_bad_output),
		cmocka_unit_test(test_control_characters),
		cmocka_unit_test(test_run_states),
		cmocka_unit_test(test_failure_strings),
		cmocka_unit_test(test_text_folding),
		cmocka_unit_test(test_text_dry_run_interrupted_empty),
		cmocka_unit_test(test_exit_status_rule),
		cmocka_unit_test(test_render_prefixed),
		cmocka_unit_test(test_json_document),
		cmocka_unit_test(test_stopped_words_and_expect),
		cmocka_unit_test(test_prometheus_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
