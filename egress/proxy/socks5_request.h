// SOCKS version 5 (RFC 1928) as the egress proxy speaks it: the client's method-selection
// message (§3) and its request (§4), parsed from the bytes received so far, and the proxy's
// replies (§6). Pure functions over bytes: no sockets, no policy; the session (socks5_session.cpp)
// reads, answers and hands the destination to the same decision path as HTTP CONNECT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "egress/proxy/upstream.h"

namespace carapace::egress::socks5 {

inline constexpr uint8_t kVersion = 0x05;
inline constexpr uint8_t kMethodNoAuth = 0x00;          // §3 X'00' NO AUTHENTICATION REQUIRED
inline constexpr uint8_t kMethodNoneAcceptable = 0xFF;  // §3 X'FF' NO ACCEPTABLE METHODS

// §6 REP.
enum class Reply : uint8_t {
  kSucceeded = 0x00,
  kGeneralFailure = 0x01,
  kNotAllowed = 0x02,  // connection not allowed by ruleset
  kNetworkUnreachable = 0x03,
  kHostUnreachable = 0x04,
  kConnectionRefused = 0x05,
  kTtlExpired = 0x06,
  kCommandNotSupported = 0x07,
  kAddressTypeNotSupported = 0x08,
};

// §4 ATYP.
enum class AddressType : uint8_t { kIpv4 = 0x01, kDomainName = 0x03, kIpv6 = 0x04 };

// The method-selection message: VER NMETHODS METHODS[NMETHODS].
struct Greeting {
  size_t size = 0;              // bytes it took; what follows is the request (a client may send
                                // both at once)
  bool offers_no_auth = false;  // X'00' is among the methods
};

// A CONNECT request: VER CMD RSV ATYP DST.ADDR DST.PORT. Only CONNECT parses: BIND and UDP
// ASSOCIATE are refused (the proxy opens no listening or datagram socket for a sandbox).
struct Request {
  size_t size = 0;  // bytes it took; what follows is tunnel data
  AddressType type = AddressType::kDomainName;
  // The domain name's bytes exactly as sent (the policy's destination parser normalises and
  // checks them, as it does a CONNECT host), or the literal's text (IpAddress::to_string).
  std::string host;
  uint16_t port = 0;
};

// A message that can never become valid, however many bytes follow.
struct Malformed {
  Reply reply = Reply::kGeneralFailure;  // the request's answer; a greeting's is always X'FF'
  std::string reason;                    // one line
};

// Each field is checked as soon as its bytes are there, so a bad message is refused at the byte
// that breaks it instead of waiting for more (and for the head timeout). nullopt: a valid
// prefix, more bytes needed.
Result<std::optional<Greeting>, Malformed> parse_greeting(std::string_view bytes);
Result<std::optional<Request>, Malformed> parse_request(std::string_view bytes);

// The §3 answer: VER METHOD.
std::string method_reply(uint8_t method);

// A §6 reply: VER REP RSV ATYP BND.ADDR BND.PORT, with BND.ADDR 0.0.0.0 and BND.PORT 0 whatever
// the reply. BND is where a BIND client would point its peer; a CONNECT client has no use for it
// (curl, Python's socks modules, OpenSSH and browsers discard it), and the upstream socket's real
// local address would tell the sandbox the host's outbound address and port: an address of the
// host's own, which the address stage never lets it reach and it has no need to learn.
std::string reply(Reply r);

// The reply for a dial that did not connect: a policy denial X'02', a name that did not resolve
// X'04', a connect timeout X'06', a refused, unreachable network or host X'05', X'03', X'04' by
// the connect's errno, X'01' for any other failure.
Reply reply_for(const DialRefusal& refusal);

}  // namespace carapace::egress::socks5
