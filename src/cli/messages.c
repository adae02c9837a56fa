/* The command line's messages on stderr: "gpuslate: " and the text. */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>

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
