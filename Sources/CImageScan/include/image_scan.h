#pragma once
#include <stddef.h>
#include <stdint.h>

/*
 * The JPEG entropy-coded data scan (image_scan.c says how it works).
 *
 * Structure mode spends nearly all of its time on a JPEG here: the entropy-coded data is about 90% of
 * the file and every byte of it must be looked at, so this is written in C with vector instructions
 * chosen at run time for the CPU (AVX-512BW, AVX2, SSE2), which Swift cannot select per function.
 */

/* The vector widths, widest last. The scalar tier is the reference the others are tested against. */
typedef enum {
    IMGSTORE_SCAN_SCALAR = 0,
    IMGSTORE_SCAN_SSE2 = 1,
    IMGSTORE_SCAN_AVX2 = 2,
    IMGSTORE_SCAN_AVX512BW = 3,
} imgstore_scan_tier;

/* The widest tier this CPU (and the OS's saved vector state) runs; the one imgstore_jpeg_next_marker uses. */
imgstore_scan_tier imgstore_scan_best_tier(void);

/*
 * The offset of the first 0xFF at or after `from` that is not followed by a stuffed 0x00 (T.81 §F.1.2.3):
 * a marker, fill bytes before one, or an 0xFF in the input's last byte. `count` when there is none.
 * Reads only bytes base[from ..< count]; `from <= count`.
 */
size_t imgstore_jpeg_next_marker(const uint8_t *base, size_t count, size_t from);

/* The same with a given tier, for tests; `tier` must not be wider than imgstore_scan_best_tier(). */
size_t imgstore_jpeg_next_marker_tier(const uint8_t *base, size_t count, size_t from, imgstore_scan_tier tier);
