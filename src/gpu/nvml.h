/* NVML in this process (nvml.c): the calls themselves, with no deadline. Only
 * the helper process of nvml_child.c (and tests, benchmarks) use it directly:
 * a call that hangs in the kernel here would hang the caller for good. */
#ifndef GS_NVML_H
#define GS_NVML_H

#include <stdatomic.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* What the backend is doing right now, announced before and after every
 * NVML call, so that another process sharing this memory can say which call
 * hung. call points into the program's constant data: valid in a process
 * forked from this one without exec (the same image at the same addresses). */
struct gs_nvml_trace {
	_Atomic(const char *) call;   /* the NVML function running, NULL between calls */
	atomic_int gpu;               /* its GPU (NVML index), -1 when it has none */
	_Atomic uint64_t progress_ns; /* CLOCK_MONOTONIC when a call last began or ended */
};

/* Load and initialise NVML in this process. Errors as gs_nvml_child_open's,
 * without -ETIMEDOUT (nothing here has a deadline). trace may be NULL;
 * opts->call_timeout_ms is not used. */
int gs_nvml_open(const struct gs_nvml_opts *opts, struct gs_nvml_trace *trace, struct gs_gpu_backend **ret,
		 char *errbuf, size_t errlen);

#endif
