#include "vmm/pool/clone_source.h"

namespace carapace {

Result<std::shared_ptr<const CloneSource>> capture_clone_source(Machine& vm) {
  const bool was_paused = vm.paused();
  if (!was_paused) TRY_STATUS(vm.pause());
  auto source = [&]() -> Result<std::shared_ptr<const CloneSource>> {
    auto out = std::make_shared<CloneSource>();
    out->state = TRY(vm.capture_state());
    out->memory = TRY(memory_image_in_memfd(vm.memory(), "carapace-clone-source"));
    return std::shared_ptr<const CloneSource>(std::move(out));
  }();
  if (!was_paused) vm.resume();
  return source;
}

Result<std::unique_ptr<Machine>> restore_clone(const CloneSource& source,
                                               const MachineConfig& config) {
  GuestMemory mem = TRY(map_guest_memory_private(source.memory));
  return Machine::restore(config, source.state, std::move(mem));
}

Result<std::vector<std::unique_ptr<Machine>>> fork_machine(
    Machine& parent, const std::vector<MachineConfig>& configs) {
  std::shared_ptr<const CloneSource> source = TRY(capture_clone_source(parent));
  std::vector<std::unique_ptr<Machine>> children;
  children.reserve(configs.size());
  for (const MachineConfig& config : configs) {
    // A failure destroys the children built so far (their destructors stop them).
    std::unique_ptr<Machine> child = TRY(restore_clone(*source, config));
    children.push_back(std::move(child));
  }
  for (auto& child : children)
    child->start();
  return children;
}

}  // namespace carapace
