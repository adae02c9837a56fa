/* Every option of gpuslate, once: its names, its argument, the commands
 * that take it, whether a fleet passes it on to the hosts, where its value
 * lives in struct gs_request, and its line in --help. The command-line
 * parser, its validation and --help (src/cli/options.c) and the fleet's
 * remote command line (src/fleet/remote.c) are all driven by this table,
 * in the spirit of git's OPT_* tables: adding an option is one line here
 * (plus its man page entry and completions; tests/e2e/drift.bats checks). */
#ifndef GS_OPTIONS_H
#define GS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/request.h"

/* Values of the options that have no short letter. */
enum {
	OPT_UNIT = 0x100, OPT_CONTAINER, OPT_MATCH, OPT_INCLUDE_CLIENTS, OPT_INCLUDE,
	OPT_GRACE, OPT_TIMEOUT, OPT_TOLERANCE, OPT_NO_UNITS, OPT_INCLUDE_PARENT, OPT_REASON, OPT_JSON, OPT_CSV,
	OPT_QUERY_GPU, OPT_QUERY_APPS, OPT_FORMAT, OPT_HOSTS_FILE, OPT_SSH, OPT_REMOTE_CMD,
	OPT_CONNECT_TIMEOUT, OPT_COMMAND_TIMEOUT, OPT_NVML_LIB, OPT_DEV_ROOT, OPT_SYS_ROOT, OPT_PROC_ROOT,
	OPT_NO_NVML, OPT_NVML_TIMEOUT, OPT_REMOTE, OPT_GUARD, OPT_RESTORE, OPT_RESPAWN_WATCH, OPT_EXPECT,
	OPT_JSON_FILE,
	OPT_KEY_MAX,
};

/* The commands an option is valid for. */
#define GS_FOR_STATUS (1u << GS_CMD_STATUS)
#define GS_FOR_RECLAIM (1u << GS_CMD_RECLAIM)
#define GS_FOR_WAIT (1u << GS_CMD_WAIT)
#define GS_FOR_RESTORE (1u << GS_CMD_RESTORE)
#define GS_FOR_RUN (1u << GS_CMD_RUN)
/* reclaim's selection and acting options: `run` reclaims first. */
#define GS_FOR_ACT (GS_FOR_RECLAIM | GS_FOR_RUN)
/* The commands that look at GPUs (restore looks only at its state file). */
#define GS_FOR_ALL (GS_FOR_STATUS | GS_FOR_RECLAIM | GS_FOR_WAIT | GS_FOR_RUN)
/* Options of every command: output, help. */
#define GS_FOR_EVERY (GS_FOR_ALL | GS_FOR_RESTORE)
/* The fleet's: every command but run, which runs COMMAND here. */
#define GS_FOR_FLEET (GS_FOR_EVERY & ~GS_FOR_RUN)

/* What the value is and how it is stored at gs_option.off. */
enum gs_opt_type {
	GS_OT_FLAG,      /* bool */
	GS_OT_STRING,    /* const char * */
	GS_OT_LIST,      /* const char *[GS_MAX_MULTI], count at count_off (repeatable) */
	GS_OT_GPUS,      /* const char *, repeated lists joined with ',' */
	GS_OT_MS,        /* uint64_t milliseconds from a duration */
	GS_OT_MS_SHORT,  /* unsigned milliseconds from a duration, at most 10 minutes */
	GS_OT_MIB,       /* uint64_t MiB, at most 2^24 */
	GS_OT_FANOUT,    /* unsigned, 1 to 4096 */
	GS_OT_FORMAT,    /* const char *; "prometheus" also sets prometheus */
	GS_OT_CSV,       /* bool; an optional =gpus or =processes (csv_processes) */
	GS_OT_REMOTE,    /* bool; implies json and quiet */
	GS_OT_HELP,
	GS_OT_VERSION,
};

/* Whether a fleet passes the option on to every host (only for commands
 * the option is valid for). */
enum gs_opt_forward {
	GS_FWD_NO,       /* local: -w, --ssh, --dev-root, output forms of the controller */
	GS_FWD_IF_SET,   /* when given (set, non-empty, non-zero) */
	GS_FWD_ALWAYS,   /* always, the controller's value or default: every host acts alike */
	GS_FWD_SPECIAL,  /* decided by src/fleet/remote.c (-y, -v) */
};

struct gs_option {
	const char *name;    /* long name, without "--" */
	int key;             /* the short letter, or OPT_* */
	const char *arg;     /* the argument's name in --help, NULL: takes none */
	unsigned cmds;       /* GS_FOR_* */
	enum gs_opt_forward forward;
	enum gs_opt_type type;
	size_t off;          /* the value in struct gs_request */
	size_t count_off;    /* GS_OT_LIST: the count in struct gs_request */
	const char *section; /* the --help section it starts, NULL: same as the one before */
	const char *help;    /* its --help text ("" none; '\n' between lines), NULL: not in --help */
};

/* The table, in --help order, ended by an entry with name NULL. */
extern const struct gs_option gs_options[];

/* The entry of a key (short letter or OPT_*), NULL if none. */
const struct gs_option *gs_option_find(int key);

static inline bool gs_option_valid_for(const struct gs_option *o, enum gs_cmd cmd)
{
	return (o->cmds & (1u << cmd)) != 0;
}

/* The request's defaults, before any option: timing, fanout and the
 * environment variables that stand for options (GPUSLATE_NVML_LIB,
 * GPUSLATE_DEV_ROOT, GPUSLATE_NVIDIA_PROCFS, GPUSLATE_SSH). */
void gs_request_defaults(struct gs_request *req);

#endif
