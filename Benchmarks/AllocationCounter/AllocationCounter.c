// Counts heap allocations the way SwiftNIO's allocation-counter does, without a preloaded library: an
// executable that links this file defines malloc and its siblings itself. The dynamic linker resolves every
// shared library's calls (libswiftCore's swift_slowAlloc, Foundation, Dispatch, libstdc++'s operator new)
// to the executable's definition first, so each allocation of the process passes through here, is counted
// with a relaxed atomic, and is forwarded to glibc's own implementation (__libc_malloc and friends, which
// glibc exports). free is not replaced: the memory comes from glibc's allocator.
#include "AllocationCounter.h"

// A sanitizer (swift build --sanitize=…) brings its own malloc, which must see every allocation: count none.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define ALLOCATION_COUNTER_SANITIZED 1
#endif
#endif

#if defined(__linux__) && defined(__GLIBC__) && !defined(ALLOCATION_COUNTER_SANITIZED)

#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);

static int64_t counter;

static inline void count_one(void) {
    __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
    count_one();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_one();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    count_one();
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    count_one();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count_one();
    return __libc_memalign(alignment, size);
}

void *valloc(size_t size) {
    count_one();
    return __libc_valloc(size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    count_one();
    // The checks glibc's own posix_memalign makes: a power of two that is a multiple of sizeof(void *).
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) {
        return EINVAL;
    }
    void *memory = __libc_memalign(alignment, size);
    if (memory == NULL) { return ENOMEM; }
    *result = memory;
    return 0;
}

int64_t allocation_count(void) { return __atomic_load_n(&counter, __ATOMIC_RELAXED); }

void allocation_count_reset(void) { __atomic_store_n(&counter, 0, __ATOMIC_RELAXED); }

#else

int64_t allocation_count(void) { return 0; }

void allocation_count_reset(void) {}

#endif
