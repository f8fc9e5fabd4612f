#ifndef HEAP_USAGE_H
#define HEAP_USAGE_H

#include <stddef.h>

/// Bytes currently allocated from the C heap (glibc's mallinfo2), or 0 where that is not available.
size_t heap_bytes_in_use(void);

#endif
