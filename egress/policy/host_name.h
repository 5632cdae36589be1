// Host names as DNS wants them, so that a policy rule and a client's destination compare as
// plain strings: one spelling per name.
#pragma once

#include <string>
#include <string_view>

#include "common/base/result.h"

namespace carapace::egress {

// IDNA2008 with UTS #46 mapping (libidn2, non-transitional: "Bücher.example" becomes
// "xn--bcher-kva.example", "faß.de" "xn--fa-hia.de"), lower case, one trailing dot removed;
// labels of 1..63 bytes of [a-z0-9-_] neither starting nor ending with '-', at most 253 bytes in
// all (RFC 1035 §2.3.4), at least one label. An IP address literal is not a host name, nor is a
// name whose last label is a number ("1.2.3.4444", "0x7f.1", "0x7f000001"): resolvers read
// those as IPv4 addresses. Errors are invalid-input, one line naming the name and why.
Result<std::string> normalize_host_name(std::string_view name);

}  // namespace carapace::egress
