#include "guest/agent/upload.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "common/agent/errors.h"
#include "common/agent/wire.h"

namespace carapace::agent {

Result<std::unique_ptr<Upload>> Upload::begin(const SandboxRoot& root, uint64_t id,
                                              std::string path, mode_t mode, bool parents,
                                              uint64_t max_bytes) {
  std::unique_ptr<Upload> u(new Upload());
  u->id_ = id;
  u->mode_ = mode;
  u->max_bytes_ = max_bytes;
  u->dir_ = TRY(root.open_parent(path, parents, &u->leaf_));
  u->path_ = std::move(path);
  for (int attempt = 0; attempt < 8; ++attempt) {
    uint64_t r = 0;
    if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r ^= static_cast<uint64_t>(id);
    char name[48];
    snprintf(name, sizeof name, ".carapace-upload-%016llx", static_cast<unsigned long long>(r));
    int fd =
        ::openat(u->dir_.get(), name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      u->file_.reset(fd);
      u->temp_name_ = name;
      return u;
    }
    if (errno != EEXIST) return sys_error("create a temporary file for '" + u->path_ + "'");
  }
  return sys_error("create a temporary file for '" + u->path_ + "'", EEXIST);
}

Upload::~Upload() {
  if (!committed_ && !temp_name_.empty()) ::unlinkat(dir_.get(), temp_name_.c_str(), 0);
}

Status Upload::append(std::string_view bytes) {
  if (bytes.size() > max_bytes_ - size_)
    return protocol_error(code::kTooLarge, "'" + path_ + "' exceeds the " +
                                               std::to_string(max_bytes_) + "-byte file limit");
  while (!bytes.empty()) {
    ssize_t n = ::write(file_.get(), bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("write '" + path_ + "'");
    bytes.remove_prefix(static_cast<size_t>(n));
    size_ += static_cast<uint64_t>(n);
  }
  return {};
}

Status Upload::commit() {
  if (::fchmod(file_.get(), mode_) < 0) return sys_error("chmod '" + path_ + "'");
  if (::close(file_.release()) < 0) return sys_error("close '" + path_ + "'");
  // renameat replaces the directory entry itself: a symlink at the target is replaced, not
  // followed; a directory there makes it fail.
  if (::renameat(dir_.get(), temp_name_.c_str(), dir_.get(), leaf_.c_str()) < 0)
    return sys_error("rename onto '" + path_ + "'");
  committed_ = true;
  return {};
}

}  // namespace carapace::agent
