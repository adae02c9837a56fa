/* gs-hangfs: a FUSE file system that takes requests and never answers them,
 * to put a process into a real uninterruptible sleep, as a GPU driver that
 * hangs in the kernel does (a GPU fallen off the bus, a stuck ioctl).
 *
 *   gs-hangfs MOUNTPOINT [--private] [--ready-file PATH] [--log PATH]
 *
 * A process that opens a file below MOUNTPOINT waits in the kernel for an
 * answer that never comes; once it is sent a fatal signal (SIGKILL, or the
 * exit of its process), the kernel keeps waiting for the answer in state D:
 * the process cannot die until the server answers or the connection ends.
 * Only the root directory's attributes and statfs are answered, so that
 * stat(1) and df(1) on the mount point do not hang.
 *
 * --private     mount in a new mount namespace of its own; other processes
 *               see the mount only through it (nsenter -t PID -m)
 * --file NAME   a regular file NAME in the root that can be looked up,
 *               opened and closed, but whose attributes are never answered
 *               (and never cached): a process can hold it open, and whoever
 *               then asks the server for its attributes (stat of
 *               /proc/PID/fd/N) hangs, as on a dead NFS server
 * --ready-file  written ("pid=N") once the kernel's INIT is answered
 * --log         one line per request: "OPCODE NODEID PID" (the PID of the
 *               process that made it)
 *
 * SIGTERM (or SIGINT) ends it: the connection is closed, which fails every
 * pending request (the stuck processes then go on, and die if killed), and
 * the mount is detached. Raw /dev/fuse protocol (linux/fuse.h), no libfuse.
 * Needs root. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Room for any request the kernel sends with max_write 4096. */
#define BUF_SIZE (FUSE_MIN_READ_BUFFER + 65536)

#define USAGE "usage: gs-hangfs MOUNTPOINT [--private] [--ready-file PATH] [--log PATH] [--file NAME]\n"

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "gs-hangfs: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void reply(int fd, uint64_t unique, const void *arg, size_t len)
{
	struct fuse_out_header h = { .len = (uint32_t)(sizeof(h) + len), .error = 0, .unique = unique };
	char buf[sizeof(h) + 256];

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), arg, len);
	if (write(fd, buf, sizeof(h) + len) < 0)
		fprintf(stderr, "gs-hangfs: reply: %s\n", strerror(errno));
}

/* The --file node: attributes valid for no time at all, so that every
 * stat that may ask the server does. */
#define FILE_ID 2

static void file_attr(struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = FILE_ID;
	a->mode = S_IFREG | 0644;
	a->nlink = 1;
	a->blksize = 4096;
}

static void root_attr(struct fuse_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = FUSE_ROOT_ID;
	a->mode = S_IFDIR | 0755;
	a->nlink = 2;
	a->blksize = 4096;
}

int main(int argc, char **argv)
{
	const char *mnt = NULL, *ready = NULL, *logpath = NULL, *file = NULL;
	bool private_ns = false;
	struct sigaction sa = { .sa_handler = on_stop };
	char opts[128];
	FILE *log = NULL;
	char *buf;
	int fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--private"))
			private_ns = true;
		else if (!strcmp(argv[i], "--ready-file") && i + 1 < argc)
			ready = argv[++i];
		else if (!strcmp(argv[i], "--log") && i + 1 < argc)
			logpath = argv[++i];
		else if (!strcmp(argv[i], "--file") && i + 1 < argc)
			file = argv[++i];
		else if (argv[i][0] != '-' && !mnt)
			mnt = argv[i];
		else {
			fputs(USAGE, stderr);
			return 2;
		}
	}
	if (!mnt) {
		fputs(USAGE, stderr);
		return 2;
	}
	/* No SA_RESTART: the blocking read returns EINTR and we end. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (logpath && !(log = fopen(logpath, "a")))
		die(logpath);
	if (private_ns) {
		if (unshare(CLONE_NEWNS) < 0)
			die("unshare(CLONE_NEWNS)");
		/* Mounts made here stay here. */
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			die("make / private");
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		die("/dev/fuse");
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
	if (mount("gs-hangfs", mnt, "fuse.gs-hangfs", MS_NOSUID | MS_NODEV, opts) < 0)
		die(mnt);
	buf = malloc(BUF_SIZE);
	if (!buf)
		die("malloc");

	while (!stop) {
		struct fuse_in_header *in = (struct fuse_in_header *)buf;
		ssize_t n = read(fd, buf, BUF_SIZE);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENODEV)
				break; /* unmounted */
			die("read /dev/fuse");
		}
		if ((size_t)n < sizeof(*in))
			continue;
		if (in->opcode == FUSE_INIT) {
			const struct fuse_init_in *ii = (const struct fuse_init_in *)(in + 1);
			struct fuse_init_out o = {
				.major = FUSE_KERNEL_VERSION,
				.minor = FUSE_KERNEL_MINOR_VERSION,
				.max_readahead = ii->max_readahead,
				.max_background = 16,
				.congestion_threshold = 12,
				.max_write = 4096,
				.time_gran = 1,
			};

			reply(fd, in->unique, &o, sizeof(o));
			if (ready) {
				FILE *f = fopen(ready, "w");

				if (!f || fprintf(f, "pid=%d\n", (int)getpid()) < 0 || fclose(f) != 0)
					die(ready);
			}
			continue;
		}
		if (log) {
			fprintf(log, "%u %llu %u\n", in->opcode, (unsigned long long)in->nodeid, in->pid);
			fflush(log);
		}
		if (in->opcode == FUSE_GETATTR && in->nodeid == FUSE_ROOT_ID) {
			struct fuse_attr_out o = { .attr_valid = 3600 };

			root_attr(&o.attr);
			reply(fd, in->unique, &o, sizeof(o));
		} else if (file && in->opcode == FUSE_LOOKUP && in->nodeid == FUSE_ROOT_ID &&
			   (size_t)n > sizeof(*in) && !strncmp((const char *)(in + 1), file, (size_t)n - sizeof(*in))) {
			/* The entry stays cached; its attributes never do. */
			struct fuse_entry_out o = { .nodeid = FILE_ID, .generation = 1, .entry_valid = 3600 };

			file_attr(&o.attr);
			reply(fd, in->unique, &o, sizeof(o));
		} else if (file && in->nodeid == FILE_ID &&
			   (in->opcode == FUSE_OPEN || in->opcode == FUSE_FLUSH || in->opcode == FUSE_RELEASE)) {
			/* Opening and closing work: only the attributes hang. */
			struct fuse_open_out o = { .fh = 1 };

			reply(fd, in->unique, &o, in->opcode == FUSE_OPEN ? sizeof(o) : 0);
		} else if (in->opcode == FUSE_STATFS) {
			struct fuse_statfs_out o = { .st = { .bsize = 4096, .frsize = 4096, .namelen = 255 } };

			reply(fd, in->unique, &o, sizeof(o));
		} else if (in->opcode == FUSE_DESTROY) {
			break;
		}
		/* Everything else (LOOKUP, OPEN, READ, INTERRUPT, ...): taken,
		 * never answered. FORGETs want no answer anyway. */
	}
	/* Closing the device aborts the connection: pending requests fail. */
	close(fd);
	umount2(mnt, MNT_DETACH);
	return 0;
}
