// What bounds `get.disk-hit` against a file per entry (issue 17): a verified read must at least
// copy the bytes out of the page cache and hash them (XXH3-64, as imgstore's fused copy does, in
// 64 KiB chunks with libxxhash's run-time dispatch: each chunk hashed where it lies, then copied
// while in the cache), while a file read copies them and makes four system calls. Both run here
// on the benchmark's size mix (30% 4-16 KiB, 50% 16-128 KiB, 20% 128 KiB-1 MiB), every byte in
// the page cache, with the bench's access pattern. The ratio files / verified copy is the most
// `get.disk-hit` vs `files` can reach while every read is verified (imgstore's read also finds the
// entry in LMDB and fills the memory tier).
//
// A copy the memory tier keeps goes to memory the caches no longer hold (what its evictions
// freed): "into kept buffers" copies into a ring of 128 MiB of buffers, with ordinary stores (which
// read each destination line from memory first; copied, then hashed in the cache) and as imgstore
// writes it, hashed, then copied with the streaming stores of Sources/CStreamingCopy. The raw LMDB row's copy is freed at once, so its buffer stays
// in the cache: "copy" below.
//
// It also hashes each blob where it lies, without a copy, as `withImage(for:)` (the bench's
// `imgstore-borrowed` row) verifies the mapped bytes: plain copy / hash in place is the most that
// row can reach against raw LMDB's get+copy, before either finds the entry.
//
// Build and run: Tools/read-bound/run.sh [DIR]
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "CStreamingCopy.h"

// The AVX2/AVX-512 entry point imgstore calls on x86-64 (xxh_x86dispatch.h is not installed).
XXH_errorcode XXH3_64bits_update_dispatch(XXH3_state_t *, const void *, size_t);
XXH64_hash_t XXH3_64bits_dispatch(const void *, size_t);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned long long state = 42;
static unsigned long long next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

int main(int argc, char **argv) {
    enum { count = 2048, ops = 200000 };
    static size_t size[count], offset[count];
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        int band = next() % 10;
        size[i] = band < 3 ? 4096 + next() % 12288 : band < 8 ? 16384 + next() % 114688 : 131072 + next() % 917504;
        offset[i] = total;
        total += size[i];
    }
    const char *dir = argc > 1 ? argv[1] : "/tmp/read-bound";
    char path[512];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/all", dir);
    int all = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char *bytes = malloc(1 << 20), *out = malloc(1 << 20);
    for (int i = 0; i < (1 << 20); i++) bytes[i] = (char)next();
    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/%d", dir, i);
        int file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (write(all, bytes, size[i]) != (ssize_t)size[i] || write(file, bytes, size[i]) != (ssize_t)size[i]) return 1;
        close(file);
    }
    const char *map = mmap(0, total, PROT_READ, MAP_SHARED, all, 0);
    enum { ringCount = 128 };
    static char *ring[ringCount];
    for (int r = 0; r < ringCount; r++) {
        ring[r] = malloc(1 << 20);
        memset(ring[r], 1, 1 << 20);
    }
    XXH3_state_t *hash = XXH3_createState();
    volatile unsigned long long sink = 0;
    for (int run = 0; run < 3; run++) {
        double start = now();
        for (int k = 0; k < ops; k++) {
            int i = (k * 977) & (count - 1);
            memcpy(out, map + offset[i], size[i]);
            sink += out[7];
        }
        double copy = (now() - start) / ops;
        start = now();
        for (int k = 0; k < ops; k++) {
            int i = (k * 977) & (count - 1);
            XXH3_64bits_reset(hash);
            for (size_t at = 0; at < size[i]; at += 65536) {
                size_t n = size[i] - at < 65536 ? size[i] - at : 65536;
                XXH3_64bits_update_dispatch(hash, map + offset[i] + at, n);
                memcpy(out + at, map + offset[i] + at, n);
            }
            sink += XXH3_64bits_digest(hash);
        }
        double verified = (now() - start) / ops;
        start = now();
        for (int k = 0; k < ops; k++) {
            int i = (k * 977) & (count - 1);
            snprintf(path, sizeof path, "%s/%d", dir, i);
            int file = open(path, O_RDONLY);
            struct stat info;
            fstat(file, &info);
            if (read(file, out, info.st_size) != info.st_size) return 1;
            close(file);
            sink += out[7];
        }
        double files = (now() - start) / ops;
        double kept[2];
        for (int streaming = 0; streaming < 2; streaming++) {
            start = now();
            for (int k = 0; k < ops; k++) {
                int i = (k * 977) & (count - 1);
                char *into = ring[k % ringCount];
                XXH3_64bits_reset(hash);
                for (size_t at = 0; at < size[i]; at += 65536) {
                    size_t n = size[i] - at < 65536 ? size[i] - at : 65536;
                    if (streaming) {
                        XXH3_64bits_update_dispatch(hash, map + offset[i] + at, n);
                        imgstore_streaming_copy(into + at, map + offset[i] + at, n);
                    } else {  // copying first is the faster order for ordinary stores here
                        memcpy(into + at, map + offset[i] + at, n);
                        XXH3_64bits_update_dispatch(hash, into + at, n);
                    }
                }
                sink += XXH3_64bits_digest(hash);
            }
            kept[streaming] = (now() - start) / ops;
        }
        start = now();
        for (int k = 0; k < ops; k++) {
            int i = (k * 977) & (count - 1);
            sink += XXH3_64bits_dispatch(map + offset[i], size[i]);
        }
        double inPlace = (now() - start) / ops;
        printf("copy %.2f µs, verified copy (XXH3 + copy) %.2f µs, file (open, fstat, read, close) %.2f µs, "
               "XXH3 in place %.2f µs, verified copy into kept buffers: ordinary stores %.2f µs, streaming %.2f µs: "
               "files / verified copy = %.2f×, files / plain copy = %.2f×, plain copy / verified copy = %.2f×, "
               "plain copy / verified streaming copy into kept buffers = %.2f×, plain copy / XXH3 in place = %.2f×\n",
               copy * 1e6, verified * 1e6, files * 1e6, inPlace * 1e6, kept[0] * 1e6, kept[1] * 1e6, files / verified,
               files / copy, copy / verified, copy / kept[1], copy / inPlace);
    }
    return (int)(sink & 0);
}
