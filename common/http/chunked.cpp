#include "common/http/chunked.h"

#include <algorithm>
#include <cstdio>

#include "common/http/http_types.h"

namespace carapace::http {

ChunkedDecoder::Status ChunkedDecoder::feed(std::string_view in, std::string& out,
                                            size_t* consumed) {
  size_t i = 0;
  *consumed = 0;
  if (state_ == State::kFailed) return failure_;
  auto stop = [&](Status s) {
    *consumed = i;
    return fail(s);
  };
  while (i < in.size() && state_ != State::kDone) {
    char c = in[i];
    switch (state_) {
      case State::kSize: {
        int d = hex_digit(c);
        if (d >= 0) {
          // 16 hex digits fit 64 bits; the cap check below keeps the sum from overflowing.
          if (++digits_ > 16) return stop(Status::kTooLarge);
          chunk_left_ = chunk_left_ * 16 + static_cast<uint64_t>(d);
          if (chunk_left_ > max_body_ - total_) return stop(Status::kTooLarge);
        } else if (digits_ == 0) {
          return stop(Status::kMalformed);
        } else if (c == ';' || c == ' ' || c == '\t') {
          state_ = State::kExt;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else {
          return stop(Status::kMalformed);
        }
        if (++line_bytes_ > kMaxSizeLine) return stop(Status::kMalformed);
        ++i;
        break;
      }
      case State::kExt:
        if (c == '\r') {
          state_ = State::kSizeLf;
        } else if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
          return stop(Status::kMalformed);
        }
        if (++line_bytes_ > kMaxSizeLine) return stop(Status::kMalformed);
        ++i;
        break;
      case State::kSizeLf:
        if (c != '\n') return stop(Status::kMalformed);
        state_ = chunk_left_ == 0 ? State::kTrailer : State::kData;
        digits_ = 0;
        line_bytes_ = 0;
        ++i;
        break;
      case State::kData: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(chunk_left_, in.size() - i));
        out.append(in.substr(i, n));
        chunk_left_ -= n;
        total_ += n;
        i += n;
        if (chunk_left_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (c != '\r') return stop(Status::kMalformed);
        state_ = State::kDataLf;
        ++i;
        break;
      case State::kDataLf:
        if (c != '\n') return stop(Status::kMalformed);
        state_ = State::kSize;
        ++i;
        break;
      case State::kTrailer:
        state_ = c == '\r' ? State::kFinalLf : State::kTrailerLine;
        if (state_ == State::kTrailerLine) break;  // re-read c as part of the line
        ++i;
        break;
      case State::kTrailerLine:
        if (++trailer_bytes_ > kMaxTrailerBytes) return stop(Status::kMalformed);
        if (c == '\r') {
          state_ = State::kTrailerLf;
        } else if (c == '\n' || c == '\0') {
          return stop(Status::kMalformed);
        }
        ++i;
        break;
      case State::kTrailerLf:
      case State::kFinalLf:
        if (c != '\n') return stop(Status::kMalformed);
        state_ = state_ == State::kFinalLf ? State::kDone : State::kTrailer;
        ++i;
        break;
      case State::kDone:
      case State::kFailed:
        break;
    }
  }
  *consumed = i;
  return state_ == State::kDone ? Status::kDone : Status::kNeedMore;
}

std::string encode_chunk(std::string_view data) {
  if (data.empty()) return {};
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out;
  out.reserve(static_cast<size_t>(n) + data.size() + 2);
  out.append(size, static_cast<size_t>(n));
  out.append(data);
  out.append("\r\n");
  return out;
}

}  // namespace carapace::http
