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

const char *gs_color_verdict(FILE *f, enum gs_verdict verdict)
{
	if (verdict == GS_VERDICT_NONE || !gs_color_ok(f))
		return "";
	if (verdict == GS_VERDICT_CLEAN)
		return "\033[1;32m";
	if (verdict == GS_VERDICT_DRY_RUN || verdict == GS_VERDICT_REFUSED)
		return "\033[1;33m";
	return "\033[1;31m";
}

const char *gs_color_end(const char *sgr)
{
	return sgr && *sgr ? GS_SGR_RESET : "";
}
