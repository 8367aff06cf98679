#pragma once
#include <lmdb.h>
