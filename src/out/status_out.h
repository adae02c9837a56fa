/* Rendering of a snapshot: the human tables, the versioned JSON document
 * (docs/json.md), CSV, and the nvidia-smi compatible --query-gpu output.
 * Writers take the FILE they print to; deciding what to print and the exit
 * status stay in the CLI layer. */
#ifndef GS_STATUS_OUT_H
#define GS_STATUS_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/snapshot.h"

#define GS_SCHEMA_VERSION 1

/* Does holder h concern the selection (holds a selected GPU)? Holders that
 * hold no known GPU (only nvidiactl/uvm) are shown when everything is selected. */
bool gs_holder_in_selection(const struct gs_holder *h, const struct gs_gpuset *sel, bool sel_all);

/* "python3 serve.py --port 8000": argv[0]'s basename and the arguments. */
void gs_command_display(const struct gs_procinfo *in, char *buf, size_t len);

/* "unit sglang.service", "lxc 129: ollama.service", "docker 3f2a1b9c0d4e", "-". */
void gs_owner_format(const struct gs_owner *o, char *buf, size_t len);

json_t *gs_json_owner(const struct gs_owner *o);
json_t *gs_json_gpu(const struct gs_gpu *g, const struct gs_snapshot *s);
/* memory_basis and memory_reserved_mib of a GPU object (docs/json.md). */
void gs_json_memory_basis(json_t *o, const struct gs_gpu *g);
json_t *gs_json_process(const struct gs_holder *h, const struct gs_snapshot *s);
/* The whole status document: schema_version, host, gpus, processes, ... */
json_t *gs_json_status(const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all);

void gs_print_status_table(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all);
void gs_print_status_csv(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all);

/* nvidia-smi --query-gpu=FIELDS --format=FORMAT. Returns 0 or -EINVAL with a
 * reason naming the unsupported field or format option in err. */
int gs_print_smi_query_gpu(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel,
			   const char *fields, const char *format, char *err, size_t errlen);
/* nvidia-smi --query-compute-apps=FIELDS --format=FORMAT. */
int gs_print_smi_query_apps(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel,
			    const char *fields, const char *format, char *err, size_t errlen);

/* Prometheus text format for node_exporter's textfile collector. */
/* last_reclaim: the text of the last reclaim's state file
 * ("<unix time> <exit status> <verdict>"), or NULL. */
void gs_print_prometheus(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, const char *last_reclaim);

/* Escape a field for CSV (RFC 4180 quoting when needed). */
void gs_csv_field(FILE *f, const char *s);

#endif
