#include "guest/agent/fake_addresses.h"

namespace carapace::agent {

std::optional<uint32_t> FakeAddressTable::address_for(const std::string& name) {
  std::lock_guard lock(mu_);
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  if (names_.size() >= kMaxNames) return std::nullopt;
  const uint32_t address = kFirst + static_cast<uint32_t>(names_.size());
  names_.push_back(name);
  by_name_.emplace(name, address);
  return address;
}

std::optional<std::string> FakeAddressTable::name_for(uint32_t address) const {
  std::lock_guard lock(mu_);
  if (address < kFirst || address - kFirst >= names_.size()) return std::nullopt;
  return names_[address - kFirst];
}

std::vector<std::pair<std::string, uint32_t>> FakeAddressTable::entries() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, uint32_t>> out;
  out.reserve(names_.size());
  for (size_t i = 0; i < names_.size(); ++i)
    out.emplace_back(names_[i], kFirst + static_cast<uint32_t>(i));
  return out;
}

bool stub_answers_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  std::string_view last;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string_view::npos) dot = name.size();
    const std::string_view label = name.substr(start, dot - start);
    if (label.empty() || label.size() > 63) return false;
    for (char c : label) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
      if (!ok) return false;
    }
    last = label;
    start = dot + 1;
  }
  bool numeric = true;
  for (char c : last)
    numeric = numeric && c >= '0' && c <= '9';
  if (numeric) return false;
  auto under = [&](std::string_view zone) {
    return name == zone || (name.size() > zone.size() && name.ends_with(zone) &&
                            name[name.size() - zone.size() - 1] == '.');
  };
  return !under("localhost") && !under("in-addr.arpa") && !under("ip6.arpa");
}

std::string ipv4_text(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xff) + "." +
         std::to_string((a >> 8) & 0xff) + "." + std::to_string(a & 0xff);
}

}  // namespace carapace::agent
