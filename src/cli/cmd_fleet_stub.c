/* Placeholder until the fleet runner lands. */
#include "cli/cli.h"
int gs_cmd_fleet(const struct gs_cli *cli, int argc, char **argv)
{
	(void)cli; (void)argc; (void)argv;
	gs_err("-w: fleet mode is not built yet");
	return GS_EXIT_USAGE;
}
