#ifndef IMGSTORE_CFILESYNC_H
#define IMGSTORE_CFILESYNC_H

/// Starts the writeback of `count` bytes of `fd` at `offset` and waits for it
/// (`sync_file_range` with WAIT_BEFORE | WRITE | WAIT_AFTER), which Glibc's Swift overlay does
/// not import. It syncs neither metadata nor the device's cache: it makes nothing durable.
/// Returns 0, or -1 with `errno` set.
int imgstore_write_back(int fd, long long offset, long long count);

#endif
