/* The option table; see options.h. */
#include "core/options.h"
#include "core/snapshot.h"

#include <stddef.h>
#include <stdlib.h>

/* Builds outside the Makefile (the analysis tools) get its default PREFIX;
 * the Makefile passes the DOCDIR `make install` uses. */
#ifndef GS_DOCDIR
#define GS_DOCDIR "/usr/local/share/doc/gpuslate"
#endif

#define V(field) offsetof(struct gs_request, field)
#define L(field) offsetof(struct gs_request, field), offsetof(struct gs_request, n_##field)

/* name, key, arg, commands, forward, type, value, count, section, help */
const struct gs_option gs_options[] = {
	{ "gpus", 'g', "GPUS", GS_FOR_ALL, GS_FWD_IF_SET, GS_OT_GPUS, V(gpus), 0, "GPUs",
	  "indices, ranges or UUIDs: 0,2-3 or GPU-a2983c1e (repeatable)" },
	{ "user", 'u', "USER", GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_LIST, L(users), "Selection of processes",
	  "only processes of USER (repeatable)" },
	{ "unit", OPT_UNIT, "NAME", GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_LIST, L(units), NULL,
	  "only processes of systemd unit NAME (repeatable)" },
	{ "container", OPT_CONTAINER, "ID", GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_LIST, L(containers), NULL,
	  "only processes of container ID (repeatable)" },
	{ "match", OPT_MATCH, "REGEX", GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_STRING, V(match), 0, NULL,
	  "only processes whose command line matches" },
	{ "include-clients", OPT_INCLUDE_CLIENTS, NULL, GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_FLAG, V(include_clients), 0,
	  NULL, "also stop clients (monitors holding no memory)" },
	{ "include", OPT_INCLUDE, "PROCNAME", GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_LIST, L(includes), NULL,
	  "also stop this protected daemon (repeatable)" },

	{ "yes", 'y', NULL, GS_FOR_ACT | GS_FOR_RESTORE, GS_FWD_SPECIAL, GS_OT_FLAG, V(yes), 0, "Acting",
	  "act without asking" },
	{ "dry-run", 'n', NULL, GS_FOR_ACT | GS_FOR_RESTORE, GS_FWD_IF_SET, GS_OT_FLAG, V(dry_run), 0, NULL,
	  "print the plan, change nothing" },
	{ "grace", OPT_GRACE, "TIME", GS_FOR_ACT, GS_FWD_ALWAYS, GS_OT_MS, V(grace_ms), 0, NULL,
	  "SIGTERM to SIGKILL grace period (default 10s)" },
	{ "timeout", OPT_TIMEOUT, "TIME", GS_FOR_ACT | GS_FOR_WAIT | GS_FOR_RESTORE, GS_FWD_ALWAYS, GS_OT_MS, V(timeout_ms), 0, NULL,
	  "wait for release at most TIME (default 60s); restore:\nthe lock and each start" },
	{ "tolerance", OPT_TOLERANCE, "MIB", GS_FOR_ACT | GS_FOR_WAIT, GS_FWD_ALWAYS, GS_OT_MIB, V(tolerance_mib), 0,
	  NULL, "memory above the baseline still counted clean (default 16)" },
	{ "no-units", OPT_NO_UNITS, NULL, GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_FLAG, V(no_units), 0, NULL,
	  "signal processes only, never stop systemd units" },
	{ "include-parent", OPT_INCLUDE_PARENT, NULL, GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_FLAG, V(include_parent), 0,
	  NULL, "also stop a target's supervising parent (a loop,\nan elastic agent) that would restart it" },
	{ "respawn-watch", OPT_RESPAWN_WATCH, "TIME", GS_FOR_ACT, GS_FWD_IF_SET, GS_OT_MS, V(respawn_watch_ms), 0, NULL,
	  "watch a supervising parent this long for a restart\n(default 2.5s; its restart delay, if longer)" },
	{ "reason", OPT_REASON, "TEXT", GS_FOR_ACT | GS_FOR_WAIT, GS_FWD_IF_SET, GS_OT_STRING, V(reason), 0, NULL,
	  "text for the report (e.g. a Slurm drain reason)" },
	/* Set per host by a fleet controller (src/cli/cmd_fleet.c), never
	 * forwarded from its own command line. */
	{ "expect", OPT_EXPECT, "PIDS", GS_FOR_RECLAIM, GS_FWD_NO, GS_OT_STRING, V(expect), 0, NULL,
	  "stop nothing if the plan has a target not in PIDS\n(PID:STARTTIME,... or none; what a fleet confirmed)" },

	{ "guard", OPT_GUARD, NULL, GS_FOR_RUN, GS_FWD_NO, GS_OT_FLAG, V(guard), 0, "While COMMAND runs",
	  "stop intruders (new holders of the selected GPUs outside\nCOMMAND's process tree) as reclaim would" },
	{ "restore", OPT_RESTORE, NULL, GS_FOR_RUN, GS_FWD_NO, GS_OT_FLAG, V(restore), 0, NULL,
	  "when COMMAND ends, start again what the reclaim stopped" },
	{ "json-file", OPT_JSON_FILE, "FILE", GS_FOR_RUN, GS_FWD_NO, GS_OT_STRING, V(json_file), 0, NULL,
	  "the --json document into FILE (atomically), not stdout:\nstdout stays COMMAND's" },

	{ "json", OPT_JSON, NULL, GS_FOR_EVERY, GS_FWD_NO, GS_OT_FLAG, V(json), 0, "Output",
	  "versioned JSON (gpuslate(1), " GS_DOCDIR "/json.md)" },
	{ "csv", OPT_CSV, NULL, GS_FOR_STATUS, GS_FWD_IF_SET, GS_OT_CSV, V(csv), 0, NULL,
	  "CSV, one table: the GPUs (--csv, --csv=gpus) or\nthe processes (--csv=processes)" },
	{ "query-gpu", OPT_QUERY_GPU, "FIELDS", GS_FOR_STATUS, GS_FWD_IF_SET, GS_OT_STRING, V(query_gpu), 0, NULL,
	  "nvidia-smi compatible query (with --format)" },
	{ "query-compute-apps", OPT_QUERY_APPS, "FIELDS", GS_FOR_STATUS, GS_FWD_IF_SET, GS_OT_STRING, V(query_apps), 0,
	  NULL, "nvidia-smi compatible: one line per process holding\na GPU (with --format)" },
	{ "format", OPT_FORMAT, "FMT", GS_FOR_STATUS, GS_FWD_IF_SET, GS_OT_FORMAT, V(format), 0, NULL,
	  "csv[,noheader][,nounits] or prometheus" },
	{ "quiet", 'q', NULL, GS_FOR_EVERY, GS_FWD_NO, GS_OT_FLAG, V(quiet), 0, NULL,
	  "the verdict line and errors only (a plan a question\nneeds is still shown); status: no notes on stderr" },
	{ "verbose", 'v', NULL, GS_FOR_EVERY, GS_FWD_SPECIAL, GS_OT_FLAG, V(verbose), 0, NULL,
	  "processes gpuslate could not inspect; with -w: every host's\nfull plan and report" },
	{ "wide", 'W', NULL, GS_FOR_ALL, GS_FWD_NO, GS_OT_FLAG, V(wide), 0, NULL,
	  "whole command lines in the tables (as ps -ww)" },

	{ "hosts", 'w', "LIST", GS_FOR_FLEET, GS_FWD_NO, GS_OT_LIST, L(hosts), "Fleet",
	  "run on hosts (gpu[01-16],pve1, @group, - for stdin)" },
	{ "exclude", 'x', "LIST", GS_FOR_FLEET, GS_FWD_NO, GS_OT_LIST, L(excludes), NULL, "leave these hosts out" },
	{ "fanout", 'f', "N", GS_FOR_FLEET, GS_FWD_NO, GS_OT_FANOUT, V(fanout), 0, NULL, "hosts at once (default 32)" },
	{ "hosts-file", OPT_HOSTS_FILE, "FILE", GS_FOR_FLEET, GS_FWD_NO, GS_OT_STRING, V(hosts_file), 0, NULL,
	  "inventory (default ~/.config/gpuslate/hosts, /etc/gpuslate/hosts)" },
	{ "ssh", OPT_SSH, "CMD", GS_FOR_FLEET, GS_FWD_NO, GS_OT_STRING, V(ssh_cmd), 0, NULL,
	  "ssh command and options (env GPUSLATE_SSH)" },
	{ "remote-cmd", OPT_REMOTE_CMD, "CMD", GS_FOR_FLEET, GS_FWD_NO, GS_OT_STRING, V(remote_cmd), 0, NULL,
	  "gpuslate on the remote hosts (default gpuslate)" },
	{ "connect-timeout", OPT_CONNECT_TIMEOUT, "TIME", GS_FOR_FLEET, GS_FWD_NO, GS_OT_MS, V(connect_timeout_ms), 0, NULL,
	  "give up connecting to a host after TIME (default 10s)" },
	{ "command-timeout", OPT_COMMAND_TIMEOUT, "TIME", GS_FOR_FLEET, GS_FWD_NO, GS_OT_MS, V(command_timeout_ms), 0, NULL,
	  "end a host's command after TIME\n(default: 2 x --timeout + 2 x --grace + 60s)" },

	{ "nvml-lib", OPT_NVML_LIB, "PATH", GS_FOR_ALL, GS_FWD_NO, GS_OT_STRING, V(nvml_lib), 0, "Where to look",
	  "NVML library (env GPUSLATE_NVML_LIB)" },
	{ "nvml-timeout", OPT_NVML_TIMEOUT, "TIME", GS_FOR_ALL, GS_FWD_IF_SET, GS_OT_MS_SHORT, V(nvml_timeout_ms), 0, NULL,
	  "deadline of every NVML call (default 5s)" },
	{ "no-nvml", OPT_NO_NVML, NULL, GS_FOR_ALL, GS_FWD_IF_SET, GS_OT_FLAG, V(no_nvml), 0, NULL,
	  "no NVML: holders from the scan, no memory figures" },
	{ "dev-root", OPT_DEV_ROOT, "DIR", GS_FOR_ALL, GS_FWD_NO, GS_OT_STRING, V(dev_root), 0, NULL,
	  "device nodes directory (env GPUSLATE_DEV_ROOT)" },
	{ "sys-root", OPT_SYS_ROOT, "DIR", GS_FOR_ALL, GS_FWD_NO, GS_OT_STRING, V(sys_root), 0, NULL,
	  "the /sys to read AMD/Intel GPUs from (env GPUSLATE_SYS_ROOT)" },
	{ "proc-root", OPT_PROC_ROOT, "DIR", GS_FOR_STATUS | GS_FOR_RECLAIM | GS_FOR_WAIT, GS_FWD_NO, GS_OT_STRING, V(proc_root), 0, NULL,
	  "read this copy of /proc (reclaim: only with --dry-run)" },
	/* Given by a fleet controller to the far side, never by people. */
	{ "remote", OPT_REMOTE, NULL, GS_FOR_EVERY, GS_FWD_NO, GS_OT_REMOTE, V(remote), 0, NULL, NULL },

	{ "help", 'h', NULL, GS_FOR_EVERY, GS_FWD_NO, GS_OT_HELP, 0, 0, "", "this help" },
	{ "version", 'V', NULL, GS_FOR_EVERY, GS_FWD_NO, GS_OT_VERSION, 0, 0, NULL, "version" },
	{ NULL, 0, NULL, 0, GS_FWD_NO, GS_OT_FLAG, 0, 0, NULL, NULL },
};

const struct gs_option *gs_option_find(int key)
{
	for (const struct gs_option *o = gs_options; o->name; o++)
		if (o->key == key)
			return o;
	return NULL;
}

void gs_request_defaults(struct gs_request *req)
{
	req->grace_ms = 10000;
	req->timeout_ms = 60000;
	req->tolerance_mib = GS_TOLERANCE_DEFAULT_MIB;
	req->fanout = 32;
	req->connect_timeout_ms = 10000;
	req->nvml_lib = getenv("GPUSLATE_NVML_LIB");
	req->dev_root = getenv("GPUSLATE_DEV_ROOT");
	req->sys_root = getenv("GPUSLATE_SYS_ROOT");
	req->fdinfo_shadow = getenv("GPUSLATE_FDINFO_SHADOW");
	req->nvidia_procfs = getenv("GPUSLATE_NVIDIA_PROCFS");
	req->ssh_cmd = getenv("GPUSLATE_SSH");
}
