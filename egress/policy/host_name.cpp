#include "egress/policy/host_name.h"

#include <idn2.h>

#include <cstdlib>
#include <memory>

#include "egress/policy/ip_address.h"
#include "egress/policy/quote.h"

namespace carapace::egress {
namespace {

constexpr size_t kMaxName = 253;  // RFC 1035 §2.3.4: 255 octets on the wire, 253 as text
constexpr size_t kMaxLabel = 63;
// Longer input is refused before IDNA runs: mapping may drop characters (U+00AD maps to
// nothing), so a long input could still map to a short name, but none that anyone types.
constexpr size_t kMaxInput = 1024;

Error name_error(std::string_view name, std::string_view why) {
  return as_invalid_input(make_error("host name " + quoted(name) + " " + std::string(why)));
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

// WHATWG URL §3.5's "ends in a number": a last label of decimal digits, or "0x" and hex digits,
// makes inet_aton-style parsers (getaddrinfo among them) read the whole name as an IPv4 address.
bool is_number_label(std::string_view label) {
  if (label.size() >= 2 && label[0] == '0' && label[1] == 'x') {
    for (char c : label.substr(2)) {
      if (!is_hex(c)) return false;
    }
    return true;
  }
  for (char c : label) {
    if (c < '0' || c > '9') return false;
  }
  return !label.empty();
}

// libidn2's error text for one name; a non-zero rc from idn2_to_ascii_8z.
Error idna_error(std::string_view name, int rc) {
  // libidn2 encodes each label into a buffer of the largest label, so an A-label past 63 bytes
  // shows up as punycode output too large.
  if (rc == IDN2_TOO_BIG_LABEL || rc == IDN2_PUNYCODE_BIG_OUTPUT)
    return name_error(name, "has a label longer than 63 bytes");
  if (rc == IDN2_TOO_BIG_DOMAIN) return name_error(name, "is longer than 253 bytes");
  return name_error(name, std::string("is not a valid IDNA name: ") + idn2_strerror(rc));
}

// UTS #46 processing through libidn2 of a NUL-free string; the A-label form.
Result<std::string> to_ascii(std::string_view name, const std::string& text) {
  char* out = nullptr;
  const int rc = idn2_to_ascii_8z(text.c_str(), &out, IDN2_NONTRANSITIONAL);
  const std::unique_ptr<char, decltype(&std::free)> owner(out, &std::free);
  if (rc != IDN2_OK) return idna_error(name, rc);
  return std::string(out);
}

// An all-ASCII name: lower case, and every "xn--" label checked as IDNA would (valid punycode of
// a valid U-label). Other labels are left alone rather than run through libidn2, which refuses
// "--" in the third and fourth place (UTS #46 CheckHyphens) and so real names such as
// "r3---sn-abc.googlevideo.com"; browsers run UTS #46 with CheckHyphens off for the same reason.
Result<std::string> ascii_lower(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  size_t start = 0;
  while (start <= out.size()) {
    size_t end = out.find('.', start);
    if (end == std::string::npos) end = out.size();
    const std::string label = out.substr(start, end - start);
    if (label.starts_with("xn--")) {
      auto checked = to_ascii(name, label);
      if (!checked) return checked.take_error();
    }
    start = end + 1;
  }
  return out;
}

Status check_labels(std::string_view name, std::string_view ascii) {
  if (ascii.size() > kMaxName) return name_error(name, "is longer than 253 bytes");
  size_t start = 0;
  while (start <= ascii.size()) {
    size_t end = ascii.find('.', start);
    if (end == std::string_view::npos) end = ascii.size();
    const std::string_view label = ascii.substr(start, end - start);
    if (label.empty()) return name_error(name, "has an empty label");
    if (label.size() > kMaxLabel) return name_error(name, "has a label longer than 63 bytes");
    for (char c : label) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      if (!ok) return name_error(name, "has a character other than a-z, 0-9, '-' and '_'");
    }
    if (label.front() == '-' || label.back() == '-')
      return name_error(name, "has a label that starts or ends with '-'");
    if (end == ascii.size() && is_number_label(label)) {
      return name_error(name,
                        "ends in a number, which resolvers read as an IPv4 address; write the "
                        "address as a dotted quad");
    }
    start = end + 1;
  }
  return ok_status();
}

}  // namespace

Result<std::string> normalize_host_name(std::string_view name) {
  if (name.empty()) return name_error(name, "is empty");
  if (name.size() > kMaxInput) return name_error(name, "is longer than 253 bytes");
  if (name.find('\0') != std::string_view::npos) return name_error(name, "holds a NUL byte");
  if (IpAddress::parse(name)) return name_error(name, "is an IP address literal");
  std::string ascii =
      is_ascii(name) ? TRY(ascii_lower(name)) : TRY(to_ascii(name, std::string(name)));
  if (!ascii.empty() && ascii.back() == '.') ascii.pop_back();
  if (ascii.empty()) return name_error(name, "has no label");
  // Mapping can turn a non-ASCII spelling into a literal (fullwidth "１２７.０.０.１").
  if (IpAddress::parse(ascii)) return name_error(name, "is an IP address literal");
  TRY_STATUS(check_labels(name, ascii));
  return ascii;
}

}  // namespace carapace::egress
