/* gpuslate: give GPU hosts a clean slate. Option parsing and dispatch. */
#include "cli/cli.h"
#include "core/gpusel.h"
#include "core/snapshot.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gs_err(const char *fmt, ...)
{
	va_list ap;

	fputs("gpuslate: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void gs_warn(const char *fmt, ...)
{
	va_list ap;

	fputs("gpuslate: warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fputs("Usage:\n"
	      " gpuslate [options] status  [-g GPUS] [--json | --csv | --format prometheus]\n"
	      " gpuslate [options] status  --query-gpu=FIELDS --format=csv[,noheader][,nounits]\n"
	      " gpuslate [options] reclaim [-g GPUS] [selection] [-y] [-n] [--grace TIME] [--timeout TIME] [--json]\n"
	      " gpuslate [options] wait    [-g GPUS] [--timeout TIME] [--json]\n"
	      "\n"
	      "Find every process holding a GPU, stop each one the right way, wait until\n"
	      "the memory is released and verify it. TIME is seconds (10, 0.5) or a\n"
	      "duration with units: 90s, 2m, 500ms, 1m30s.\n"
	      "\n"
	      "Selection (reclaim):\n"
	      " -g, --gpus GPUS          indices, ranges or UUIDs: 0,2-3 or GPU-a2983c1e (repeatable)\n"
	      " -u, --user USER          only processes of USER (repeatable)\n"
	      "     --unit NAME          only processes of systemd unit NAME (repeatable)\n"
	      "     --container ID       only processes of container ID (repeatable)\n"
	      "     --match REGEX        only processes whose command line matches\n"
	      "     --include-clients    also stop clients (monitors holding no memory)\n"
	      "     --include PROCNAME   also stop this protected daemon (repeatable)\n"
	      "\n"
	      "Acting (reclaim):\n"
	      " -y, --yes                act without asking\n"
	      " -n, --dry-run            print the plan, change nothing\n"
	      "     --grace TIME         SIGTERM to SIGKILL grace period (default 10s)\n"
	      "     --timeout TIME       wait for release at most TIME (default 60s)\n"
	      "     --tolerance MIB      memory above the baseline still counted clean (default 16)\n"
	      "     --no-units           signal processes only, never stop systemd units\n"
	      "     --reason TEXT        text for the report (e.g. a Slurm drain reason)\n"
	      "\n"
	      "Output:\n"
	      "     --json               versioned JSON (gpuslate(1), /usr/share/doc/gpuslate/json.md)\n"
	      "     --csv                CSV\n"
	      "     --query-gpu FIELDS   nvidia-smi compatible query (with --format)\n"
	      "     --query-compute-apps FIELDS\n"
	      "     --format FMT         csv[,noheader][,nounits] or prometheus\n"
	      " -q, --quiet              no progress or notes on stderr\n"
	      " -v, --verbose            with -w: every host's full plan and report\n"
	      "\n"
	      "Fleet:\n"
	      " -w, --hosts LIST         run on hosts (gpu[01-16],pve1, @group, - for stdin)\n"
	      " -x, --exclude LIST       leave these hosts out\n"
	      " -f, --fanout N           hosts at once (default 32)\n"
	      "     --hosts-file FILE    inventory (default ~/.config/gpuslate/hosts, /etc/gpuslate/hosts)\n"
	      "     --ssh CMD            ssh command and options (env GPUSLATE_SSH)\n"
	      "     --remote-cmd CMD     gpuslate on the remote hosts (default gpuslate)\n"
	      "     --connect-timeout TIME  (default 10s)\n"
	      "     --command-timeout TIME  (default: --timeout + 2 x --grace + 60s)\n"
	      "\n"
	      "Where to look:\n"
	      "     --nvml-lib PATH      NVML library (env GPUSLATE_NVML_LIB)\n"
	      "     --nvml-timeout TIME  deadline of every NVML call (default 5s)\n"
	      "     --no-nvml            no NVML: holders from the scan, no memory figures\n"
	      "     --dev-root DIR       device nodes directory (env GPUSLATE_DEV_ROOT)\n"
	      "     --proc-root DIR      read this copy of /proc (status, reclaim --dry-run)\n"
	      "\n"
	      " -h, --help               this help\n"
	      " -V, --version            version\n"
	      "\n"
	      "Exit status: 0 clean, 1 not clean, 2 usage error, 3 GPU driver failure,\n"
	      "4 some hosts failed, 5 refused, 6 selection gone but processes left alone\n"
	      "hold memory, 7 a filter matched no process. See gpuslate(1).\n", f);
}


/* Commands an option is valid for. */
#define C_STATUS (1u << GS_CMD_STATUS)
#define C_RECLAIM (1u << GS_CMD_RECLAIM)
#define C_WAIT (1u << GS_CMD_WAIT)
#define C_ALL (C_STATUS | C_RECLAIM | C_WAIT)


static unsigned option_commands(int c)
{
	switch (c) {
	case 'u': case OPT_UNIT: case OPT_CONTAINER: case OPT_MATCH: case OPT_INCLUDE_CLIENTS:
	case OPT_INCLUDE: case 'y': case 'n': case OPT_GRACE: case OPT_NO_UNITS:
		return C_RECLAIM;
	case OPT_TIMEOUT: case OPT_TOLERANCE: case OPT_REASON:
		return C_RECLAIM | C_WAIT;
	case OPT_CSV: case OPT_QUERY_GPU: case OPT_QUERY_APPS: case OPT_FORMAT:
		return C_STATUS;
	default:
		return C_ALL;
	}
}

static const char *option_name(int c)
{
	for (const struct option *o = gs_cli_long_opts; o->name; o++)
		if (o->val == c)
			return o->name;
	return "?";
}

static int add_multi(const char **arr, size_t *n, const char *v, const char *what)
{
	if (*n >= GS_MAX_MULTI) {
		gs_err("too many %s options (at most %d)", what, GS_MAX_MULTI);
		return -E2BIG;
	}
	arr[(*n)++] = v;
	return 0;
}

static int parse_secs(const char *opt, const char *v, uint64_t *ret)
{
	int r = gs_parse_duration(v, ret);

	if (r < 0) {
		gs_err("invalid %s '%s': %s", opt, v,
		       r == -ERANGE ? "longer than 7 days" : "expected a duration, e.g. 10, 0.5, 90s, 2m or 500ms");
		return -EINVAL;
	}
	return 0;
}

/* Repeated -g: the lists add up, as repeated -u do ("-g 0 -g 2" is "0,2"). */
static int add_gpus(struct gs_request *cli, const char *v)
{
	static char joined[4096];
	size_t have = cli->gpus ? strlen(cli->gpus) : 0;

	if (!cli->gpus) {
		cli->gpus = v;
		return 0;
	}
	if (have + 1 + strlen(v) + 1 > sizeof(joined)) {
		gs_err("-g: GPU list too long");
		return -E2BIG;
	}
	if (cli->gpus != joined)
		memcpy(joined, cli->gpus, have + 1);
	joined[have] = ',';
	memcpy(joined + have + 1, v, strlen(v) + 1);
	cli->gpus = joined;
	return 0;
}

/* --include names a protected daemon to stop; any other name would be a
 * silent no-op (every other holder is a target already). */
static int check_includes(const struct gs_request *cli)
{
	for (size_t i = 0; i < cli->n_includes; i++) {
		char names[512];
		size_t off = 0;

		if (gs_is_protected_name(cli->includes[i], cli->includes[i]))
			continue;
		names[0] = '\0';
		for (size_t k = 0; gs_protected_name(k) && off + 40 < sizeof(names); k++)
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", k ? ", " : "",
						gs_protected_name(k));
		gs_err("--include '%s': not a protected daemon; --include takes one of: %s "
		       "(other holders are targets already; narrow with -u, --unit, --container or --match)",
		       cli->includes[i], names);
		return -EINVAL;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct gs_request *cli)
{
	unsigned used[0x200] = { 0 };
	/* How each option was written (-n or --dry-run), for messages. */
	const char *spelled[0x200] = { 0 };
	char short_spelled[0x80][3];
	int c, r = 0, longindex = -1;

	cli->grace_ms = 10000;
	cli->timeout_ms = 60000;
	cli->tolerance_mib = 16;
	cli->fanout = 32;
	cli->connect_timeout_ms = 10000;
	cli->nvml_lib = getenv("GPUSLATE_NVML_LIB");
	cli->dev_root = getenv("GPUSLATE_DEV_ROOT");
	cli->nvidia_procfs = getenv("GPUSLATE_NVIDIA_PROCFS");
	cli->ssh_cmd = getenv("GPUSLATE_SSH");

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":g:u:ynqvw:x:f:hV", gs_cli_long_opts, &longindex)) != -1) {
		uint32_t u32;

		if (c > 0 && c < (int)GS_ARRAY_SIZE(used)) {
			used[c]++;
			if (longindex >= 0) {
				spelled[c] = gs_cli_long_opts[longindex].name;
			} else if (c < 0x80) {
				snprintf(short_spelled[c], sizeof(short_spelled[c]), "-%c", c);
				spelled[c] = short_spelled[c];
			}
		}
		longindex = -1;
		switch (c) {
		case 'g': r = add_gpus(cli, optarg); break;
		case 'u': r = add_multi(cli->users, &cli->n_users, optarg, "--user"); break;
		case OPT_UNIT: r = add_multi(cli->units, &cli->n_units, optarg, "--unit"); break;
		case OPT_CONTAINER: r = add_multi(cli->containers, &cli->n_containers, optarg, "--container"); break;
		case OPT_MATCH: cli->match = optarg; break;
		case OPT_INCLUDE_CLIENTS: cli->include_clients = true; break;
		case OPT_INCLUDE: r = add_multi(cli->includes, &cli->n_includes, optarg, "--include"); break;
		case 'y': cli->yes = true; break;
		case 'n': cli->dry_run = true; break;
		case OPT_GRACE: r = parse_secs("--grace", optarg, &cli->grace_ms); break;
		case OPT_TIMEOUT: r = parse_secs("--timeout", optarg, &cli->timeout_ms); break;
		case OPT_TOLERANCE:
			if (gs_parse_u64(optarg, &cli->tolerance_mib) < 0 || cli->tolerance_mib > (1u << 24)) {
				gs_err("invalid --tolerance '%s': expected MiB, e.g. 16", optarg);
				r = -EINVAL;
			}
			break;
		case OPT_NO_UNITS: cli->no_units = true; break;
		case OPT_REASON: cli->reason = optarg; break;
		case OPT_JSON: cli->json = true; break;
		case OPT_CSV: cli->csv = true; break;
		case OPT_QUERY_GPU: cli->query_gpu = optarg; break;
		case OPT_QUERY_APPS: cli->query_apps = optarg; break;
		case OPT_FORMAT:
			cli->format = optarg;
			if (!strcmp(optarg, "prometheus"))
				cli->prometheus = true;
			break;
		case 'q': cli->quiet = true; break;
		case 'v': cli->verbose = true; break;
		case 'w': r = add_multi(cli->hosts, &cli->n_hosts, optarg, "-w"); break;
		case 'x': r = add_multi(cli->excludes, &cli->n_excludes, optarg, "-x"); break;
		case 'f':
			if (gs_parse_u32(optarg, &u32) < 0 || u32 == 0 || u32 > 4096) {
				gs_err("invalid fanout '%s': expected 1 to 4096", optarg);
				r = -EINVAL;
			}
			cli->fanout = u32;
			break;
		case OPT_HOSTS_FILE: cli->hosts_file = optarg; break;
		case OPT_SSH: cli->ssh_cmd = optarg; break;
		case OPT_REMOTE_CMD: cli->remote_cmd = optarg; break;
		case OPT_CONNECT_TIMEOUT: r = parse_secs("--connect-timeout", optarg, &cli->connect_timeout_ms); break;
		case OPT_COMMAND_TIMEOUT: r = parse_secs("--command-timeout", optarg, &cli->command_timeout_ms); break;
		case OPT_NVML_LIB: cli->nvml_lib = optarg; break;
		case OPT_DEV_ROOT: cli->dev_root = optarg; break;
		case OPT_PROC_ROOT: cli->proc_root = optarg; break;
		case OPT_NO_NVML: cli->no_nvml = true; break;
		case OPT_REMOTE:
			cli->remote = true;
			cli->json = true;
			cli->quiet = true;
			break;
		case OPT_NVML_TIMEOUT: {
			uint64_t ms;

			r = parse_secs("--nvml-timeout", optarg, &ms);
			cli->nvml_timeout_ms = ms > 600000 ? 600000 : (unsigned)ms;
			break;
		}
		case 'h': usage(stdout); exit(GS_EXIT_CLEAN);
		case 'V': printf("gpuslate %s\n", GS_VERSION); exit(GS_EXIT_CLEAN);
		case ':':
			if (optopt && optopt < 0x100)
				gs_err("option '-%c' needs an argument", optopt);
			else
				gs_err("option '%s' needs an argument", argv[optind - 1]);
			r = -EINVAL;
			break;
		default:
			if (optopt && optopt < 0x100)
				gs_err("unknown option '-%c'", optopt);
			else
				gs_err("unknown option '%s'", argv[optind - 1]);
			r = -EINVAL;
			break;
		}
		if (r < 0)
			return r;
	}

	if (optind >= argc) {
		gs_err("no command given (status, reclaim or wait)");
		return -EINVAL;
	}
	cli->cmd_name = argv[optind];
	if (!strcmp(cli->cmd_name, "status"))
		cli->cmd = GS_CMD_STATUS;
	else if (!strcmp(cli->cmd_name, "reclaim"))
		cli->cmd = GS_CMD_RECLAIM;
	else if (!strcmp(cli->cmd_name, "wait"))
		cli->cmd = GS_CMD_WAIT;
	else if (!strcmp(cli->cmd_name, "help")) {
		usage(stdout);
		exit(GS_EXIT_CLEAN);
	} else {
		gs_err("unknown command '%s' (status, reclaim or wait)", cli->cmd_name);
		return -EINVAL;
	}
	if (optind + 1 < argc) {
		gs_err("unexpected argument '%s'", argv[optind + 1]);
		return -EINVAL;
	}
	for (int o = 1; o < (int)GS_ARRAY_SIZE(used); o++)
		if (used[o] && !(option_commands(o) & (1u << cli->cmd))) {
			/* Named as the user wrote it: `wait --dry-run` is told
			 * about --dry-run, not -n. */
			if (spelled[o] && spelled[o][0] == '-')
				gs_err("option %s is not valid for '%s'", spelled[o], cli->cmd_name);
			else
				gs_err("option --%s is not valid for '%s'", spelled[o] ? spelled[o] : option_name(o),
				       cli->cmd_name);
			return -EINVAL;
		}
	if (check_includes(cli) < 0)
		return -EINVAL;
	/* --remote implies JSON; a text form asked for travels inside it. */
	if ((cli->json && !cli->remote) + cli->csv + (cli->query_gpu || cli->query_apps) + cli->prometheus > 1) {
		gs_err("choose one output: --json, --csv, --query-gpu/--query-compute-apps or --format prometheus");
		return -EINVAL;
	}
	if (cli->query_gpu && cli->query_apps) {
		gs_err("--query-gpu and --query-compute-apps cannot be combined");
		return -EINVAL;
	}
	if (cli->format && !cli->prometheus && !cli->query_gpu && !cli->query_apps) {
		gs_err("invalid --format '%s': use prometheus, or csv with --query-gpu", cli->format);
		return -EINVAL;
	}
	if (cli->gpus) {
		char err[256];

		if (gs_gpusel_check(cli->gpus, err, sizeof(err)) < 0) {
			gs_err("%s", err);
			return -EINVAL;
		}
	}
	if (cli->proc_root && cli->cmd == GS_CMD_RECLAIM && !cli->dry_run) {
		/* Signals go to real PIDs: identities must come from the real
		 * /proc, never from a fixture tree. */
		gs_err("--proc-root '%s' is for reading a /proc copy; reclaim acts only on the real /proc (use --dry-run)",
		       cli->proc_root);
		return -EINVAL;
	}
	if (!cli->command_timeout_ms)
		cli->command_timeout_ms = cli->timeout_ms + cli->grace_ms * 2 + 60000;
	return 0;
}

