#include <sys/vfs.h>
#include "CFileSystem.h"

int imgstore_file_system_type(const char *path, long *type) {
    struct statfs status;
    if (statfs(path, &status) != 0) return -1;
    *type = (long)status.f_type;
    return 0;
}
