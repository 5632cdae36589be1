#include "common/base/result.h"

#include <cstring>

namespace carapace {

std::string Error::describe() const {
  if (sys_errno == 0) return message;
  return message + ": " + std::strerror(sys_errno);
}

Error sys_error(std::string what, int err) {
  return Error{std::move(what), err};
}

Error make_error(std::string what) {
  return Error{std::move(what), 0};
}

Error as_invalid_input(Error e) {
  e.kind = ErrorKind::kInvalidInput;
  return e;
}

}  // namespace carapace
