// spool's files: File, OpenOptions, ReadDir and the free functions (docs/fs.md).
#pragma once

#include "spool/fs/file.hpp"
#include "spool/fs/metadata.hpp"
#include "spool/fs/ops.hpp"
#include "spool/fs/read_dir.hpp"