/* Remote mode: the fleet side keeps our stdin open for as long as it wants
 * us to run. When the connection goes (deadline, Ctrl-C, ssh killed), stdin
 * reaches EOF and we end ourselves with SIGTERM: a reclaim stops escalating
 * and reports, a status or wait just ends. No orphaned remote commands. */
static void *watch_stdin(void *arg)
{
	char buf[256];

	(void)arg;
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	kill(getpid(), SIGTERM);
	return NULL;
}

void gs_remote_watch_stdin(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, watch_stdin, NULL) == 0)
		pthread_detach(t);
}

int main(int argc, char **argv)
{
	struct gs_request cli = { 0 };

	if (parse_args(argc, argv, &cli) < 0) {
		fputs("Try 'gpuslate --help' for more information.\n", stderr);
		return GS_EXIT_USAGE;
	}
	if (cli.remote) {
		if (cli.n_hosts) {
			gs_err("--remote cannot be combined with -w");
			return GS_EXIT_USAGE;
		}
		gs_remote_watch_stdin();
	} else if (cli.n_hosts) {
		return gs_cmd_fleet(&cli, argc, argv);
	}
	switch (cli.cmd) {
	case GS_CMD_STATUS:
		return gs_cmd_status(&cli);
	case GS_CMD_RECLAIM:
		return gs_cmd_reclaim(&cli);
	case GS_CMD_WAIT:
		return gs_cmd_wait(&cli);
	default:
		return GS_EXIT_USAGE;
	}
}
