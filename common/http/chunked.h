// The chunked transfer coding (RFC 9112 7.1): a push decoder for bodies that arrive in pieces,
// and the encoder the response writer uses. The decoder keeps O(1) state, checks each chunk size
// against the body cap before any of its data is accepted, and bounds size lines and trailers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace carapace::http {

class ChunkedDecoder {
 public:
  enum class Status { kNeedMore, kDone, kMalformed, kTooLarge };

  static constexpr size_t kMaxSizeLine = 1024;      // hex size plus extensions
  static constexpr size_t kMaxTrailerBytes = 8192;  // trailer fields are read and dropped

  explicit ChunkedDecoder(uint64_t max_body) : max_body_(max_body) {}

  // Consumes bytes of `in`, appending decoded data to `out`; *consumed says how many were used.
  // After kDone the remaining bytes belong to the next message. After kMalformed or kTooLarge the
  // decoder stays failed.
  Status feed(std::string_view in, std::string& out, size_t* consumed);

  uint64_t body_size() const { return total_; }

 private:
  enum class State {
    kSize,     // hex digits of the chunk size
    kExt,      // ";name=value" extensions, ignored
    kSizeLf,   // LF after the size line
    kData,     // chunk bytes
    kDataCr,   // CR after the data
    kDataLf,   // LF after the data
    kTrailer,  // start of a trailer line (or the final empty line)
    kTrailerLine,
    kTrailerLf,
    kFinalLf,
    kDone,
    kFailed,
  };

  Status fail(Status s) {
    state_ = State::kFailed;
    failure_ = s;
    return s;
  }

  uint64_t max_body_;
  uint64_t total_ = 0;
  uint64_t chunk_left_ = 0;
  size_t digits_ = 0;
  size_t line_bytes_ = 0;
  size_t trailer_bytes_ = 0;
  State state_ = State::kSize;
  Status failure_ = Status::kMalformed;
};

// One chunk: hex size, CRLF, data, CRLF. Empty data gives "" (an empty chunk would end the body).
std::string encode_chunk(std::string_view data);
// The last chunk and the end of the (empty) trailer section.
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace carapace::http
