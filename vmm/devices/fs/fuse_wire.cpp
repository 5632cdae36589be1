// FUSE argument parsing and replies over a descriptor chain (fuse_wire.h).
#include "vmm/devices/fs/fuse_wire.h"

#include <climits>
#include <vector>

namespace carapace::fs {

FsStatus check_name(std::string_view name) {
  // docs/security.md #55: one component, never a path, never "." or ".." (a FUSE name is looked
  // up in one directory of ours; anything else would walk).
  if (name.empty() || name.size() > NAME_MAX) return fs_error(name.empty() ? EINVAL : ENAMETOOLONG);
  if (name == "." || name == "..") return fs_error(EINVAL);
  for (char c : name)
    if (c == '/' || c == '\0') return fs_error(EINVAL);
  return fs_ok();
}

FsResult<std::string> ArgReader::cstring(size_t max) {
  // Byte by byte up to max + 1: the length comes from where the NUL is, never from a field.
  std::string out;
  const size_t limit = max + 1;
  while (out.size() < limit) {
    if (r_.available() == 0) return fs_error(EINVAL);  // not NUL-terminated within the request
    uint8_t c = 0;
    if (!r_.read({&c, 1}).ok()) return fs_error(EINVAL);
    if (c == 0) {
      if (out.empty()) return fs_error(EINVAL);
      return out;
    }
    out.push_back(static_cast<char>(c));
  }
  return fs_error(ENAMETOOLONG);
}

FsResult<std::string> ArgReader::name() {
  std::string n = TRY(cstring(NAME_MAX));
  TRY_STATUS(check_name(n));
  return n;
}

FsStatus ReplyWriter::send(std::span<const uint8_t> payload) {
  if (w_.available() < sizeof(fuse_out_header) + payload.size()) return fs_error(EINVAL);
  fuse_out_header h{};
  h.len = static_cast<uint32_t>(sizeof h + payload.size());
  h.error = 0;
  h.unique = unique_;
  if (!w_.write_obj(h).ok() || !w_.write(payload).ok()) return fs_error(EIO);
  sent_ = true;
  return fs_ok();
}

FsResult<virtio::ChainWriter> ReplyWriter::body() {
  auto rest = w_.split_at(sizeof(fuse_out_header));
  if (!rest.ok()) return fs_error(EINVAL);
  return *rest;
}

FsStatus ReplyWriter::finish(size_t len) {
  fuse_out_header h{};
  h.len = static_cast<uint32_t>(sizeof h + len);
  h.unique = unique_;
  if (!w_.write_obj(h).ok()) return fs_error(EIO);
  body_written_ = len;
  sent_ = true;
  return fs_ok();
}

void ReplyWriter::error(int code) {
  if (sent_ || !header_fits()) return;
  fuse_out_header h{};
  h.len = sizeof h;
  h.error = -code;
  h.unique = unique_;
  if (w_.write_obj(h).ok()) sent_ = true;
}

}  // namespace carapace::fs
