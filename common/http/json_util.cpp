#include "common/http/json_util.h"

#include <set>
#include <string>
#include <vector>

namespace carapace::http {
namespace {

// Bracket depth outside strings. Cheap, and it runs before the parser builds anything.
bool too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// A client's field name in an error message: bounded, since the name can be megabytes long.
std::string quote_name(std::string_view name) {
  constexpr size_t kMax = 64;
  if (name.size() <= kMax) return "\"" + std::string(name) + "\"";
  return "\"" + std::string(name.substr(0, kMax)) + "...\"";
}

Error bad_json(std::string message) {
  return as_invalid_input(make_error(std::move(message)));
}

}  // namespace

HttpResponse json_response(int status, const nlohmann::json& body) {
  HttpResponse r;
  r.status = status;
  r.headers.set("Content-Type", "application/json");
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  r.body += "\n";
  return r;
}

HttpResponse error_response(ErrorCode code, std::string_view message) {
  nlohmann::json j;
  j["error"] = {{"code", std::string(to_string(code))}, {"message", std::string(message)}};
  return json_response(http_status(code), j);
}

HttpResponse error_response(int status, std::string_view message) {
  HttpResponse r = error_response(error_code_for_status(status), message);
  r.status = status;  // a status outside the table keeps its own number
  return r;
}

HttpResponse error_response(const Error& error) {
  return error_response(
      error.kind == ErrorKind::kInvalidInput ? ErrorCode::kBadRequest : ErrorCode::kInternal,
      error.describe());
}

Result<nlohmann::json> parse_json(std::string_view body) {
  if (too_deep(body))
    return bad_json("malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth));
  // The callback sees every key in parse order; a stack of key sets, one per open object, finds
  // duplicates (which parsers disagree on: first wins, last wins, error).
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto cb = [&](int, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (ev == E::object_start) {
      open_objects.emplace_back();
    } else if (ev == E::object_end && !open_objects.empty()) {
      open_objects.pop_back();
    } else if (ev == E::key && !open_objects.empty() && parsed.is_string()) {
      if (!open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  try {
    nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), cb);
    if (!duplicate.empty())
      return bad_json("malformed JSON: duplicate field " + quote_name(duplicate));
    return j;
  } catch (const nlohmann::json::exception& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 5: ...".
    std::string what = e.what();
    size_t bracket = what.find("] ");
    return bad_json("malformed JSON: " +
                    (bracket == std::string::npos ? what : what.substr(bracket + 2)));
  }
}

Result<nlohmann::json> parse_json_object(std::string_view body,
                                         std::initializer_list<std::string_view> allowed_keys) {
  nlohmann::json j = TRY(parse_json(body));
  if (!j.is_object()) return bad_json("request body must be a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (std::string_view k : allowed_keys)
      known = known || k == key;
    if (!known) return bad_json("unknown field " + quote_name(key));
  }
  return j;
}

}  // namespace carapace::http
