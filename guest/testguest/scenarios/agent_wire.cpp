#include "guest/testguest/scenarios/agent_wire.h"

#include "guest/testguest/cpu.h"
#include "guest/testguest/text.h"

namespace testguest {

using namespace virtio;

const char* json_member(const char* json, uint32_t len, const char* key) {
  uint32_t klen = 0;
  while (key[klen])
    ++klen;
  for (uint32_t i = 0; i + klen + 3 <= len; ++i) {
    if (json[i] == '"' && bytes_equal(json + i + 1, key, klen) && json[i + 1 + klen] == '"') {
      uint32_t j = i + 2 + klen;
      while (j < len && (json[j] == ' ' || json[j] == ':'))
        ++j;
      return j < len ? json + j : nullptr;
    }
  }
  return nullptr;
}

uint32_t json_string_len(const char* p, const char* end) {
  if (p == nullptr || p >= end || *p != '"') return 0;
  uint32_t n = 0;
  for (++p; p < end && *p != '"'; ++p)
    ++n;
  return p < end ? n : 0;
}

bool json_string(const char* json, uint32_t len, const char* key, char* out, uint32_t cap) {
  const char* p = json_member(json, len, key);
  const uint32_t n = json_string_len(p, json + len);
  if (n == 0 || cap == 0) return false;
  const uint32_t copy = n < cap - 1 ? n : cap - 1;
  for (uint32_t i = 0; i < copy; ++i)
    out[i] = p[1 + i];
  out[copy] = '\0';
  return true;
}

uint64_t json_number(const char* p, const char* end) {
  uint64_t v = 0;
  for (; p != nullptr && p < end && *p >= '0' && *p <= '9'; ++p)
    v = v * 10 + uint64_t(*p - '0');
  return v;
}

namespace {

bool read_exact(VsockStack& vs, VsockConn& c, void* buf, uint32_t n, uint64_t timeout) {
  auto* p = static_cast<uint8_t*>(buf);
  Deadline deadline(timeout);
  uint32_t got = 0;
  while (got < n) {
    vs.poll();
    got += vs.read(c, p + got, n - got);
    // A peer that shut the connection down sends nothing more: what is buffered is all there
    // is. (Waiting on would hold the connection until the host's shutdown timeout resets it,
    // and the next host connection with it: the agent serves one at a time.)
    const bool ended = c.state != VsockConn::kEstablished || c.peer_shutdown;
    if (got < n && (deadline.expired() || (ended && !c.readable()))) return false;
  }
  return true;
}

}  // namespace

const char* read_agent_frame(VsockStack& vs, VsockConn& c, char* buf, uint32_t& len,
                             uint64_t timeout) {
  if (!read_exact(vs, c, &len, 4, timeout)) return "the connection ended before a frame";
  if (len == 0 || len > kMaxAgentFrame) return "frame length out of range";
  if (!read_exact(vs, c, buf, len, timeout)) return "the frame was cut short";
  return nullptr;
}

bool write_agent_frame(VsockStack& vs, VsockConn& c, const char* json, uint64_t timeout) {
  uint32_t n = 0;
  while (json[n])
    ++n;
  uint8_t header[4] = {uint8_t(n), uint8_t(n >> 8), uint8_t(n >> 16), uint8_t(n >> 24)};
  Deadline deadline(timeout);
  for (int part = 0; part < 2; ++part) {
    const uint8_t* p = part == 0 ? header : reinterpret_cast<const uint8_t*>(json);
    const uint32_t total = part == 0 ? 4 : n;
    uint32_t sent = 0;
    while (sent < total) {
      sent += vs.write(c, p + sent, total - sent);
      if (deadline.expired() || c.state != VsockConn::kEstablished) return false;
      vs.poll();
    }
  }
  return true;
}

void agent_reply(char* out, uint32_t cap, uint64_t id, const char* rest) {
  uint32_t n = 0;
  auto put = [&](const char* s) {
    while (*s && n + 1 < cap)
      out[n++] = *s++;
  };
  put("{\"id\":");
  char digits[21];
  digits[write_decimal(digits, id)] = '\0';
  put(digits);
  put(rest);
  out[n] = '\0';
}

}  // namespace testguest
