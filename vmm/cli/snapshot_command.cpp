#include "vmm/cli/snapshot_command.h"

#include <sys/stat.h>

#include <cinttypes>

#include "snapshot/cpu_signature.h"
#include "snapshot/snapshot_dir.h"
#include "snapshot/state_file.h"
#include "vmm/machine/exit_status.h"

namespace carapace {

const char kSnapshotCommandUsage[] =
    "usage: carapace snapshot inspect DIR\n"
    "  Prints the snapshot's format version, CPU template, host CPU, sections and memory file,\n"
    "  and checks the state file's checksum and the memory file's size.\n"
    "  Exit status: 0 valid, 1 corrupt or incomplete, 2 bad usage.\n";

namespace {

constexpr int kExitCorrupt = kExitHostError;

int corrupt(FILE* err, const std::string& what) {
  fprintf(err, "carapace snapshot: %s\n", what.c_str());
  return kExitCorrupt;
}

std::string mib(uint64_t bytes) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// The memory file's line; false if it would not load.
bool print_memory_file(int dir_fd, const StateFile& state, FILE* out) {
  std::string name = memory_file_name(state.memory_generation);
  uint64_t want = state.memory.total_size();
  auto fd = open_snapshot_file(dir_fd, name);
  if (!fd.ok()) {
    fprintf(out, "memory file:    %s MISSING (%s)\n", name.c_str(), fd.error().describe().c_str());
    return false;
  }
  struct stat st;
  if (::fstat(fd->get(), &st) != 0) {
    fprintf(out, "memory file:    %s unreadable\n", name.c_str());
    return false;
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  bool ok = size == want;
  fprintf(out, "memory file:    %s, %" PRIu64 " bytes (%s), %" PRIu64 " allocated (%s), %s\n",
          name.c_str(), size, mib(size).c_str(), allocated, mib(allocated).c_str(),
          ok ? "size ok" : ("SIZE MISMATCH: RAM is " + std::to_string(want)).c_str());
  return ok;
}

void print_state(const StateFile& state, FILE* out) {
  CpuSignature here = host_cpu_signature();
  fprintf(out, "format version: %u\n", kStateFormatVersion);
  fprintf(out, "cpu template:   %s\n", state.cpu_template.c_str());
  fprintf(out, "host cpu:       %s (%s)\n", state.host_cpu.describe().c_str(),
          state.host_cpu == here ? "same as this host" : ("this host: " + here.describe()).c_str());
  fprintf(out, "guest ram:      %zu region(s), %" PRIu64 " bytes\n", state.memory.regions.size(),
          state.memory.total_size());
  for (size_t i = 0; i < state.memory.regions.size(); ++i) {
    const auto& r = state.memory.regions[i];
    fprintf(out, "  [0x%" PRIx64 ", 0x%" PRIx64 ") at file offset 0x%" PRIx64 "\n", r.start.value,
            r.start.value + r.size, state.memory.file_offset(i));
  }
  fprintf(out, "sections:       %zu\n", state.sections.size());
  for (const auto& s : state.sections) {
    fprintf(out, "  %-16s index %-4u version %-3u %zu bytes\n", section_type_name(s.type).c_str(),
            s.index, s.version, s.payload.size());
  }
}

int inspect(const std::string& dir, FILE* out, FILE* err) {
  auto dir_fd = open_snapshot_dir(dir);
  if (!dir_fd.ok()) return corrupt(err, dir_fd.error().describe());
  auto bytes = read_state_bytes(dir_fd->get());
  if (!bytes.ok()) return corrupt(err, "state file: " + bytes.error().describe());

  fprintf(out, "snapshot:       %s\n", dir.c_str());
  fprintf(out, "state file:     %zu bytes\n", bytes->size());
  // The checksum on its own line first: it is what says whether anything below can be believed,
  // and nothing is parsed when it fails.
  bool sum_ok = state_checksum_ok(*bytes);
  fprintf(out, "checksum:       %s\n", sum_ok ? "ok" : "MISMATCH");
  if (!sum_ok) return corrupt(err, "state file checksum mismatch: the snapshot is corrupt");
  auto state = decode_state_file(*bytes);
  if (!state.ok()) return corrupt(err, state.error().describe());
  print_state(*state, out);
  if (!print_memory_file(dir_fd->get(), *state, out))
    return corrupt(err, "memory file does not match the state");
  return kExitOk;
}

}  // namespace

int cmd_snapshot(const std::vector<std::string>& args, FILE* out, FILE* err) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    fputs(kSnapshotCommandUsage, out);
    return kExitOk;
  }
  if (args.size() == 2 && args[0] == "inspect") return inspect(args[1], out, err);
  fputs(kSnapshotCommandUsage, err);
  return kExitUsage;
}

}  // namespace carapace
