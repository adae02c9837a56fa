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
#include "core/verdict.h"

#define GS_SCHEMA_VERSION 1

/* How a process that no longer exists (a PID NVML still lists) reads in
 * every text view: status, reclaim, CSV. */
#define GS_GONE "(gone)"

/* The holder tables fit the width they are given (the terminal's; 0: no
 * limit, whole lines): GS_TABLE_FIXED for PID, user, GPUs, memory and
 * role with their gaps, the owner up to GS_TABLE_OWNER_MAX, the command
 * the rest, at least GS_TABLE_COMMAND_MIN. */
#define GS_TABLE_FIXED 47
#define GS_TABLE_OWNER_MAX 40
#define GS_TABLE_COMMAND_MIN 16

/* The GPU indices of set, runs as ranges: "0-3,6"; "-" for none. */
void gs_gpus_text(const struct gs_snapshot *s, const struct gs_gpuset *set, char *buf, size_t len);

/* The COMMAND column of a table whose other columns take fixed: what is
 * left of width (at least GS_TABLE_COMMAND_MIN), no wider than the
 * longest command; width 0 (no limit): the longest. */
size_t gs_table_command_width(size_t width, size_t fixed, size_t longest);

/* A buffer that holds any gs_command_display text (cmdline, escaped). */
#define GS_CMD_DISPLAY_MAX 2048

/* s in at most width columns; a longer s keeps both ends around "...". */
void gs_fit_middle(const char *s, size_t width, char *buf, size_t len);

/* Does holder h concern the selection (holds a selected GPU)? Holders that
 * hold no known GPU (only nvidiactl/uvm) are shown when everything is selected. */
bool gs_holder_in_selection(const struct gs_holder *h, const struct gs_gpuset *sel, bool sel_all);

/* "python3 serve.py --port 8000": argv[0]'s basename and the arguments. */
void gs_command_display(const struct gs_procinfo *in, char *buf, size_t len);

/* "unit sglang.service", "lxc 129: ollama.service", "docker 3f2a1b9c0d4e", "-". */
void gs_owner_format(const struct gs_owner *o, char *buf, size_t len);

/* One line for memory no process holds on a GPU: "GPU 0: 4096 MiB held
 * with no process (driver-held; a GPU reset or a reboot frees it)", naming
 * the processes gpuslate could not inspect when there are any (one of them
 * may hold it). index is the GPU's NVML index. */
void gs_unowned_text(const struct gs_snapshot *s, unsigned index, uint64_t bytes, char *buf, size_t len);
/* The same reason in a few words, for one-line summaries. */
const char *gs_unowned_why(const struct gs_snapshot *s);

/* visibility: as_root, processes_scanned, processes_denied, denied_pids,
 * denied_matter (gs_snapshot_denied_matters with tolerance bytes). */
json_t *gs_json_visibility(const struct gs_snapshot *s, uint64_t tolerance);

json_t *gs_json_owner(const struct gs_owner *o);
json_t *gs_json_gpu(const struct gs_gpu *g, const struct gs_snapshot *s);
/* memory_basis and memory_reserved_mib of a GPU object (docs/json.md). */
void gs_json_memory_basis(json_t *o, const struct gs_gpu *g);
json_t *gs_json_process(const struct gs_holder *h, const struct gs_snapshot *s);
/* The whole status document: schema_version, host, gpus, processes, ... */
/* verdict: gs_status_verdict's, or driver-failure without a driver. */
json_t *gs_json_status(const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
		       enum gs_verdict verdict);

/* width: the columns it may take, 0 for no limit. */
void gs_print_status_table(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
			   size_t width);
void gs_print_status_csv(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, bool sel_all,
			 bool processes);

/* nvidia-smi --query-gpu=FIELDS --format=FORMAT. Returns 0 or -EINVAL with a
 * reason naming the unsupported field or format option in err. */
int gs_print_smi_query_gpu(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel,
			   const char *fields, const char *format, char *err, size_t errlen);
/* nvidia-smi --query-compute-apps=FIELDS --format=FORMAT. */
int gs_print_smi_query_apps(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel,
			    const char *fields, const char *format, char *err, size_t errlen);

/* Check a query's fields and format without printing (a fleet checks them
 * before contacting any host). gpu: --query-gpu, else --query-compute-apps. */
int gs_smi_query_check(const char *fields, const char *format, bool gpu, char *err, size_t errlen);

/* Prometheus text format for node_exporter's textfile collector. */
/* last_reclaim: the text of the last reclaim's state file
 * ("<unix time> <exit status> <verdict>"), or NULL. */
void gs_print_prometheus(FILE *f, const struct gs_snapshot *s, const struct gs_gpuset *sel, const char *last_reclaim);
/* The whole document when the GPUs could not be read: gpuslate_up 0. */
void gs_print_prometheus_down(FILE *f);

/* Escape a field for CSV (RFC 4180 quoting when needed). */
void gs_csv_field(FILE *f, const char *s);

#endif
