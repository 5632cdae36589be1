// The inodes the guest has looked up (FUSE node ids) and the files and directories it has open
// (FUSE file handles). Both are bounded by the share's configuration: past the bound a LOOKUP
// is ENFILE and an OPEN EMFILE, never growth (docs/security.md #57).
//
// An inode holds an O_PATH fd, so it stays the same host inode whatever happens to its name;
// two lookups of one host inode (hard links, "a" and "b/../a" spellings) share one entry by
// (st_dev, st_ino). Node ids and handles are counters, never reused in a session and never host
// pointers. Node id 1 (FUSE_ROOT_ID) is the share's root and is never forgotten.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <unordered_map>

#include "common/base/unique_fd.h"
#include "vmm/devices/fs/fuse_wire.h"

namespace carapace::fs {

struct Inode {
  UniqueFd fd;  // O_PATH
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t type = 0;    // S_IFMT bits
  uint64_t refs = 0;  // lookups not yet forgotten (FUSE: nlookup)
};

class InodeTable {
 public:
  explicit InodeTable(size_t max) : max_(max < 1 ? 1 : max) {}

  void set_root(UniqueFd fd, const struct stat& st);
  Inode* get(uint64_t nodeid);
  // One more lookup of the host inode `fd` stands for: an existing entry (fd dropped) or a new
  // one. ENFILE when the table is full.
  FsResult<uint64_t> add_lookup(UniqueFd fd, const struct stat& st);
  // FORGET: `n` lookups fewer; the entry goes at zero. The root stays.
  void forget(uint64_t nodeid, uint64_t n);
  // Everything but the root (DESTROY, device reset).
  void clear();
  size_t size() const { return nodes_.size(); }
  size_t max() const { return max_; }

 private:
  struct Key {
    dev_t dev;
    ino_t ino;
    bool operator<(const Key& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
  };
  size_t max_;
  uint64_t next_id_ = FUSE_ROOT_ID + 1;
  std::unordered_map<uint64_t, Inode> nodes_;
  std::map<Key, uint64_t> by_key_;
};

struct Handle {
  UniqueFd fd;
  uint64_t nodeid = 0;
  bool dir = false;
  int flags = 0;         // as opened on the host
  bool created = false;  // made by this handle's CREATE: rw-nodelete lets it be overwritten
};

class HandleTable {
 public:
  explicit HandleTable(size_t max) : max_(max < 1 ? 1 : max) {}
  // EMFILE when full.
  FsResult<uint64_t> add(Handle h);
  Handle* get(uint64_t fh);
  bool remove(uint64_t fh);
  void clear() { handles_.clear(); }
  size_t size() const { return handles_.size(); }

 private:
  size_t max_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, Handle> handles_;
};

}  // namespace carapace::fs
