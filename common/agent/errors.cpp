#include "common/agent/errors.h"

#include <cerrno>

#include "common/agent/wire.h"

namespace carapace::agent {
namespace {

constexpr std::string_view kCodes[] = {
    code::kBadFrame,    code::kFrameTooLarge,  code::kBadJson,
    code::kBadRequest,  code::kUnknownOp,      code::kUnauthorized,
    code::kBusy,        code::kInternal,       code::kNotFound,
    code::kPathRefused, code::kNotRegularFile, code::kNotDirectory,
    code::kIsDirectory, code::kExists,         code::kPermissionDenied,
    code::kNoSpace,     code::kTooLarge,       code::kExecFailed,
    code::kIdInUse,     code::kIoError,        code::kInUse,
};

const char* code_for_errno(int err) {
  switch (err) {
    case ENOENT:
      return code::kNotFound;
    case ELOOP:  // RESOLVE_NO_SYMLINKS, O_NOFOLLOW
    case EXDEV:  // RESOLVE_BENEATH escape, RESOLVE_NO_XDEV
      return code::kPathRefused;
    case ENOTDIR:
      return code::kNotDirectory;
    case EISDIR:
      return code::kIsDirectory;
    case EEXIST:
    case ENOTEMPTY:
      return code::kExists;
    case EACCES:
    case EPERM:
    case EROFS:
      return code::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
      return code::kNoSpace;
    case EFBIG:
    case ENAMETOOLONG:
      return code::kTooLarge;
    default:
      return code::kIoError;
  }
}

}  // namespace

std::string_view code_prefix(std::string_view message) {
  size_t colon = message.find(": ");
  if (colon == std::string_view::npos) return {};
  std::string_view head = message.substr(0, colon);
  for (std::string_view c : kCodes)
    if (head == c) return c;
  return {};
}

Error protocol_error(std::string_view code, std::string_view detail) {
  Error e = make_error(std::string(code) + ": " + std::string(detail));
  return as_invalid_input(std::move(e));
}

std::string error_code(const Error& e) {
  std::string_view prefix = code_prefix(e.message);
  if (!prefix.empty()) return std::string(prefix);
  if (e.sys_errno != 0) return code_for_errno(e.sys_errno);
  return code::kIoError;
}

std::string error_detail(const Error& e) {
  std::string full = e.describe();
  std::string_view prefix = code_prefix(full);
  if (prefix.empty()) return full;
  return full.substr(prefix.size() + 2);
}

}  // namespace carapace::agent
