#include "vmm/boot/page_tables.h"

#include <array>

#include "vmm/memory/layout.h"

namespace carapace {

namespace {
constexpr uint64_t kPresent = 1u << 0;
constexpr uint64_t kWritable = 1u << 1;
constexpr uint64_t kPageSize2M = 1u << 7;
}  // namespace

Result<uint64_t> write_identity_page_tables(const GuestMemory& mem) {
  using namespace layout;
  // Whole tables are written so the result never depends on what RAM held before.
  std::array<uint64_t, 512> pml4{}, pdpt{}, pd{};
  pml4[0] = kPdptAddr | kPresent | kWritable;
  pdpt[0] = kPdAddr | kPresent | kWritable;
  for (uint64_t i = 0; i < pd.size(); ++i)
    pd[i] = (i << 21) | kPresent | kWritable | kPageSize2M;
  TRY_STATUS(mem.write_obj(GuestAddress(kPml4Addr), pml4));
  TRY_STATUS(mem.write_obj(GuestAddress(kPdptAddr), pdpt));
  TRY_STATUS(mem.write_obj(GuestAddress(kPdAddr), pd));
  return kPml4Addr;
}

}  // namespace carapace
