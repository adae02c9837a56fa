/* The key names of gpuslate's JSON documents that more than one module
 * uses: the writers in src/out and the fleet's reader of every host's
 * document (src/fleet/merge.c). Spelled once here so that the two cannot
 * drift; docs/json.md documents them. */
#ifndef GS_JSON_KEYS_H
#define GS_JSON_KEYS_H

/* every document */
#define GS_JK_SCHEMA_VERSION "schema_version"
#define GS_JK_COMMAND "command"
#define GS_JK_VERDICT "verdict"
#define GS_JK_EXIT_STATUS "exit_status"
#define GS_JK_SUMMARY "summary"
#define GS_JK_WARNINGS "warnings"
#define GS_JK_OUTPUT "output"         /* --remote with a text form: the text */
#define GS_JK_REASON "reason"
#define GS_JK_ERROR "error"           /* the document of an early failure: its first error line */

/* GPUs */
#define GS_JK_GPUS "gpus"
#define GS_JK_INDEX "index"
#define GS_JK_MEMORY_USED_MIB "memory_used_mib"
#define GS_JK_MEMORY_BEFORE_MIB "memory_before_mib"
#define GS_JK_MEMORY_AFTER_MIB "memory_after_mib"
#define GS_JK_CLEAN "clean"
#define GS_JK_HELD_BY "held_by"
#define GS_JK_LEFT_ALONE_HOLDERS "left_alone_holders"
#define GS_JK_UNOWNED_MIB "unowned_mib"  /* memory no process holds (driver-held) */

/* processes */
#define GS_JK_PROCESSES "processes"
#define GS_JK_PID "pid"
#define GS_JK_START_TIME "start_time"
#define GS_JK_COMM "comm"
#define GS_JK_ROLE "role"
#define GS_JK_MEMORY_MIB "memory_mib"

/* reclaim and wait */
#define GS_JK_PLAN "plan"
#define GS_JK_TARGETS "targets"
#define GS_JK_LEFT_ALONE "left_alone"
#define GS_JK_UNMATCHED "unmatched"
#define GS_JK_RESPAWNS "respawns"
#define GS_JK_BY "by"
#define GS_JK_RESTARTER "restarter"
#define GS_JK_STOP_WITH "stop_with"

/* restore: the records of the stopped-state file and what became of each */
#define GS_JK_RESTORE_ITEMS "items"
#define GS_JK_RESTORE_NAME "name"
#define GS_JK_OUTCOME "outcome"

#endif
