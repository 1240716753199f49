// spool's version: the one place it is written. CMakeLists.txt reads these lines for
// project(VERSION), the package version and the shared library's SONAME.
#pragma once

#include "spool/config.hpp"

/// The major version: a change that breaks the API once 1.0 is out (docs/compatibility.md).
#define SPOOL_VERSION_MAJOR 0
/// The minor version: new API; before 1.0 it may also break the API (docs/compatibility.md).
#define SPOOL_VERSION_MINOR 1
/// The patch version: fixes that change no API and no ABI.
#define SPOOL_VERSION_PATCH 0
/// The version as a string, "MAJOR.MINOR.PATCH", made from the three numbers above.
#define SPOOL_VERSION                         \
  SPOOL_DETAIL_STRINGIZE(SPOOL_VERSION_MAJOR) \
  "." SPOOL_DETAIL_STRINGIZE(SPOOL_VERSION_MINOR) "." SPOOL_DETAIL_STRINGIZE(SPOOL_VERSION_PATCH)
#define SPOOL_DETAIL_STRINGIZE_TOKEN(x) #x
#define SPOOL_DETAIL_STRINGIZE(x) SPOOL_DETAIL_STRINGIZE_TOKEN(x)

/// The ABI number, libspool.so's SONAME (libspool.so.N) and the libspoolN package's name:
/// raised by every release that breaks the ABI of the one before, whatever its version.
#define SPOOL_ABI_VERSION 0
