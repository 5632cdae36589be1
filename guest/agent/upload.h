// Upload: one put_file in progress. The bytes go to a fresh temporary file
// (".carapace-upload-*", O_CREAT | O_EXCL, in the target's directory, reached through a confined
// descriptor) that is renamed over the target only when the last chunk has arrived, so a partial
// file is never visible under the target name and an existing target (even a symlink) is
// replaced, never written through. An upload destroyed before commit() removes its file.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "guest/agent/sandbox_root.h"

namespace carapace::agent {

class Upload {
 public:
  static Result<std::unique_ptr<Upload>> begin(const SandboxRoot& root, uint64_t id,
                                               std::string path, mode_t mode, bool parents,
                                               uint64_t max_bytes);
  ~Upload();
  Upload(const Upload&) = delete;
  Upload& operator=(const Upload&) = delete;

  // too_large once the total passes max_bytes.
  Status append(std::string_view bytes);
  // Sets the mode and renames the file onto the target.
  Status commit();

  uint64_t id() const { return id_; }
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  Upload() = default;
  uint64_t id_ = 0;
  std::string path_;
  mode_t mode_ = 0644;
  uint64_t max_bytes_ = 0;
  uint64_t size_ = 0;
  UniqueFd dir_;
  UniqueFd file_;
  std::string leaf_;
  std::string temp_name_;
  bool committed_ = false;
};

}  // namespace carapace::agent
