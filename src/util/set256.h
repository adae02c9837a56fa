/* A set of small numbers 0..255 in four words: the GPUs of a snapshot
 * (core/snapshot.h gs_gpuset) and the device minors a process holds
 * (proc/holderscan.h gs_minorset) are both one of these, kept as two types
 * so that an index is never taken for a minor. */
#ifndef GS_SET256_H
#define GS_SET256_H

#include <stdbool.h>
#include <stdint.h>

#define GS_SET256_WORDS 4

static inline void gs_set256_add(uint64_t *b, unsigned i)
{
	if (i < 64 * GS_SET256_WORDS)
		b[i / 64] |= 1ULL << (i % 64);
}

static inline bool gs_set256_has(const uint64_t *b, unsigned i)
{
	return i < 64 * GS_SET256_WORDS && ((b[i / 64] >> (i % 64)) & 1);
}

static inline bool gs_set256_empty(const uint64_t *b)
{
	return !(b[0] | b[1] | b[2] | b[3]);
}

static inline bool gs_set256_intersects(const uint64_t *a, const uint64_t *b)
{
	return ((a[0] & b[0]) | (a[1] & b[1]) | (a[2] & b[2]) | (a[3] & b[3])) != 0;
}

/* Does a hold anything outside b? */
static inline bool gs_set256_outside(const uint64_t *a, const uint64_t *b)
{
	return ((a[0] & ~b[0]) | (a[1] & ~b[1]) | (a[2] & ~b[2]) | (a[3] & ~b[3])) != 0;
}

/* a |= b */
static inline void gs_set256_merge(uint64_t *a, const uint64_t *b)
{
	for (int k = 0; k < GS_SET256_WORDS; k++)
		a[k] |= b[k];
}

#endif
