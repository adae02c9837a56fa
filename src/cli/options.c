/* The command line's long options: one table, shared by the parser in
 * main.c and by the tests that check what the fleet sends to remote hosts. */
#include "cli/cli.h"

#include <getopt.h>
#include <stddef.h>

const struct option gs_cli_long_opts[] = {
	{ "gpus", required_argument, NULL, 'g' },
	{ "user", required_argument, NULL, 'u' },
	{ "unit", required_argument, NULL, OPT_UNIT },
	{ "container", required_argument, NULL, OPT_CONTAINER },
	{ "match", required_argument, NULL, OPT_MATCH },
	{ "include-clients", no_argument, NULL, OPT_INCLUDE_CLIENTS },
	{ "include", required_argument, NULL, OPT_INCLUDE },
	{ "yes", no_argument, NULL, 'y' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "tolerance", required_argument, NULL, OPT_TOLERANCE },
	{ "no-units", no_argument, NULL, OPT_NO_UNITS },
	{ "reason", required_argument, NULL, OPT_REASON },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "csv", no_argument, NULL, OPT_CSV },
	{ "query-gpu", required_argument, NULL, OPT_QUERY_GPU },
	{ "query-compute-apps", required_argument, NULL, OPT_QUERY_APPS },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "hosts", required_argument, NULL, 'w' },
	{ "exclude", required_argument, NULL, 'x' },
	{ "fanout", required_argument, NULL, 'f' },
	{ "hosts-file", required_argument, NULL, OPT_HOSTS_FILE },
	{ "ssh", required_argument, NULL, OPT_SSH },
	{ "remote-cmd", required_argument, NULL, OPT_REMOTE_CMD },
	{ "connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT },
	{ "command-timeout", required_argument, NULL, OPT_COMMAND_TIMEOUT },
	{ "nvml-lib", required_argument, NULL, OPT_NVML_LIB },
	{ "dev-root", required_argument, NULL, OPT_DEV_ROOT },
	{ "proc-root", required_argument, NULL, OPT_PROC_ROOT },
	{ "no-nvml", no_argument, NULL, OPT_NO_NVML },
	{ "nvml-timeout", required_argument, NULL, OPT_NVML_TIMEOUT },
	{ "remote", no_argument, NULL, OPT_REMOTE },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};
