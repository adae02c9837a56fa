/* Launchers and shells, by executable; see launcher.h. */
#include "proc/launcher.h"
#include "proc/ptable.h"
#include "util/util.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Programs that start one program and never again: privilege and session
 * tools, job and container launchers (a Slurm step's slurmstepd, a
 * container's shim or conmon), and the namespace, scheduling and
 * environment wrappers that run one command and exit with it. Never a
 * supervisor; a process below one is what it was started as. */
static const char *const launchers[] = {
	"sudo", "su", "runuser", "doas", "setpriv", "sshd", "login", "slurmstepd", "srun", "conmon", "timeout",
	"nohup", "script", "screen", "SCREEN", "tmux: server", "tmux",
	"unshare", "nsenter", "setsid", "env", "chroot", "taskset", "numactl", "nice", "ionice", "chrt", "prlimit",
	"stdbuf", "flock",
	/* init-style reapers and session wrappers that fork their command,
	 * wait for it and exit with its status (a unit's `ExecStart=tini --
	 * python ...`): the command's end is theirs */
	"tini", "docker-init", "dumb-init", "catatonit", "dbus-run-session", "systemd-inhibit", "time",
};

static const char *const shells[] = { "bash", "sh", "dash", "zsh", "fish", "ksh", "ksh93", "mksh", "ash",
				      "tcsh", "csh", "busybox" };

bool gs_launcher_name(const char *name)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(launchers); i++)
		if (!strcmp(name, launchers[i]))
			return true;
	return gs_startswith(name, "containerd-shim");
}

bool gs_shell_name(const char *name)
{
	for (size_t i = 0; i < GS_ARRAY_SIZE(shells); i++)
		if (!strcmp(name, shells[i]))
			return true;
	return false;
}

enum gs_launch_kind gs_launch_kind_of_name(const char *name)
{
	if (gs_launcher_name(name))
		return GS_LAUNCH_LAUNCHER;
	if (gs_shell_name(name))
		return GS_LAUNCH_SHELL;
	return GS_LAUNCH_NONE;
}

enum gs_launch_kind gs_launch_kind_proc(void *ud, pid_t pid, const char *comm)
{
	static const char deleted[] = " (deleted)";
	int proc_fd = (int)(intptr_t)ud, fd;
	char dir[32], path[4096];
	const char *base;
	struct statx st;
	ssize_t n;

	snprintf(dir, sizeof(dir), "%d", (int)pid);
	fd = openat(proc_fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return gs_launch_kind_of_name(comm);
	n = readlinkat(fd, "exe", path, sizeof(path) - 1);
	/* The file through the link, as the kernel runs it (even deleted);
	 * the attributes the kernel has, never a hung file server's answer. */
	if (n <= 0 || statx(fd, "exe", AT_STATX_DONT_SYNC, STATX_UID | STATX_MODE, &st) < 0) {
		close(fd);
		return gs_launch_kind_of_name(comm);
	}
	close(fd);
	path[n] = '\0';
	if ((size_t)n > sizeof(deleted) - 1 && !strcmp(path + n - (sizeof(deleted) - 1), deleted))
		path[(size_t)n - (sizeof(deleted) - 1)] = '\0';
	/* Anyone's copy of `timeout` may do anything. */
	if (st.stx_uid != 0 || (st.stx_mode & (S_IWGRP | S_IWOTH)))
		return GS_LAUNCH_NONE;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	/* One binary for every applet: the applet is comm. */
	if (!strcmp(base, "busybox"))
		return gs_launch_kind_of_name(comm);
	return gs_launch_kind_of_name(base);
}

enum gs_launch_kind gs_launch_kind_ask(gs_launch_kind_fn fn, void *ud, const struct gs_pidstat *st)
{
	return fn ? fn(ud, st->pid, st->comm) : gs_launch_kind_of_name(st->comm);
}

const struct gs_pidstat *gs_launcher_skip(const struct gs_ptable *pt, pid_t ppid, gs_launch_kind_fn fn, void *ud)
{
	const struct gs_pidstat *par = gs_ptable_find(pt, ppid);

	/* Bounded: a table read across forks may hold a cycle of reused pids. */
	for (int depth = 0; par && par->pid > 1 && gs_launch_kind_ask(fn, ud, par) == GS_LAUNCH_LAUNCHER; depth++) {
		if (depth >= 64)
			return NULL;
		par = gs_ptable_find(pt, par->ppid);
	}
	return par;
}

bool gs_launcher_chain_to(const struct gs_ptable *pt, pid_t pid, pid_t anc, gs_launch_kind_fn fn, void *ud)
{
	const struct gs_pidstat *st = gs_ptable_find(pt, pid);

	for (int depth = 0; st && depth < 64; depth++) {
		const struct gs_pidstat *par;

		if (st->ppid <= 1 || st->ppid == st->pid)
			return false;
		par = gs_ptable_find(pt, st->ppid);
		if (!par || gs_launch_kind_ask(fn, ud, par) == GS_LAUNCH_NONE)
			return false;
		if (par->pid == anc)
			return true;
		st = par;
	}
	return false;
}
