/* Shared helpers for the libFuzzer targets (tests/fuzz/fuzz_*.c).
 *
 * Each target feeds one pure parser of src/ with arbitrary bytes and checks
 * invariants that must hold for every input; a violated invariant aborts, so
 * libFuzzer records the input as a crash like any sanitizer report. */
#ifndef GS_FUZZ_H
#define GS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                    \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                            \
		}                                                                           \
	} while (0)

/* The input as a C string (the parsers read NUL-terminated text, as the
 * readers hand it over); an embedded NUL simply ends the text early. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* A fixed-size char array holds a terminating NUL within its bounds. */
#define FUZZ_TERMINATED(arr) FUZZ_CHECK(memchr((arr), '\0', sizeof(arr)) != NULL)

/* Only printable ASCII: what may reach a terminal from untrusted text. */
static inline int fuzz_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

#endif
