#include "guest/agent/agent_context.h"

namespace carapace::agent {

void TokenStore::set(std::string token) {
  std::lock_guard lock(mu_);
  token_ = std::move(token);
}

bool TokenStore::is_set() {
  std::lock_guard lock(mu_);
  return !token_.empty();
}

bool TokenStore::matches(std::string_view candidate) {
  std::lock_guard lock(mu_);
  if (token_.empty()) return false;
  // Constant time in the token's content: every byte is compared whatever the first mismatch.
  unsigned char diff = candidate.size() == token_.size() ? 0 : 1;
  for (size_t i = 0; i < token_.size(); ++i) {
    unsigned char c = i < candidate.size() ? static_cast<unsigned char>(candidate[i]) : 0;
    diff |= static_cast<unsigned char>(c ^ static_cast<unsigned char>(token_[i]));
  }
  return diff == 0;
}

}  // namespace carapace::agent
