#include "util/audit.h"
#include "util/sanitize.h"

#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

/* Names come from /proc (comm) and cgroup paths, which other users choose:
 * they are escaped (util/sanitize.h) so a name cannot forge a second log
 * line or hide what was signalled. */
static const char *clean(const char *s, char *buf, size_t size)
{
	return gs_safe(s ? s : "?", buf, size);
}

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
	char cb[256];

	audit_open();
	syslog(LOG_NOTICE, "uid=%u sent %s to pid=%d comm=%s start=%llu: %s", (unsigned)getuid(),
	       sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", (int)pid, clean(comm, cb, sizeof(cb)),
	       (unsigned long long)starttime, result == 0 ? "ok" : strerror(-result));
}

void gs_audit_container(const char *runtime, const char *id, int exit_code)
{
	char rb[64], ib[1024];

	audit_open();
	syslog(LOG_NOTICE, "uid=%u stopped container=%s through %s: exit %d", (unsigned)getuid(),
	       clean(id, ib, sizeof(ib)), clean(runtime, rb, sizeof(rb)), exit_code);
}

void gs_audit_supervised(const char *supervisor, const char *program, int exit_code)
{
	char sb[64], pb[1024];

	audit_open();
	syslog(LOG_NOTICE, "uid=%u stopped program=%s through %s: exit %d", (unsigned)getuid(),
	       clean(program, pb, sizeof(pb)), clean(supervisor, sb, sizeof(sb)), exit_code);
}

void gs_audit_unit(const char *unit, const char *container, int exit_code)
{
	char ub[1024], cb[1024];

	audit_open();
	if (container && *container)
		syslog(LOG_NOTICE, "uid=%u stopped unit=%s in container=%s: exit %d", (unsigned)getuid(),
		       clean(unit, ub, sizeof(ub)), clean(container, cb, sizeof(cb)), exit_code);
	else
		syslog(LOG_NOTICE, "uid=%u stopped unit=%s: exit %d", (unsigned)getuid(), clean(unit, ub, sizeof(ub)),
		       exit_code);
}

void gs_audit_start(const char *what, const char *name, const char *container, int exit_code)
{
	char wb[64], nb[1024], cb[1024];

	audit_open();
	if (container && *container)
		syslog(LOG_NOTICE, "uid=%u started %s=%s in container=%s: exit %d", (unsigned)getuid(),
		       clean(what, wb, sizeof(wb)), clean(name, nb, sizeof(nb)), clean(container, cb, sizeof(cb)),
		       exit_code);
	else
		syslog(LOG_NOTICE, "uid=%u started %s=%s: exit %d", (unsigned)getuid(), clean(what, wb, sizeof(wb)),
		       clean(name, nb, sizeof(nb)), exit_code);
}
