// Constants of the host <-> guest agent protocol, shared by the agent (guest/agent) and the host
// client (common/agent/agent_client). common/agent/PROTOCOL.md is the specification; a change here
// is a change there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "carapace/version.h"

namespace carapace::agent {

// The agent listens on this AF_VSOCK port (VMADDR_CID_ANY) inside the guest.
inline constexpr uint32_t kAgentVsockPort = 52;
inline constexpr char kAgentVersion[] = CARAPACE_VERSION;
inline constexpr int kProtocolVersion = 1;

// A frame is a 4-byte little-endian length, then that many bytes of one JSON object.
inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr size_t kMaxFrameBytes = size_t{1} << 20;
// Raw bytes carried by one data chunk (base64 in the frame: 4/3 of this, well under a frame).
inline constexpr size_t kMaxChunkBytes = 512 * 1024;
// Once the first byte of a frame has arrived, the rest must follow within this time.
inline constexpr int kFrameStallTimeoutMs = 10'000;

// Defaults and ceilings of request fields.
inline constexpr uint64_t kDefaultMaxFileBytes = uint64_t{256} << 20;
inline constexpr uint64_t kDefaultMaxOutputBytes = uint64_t{16} << 20;  // per stream
inline constexpr uint64_t kMaxOutputLimitBytes = uint64_t{1} << 30;
inline constexpr uint64_t kMaxTimeoutMs = uint64_t{24} * 3600 * 1000;
inline constexpr size_t kMaxEntropyBytes = 4096;
inline constexpr size_t kMaxTokenChars = 128;
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxArgvEntries = 4096;
inline constexpr int kDefaultMaxConnections = 32;

// Error codes (the "code" member of an error reply). The first group closes the connection.
namespace code {
inline constexpr char kBadFrame[] = "bad_frame";
inline constexpr char kFrameTooLarge[] = "frame_too_large";
inline constexpr char kBadJson[] = "bad_json";
inline constexpr char kBadRequest[] = "bad_request";
inline constexpr char kUnknownOp[] = "unknown_op";
inline constexpr char kUnauthorized[] = "unauthorized";
inline constexpr char kBusy[] = "busy";
inline constexpr char kInternal[] = "internal";
// Errors of one operation; the connection stays usable.
inline constexpr char kNotFound[] = "not_found";
inline constexpr char kPathRefused[] = "path_refused";
inline constexpr char kNotRegularFile[] = "not_regular_file";
inline constexpr char kNotDirectory[] = "not_directory";
inline constexpr char kIsDirectory[] = "is_directory";
inline constexpr char kExists[] = "exists";
inline constexpr char kPermissionDenied[] = "permission_denied";
inline constexpr char kNoSpace[] = "no_space";
inline constexpr char kTooLarge[] = "too_large";
inline constexpr char kExecFailed[] = "exec_failed";
inline constexpr char kIdInUse[] = "id_in_use";
inline constexpr char kInUse[] = "in_use";
inline constexpr char kIoError[] = "io_error";
}  // namespace code

// True for the codes after which the agent closes the connection.
inline bool closes_connection(std::string_view c) {
  return c == code::kBadFrame || c == code::kFrameTooLarge || c == code::kBadJson ||
         c == code::kBadRequest || c == code::kUnknownOp || c == code::kUnauthorized ||
         c == code::kBusy || c == code::kInternal;
}

}  // namespace carapace::agent
