// LinesCodec and LengthDelimitedCodec: their bytes, their limits (an over-long frame throws
// once and the next frame comes), the end of the stream, their argument checks; and the
// split-point property of tests/fuzz/codec_split.hpp on seeded random inputs (the fuzz target
// explores it further).
#include <gtest/gtest.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz/codec_split.hpp"
#include "spool/codec.hpp"
#include "support/hand_poll.hpp"
#include "support/scripted_bytes.hpp"

namespace {

using spool::codec::Buffer;
using spool::codec::FramedRead;
using spool::codec::LengthDelimitedCodec;
using spool::codec::LinesCodec;
using spool_codec_test::outcomes;
using spool_test::ScriptedBytes;

std::set<std::size_t> every_byte(std::size_t n) {
  std::set<std::size_t> cuts;
  for (std::size_t i = 1; i < n; ++i) cuts.insert(i);
  return cuts;
}

std::vector<std::string> lines_of(const std::string& input, std::size_t max, bool bytewise) {
  FramedRead framed(
      ScriptedBytes(input, bytewise ? every_byte(input.size()) : std::set<std::size_t>{}),
      LinesCodec(max));
  return outcomes(framed);
}

TEST(LinesCodec, DropsCrBeforeLfAndEndsTheLastLineAtTheEnd) {
  EXPECT_EQ(lines_of("a\r\nb\n\nc\rd\nlast", 100, false),
            (std::vector<std::string>{"=a", "=b", "=", "=c\rd", "=last"}));
  EXPECT_EQ(lines_of("a\n\r", 100, false), (std::vector<std::string>{"=a"}));
  EXPECT_EQ(lines_of("", 100, false), (std::vector<std::string>{}));
}

TEST(LinesCodec, ALineEndedByALaterReadLeavesTheSearchOfTheNextLineAtItsStart) {
  FramedRead framed(ScriptedBytes("abcd\n\nx\n", {4}), LinesCodec(8));
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=abcd", "=", "=x"}));
}

TEST(LinesCodec, AnOverLongLineThrowsOnceAndTheNextLineComes) {
  for (const bool bytewise : {false, true}) {
    SCOPED_TRACE(bytewise);
    EXPECT_EQ(lines_of("1234\n12345\nok\n123456789012\nend", 4, bytewise),
              (std::vector<std::string>{"=1234", "!FrameTooLong", "=ok", "!FrameTooLong", "=end"}));
    // An over-long last line, unended: one error, nothing after it.
    EXPECT_EQ(lines_of("ok\n123456789", 4, bytewise),
              (std::vector<std::string>{"=ok", "!FrameTooLong"}));
  }
}

// 1 MiB without "\n" through LinesCodec(1024): one error, and the line is skipped as it
// arrives, so the buffer never grows past the largest read room (64 KiB; each read fills
// all of its room here, so the room grows to it), never to the line's length.
TEST(LinesCodec, AMebibyteLineIsSkippedWithoutBeingHeld) {
  const std::string huge(1 << 20, 'x');
  for (const std::string& tail : {std::string(), std::string("\nok\n")}) {
    FramedRead framed(ScriptedBytes(huge + tail), LinesCodec(1024));
    const auto expected = tail.empty() ? std::vector<std::string>{"!FrameTooLong"}
                                       : std::vector<std::string>{"!FrameTooLong", "=ok"};
    EXPECT_EQ(outcomes(framed), expected);
    EXPECT_EQ(framed.read_buffer().capacity(), spool::codec::detail::kMaxReadRoom);
  }
}

TEST(LinesCodec, EncodesALineAndItsLfAndRefusesALineHoldingLf) {
  Buffer buf;
  LinesCodec codec;
  codec.encode("hi", buf);
  EXPECT_THROW(codec.encode("a\nb", buf), spool::codec::CodecError);
  EXPECT_EQ(buf.view(), "hi\n");
}

std::string length_delimited(std::size_t width, std::endian order, const std::string& payload) {
  Buffer buf;
  LengthDelimitedCodec({width, order, 1 << 20}).encode(payload, buf);
  return std::string(buf.view());
}

TEST(LengthDelimitedCodec, WritesTheFieldOfEachWidthInEachByteOrder) {
  using std::endian;
  using namespace std::string_literals;
  EXPECT_EQ(length_delimited(1, endian::big, "abc"), "\x03"s + "abc");
  EXPECT_EQ(length_delimited(2, endian::big, "abc"), "\x00\x03"s + "abc");
  EXPECT_EQ(length_delimited(2, endian::little, "abc"), "\x03\x00"s + "abc");
  EXPECT_EQ(length_delimited(4, endian::big, std::string(258, 'x')),
            "\x00\x00\x01\x02"s + std::string(258, 'x'));
  EXPECT_EQ(length_delimited(4, endian::little, "a"), "\x01\x00\x00\x00"s + "a");
  EXPECT_EQ(length_delimited(8, endian::big, ""), std::string(8, '\0'));
  EXPECT_EQ(length_delimited(8, endian::little, "ab"), "\x02"s + std::string(7, '\0') + "ab");
}

TEST(LengthDelimitedCodec, DecodesWhatItEncodesInEveryWidthOrderAndSplit) {
  std::mt19937 rng(7);
  for (const std::size_t width : {1u, 2u, 4u, 8u}) {
    for (const std::endian order : {std::endian::big, std::endian::little}) {
      LengthDelimitedCodec codec({width, order, 200});
      Buffer wire;
      std::vector<std::string> expected;
      for (int i = 0; i < 50; ++i) {
        std::string payload(rng() % 201, '\0');
        for (char& c : payload) c = static_cast<char>(rng());
        codec.encode(payload, wire);
        expected.push_back("=" + payload);
      }
      std::set<std::size_t> cuts;
      for (int i = 0; i < 100; ++i) cuts.insert(rng() % wire.size());
      FramedRead framed(ScriptedBytes(std::string(wire.view()), cuts),
                        LengthDelimitedCodec({width, order, 200}));
      EXPECT_EQ(outcomes(framed), expected) << width;
    }
  }
}

TEST(LengthDelimitedCodec, AnOverLongFrameThrowsOnceIsSkippedAndTheNextComes) {
  LengthDelimitedCodec big({4, std::endian::big, 1 << 20});
  Buffer wire;
  big.encode("ok", wire);
  big.encode(std::string(100 * 1024, 'x'), wire);  // far more than the buffer's first 8 KiB
  big.encode("next", wire);
  for (const bool bytewise : {false, true}) {
    FramedRead framed(ScriptedBytes(std::string(wire.view()),
                                    bytewise ? every_byte(wire.size()) : std::set<std::size_t>{}),
                      LengthDelimitedCodec({4, std::endian::big, 100}));
    EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"=ok", "!FrameTooLong", "=next"}));
    // The skipped 100 KiB frame was never held: the buffer grew only with the read room.
    EXPECT_LE(framed.read_buffer().capacity(), spool::codec::detail::kMaxReadRoom);
  }
}

