#ifndef IMGSTORE_CFILESYSTEM_H
#define IMGSTORE_CFILESYSTEM_H

/// The file system type (`statfs`'s `f_type`: 0xEF53 for ext2/3/4, 0x58465342 for XFS) of the
/// file system holding `path`, which Glibc's Swift overlay does not import. Returns 0 and sets
/// `*type`, or -1 with `errno` set.
int imgstore_file_system_type(const char *path, long *type);

#endif
