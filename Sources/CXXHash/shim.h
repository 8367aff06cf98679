#pragma once
#include <xxhash.h>
#if defined(__x86_64__)
// Debian's libxxhash exports XXH3 entry points that pick SSE2, AVX2 or AVX-512 at run time
// (`*_dispatch`); the plain names run the SSE2 baseline. Swift does not see the header's
// renaming macros, so `Checksum` calls the `_dispatch` names itself.
#define XXH_DISPATCH_DISABLE_REPLACE 1
#include <xxh_x86dispatch.h>
#endif
