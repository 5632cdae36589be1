// Records the largest single heap allocation made through operator new since the last reset, so
// tests can show that a small hostile file never makes the decoder allocate much
// (docs/security.md #20). The replacement operator new/delete live in alloc_tracker.cpp and apply
// to the whole test binary.
#pragma once

#include <cstddef>

namespace carapace::testing {

void reset_largest_allocation();
size_t largest_allocation();

}  // namespace carapace::testing
