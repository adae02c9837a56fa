/* Bench helper: start N processes that each hold 8 fds; one in `every`
 * holds the fake GPU node among them (8 = the lifeline pipe and 7 files). Writes the holders' pids to a file,
 * prints "ready" and waits; the children exit when this process dies (EOF on
 * a lifeline pipe, and PR_SET_PDEATHSIG as a second guard).
 *
 * usage: spawn N EVERY GPU_FILE OTHER_FILE... PIDFILE */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define FDS_PER_PROC 8

static long num(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > 100000) {
		fprintf(stderr, "spawn: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

/* Exactly FDS_PER_PROC fds stay open: the lifeline pipe and
 * FDS_PER_PROC - 1 files (no stdin/stdout/stderr). */
static void child(int lifeline, int ready, int holder, const char *gpu, char **other, int n_other)
{
	char b;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(1);
	close(0);
	close(1);
	close(2);
	for (int i = 0; i < FDS_PER_PROC - 1; i++) {
		const char *path = (holder && i == FDS_PER_PROC / 2) ? gpu : other[i % n_other];

		if (open(path, O_RDONLY) < 0)
			_exit(1);
	}
	if (write(ready, "r", 1) != 1)
		_exit(1);
	close(ready);
	while (read(lifeline, &b, 1) > 0)
		;
	_exit(0);
}

int main(int argc, char **argv)
{
	int lifeline[2], ready[2];
	long n, every, got = 0;
	FILE *pf;
	char buf[4096];

	if (argc < 6) {
		fprintf(stderr, "usage: spawn N EVERY GPU_FILE OTHER_FILE... PIDFILE\n");
		return 2;
	}
	n = num(argv[1]);
	every = num(argv[2]);
	if (pipe(lifeline) < 0 || pipe(ready) < 0) {
		perror("pipe");
		return 1;
	}
	pf = fopen(argv[argc - 1], "w");
	if (!pf) {
		perror(argv[argc - 1]);
		return 1;
	}
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1; /* children see EOF and leave */
		}
		if (pid == 0) {
			/* close, not fclose: a flush here would write the
			 * parent's buffered pids a second time. */
			close(fileno(pf));
			close(lifeline[1]);
			close(ready[0]);
			child(lifeline[0], ready[1], i % every == 0, argv[3], argv + 4, argc - 5);
		}
		if (i % every == 0)
			fprintf(pf, "%d\n", (int)pid);
	}
	close(lifeline[0]);
	close(ready[1]);
	if (fclose(pf) != 0) {
		perror("pidfile");
		return 1;
	}
	while (got < n) {
		ssize_t r = read(ready[0], buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "spawn: only %ld of %ld children ready\n", got, n);
			return 1;
		}
		got += r;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
