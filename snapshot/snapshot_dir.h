// A snapshot directory: `state` (the state file) and `memory-<generation>` (the memory image it
// names). Replacing a snapshot is atomic (docs/security.md #23): the new memory file and
// `state.tmp` are written and fsynced beside the old ones, `state.tmp` is renamed over `state`,
// and only then is the old memory file deleted. A writer killed at any point leaves `state`
// naming a complete memory file, old or new; its leftovers are removed by the next successful
// write. Any failure (ENOSPC, EFBIG, EACCES, ...) removes what this write created and leaves the
// previous snapshot as it was (docs/security.md #24).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/base/result.h"
#include "common/base/unique_fd.h"
#include "snapshot/memory_image.h"
#include "snapshot/state_file.h"
#include "vmm/memory/guest_memory.h"

namespace carapace {

inline constexpr char kStateFileName[] = "state";
inline constexpr char kStateTempFileName[] = "state.tmp";
// "memory-<generation>", decimal.
std::string memory_file_name(uint64_t generation);

// The points write_snapshot passes, in order (for tests that kill the writer at each).
enum class WriteStep {
  kMemoryWritten,  // memory-<gen> complete (and synced if durable)
  kStateWritten,   // state.tmp complete (and synced if durable)
  kRenamed,        // state.tmp renamed to state: the new snapshot is the current one
  kCommitted,      // the directory synced (if durable)
  kCleanedUp,      // older memory files removed
};

struct WriteOptions {
  // fsync the files and the directory, so the snapshot also survives a power loss. Without it the
  // replacement is still atomic for every process on this host (a killed writer cannot lose data
  // already in the page cache), which is enough for snapshots that only live until reboot.
  bool durable = true;
  // Called after each step; tests use it to SIGKILL the writer at a known point.
  void (*after_step)(WriteStep step) = nullptr;
};

struct SnapshotWriteInfo {
  uint64_t generation = 0;
  std::string memory_file;
  uint64_t memory_size = 0;           // guest RAM bytes (the memory file's size)
  uint64_t memory_bytes_written = 0;  // non-zero pages actually written
  uint64_t state_size = 0;
};

// Writes `state` (host_cpu, memory_generation and memory are filled in here) and all of `memory`
// to `dir`, created (mode 0700) if missing, replacing the snapshot there. Refuses while another
// process writes to the same directory. The caller must keep the guest paused while this runs. A
// SIGXFSZ from a file-size limit is ignored process-wide (see ignore_sigxfsz()) so it becomes an
// error.
Result<SnapshotWriteInfo> write_snapshot(const std::string& dir, StateFile state,
                                         const GuestMemory& memory, const WriteOptions& opts = {});

struct LoadedSnapshot {
  StateFile state;
  MemoryImage memory;  // O_RDONLY, size checked against state.memory
};

// Reads and fully validates `dir/state`, then opens the memory file it names and checks its size
// against the recorded RAM layout (docs/security.md #19-#21). Neither file may be a symlink, FIFO
// or other non-regular file. Map the memory with map_guest_memory_private().
Result<LoadedSnapshot> load_snapshot(const std::string& dir);

// Pieces of load_snapshot for tools (carapace snapshot inspect).
Result<UniqueFd> open_snapshot_dir(const std::string& dir);
// The raw bytes of `state`, size bounded; not decoded.
Result<std::vector<uint8_t>> read_state_bytes(int dir_fd);
// Opens a file of the directory read-only, refusing symlinks and non-regular files.
Result<UniqueFd> open_snapshot_file(int dir_fd, const std::string& name);

}  // namespace carapace
