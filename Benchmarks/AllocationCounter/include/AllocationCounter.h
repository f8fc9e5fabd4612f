#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H

#include <stdint.h>

/// Heap allocations made by any thread of this process since it started or since the last reset:
/// calls to malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign and valloc. Counted only in an
/// executable that links this target, which then defines those functions (see AllocationCounter.c); always
/// zero where that is not supported: anything but Linux with glibc, and sanitized builds.
int64_t allocation_count(void);

/// Sets the count back to zero.
void allocation_count_reset(void);

#endif
