// The daemon's state directory, so a restart knows what the previous run left behind:
//   templates/<id>/template.json   the template's request and identity (+ the back end's files)
//   sandboxes/<id>.json            a live sandbox: its template, expiry and the pid (with the
//                                  pid's start time) of the process that holds it
// A record is written once the object exists and removed when it is gone, each by an atomic
// rename, so a crash leaves either a whole record or none.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/base/result.h"

namespace carapace::service {

class StateStore {
 public:
  // Creates DIR, DIR/templates and DIR/sandboxes (mode 0700) when missing.
  static Result<StateStore> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::string template_dir(const std::string& id) const;

  Status write_template(const std::string& id, const nlohmann::json& record);
  // Every templates/<id>/template.json that parses (others are reported in *errors).
  std::vector<nlohmann::json> read_templates(std::vector<std::string>* errors) const;
  // Removes templates/<id> and everything in it.
  Status remove_template(const std::string& id);

  Status write_sandbox(const std::string& id, const nlohmann::json& record);
  std::vector<nlohmann::json> read_sandboxes(std::vector<std::string>* errors) const;
  Status remove_sandbox(const std::string& id);

 private:
  explicit StateStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// Writes `data` to `path` through a temporary file and rename(2).
Status write_file_atomic(const std::string& path, const std::string& data);

// The start time of `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot), or 0 when no
// such process exists. A pid with the same start time is the same process, not a reused pid.
uint64_t process_start_time(pid_t pid);
// SIGKILLs `pid` only if it still is the process that started at `start_time`, and waits (5 s at
// most) until it has exited; true if it sent the signal.
bool kill_if_same_process(pid_t pid, uint64_t start_time);

}  // namespace carapace::service
