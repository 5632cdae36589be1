// Agent error codes carried in carapace Errors. An error made by protocol_error() has the message
// "<code>: <detail>"; error_code() recovers the code, or derives one from the errno of a failed
// system call, so one Error value travels from a failed openat2 to the wire and, on the host,
// from the wire to the caller.
#pragma once

#include <string>
#include <string_view>

#include "common/base/result.h"

namespace carapace::agent {

Error protocol_error(std::string_view code, std::string_view detail);
// The wire code of an error: the code prefix of a protocol_error, else one chosen by errno
// (ENOENT -> not_found, ELOOP/EXDEV -> path_refused, ...), else "io_error".
std::string error_code(const Error& e);
// The known wire code that prefixes `message` as "<code>: ", or "".
std::string_view code_prefix(std::string_view message);
// The message without its code prefix, with strerror for system errors.
std::string error_detail(const Error& e);

}  // namespace carapace::agent
