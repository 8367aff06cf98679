#define _GNU_SOURCE
#include <fcntl.h>
#include "CFileSync.h"

int imgstore_write_back(int fd, long long offset, long long count) {
    return sync_file_range(fd, offset, count,
                           SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
}
