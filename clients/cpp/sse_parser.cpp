#include "clients/cpp/sse_parser.h"

namespace carapace::sandbox {

Result<std::vector<SseEvent>> SseParser::feed(std::string_view bytes) {
  if (failed_) return make_error("event stream: already failed");
  std::vector<SseEvent> out;
  pending_.append(bytes);
  size_t start = 0;
  for (;;) {
    size_t nl = pending_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(pending_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    take_line(line, out);
    start = nl + 1;
    // Checked after every line, not only once per feed: a piece that holds a whole event would
    // otherwise dispatch it, whatever its size, before the check below sees it.
    if (current_.data.size() > max_event_bytes_) return too_large();
  }
  pending_.erase(0, start);
  if (pending_.size() + current_.data.size() > max_event_bytes_) return too_large();
  return out;
}

Error SseParser::too_large() {
  failed_ = true;
  return make_error("event stream: an event is larger than " + std::to_string(max_event_bytes_) +
                    " bytes");
}

void SseParser::take_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {  // dispatch
    if (has_data_) out.push_back(std::move(current_));
    current_ = SseEvent{};
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive)
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    current_.event = std::string(value);
  } else if (field == "data") {
    if (has_data_) current_.data.push_back('\n');
    current_.data.append(value);
    has_data_ = true;
  }
  // id, retry and unknown fields carry nothing this client uses.
}

}  // namespace carapace::sandbox
