// The precompiled header of every test binary (tests/CMakeLists.txt) is built with this file.
