/* Every signal gpuslate sends every unit it stops and starts again is logged to syslog
 * (LOG_AUTHPRIV, as su and sudo do) with the uid that asked for it. */
#ifndef GS_AUDIT_H
#define GS_AUDIT_H

#include <stdint.h>
#include <sys/types.h>

void gs_audit_signal(pid_t pid, uint64_t starttime, const char *comm, int sig, int result);
void gs_audit_unit(const char *unit, const char *container, int exit_code);
/* restore: a unit or container started again; what is "unit" or "docker" ... */
void gs_audit_start(const char *what, const char *name, const char *container, int exit_code);
/* A container stopped through its runtime (docker, podman). */
void gs_audit_container(const char *runtime, const char *id, int exit_code);
/* A program stopped through its process supervisor's tool. */
void gs_audit_supervised(const char *supervisor, const char *program, int exit_code);

#endif
