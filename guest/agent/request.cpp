#include "guest/agent/request.h"

#include "common/agent/base64.h"
#include "common/agent/errors.h"
#include "common/agent/frame.h"
#include "common/agent/wire.h"

namespace carapace::agent {
namespace {

Error bad_member(const char* key, const char* expected) {
  return protocol_error(code::kBadRequest, std::string("\"") + key + "\" must be " + expected);
}

const json* member(const json& req, const char* key) {
  auto it = req.find(key);
  return it == req.end() ? nullptr : &*it;
}

}  // namespace

Result<std::string> req_string(const json& req, const char* key) {
  const json* v = member(req, key);
  if (!v || !v->is_string()) return bad_member(key, "a string");
  return v->get<std::string>();
}

Result<std::optional<std::string>> opt_string(const json& req, const char* key) {
  const json* v = member(req, key);
  if (!v) return std::optional<std::string>();
  if (!v->is_string()) return bad_member(key, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

Result<uint64_t> req_u64(const json& req, const char* key, uint64_t max) {
  const json* v = member(req, key);
  if (!v || !v->is_number_unsigned() || v->get<uint64_t>() > max)
    return bad_member(key, ("an integer in 0.." + std::to_string(max)).c_str());
  return v->get<uint64_t>();
}

Result<uint64_t> opt_u64(const json& req, const char* key, uint64_t dflt, uint64_t max) {
  if (!member(req, key)) return dflt;
  return req_u64(req, key, max);
}

Result<bool> opt_bool(const json& req, const char* key, bool dflt) {
  const json* v = member(req, key);
  if (!v) return dflt;
  if (!v->is_boolean()) return bad_member(key, "true or false");
  return v->get<bool>();
}

Result<std::string> opt_bytes(const json& req, const char* key, size_t max_bytes) {
  const json* v = member(req, key);
  if (!v) return std::string();
  if (!v->is_string()) return bad_member(key, "a base64 string");
  const std::string& text = v->get_ref<const std::string&>();
  auto size = base64_decoded_size(text);
  if (size && *size > max_bytes)
    return protocol_error(code::kTooLarge, std::string("\"") + key + "\" holds more than " +
                                               std::to_string(max_bytes) + " bytes");
  auto bytes = base64_decode(text);
  if (!bytes) return bad_member(key, "valid base64");
  return std::move(*bytes);
}

Status check_no_nul(std::string_view s, const char* what) {
  if (s.find('\0') != std::string_view::npos)
    return protocol_error(code::kBadRequest, std::string(what) + " holds a NUL byte");
  return {};
}

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status Replier::send(json body) {
  if (broken_) return make_error("connection already broken");
  body["id"] = id_;
  Status s = write_frame(fd_, dump_json(body));
  if (!s.ok()) broken_ = true;
  return s;
}

Status Replier::error(std::string_view code, std::string_view message) {
  return send(json{{"error", {{"code", code}, {"message", message}}}});
}

}  // namespace carapace::agent
