// An incremental Server-Sent Events reader (the subset `carapace serve` writes: `event:` and
// `data:` fields, comments, blank-line dispatch). Bytes arrive in arbitrary pieces from the HTTP
// client; events come out whole. Bounded: one event may not exceed `max_event_bytes`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace carapace::sandbox {

struct SseEvent {
  std::string event = "message";  // the `event:` field, "message" when absent
  std::string data;               // `data:` lines joined with '\n'
};

class SseParser {
 public:
  explicit SseParser(size_t max_event_bytes = 16u << 20) : max_event_bytes_(max_event_bytes) {}

  // Appends `bytes` and returns the events they completed, in order. Fails (and stays failed)
  // when an event grows past the limit.
  Result<std::vector<SseEvent>> feed(std::string_view bytes);

 private:
  void take_line(std::string_view line, std::vector<SseEvent>& out);
  // Fails the parser for good.
  Error too_large();

  size_t max_event_bytes_;
  std::string pending_;  // an unfinished line
  SseEvent current_;
  bool has_data_ = false;
  bool failed_ = false;
};

}  // namespace carapace::sandbox
