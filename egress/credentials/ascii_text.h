// The byte-level helpers the credential checks and the request rewrite share: ASCII only, never
// locale dependent, so that a check and the rewrite read a field the same way.
#pragma once

#include <string>
#include <string_view>

namespace carapace::egress::ascii {

char lower(char c);
std::string lower(std::string_view s);
bool iequals(std::string_view a, std::string_view b);
// tchar (RFC 9110 §5.6.2): the bytes of a header field name.
bool is_tchar(char c);
// unreserved (RFC 3986 §2.3): letters, digits and - . _ ~
bool is_unreserved(char c);
// 0x20..0x7e
bool is_printable(char c);
// Without SP and HTAB at either end (OWS, RFC 9110 §5.6.3).
std::string_view trim_ows(std::string_view s);
// One round of %XX decoding (either case of hex); a '%' not followed by two hex digits stays.
std::string percent_decode(std::string_view s);
// Every byte but the unreserved ones as %XX (upper-case hex, RFC 3986 §2.1).
std::string percent_encode(std::string_view s);

}  // namespace carapace::egress::ascii
