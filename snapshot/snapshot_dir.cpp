#include "snapshot/snapshot_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>

#include "snapshot/file_io.h"

namespace carapace {

namespace {

constexpr std::string_view kMemoryPrefix = "memory-";
// A reader that finds the memory file gone (a writer replaced the snapshot between the reader's
// opening `state` and the memory file) reads `state` again; more than a few in a row means
// something else is wrong.
constexpr int kLoadAttempts = 3;

Error in_dir(const std::string& dir, Error e) {
  e.message = "snapshot " + dir + ": " + e.message;
  return e;
}

// The generation in "memory-<decimal>", or nullopt for any other name (never touched).
std::optional<uint64_t> parse_memory_name(std::string_view name) {
  if (name.substr(0, kMemoryPrefix.size()) != kMemoryPrefix) return std::nullopt;
  std::string_view digits = name.substr(kMemoryPrefix.size());
  if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits[0] == '0'))
    return std::nullopt;
  uint64_t gen = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), gen);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return gen;
}

// Generations of every memory file in the directory.
Result<std::vector<uint64_t>> list_memory_files(int dir_fd) {
  int fd = ::dup(dir_fd);
  if (fd < 0) return sys_error("dup directory fd");
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return sys_error("open directory for listing");
  }
  // The dup shares the directory offset with dir_fd: start from the beginning every time.
  ::rewinddir(d);
  std::vector<uint64_t> gens;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (auto g = parse_memory_name(e->d_name)) gens.push_back(*g);
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return sys_error("list directory", err);
  return gens;
}

// Unlinks the files of an unfinished write unless commit() was called.
class PendingFiles {
 public:
  explicit PendingFiles(int dir_fd) : dir_fd_(dir_fd) {}
  PendingFiles(const PendingFiles&) = delete;
  PendingFiles& operator=(const PendingFiles&) = delete;
  ~PendingFiles() {
    for (const auto& name : names_)
      ::unlinkat(dir_fd_, name.c_str(), 0);
  }
  void add(std::string name) { names_.push_back(std::move(name)); }
  void commit() { names_.clear(); }

 private:
  int dir_fd_;
  std::vector<std::string> names_;
};

Result<UniqueFd> create_file(int dir_fd, const std::string& name) {
  UniqueFd fd(
      ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sys_error("create " + name);
  return fd;
}

void step(const WriteOptions& opts, WriteStep s) {
  if (opts.after_step != nullptr) opts.after_step(s);
}

Result<SnapshotWriteInfo> write_locked(int dir_fd, StateFile state, const GuestMemory& memory,
                                       const WriteOptions& opts) {
  uint64_t gen = 1;
  for (uint64_t g : TRY(list_memory_files(dir_fd))) {
    if (g == UINT64_MAX) return make_error("memory file generations exhausted");
    gen = std::max(gen, g + 1);
  }
  // state.tmp can only be a crashed writer's; it is never read.
  if (::unlinkat(dir_fd, kStateTempFileName, 0) != 0 && errno != ENOENT)
    return sys_error("remove stale state.tmp");

  SnapshotWriteInfo info;
  info.generation = gen;
  info.memory_file = memory_file_name(gen);
  // Filled in here, not by the caller: only the writer knows them for sure.
  state.host_cpu = host_cpu_signature();
  state.memory_generation = gen;
  state.memory = MemoryLayout::of(memory);
  info.memory_size = state.memory.total_size();
  // Encoded first: a state that cannot be written fails before a byte reaches the disk.
  std::vector<uint8_t> state_bytes = TRY(encode_state_file(state));
  info.state_size = state_bytes.size();

  // Files join `pending` only once created: a name this write did not create is never unlinked.
  PendingFiles pending(dir_fd);
  UniqueFd mem_fd = TRY(create_file(dir_fd, info.memory_file));
  pending.add(info.memory_file);
  info.memory_bytes_written = TRY(write_guest_memory(mem_fd.get(), memory));
  if (opts.durable) TRY_STATUS(fsync_or_error(mem_fd.get(), info.memory_file));
  mem_fd.reset();
  step(opts, WriteStep::kMemoryWritten);

  UniqueFd state_fd = TRY(create_file(dir_fd, kStateTempFileName));
  pending.add(kStateTempFileName);
  TRY_STATUS(pwrite_all(state_fd.get(), state_bytes, 0, "write state.tmp"));
  if (opts.durable) TRY_STATUS(fsync_or_error(state_fd.get(), kStateTempFileName));
  state_fd.reset();
  // Both new names durable before `state` can point at them.
  if (opts.durable) TRY_STATUS(fsync_or_error(dir_fd, "snapshot directory"));
  step(opts, WriteStep::kStateWritten);

  if (::renameat(dir_fd, kStateTempFileName, dir_fd, kStateFileName) != 0)
    return sys_error("rename state.tmp to state");
  pending.commit();
  step(opts, WriteStep::kRenamed);
  // The rename is visible to every process already; this makes it survive a power loss. If it
  // fails the directory still holds a consistent snapshot (the new one), so the error says so.
  if (opts.durable && ::fsync(dir_fd) != 0)
    return sys_error("snapshot written, but syncing the directory after the rename failed");
  step(opts, WriteStep::kCommitted);

  // Older memory files (the previous snapshot's, a crashed writer's) are no longer named by
  // `state`. Processes that mapped them keep their pages: unlinking removes only the name. A
  // failure here leaves garbage the next write removes, not a broken snapshot.
  if (auto gens = list_memory_files(dir_fd); gens.ok()) {
    for (uint64_t g : *gens) {
      if (g != gen) ::unlinkat(dir_fd, memory_file_name(g).c_str(), 0);
    }
  }
  step(opts, WriteStep::kCleanedUp);
  return info;
}

}  // namespace

