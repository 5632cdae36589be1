// Typed access to the members of a request, and the Replier that sends a request's reply frames.
// A missing or mistyped member is a bad_request error, which closes the connection
// (docs/security.md #33): the agent never guesses what a malformed request meant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/base/result.h"

namespace carapace::agent {

using nlohmann::json;

Result<std::string> req_string(const json& req, const char* key);
Result<std::optional<std::string>> opt_string(const json& req, const char* key);
Result<uint64_t> req_u64(const json& req, const char* key, uint64_t max);
Result<uint64_t> opt_u64(const json& req, const char* key, uint64_t dflt, uint64_t max);
Result<bool> opt_bool(const json& req, const char* key, bool dflt);
// A base64 member decoded; absent gives "". More than max_bytes is too_large.
Result<std::string> opt_bytes(const json& req, const char* key, size_t max_bytes);
// A string that may not hold NUL bytes (argv, environment, names).
Status check_no_nul(std::string_view s, const char* what);

// Serialises without ever throwing: invalid UTF-8 (file names are bytes) becomes U+FFFD.
std::string dump_json(const json& j);

// Sends the frames of one request's reply; each gets the request's "id".
class Replier {
 public:
  Replier(int fd, json id) : fd_(fd), id_(std::move(id)) {}
  Status send(json body);
  Status error(std::string_view code, std::string_view message);
  int fd() const { return fd_; }
  // A send failed: the peer is gone or stopped reading; nothing more can be sent.
  bool broken() const { return broken_; }

 private:
  int fd_;
  json id_;
  bool broken_ = false;
};

}  // namespace carapace::agent
