#include "out/color.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool gs_color_ok(FILE *f)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
	int fd = fileno(f);

	if (nc && *nc)
		return false;
	if (term && !strcmp(term, "dumb"))
		return false;
	return fd >= 0 && isatty(fd);
}

const char *gs_color_verdict(FILE *f, const char *verdict)
{
	if (!verdict || !gs_color_ok(f))
		return "";
	if (!strcmp(verdict, "clean"))
		return "\033[1;32m";
	if (!strcmp(verdict, "dry-run") || !strcmp(verdict, "refused"))
		return "\033[1;33m";
	return "\033[1;31m";
}

const char *gs_color_end(const char *sgr)
{
	return sgr && *sgr ? GS_SGR_RESET : "";
}
