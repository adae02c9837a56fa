/* gpuslate: give GPU hosts a clean slate. Dispatch to the commands. */
#include "cli/cli.h"
#include "util/fdlimit.h"
#include "util/util.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int run_command(struct gs_request *cli, int argc, char **argv)
{
	if (cli->remote) {
		if (cli->n_hosts) {
			gs_err("--remote cannot be combined with -w");
			return GS_EXIT_USAGE;
		}
		gs_remote_watch_stdin();
	} else if (cli->n_hosts) {
		return gs_cmd_fleet(cli, argc, argv);
	}
	switch (cli->cmd) {
	case GS_CMD_STATUS:
		return gs_cmd_status(cli);
	case GS_CMD_RECLAIM:
		return gs_cmd_reclaim(cli);
	case GS_CMD_WAIT:
		return gs_cmd_wait(cli);
	case GS_CMD_RESTORE:
		return gs_cmd_restore(cli);
	case GS_CMD_RUN:
		return gs_cmd_run(cli);
	default:
		return GS_EXIT_USAGE;
	}
}

int main(int argc, char **argv)
{
	struct gs_request cli = { 0 };
	int rc, jr;

	/* One pidfd per process stopped: the soft limit (often 1024) is no
	 * bound on how many processes a host runs. The stop stage still
	 * holds no more than what is left (gs_fdlimit_spare). */
	(void)gs_fdlimit_raise();
	if (gs_cli_parse(argc, argv, &cli) < 0) {
		fputs("Try 'gpuslate --help' for more information.\n", stderr);
		rc = GS_EXIT_USAGE;
	} else if (cli.json_file && (jr = gs_cli_set_json_file(cli.json_file)) < 0) {
		gs_err("--json-file '%s': cannot write there: %s", cli.json_file, strerror(-jr));
		rc = GS_EXIT_USAGE;
	} else {
		/* The document is --json's, written to FILE (stdout stays
		 * COMMAND's). */
		if (cli.json_file)
			cli.json = true;
		rc = run_command(&cli, argc, argv);
		/* COMMAND ran and exited 0, but its document is missing:
		 * not a usage error, a failure (as a failed watch is). */
		if (cli.json_file && gs_cli_json_file_failed() && rc == GS_EXIT_CLEAN)
			rc = GS_EXIT_NOT_CLEAN;
	}
	/* --json promises a document on every exit: a failure before the
	 * command had one to print (a usage error, the lock, no driver, NVML
	 * failing during discovery) prints the early one, with its reason. */
	if (cli.json && rc != GS_EXIT_CLEAN && !gs_cli_json_printed())
		gs_cli_print_early_json(&cli, rc);
	return rc;
}
