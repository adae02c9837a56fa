/* Colour for people: only when the stream is a terminal, never when NO_COLOR
 * is set to a non-empty value (https://no-color.org) or TERM is "dumb".
 * Machine formats (JSON, CSV, Prometheus) never call this. */
#ifndef GS_COLOR_H
#define GS_COLOR_H

#include <stdbool.h>
#include <stdio.h>

#include "core/verdict.h"

#define GS_SGR_RESET "\033[0m"

/* True if escape sequences may be written to f. */
bool gs_color_ok(FILE *f);

/* The SGR sequence for a verdict ("clean" green, "dry-run" and "refused"
 * yellow, anything else bold red), or "" when colour is off for f. */
const char *gs_color_verdict(FILE *f, enum gs_verdict verdict);

/* GS_SGR_RESET when sgr is a sequence, else "". */
const char *gs_color_end(const char *sgr);

#endif
