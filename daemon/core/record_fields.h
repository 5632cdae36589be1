// Fields of the records the daemon reads back from its state dir. A record may be corrupt (a
// crash mid-write, a disk error, a hand edit); nlohmann::json::value() throws on a field of the
// wrong type, so every read goes through these, which fall back instead.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace carapace::service {

inline std::string string_field(const nlohmann::json& record, const char* key,
                                std::string fallback = "") {
  if (!record.is_object()) return fallback;
  auto it = record.find(key);
  return it != record.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// A non-negative integer field (pids, start times), or `fallback`.
inline uint64_t unsigned_field(const nlohmann::json& record, const char* key,
                               uint64_t fallback = 0) {
  if (!record.is_object()) return fallback;
  auto it = record.find(key);
  return it != record.end() && it->is_number_unsigned() ? it->get<uint64_t>() : fallback;
}

}  // namespace carapace::service
