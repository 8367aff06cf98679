#include "CStreamingCopy.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

// SSE2 is part of x86-64, so no run-time dispatch: four 16-byte streaming stores fill one
// 64-byte line in the write-combining buffer, which then goes to memory as one write.
void imgstore_streaming_copy(void *destination, const void *source, size_t count) {
    unsigned char *to = destination;
    const unsigned char *from = source;
    // Ordinary stores up to the first 64-byte boundary of the destination, so every streaming
    // store below fills whole lines.
    size_t head = (size_t)(-(uintptr_t)to & 63);
    if (head > count) head = count;
    memcpy(to, from, head);
    to += head;
    from += head;
    count -= head;
    for (; count >= 64; to += 64, from += 64, count -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)from);
        __m128i b = _mm_loadu_si128((const __m128i *)(from + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(from + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(from + 48));
        _mm_stream_si128((__m128i *)to, a);
        _mm_stream_si128((__m128i *)(to + 16), b);
        _mm_stream_si128((__m128i *)(to + 32), c);
        _mm_stream_si128((__m128i *)(to + 48), d);
    }
    memcpy(to, from, count);
    // Streaming stores are weakly ordered: fence them before the caller publishes the buffer.
    _mm_sfence();
}

#else

void imgstore_streaming_copy(void *destination, const void *source, size_t count) {
    memcpy(destination, source, count);
}

#endif
