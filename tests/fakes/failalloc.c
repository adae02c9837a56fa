/* failalloc: an LD_PRELOAD library that makes one allocation fail, to test
 * gpuslate's out-of-memory paths (tests/analysis/failalloc.sh, `make
 * failalloc`). For the release build: the sanitizer build has its own
 * allocator.
 *
 *   FAILALLOC_N=n       the n-th call (1-based) of malloc, calloc, realloc,
 *                       strdup, strndup, reallocarray, posix_memalign or
 *                       aligned_alloc in this process returns NULL with
 *                       errno ENOMEM; every other call succeeds.
 *   FAILALLOC_COUNT=1   count the calls and write "failalloc: N allocations"
 *                       to stderr at exit.
 *   FAILALLOC_SCOPE=all count (and fail) every call in the process, glibc's
 *                       internal ones included. Default "main": only calls
 *                       made directly by the main program (gpuslate, with
 *                       its statically linked jansson) count. glibc 2.36
 *                       itself crashes when an allocation inside NSS fails
 *                       (getpwuid_r: a NULL dereference in
 *                       nss_database_check_reload_and_get, or the assertion
 *                       in nss_database_reload_1), which no caller can
 *                       handle; scope "main" tests what gpuslate can.
 *
 * Only the process that loaded it first is affected: the variables and
 * LD_PRELOAD are removed from its environment at load, so the programs it
 * runs (systemctl, ssh) allocate normally, and a forked child before exec
 * never fails either. Calls are counted across threads (atomically), so
 * with threads the n-th call is not always the same one from run to run.
 *
 * Built with -shared -fPIC; uses glibc's __libc_* entry points, so there is
 * no dlsym() bootstrap problem. */
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

static atomic_ulong calls;
static unsigned long fail_at; /* 0: never */
static int counting;
static pid_t owner;
static int scope_all;
static uintptr_t main_lo, main_hi; /* executable segments of the main program */

static int find_main(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (!main_lo || lo < main_lo)
			main_lo = lo;
		if (hi > main_hi)
			main_hi = hi;
	}
	return 1; /* the first object is the main program */
}

__attribute__((constructor)) static void failalloc_init(void)
{
	const char *n = getenv("FAILALLOC_N"), *c = getenv("FAILALLOC_COUNT");
	const char *sc = getenv("FAILALLOC_SCOPE");

	owner = getpid();
	scope_all = sc && strcmp(sc, "all") == 0;
	dl_iterate_phdr(find_main, NULL);
	if (n && *n)
		fail_at = strtoul(n, NULL, 10);
	counting = c && *c && strcmp(c, "0") != 0;
	unsetenv("FAILALLOC_N");
	unsetenv("FAILALLOC_COUNT");
	unsetenv("FAILALLOC_SCOPE");
	unsetenv("LD_PRELOAD");
}

__attribute__((destructor)) static void failalloc_fini(void)
{
	char buf[64];
	int len;

	if (!counting || getpid() != owner)
		return;
	len = snprintf(buf, sizeof(buf), "failalloc: %lu allocations\n", atomic_load(&calls));
	if (len > 0 && write(2, buf, (size_t)len) < 0)
		return;
}

/* Whether this call, made from caller, is the one to fail. */
#define should_fail() should_fail_from((uintptr_t)__builtin_return_address(0))
static inline __attribute__((always_inline)) int should_fail_from(uintptr_t caller)
{
	unsigned long k;

	if (!scope_all && (caller < main_lo || caller >= main_hi))
		return 0;
	k = atomic_fetch_add(&calls, 1) + 1;

	if (fail_at == 0 || k != fail_at || getpid() != owner)
		return 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t size)
{
	return should_fail() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	/* realloc(p, 0) frees on glibc: not an allocation that can fail */
	if (p && size == 0)
		return __libc_realloc(p, size);
	return should_fail() ? NULL : __libc_realloc(p, size);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	if (p && total == 0)
		return __libc_realloc(p, total);
	return should_fail() ? NULL : __libc_realloc(p, total);
}

int posix_memalign(void **ret, size_t align, size_t size)
{
	void *p;

	if (should_fail())
		return ENOMEM;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*ret = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	return should_fail() ? NULL : __libc_memalign(align, size);
}

char *strdup(const char *s)
{
	size_t len = strlen(s) + 1;
	char *d = should_fail() ? NULL : __libc_malloc(len);

	if (d)
		memcpy(d, s, len);
	return d;
}

char *strndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = should_fail() ? NULL : __libc_malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}
