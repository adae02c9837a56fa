/* Rendering of a restore (core/restore.h): what it will start, what it did,
 * as text for people and as versioned JSON (docs/json.md, "restore"). */
#ifndef GS_RESTORE_OUT_H
#define GS_RESTORE_OUT_H

#include <jansson.h>
#include <stdio.h>

#include "core/restore.h"

/* "unit trainer.service", "unit ct.service in CT 129", "docker container web (3f2a...)" */
void gs_restore_item_name(const struct gs_stopped_rec *r, char *buf, size_t len);
void gs_print_restore_plan(FILE *f, const struct gs_restore *rs);
/* The report for -q: its last line only ("Restore: ..."). */
void gs_print_restore_verdict(FILE *f, const struct gs_restore *rs);
void gs_print_restore_report(FILE *f, const struct gs_restore *rs);
json_t *gs_json_restore(const struct gs_restore *rs);

#endif
