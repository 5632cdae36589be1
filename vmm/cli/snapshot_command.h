// `carapace snapshot inspect DIR`: prints what a snapshot directory holds and whether it would
// load (see kSnapshotCommandUsage). Compiled into carapace_snapshot (snapshot/CMakeLists.txt),
// which the `carapace` executable links: the snapshot library sits above carapace_vmm.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace carapace {

extern const char kSnapshotCommandUsage[];

// `args` are the words after "snapshot". Exit status: 0 the snapshot is valid, 1 it is corrupt or
// incomplete (or cannot be read), 2 bad usage.
int cmd_snapshot(const std::vector<std::string>& args, FILE* out = stdout, FILE* err = stderr);

}  // namespace carapace
