// spool streams: async generators, the Stream concept, and adapters over any stream.
#pragma once

#include "spool/stream/adapters.hpp"
#include "spool/stream/broadcast_stream.hpp"
#include "spool/stream/chunks.hpp"
#include "spool/stream/generator.hpp"
#include "spool/stream/merge_zip.hpp"
#include "spool/stream/stream.hpp"
#include "spool/stream/time_adapters.hpp"
#include "spool/stream/watch_stream.hpp"