std::string memory_file_name(uint64_t generation) {
  return std::string(kMemoryPrefix) + std::to_string(generation);
}

Result<UniqueFd> open_snapshot_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    Error e = sys_error("open snapshot directory " + dir);
    if (errno == ENOENT || errno == ENOTDIR) e = as_invalid_input(std::move(e));
    return e;
  }
  return fd;
}

Result<UniqueFd> open_snapshot_file(int dir_fd, const std::string& name) {
  // O_NOFOLLOW: a symlink planted in the directory is refused (ELOOP). O_NONBLOCK: opening a FIFO
  // must not hang; it is then refused below as not a regular file.
  UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) {
    Error e = sys_error("open " + name);
    if (errno == ENOENT || errno == ELOOP) e = as_invalid_input(std::move(e));
    return e;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return sys_error("stat " + name);
  if (!S_ISREG(st.st_mode)) return as_invalid_input(make_error(name + " is not a regular file"));
  return fd;
}

Result<std::vector<uint8_t>> read_state_bytes(int dir_fd) {
  UniqueFd fd = TRY(open_snapshot_file(dir_fd, kStateFileName));
  return read_whole_file(fd.get(), kMaxStateFileSize, "state file");
}

Result<SnapshotWriteInfo> write_snapshot(const std::string& dir, StateFile state,
                                         const GuestMemory& memory, const WriteOptions& opts) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return in_dir(dir, sys_error("create directory"));
  auto dir_fd = open_snapshot_dir(dir);
  if (!dir_fd.ok()) return dir_fd.take_error();
  // One writer per directory: two interleaved writers could each delete the other's memory file.
  // The lock is released when the fd closes, including when the writer is killed.
  if (::flock(dir_fd->get(), LOCK_EX | LOCK_NB) != 0)
    return in_dir(dir, errno == EWOULDBLOCK
                           ? make_error("another process is writing a snapshot here")
                           : sys_error("lock directory"));
  auto info = write_locked(dir_fd->get(), std::move(state), memory, opts);
  if (!info.ok()) return in_dir(dir, info.take_error());
  return info;
}

Result<LoadedSnapshot> load_snapshot(const std::string& dir) {
  auto dir_fd = open_snapshot_dir(dir);
  if (!dir_fd.ok()) return dir_fd.take_error();
  for (int attempt = 1;; ++attempt) {
    auto bytes = read_state_bytes(dir_fd->get());
    if (!bytes.ok()) return in_dir(dir, bytes.take_error());
    auto state = decode_state_file(*bytes);
    if (!state.ok()) return in_dir(dir, state.take_error());
    std::string name = memory_file_name(state->memory_generation);
    auto mem_fd = open_snapshot_file(dir_fd->get(), name);
    if (!mem_fd.ok()) {
      if (mem_fd.error().sys_errno == ENOENT && attempt < kLoadAttempts) continue;
      return in_dir(dir, mem_fd.take_error());
    }
    MemoryImage image{std::move(*mem_fd), state->memory};
    if (auto s = image.check_size(); !s.ok()) return in_dir(dir, s.take_error());
    return LoadedSnapshot{std::move(*state), std::move(image)};
  }
}

}  // namespace carapace
