// Fork and the VM pool over real KVM (§4), in process: clones are restored from a
// paused test guest and must finish its computation with the value the parent gets.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "tests/integration/counter_support.h"
#include "vmm/machine/machine.h"
#include "vmm/pool/clone_source.h"
#include "vmm/pool/vm_pool.h"

namespace carapace::testing {
namespace {

// A counter guest paused after its third round, and the value an uninterrupted run ends with.
struct PausedCounter {
  std::unique_ptr<Machine> vm;
  std::string console;
};

PausedCounter start_counter(const std::string& name) {
  PausedCounter p;
  p.console = ::testing::TempDir() + name + ".console";
  auto vm = Machine::build(counter_config(p.console));
  EXPECT_TRUE(vm.ok()) << vm.error().describe();
  if (!vm.ok()) return p;
  p.vm = std::move(vm).value();
  p.vm->start();
  EXPECT_TRUE(wait_for_console(p.console, "round 3/30 ")) << read_text_file(p.console);
  return p;
}

TEST(ForkKvm, ChildrenOfARunningCounterFinishWithTheParentsValue) {
  ASSERT_TRUE(kvm_usable());
  PausedCounter parent = start_counter("fork-parent");
  ASSERT_NE(parent.vm, nullptr);
  std::vector<MachineConfig> configs;
  for (int i = 0; i < 3; ++i)
    configs.push_back(counter_config(::testing::TempDir() + "fork-child" + std::to_string(i)));
  auto children = fork_machine(*parent.vm, configs);
  ASSERT_TRUE(children.ok()) << children.error().describe();
  EXPECT_FALSE(parent.vm->paused()) << "fork must resume the parent";
  EXPECT_EQ(parent.vm->wait(), VmOutcome::kGuestReset) << parent.vm->outcome_detail();
  const std::string expected = counter_final_value(read_text_file(parent.console));
  ASSERT_NE(expected, "");
  for (size_t i = 0; i < children->size(); ++i) {
    EXPECT_EQ((*children)[i]->wait(), VmOutcome::kGuestReset);
    const std::string out = read_text_file(configs[i].console.path);
    EXPECT_EQ(counter_final_value(out), expected) << "child " << i << ":\n" << out;
  }
}

TEST(VmPoolKvm, HandsOutRestoredVmsAndRefills) {
  ASSERT_TRUE(kvm_usable());
  PausedCounter parent = start_counter("pool-parent");
  ASSERT_NE(parent.vm, nullptr);
  auto source = capture_clone_source(*parent.vm);
  ASSERT_TRUE(source.ok()) << source.error().describe();
  EXPECT_EQ(parent.vm->wait(), VmOutcome::kGuestReset);
  const std::string expected = counter_final_value(read_text_file(parent.console));
  ASSERT_NE(expected, "");

  const std::string dir = ::testing::TempDir();
  VmPool::Options options;
  options.size = 2;
  options.config_for = [dir](uint64_t serial) {
    return counter_config(dir + "pool-clone" + std::to_string(serial));
  };
  auto pool = VmPool::create(*source, options);
  ASSERT_TRUE(pool.ok()) << pool.error().describe();
  ASSERT_TRUE((*pool)->wait_full(std::chrono::seconds(30)));
  EXPECT_EQ((*pool)->stats().ready, 2u);

  // Two hand-outs come from the pool without waiting; their clones have their own consoles.
  std::vector<std::unique_ptr<Machine>> vms;
  for (int i = 0; i < 2; ++i) {
    auto vm = (*pool)->acquire();
    ASSERT_TRUE(vm.ok()) << vm.error().describe();
    vms.push_back(std::move(vm).value());
  }
  auto s = (*pool)->stats();
  EXPECT_EQ(s.hits, 2u);
  for (auto& vm : vms)
    EXPECT_EQ(vm->wait(), VmOutcome::kGuestReset) << vm->outcome_detail();
  // The refill thread puts the pool back to its size.
  ASSERT_TRUE((*pool)->wait_full(std::chrono::seconds(30)));
  s = (*pool)->stats();
  EXPECT_GE(s.refills, 4u);
  EXPECT_GT(s.mean_refill_ms, 0.0);
  // Every clone (serials 0 and 1 handed out first) finishes with the parent's value.
  for (int serial = 0; serial < 2; ++serial) {
    const std::string out = read_text_file(dir + "pool-clone" + std::to_string(serial));
    EXPECT_EQ(counter_final_value(out), expected) << "clone " << serial << ":\n" << out;
  }
}

TEST(VmPoolKvm, EmptyPoolRestoresOnTheCallersThread) {
  ASSERT_TRUE(kvm_usable());
  PausedCounter parent = start_counter("miss-parent");
  ASSERT_NE(parent.vm, nullptr);
  auto source = capture_clone_source(*parent.vm);
  ASSERT_TRUE(source.ok()) << source.error().describe();
  parent.vm->stop(VmOutcome::kGuestReset, "test done");
  parent.vm->wait();

  VmPool::Options options;
  options.size = 1;
  // A budget of exactly one VM's RAM: the pool holds at most one.
  options.memory_budget_bytes = 128ull << 20;
  const std::string dir = ::testing::TempDir();
  options.config_for = [dir](uint64_t serial) {
    return counter_config(dir + "miss-clone" + std::to_string(serial));
  };
  auto pool = VmPool::create(*source, options);
  ASSERT_TRUE(pool.ok()) << pool.error().describe();
  EXPECT_EQ((*pool)->stats().capacity, 1u);
  // Two hand-outs at once: at most one can be a hit; the other is restored on the spot.
  auto a = (*pool)->acquire();
  auto b = (*pool)->acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  auto s = (*pool)->stats();
  EXPECT_EQ(s.hits + s.misses, 2u);
  EXPECT_GE(s.misses, 1u);
  EXPECT_EQ((*a)->wait(), VmOutcome::kGuestReset);
  EXPECT_EQ((*b)->wait(), VmOutcome::kGuestReset);
}

long self_pss_kb() {
  std::istringstream in(read_text_file("/proc/self/smaps_rollup"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Pss:", 0) == 0) return std::stol(line.substr(4));
  return -1;
}

// Clone density: 100 idle clones of a 256 MiB guest share their snapshot's pages. Each clone's own
// memory is what it wrote since the restore; an idle one wrote (almost) nothing, so the sum of
// their PSS must stay far below one guest's RAM. Without MAP_PRIVATE sharing it would be 100 x the
// 64 MiB the guest touched.
TEST(VmPoolKvm, HundredIdleClonesShareTheirMemory) {
  ASSERT_TRUE(kvm_usable());
  MachineConfig config;
  config.kernel_path = testguest_image();
  config.cmdline = "testguest.run=idle testguest.mib=64";
  config.mem_bytes = 256ull << 20;
  config.console.kind = ConsoleKind::kFile;
  config.console.path = ::testing::TempDir() + "idle-parent.console";
  auto parent = Machine::build(config);
  ASSERT_TRUE(parent.ok()) << parent.error().describe();
  (*parent)->start();
  ASSERT_TRUE(wait_for_console(config.console.path, "idle ready"));
  auto source = capture_clone_source(**parent);
  ASSERT_TRUE(source.ok()) << source.error().describe();
  (*parent)->stop(VmOutcome::kGuestReset, "frozen");
  (*parent)->wait();
  parent->reset();

  const long before = self_pss_kb();
  config.console.kind = ConsoleKind::kNone;
  std::vector<std::unique_ptr<Machine>> clones;
  for (int i = 0; i < 100; ++i) {
    auto clone = restore_clone(**source, config);
    ASSERT_TRUE(clone.ok()) << "clone " << i << ": " << clone.error().describe();
    (*clone)->start();
    clones.push_back(std::move(clone).value());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const long after = self_pss_kb();
  const double per_clone_mib = static_cast<double>(after - before) / 1024.0 / 100.0;
  printf("100 idle 256 MiB clones: PSS %.1f MiB in all, %.3f MiB per clone\n",
         static_cast<double>(after - before) / 1024.0, per_clone_mib);
  EXPECT_LT(per_clone_mib, 4.0) << "idle clones do not share their snapshot's pages";
  for (auto& c : clones)
    c->stop(VmOutcome::kGuestReset, "test done");
  for (auto& c : clones)
    c->wait();
}

TEST(VmPoolKvm, BudgetBelowOneVmIsRefused) {
  ASSERT_TRUE(kvm_usable());
  PausedCounter parent = start_counter("budget-parent");
  ASSERT_NE(parent.vm, nullptr);
  auto source = capture_clone_source(*parent.vm);
  ASSERT_TRUE(source.ok());
  parent.vm->stop(VmOutcome::kGuestReset, "test done");
  parent.vm->wait();
  VmPool::Options options;
  options.memory_budget_bytes = 64ull << 20;  // the guest has 128 MiB
  options.config_for = [](uint64_t) { return MachineConfig{}; };
  auto pool = VmPool::create(*source, options);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.error().describe().find("below one VM's RAM"), std::string::npos);
}

}  // namespace
}  // namespace carapace::testing
