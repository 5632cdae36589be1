// The per-VM control API of `carapace run --api-sock PATH`: HTTP/JSON over a Unix socket (mode
// 0600), served while the VM runs and removed when it ends.
//
//   GET /vm               200 {"state": "running"|"paused"|"ended", "vcpus": N, "mem_mib": M,
//                              "counters": {"console_bytes_written": N, "console_bytes_dropped":
//                              N, "net0_tx_dropped_policy": N, "vsock_bad_packets": N, ...}}
//   PUT /vm/pause         200 {"state": "paused"}    409 unless running
//   PUT /vm/resume        200 {"state": "running"}   409 unless paused
//   PUT /snapshot/create  {"dir": "/abs/path", "resume": true|false}
//                         200 {"dir", "generation", "memory_bytes", "memory_bytes_written",
//                              "state_bytes", "ms", "state"}            409 once the VM ended
//     A running VM is paused for the snapshot; afterwards it runs if "resume" is true and stays
//     paused if false; without "resume" it goes back to the state it was in. If the snapshot
//     fails, the VM is left as it was (docs/security.md #24) and the error is 400 (bad input) or
//     500 (host: disk full, permission denied, ...).
//   PUT /vm/fork          {"clones": N}  (1..64)
//                         200 {"children": [{"index", "vsock_uds", "cid", "console"}...], "ms",
//                              "state"}                                  409 once the VM ended
//     Fork: the VM is paused, its state and RAM copied into a memfd, resumed if it
//     was running, and N children restored from the copy run in this VMM process, each with its
//     own identity (vmm/machine/clone_identity.h, numbered on from the last fork).
//   GET /fs               200 {"filesystems": [{"tag", "path", "mode" (both null: unbound),
//   "mounted",
//                              "counters": {"requests", "errors", "bad_requests", "refused"}}]}
//   PUT /fs/{tag}         {"path": "/abs/dir", "mode": "ro"|"rw"|"rw-nodelete"}  (mode: ro when
//                         absent)   200 the share as GET /fs lists it
//     Binds a folder to the virtio-fs device tagged {tag}: an unbound one (a pooled VM restored
//     from a template) or one the guest has not mounted (docs/security.md #62). 400 for an
//     unknown tag, a bad mode, a path that is not absolute or holds "..", or a folder that does
//     not open as a directory (nothing changed); 409 while the guest has the share mounted or
//     once the VM ended.
//
// Bad JSON, unknown fields or wrong types get 400; a call in the wrong state gets 409 and changes
// nothing (docs/security.md #27). Control calls are serialised: a pause never races a snapshot.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"
#include "common/http/http_server.h"
#include "vmm/devices/fs/fs_config.h"

namespace carapace {

// What the API needs from a VM; the CLI adapts a Machine, tests a fake.
class VmControl {
 public:
  enum class State { kRunning, kPaused, kEnded };
  virtual ~VmControl() = default;
  virtual State state() const = 0;
  virtual uint32_t vcpus() const = 0;
  virtual uint64_t mem_bytes() const = 0;
  // Called only in the states the API allows (pause: running; resume: paused).
  virtual Status pause() = 0;
  virtual Status resume() = 0;
  // Running or paused. Leaves the VM running iff `resume_after`; on failure, as it was.
  virtual Result<nlohmann::json> snapshot(const std::string& dir, bool resume_after) = 0;
  // Running or paused; the VM is left as it was. Returns the children's descriptions.
  virtual Result<nlohmann::json> fork(uint32_t clones) = 0;
  // Host-side counters by name (console bytes written/dropped, per-device drops); any state.
  virtual std::map<std::string, uint64_t> counters() const { return {}; }

  // The virtio-fs devices, in `--fs` order.
  struct FsShare {
    std::string tag;
    std::string path;  // empty: unbound
    FsMode mode = FsMode::kReadOnly;
    bool mounted = false;  // a FUSE session is live
  };
  virtual std::vector<FsShare> fs_shares() const { return {}; }
  // Binds `path` to the device tagged `tag`. An unknown tag or a folder that does not open is
  // invalid input; a live session is invalid input with sys_errno EBUSY (409).
  virtual Status bind_fs(const std::string& tag, const std::string& path, FsMode mode) {
    (void)path;
    (void)mode;
    return as_invalid_input(make_error("no virtio-fs device has the tag '" + tag + "'"));
  }
};

const char* vm_state_name(VmControl::State s);

class VmApi {
 public:
  // Binds `socket_path` (an existing socket nobody serves is replaced; any other file is not).
  // `vm` must outlive the VmApi.
  static Result<std::unique_ptr<VmApi>> start(const std::string& socket_path, VmControl& vm);
  ~VmApi();
  // Stops serving and removes the socket; in-flight calls finish first. Idempotent.
  void stop();

 private:
  explicit VmApi(VmControl& vm) : vm_(vm) {}
  http::Router routes();
  http::HttpResponse get_vm();
  http::HttpResponse put_pause(const http::HttpRequest& req);
  http::HttpResponse put_resume(const http::HttpRequest& req);
  http::HttpResponse put_snapshot(const http::HttpRequest& req);
  http::HttpResponse put_fork(const http::HttpRequest& req);
  http::HttpResponse get_fs();
  http::HttpResponse put_fs(const http::HttpRequest& req);

  VmControl& vm_;
  std::mutex control_mu_;  // one control call at a time
  std::unique_ptr<http::HttpServer> server_;
};

}  // namespace carapace
