// spool streams: async generators, the Stream concept, and adapters over any stream.
#pragma once

#include "spool/stream/generator.hpp"
