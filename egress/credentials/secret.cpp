#include "egress/credentials/secret.h"

#include <string.h>

#include <utility>

namespace carapace::egress {

Secret::Secret(Secret&& other) noexcept : value_(std::move(other.value_)) {
  other.wipe();
}

Secret& Secret::operator=(const Secret& other) {
  if (this != &other) {
    wipe();
    value_ = other.value_;
  }
  return *this;
}

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    wipe();
    value_ = std::move(other.value_);
    other.wipe();
  }
  return *this;
}

Secret::~Secret() {
  wipe();
}

// explicit_bzero, not memset: the compiler may drop a store to memory that is freed next.
void Secret::wipe() {
  if (!value_.empty()) explicit_bzero(value_.data(), value_.size());
  value_.clear();
}

}  // namespace carapace::egress
