// Frames of the agent protocol: a 4-byte little-endian length, then that many bytes of JSON.
// Shared by the guest agent and the host client; both read with a size cap fixed before any
// payload byte is read, so an oversized length costs nothing (docs/security.md #33).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/base/result.h"

namespace carapace::agent {

enum class FrameStatus {
  kOk,
  kEof,        // the peer closed cleanly between frames
  kTruncated,  // the peer closed inside a frame
  kEmpty,      // a length of 0 (a frame must hold a JSON object)
  kTooLarge,   // the length is above the cap; its payload was not read
  kTimeout,    // no frame began within idle_ms, or a begun frame stalled past stall_ms
  kIoError,
};

const char* frame_status_name(FrameStatus s);

struct FrameLimits {
  size_t max_bytes;
  int idle_ms;   // wait for the first byte of a frame; -1 waits forever
  int stall_ms;  // after the first byte, the whole frame must arrive within this time
};

// Reads one frame's payload into *payload.
FrameStatus read_frame(int fd, const FrameLimits& limits, std::string* payload);

// The 4-byte header followed by the payload.
std::string encode_frame(std::string_view payload);

// Writes every byte (send with MSG_NOSIGNAL on sockets: a closed peer is an error, not SIGPIPE).
Status send_all(int fd, std::string_view bytes);
Status write_frame(int fd, std::string_view payload);

}  // namespace carapace::agent
