#ifndef IMGSTORE_CSTREAMINGCOPY_H
#define IMGSTORE_CSTREAMINGCOPY_H

#include <stddef.h>

/// Copies `count` bytes from `source` to `destination` (which must not overlap) with streaming
/// (non-temporal) stores on x86-64: the destination's cache lines are written whole, straight to
/// memory, and neither read from memory first nor left in the caches. For a copy into memory
/// that is not in the caches (a buffer a cache keeps, taken from what its evictions freed), this
/// saves reading every destination line from memory before writing it; a reader of the copy then
/// reads it from memory. The source is best already in the caches. Ends with a store fence, so
/// the bytes are visible to other threads as ordinary stores are (after any later
/// synchronisation). Elsewhere, `memcpy`.
void imgstore_streaming_copy(void *destination, const void *source, size_t count);

#endif