// A 1 MiB frame from a slow peer (1 KiB per read): the decoder reserves its whole size once
// its header is in, and the framed reader never gives that storage back while the frame is
// partly held (before, an adaptive read room shrank it after two short reads, and the
// decoder grew it again: four 1 MiB allocations and three copies).
TEST(LengthDelimitedCodec, AFramesReservationStaysUntilItIsDecoded) {
  constexpr std::size_t kFrame = 1 << 20;
  Buffer wire;
  LengthDelimitedCodec({4, std::endian::big, kFrame}).encode(std::string(kFrame, 'x'), wire);
  std::set<std::size_t> cuts;
  for (std::size_t at = 4; at < wire.size(); at += 1024) cuts.insert(at);
  ScriptedBytes bytes(std::string(wire.view()), cuts);
  bytes.pend_each(true);
  FramedRead framed(std::move(bytes), LengthDelimitedCodec({4, std::endian::big, kFrame}));
  spool_test::HandPoller poller;
  auto next = spool::next(framed);
  int polls = 0;
  while (poller.poll(next).is_pending()) {
    ++polls;
    const Buffer& held = framed.read_buffer();
    if (held.size() >= 4) {  // the header is in: the frame's room is reserved, and stays
      ASSERT_GE(held.capacity(), 4 + kFrame) << "with " << held.size() << " bytes held";
    }
  }
  EXPECT_GT(polls, 1000);  // a read per KiB, each pending once
}

