/* A process's own name as others see it: comm (/proc/PID/comm, ps -o comm)
 * and command line (/proc/PID/cmdline). gpuslate's NVML helper is forked
 * without exec, so it would otherwise show gpuslate's own argv, filters
 * included, to every tool that reads the process table (issue 26). */
#ifndef GS_UTIL_PROCTITLE_H
#define GS_UTIL_PROCTITLE_H

/* Sets comm to name (cut to 15 bytes) and, where the argument area the
 * kernel reports starts at argv[0], overwrites that area with name and
 * zeros. 0 or -errno; the comm is set even when the command line is not. */
int gs_proctitle_set(const char *name);

#endif
