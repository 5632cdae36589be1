// MicrovmInstance: one sandbox of the microvm back end, a `carapace restore` process of its own
// (a crashing or compromised VM takes down only itself) reached through its control API
// (pause/resume/snapshot/counters) and its hybrid vsock socket (the agent, port 52).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "daemon/backends/backend.h"
#include "daemon/backends/microvm_args.h"
#include "daemon/backends/microvm_process.h"

namespace carapace::service {

class MicrovmInstance : public Instance {
 public:
  // Makes the VM's folder (owned by the jail's uid when jailed), spawns `vmm_argv` (`carapace run`
  // or `carapace restore --paused`; inside `carapace jail` when `jail` is set) and waits until its
  // control API answers. On failure nothing is left running or on disk.
  static Result<std::unique_ptr<MicrovmInstance>> launch(const std::vector<std::string>& vmm_argv,
                                                         const VmPaths& paths, uint32_t cid,
                                                         const std::optional<VmJail>& jail,
                                                         bool paused,
                                                         std::chrono::milliseconds timeout);
  ~MicrovmInstance() override;

  // Resumes the VM and gives its agent its own identity: post_restore with `current_token`
  // (clock, fresh entropy, a new random token, `hostname`), then a ping on the new token.
  Status hand_out(const std::string& current_token, const std::string& hostname,
                  std::chrono::milliseconds timeout);
  // PUT /snapshot/create on this VM into `dir` (inside its folder: the only place a jailed VMM
  // can write); with `resume_after` a running VM runs on afterwards, else it stays paused.
  Status snapshot(const std::string& dir, bool resume_after);

  const AgentEndpoint& agent() const override { return agent_; }
  Status pause() override;
  Status resume() override;
  bool paused() const override { return paused_; }
  bool alive() override { return process_.alive(); }
  std::string exit_description() override;
  int pid() const override { return process_.pid(); }
  nlohmann::json describe() const override;
  std::map<std::string, uint64_t> counters() override;
  // The guest's connections to the host's vsock port kEgressVsockPort arrive at the VMM's
  // `<uds>_PORT` (vmm/devices/vsock): the proxy listens there. A jailed VMM runs as its own uid
  // in a folder only it (and root) can enter, so the socket is 0666 there.
  Result<EgressPlacement> egress_placement() const override {
    return EgressPlacement{agent_.path + "_" + std::to_string(kEgressVsockPort),
                           static_cast<mode_t>(jail_ ? 0666 : 0600),
                           "vsock:" + std::to_string(kEgressVsockPort)};
  }
  static constexpr uint32_t kEgressVsockPort = 1080;

  // Workspace mounts (microvm_shares.cpp), after hand_out: each folder is id-mapped into the
  // VM's jail (`carapace jail attach`, run as `carapace_exe`), bound to the share device of its
  // slot over the control API and mounted by the agent at its guest path. Needs a jailed VMM.
  // On failure the VM must not be handed out (what was bound stays bound to it alone).
  Status bind_mounts(const std::vector<SandboxMount>& mounts, const std::string& carapace_exe,
                     std::chrono::milliseconds timeout);
  const std::vector<SandboxMount>& mounts() const { return mounts_; }
  // Around a snapshot (a fork): the agent unmounts every share, which ends its FUSE session (a
  // session names host files no snapshot can carry); a share still in use fails it, with the
  // shares mounted again. remount_shares() mounts them again afterwards (the folders stay bound).
  Status unmount_shares(std::chrono::milliseconds timeout);
  Status remount_shares(std::chrono::milliseconds timeout);

  uint32_t cid() const { return cid_; }
  const VmPaths& paths() const { return paths_; }
  const std::optional<VmJail>& jail() const { return jail_; }
  // Stops the VMM (a jailed one through its supervisor, which removes the jail); the VM's folder
  // stays (a snapshot it wrote there can still be taken out). Idempotent.
  void stop_vmm();
  // stop_vmm() and removes the VM's folder; idempotent (the destructor calls it).
  void destroy();

 private:
  MicrovmInstance(VmmProcess p, VmPaths paths, uint32_t cid, std::optional<VmJail> jail)
      : process_(std::move(p)), paths_(std::move(paths)), cid_(cid), jail_(std::move(jail)) {}
  // A control API call; 409 becomes an invalid-input error naming `what`.
  Result<nlohmann::json> control(const std::string& method, const std::string& target,
                                 const std::string& body, const std::string& what,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30));
  Status set_paused(bool pause, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // `carapace jail attach` of `m`'s folder onto `target` inside this VM's jail.
  Status attach_folder(const SandboxMount& m, const std::string& target,
                       const std::string& carapace_exe, std::chrono::milliseconds timeout);
  // The agent's mount / umount of slot `slot`.
  Status agent_mount(size_t slot, std::chrono::milliseconds timeout);
  Result<AgentClient> agent_client(std::chrono::milliseconds timeout);

  VmmProcess process_;
  VmPaths paths_;
  uint32_t cid_;
  std::optional<VmJail> jail_;
  AgentEndpoint agent_;
  bool paused_ = true;                // restored with --paused
  std::vector<SandboxMount> mounts_;  // slot i is mounts_[i]
};

}  // namespace carapace::service