// Large frames that keep coming (5 of 300 KiB, read 64 KiB at a time) keep their storage:
// the buffer, empty between two frames, is not shrunk and grown again for each (it was: two
// reallocations per frame).
TEST(LengthDelimitedCodec, LargeFramesInARowKeepTheirStorage) {
  constexpr std::size_t kFrame = 300 * 1024;
  Buffer wire;
  LengthDelimitedCodec encoder({4, std::endian::big, kFrame});
  for (int i = 0; i < 5; ++i) encoder.encode(std::string(kFrame, 'x'), wire);
  std::set<std::size_t> cuts;  // at each frame's end (the buffer empties), and every 64 KiB
  for (std::size_t start = 0; start < wire.size(); start += 4 + kFrame) {
    for (std::size_t at = start; at < start + 4 + kFrame; at += 64 * 1024) cuts.insert(at);
  }
  ScriptedBytes bytes(std::string(wire.view()), cuts);
  bytes.pend_each(true);
  FramedRead framed(std::move(bytes), LengthDelimitedCodec({4, std::endian::big, kFrame}));
  spool_test::HandPoller poller;
  bool reserved = false;
  for (int frames = 0; frames < 5;) {
    auto next = spool::next(framed);
    for (;;) {
      auto p = poller.poll(next);
      const std::size_t capacity = framed.read_buffer().capacity();
      ASSERT_TRUE(!reserved || capacity >= 4 + kFrame) << "shrunk to " << capacity;
      reserved = reserved || capacity >= 4 + kFrame;
      if (p.is_ready()) break;
    }
    ++frames;
  }
  EXPECT_TRUE(reserved);
}

TEST(LengthDelimitedCodec, AFrameCutByTheEndIsAnError) {
  FramedRead framed(ScriptedBytes(std::string("\x00\x05"
                                              "abc",
                                              5)),
                    LengthDelimitedCodec({2, std::endian::big, 100}));
  EXPECT_EQ(outcomes(framed), (std::vector<std::string>{"!CodecError"}));
}

TEST(LengthDelimitedCodec, RefusesToEncodeWhatTheFieldOrTheMaximumCannotHold) {
  Buffer buf;
  EXPECT_THROW(LengthDelimitedCodec({1, std::endian::big, 1000}).encode(std::string(256, 'a'), buf),
               spool::codec::FrameTooLong);
  EXPECT_THROW(LengthDelimitedCodec({4, std::endian::big, 10}).encode(std::string(11, 'a'), buf),
               spool::codec::FrameTooLong);
  EXPECT_TRUE(buf.empty());
  LengthDelimitedCodec({1, std::endian::big, 1000}).encode(std::string(255, 'a'), buf);
  EXPECT_EQ(buf.size(), 256u);
}

TEST(LengthDelimitedCodec, RefusesAFieldWidthOtherThan1248) {
  for (const std::size_t w : {0u, 3u, 5u, 16u}) {
    EXPECT_THROW(LengthDelimitedCodec({w, std::endian::big, 10}), std::invalid_argument) << w;
  }
}

TEST(CodecSplit, SeededRandomInputsGiveTheSameOutcomesHoweverTheyAreCut) {
  std::mt19937 rng(33);
  const std::string alphabet =
      std::string("ab\n\r\x01\x02\x03\x05\x08\x0c", 10) + std::string(4, '\0');
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::uint8_t> data(2 + rng() % 80);
    data[0] = static_cast<std::uint8_t>(rng());
    data[1] = static_cast<std::uint8_t>(rng() % 16);
    for (std::size_t j = 2; j < data.size(); ++j) {
      data[j] = j < 2u + data[1] ? static_cast<std::uint8_t>(rng())
                                 : static_cast<std::uint8_t>(alphabet[rng() % alphabet.size()]);
    }
    ASSERT_TRUE(spool_codec_test::same_outcomes_when_split(data)) << "input " << i;
  }
}

}  // namespace
