// spool codecs: a byte stream read as a Stream of frames and written as a sink of frames
// (docs/codec.md).
#pragma once

#include "spool/codec/buffer.hpp"
#include "spool/codec/codec.hpp"
#include "spool/codec/framed.hpp"
#include "spool/codec/length_delimited.hpp"
#include "spool/codec/lines.hpp"
