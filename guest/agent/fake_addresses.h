// Stable stand-in addresses for names, for the transparent egress mode (egress/README.md): the
// agent's stub resolver answers a name with one of these, and a connection to it is sent to the
// host's proxy as CONNECT name:port -- the guest never learns, or needs, where a name really is.
// They are in 127.128.0.0/9: the loopback route already delivers all of 127.0.0.0/8 to this
// machine (no address to configure, no privilege), and 127.0.0.1 itself stays clear.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace carapace::agent {

class FakeAddressTable {
 public:
  static constexpr uint32_t kFirst = 0x7f800001;  // 127.128.0.1
  // Names handed out for the life of the agent: never reused, so an address a program cached
  // keeps meaning the same name. A sandbox that asks for more gets SERVFAIL (the proxy
  // variables still work for any number).
  static constexpr size_t kMaxNames = 1024;

  // The name's address, made on first use; nullopt once the table is full.
  std::optional<uint32_t> address_for(const std::string& name);
  // The name behind an address this table made.
  std::optional<std::string> name_for(uint32_t address) const;
  // Every (name, address) so far, in the order they were made.
  std::vector<std::pair<std::string, uint32_t>> entries() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint32_t> by_name_;
  std::vector<std::string> names_;  // names_[address - kFirst]
};

// Whether the stub answers `name` (lower case, no trailing dot) with a stand-in: a host name of
// labels of [a-z0-9-_], not a number in its last label (those read as addresses), not under
// "localhost" (RFC 6761 6.3, /etc/hosts has it) or the reverse-lookup zones. The policy itself is
// never in the guest: the host's proxy decides on the CONNECT, so changing a live sandbox's
// policy needs nothing here, and no DNS probe tells a program what the policy allows.
bool stub_answers_name(std::string_view name);

// "127.128.0.1" for kFirst.
std::string ipv4_text(uint32_t address);

}  // namespace carapace::agent
