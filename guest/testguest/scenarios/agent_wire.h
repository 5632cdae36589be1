// A minimal guest side of the agent protocol (common/agent/PROTOCOL.md) for test-guest scenarios:
// u32 little-endian length + one JSON object per frame, over a vsock stream. Only what the
// scenarios need: find a member, read a string or a number, send a reply.
#pragma once

#include <stdint.h>

#include "guest/testguest/virtio/vsock.h"

namespace testguest {

inline constexpr uint32_t kAgentPort = 52;        // common/agent/wire.h kAgentVsockPort
inline constexpr uint32_t kMaxAgentFrame = 4096;  // the scenarios' own cap (the agent's is 1 MiB)

// What follows `"key":` in the JSON text, or nullptr.
const char* json_member(const char* json, uint32_t len, const char* key);
// Length of the JSON string starting at `p` (its opening quote); 0 if there is none.
uint32_t json_string_len(const char* p, const char* end);
// A JSON string member copied into `out` (NUL-terminated, cut at `cap - 1`); false if absent.
bool json_string(const char* json, uint32_t len, const char* key, char* out, uint32_t cap);
uint64_t json_number(const char* p, const char* end);

// Reads one frame into `buf` (at most kMaxAgentFrame bytes). Returns nullptr, or why not.
const char* read_agent_frame(virtio::VsockStack& vs, virtio::VsockConn& c, char* buf, uint32_t& len,
                             uint64_t timeout_cycles);
// Sends `json` (NUL-terminated) as one frame; false if the connection broke or timed out.
bool write_agent_frame(virtio::VsockStack& vs, virtio::VsockConn& c, const char* json,
                       uint64_t timeout_cycles);

// Builds reply text: `{"id":N` followed by `rest` (which must start with ',' or be "}").
void agent_reply(char* out, uint32_t cap, uint64_t id, const char* rest);

}  // namespace testguest
