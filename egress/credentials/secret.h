// A credential's secret: a string that has no way into a log line by accident. There is no
// conversion to std::string, no stream operator and no JSON form; the one way to its bytes is
// reveal(), which only the request rewrite calls. Its memory is wiped when it goes, so a freed
// secret does not linger in the heap of a proxy that parses a sandbox's bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace carapace::egress {

class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  Secret(const Secret& other) = default;
  Secret(Secret&& other) noexcept;
  Secret& operator=(const Secret& other);
  Secret& operator=(Secret&& other) noexcept;
  ~Secret();

  std::string_view reveal() const { return value_; }
  size_t size() const { return value_.size(); }
  bool empty() const { return value_.empty(); }

 private:
  void wipe();

  std::string value_;
};

}  // namespace carapace::egress
