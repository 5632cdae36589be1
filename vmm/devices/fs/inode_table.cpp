// Bounded inode and handle tables (inode_table.h).
#include "vmm/devices/fs/inode_table.h"

#include <sys/stat.h>

namespace carapace::fs {

void InodeTable::set_root(UniqueFd fd, const struct stat& st) {
  Inode root;
  root.fd = std::move(fd);
  root.dev = st.st_dev;
  root.ino = st.st_ino;
  root.type = st.st_mode & S_IFMT;
  root.refs = 1;
  nodes_.erase(FUSE_ROOT_ID);
  nodes_.emplace(FUSE_ROOT_ID, std::move(root));
  by_key_[{st.st_dev, st.st_ino}] = FUSE_ROOT_ID;
}

Inode* InodeTable::get(uint64_t nodeid) {
  auto it = nodes_.find(nodeid);
  return it == nodes_.end() ? nullptr : &it->second;
}

FsResult<uint64_t> InodeTable::add_lookup(UniqueFd fd, const struct stat& st) {
  auto k = by_key_.find({st.st_dev, st.st_ino});
  if (k != by_key_.end()) {
    Inode& n = nodes_.at(k->second);
    if (n.refs < UINT64_MAX) ++n.refs;
    return k->second;
  }
  // docs/security.md #57: the root counts, so max inodes is the table's whole size.
  if (nodes_.size() >= max_) return fs_error(ENFILE);
  Inode n;
  n.fd = std::move(fd);
  n.dev = st.st_dev;
  n.ino = st.st_ino;
  n.type = st.st_mode & S_IFMT;
  n.refs = 1;
  const uint64_t id = next_id_++;
  nodes_.emplace(id, std::move(n));
  by_key_[{st.st_dev, st.st_ino}] = id;
  return id;
}

void InodeTable::forget(uint64_t nodeid, uint64_t n) {
  if (nodeid == FUSE_ROOT_ID) return;
  auto it = nodes_.find(nodeid);
  if (it == nodes_.end()) return;
  Inode& node = it->second;
  node.refs = n >= node.refs ? 0 : node.refs - n;
  if (node.refs > 0) return;
  by_key_.erase({node.dev, node.ino});
  nodes_.erase(it);
}

void InodeTable::clear() {
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (it->first == FUSE_ROOT_ID) {
      it->second.refs = 1;
      ++it;
      continue;
    }
    by_key_.erase({it->second.dev, it->second.ino});
    it = nodes_.erase(it);
  }
}

FsResult<uint64_t> HandleTable::add(Handle h) {
  if (handles_.size() >= max_) return fs_error(EMFILE);
  const uint64_t fh = next_++;
  handles_.emplace(fh, std::move(h));
  return fh;
}

Handle* HandleTable::get(uint64_t fh) {
  auto it = handles_.find(fh);
  return it == handles_.end() ? nullptr : &it->second;
}

bool HandleTable::remove(uint64_t fh) {
  return handles_.erase(fh) > 0;
}

}  // namespace carapace::fs
