#include "util/audit.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

static void audit_open(void)
{
	static bool opened;

	if (!opened) {
		openlog("gpuslate", LOG_PID | LOG_NDELAY, LOG_AUTHPRIV);
		opened = true;
	}
}

void gs_audit_signal(pid_t pid, uint64_t starttime, const char *comm, int sig, int result)
{
	audit_open();
	syslog(LOG_NOTICE, "uid=%u sent %s to pid=%d comm=%s start=%llu: %s", (unsigned)getuid(),
	       sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", (int)pid, comm ? comm : "?",
	       (unsigned long long)starttime, result == 0 ? "ok" : strerror(-result));
}

void gs_audit_unit(const char *unit, const char *container, int exit_code)
{
	audit_open();
	if (container && *container)
		syslog(LOG_NOTICE, "uid=%u stopped unit=%s in container=%s: exit %d", (unsigned)getuid(), unit,
		       container, exit_code);
	else
		syslog(LOG_NOTICE, "uid=%u stopped unit=%s: exit %d", (unsigned)getuid(), unit, exit_code);
}
