// spool's child processes: Command, Child, ExitStatus (docs/process.md).
#pragma once

#include "spool/process/child.hpp"
#include "spool/process/command.hpp"
