#include "vmm/devices/vsock/vsock_packet.h"

namespace carapace::vsock {

Check check_guest_header(const Header& h, uint64_t guest_cid, uint64_t payload_bytes) {
  Check c;
  // Checked in this order so the reason names the most basic fault first.
  if (h.src_cid != guest_cid)
    c.why = "source CID is not the guest's";
  else if (h.dst_cid != kHostCid)
    c.why = "destination CID is not the host";
  else if (h.type != kTypeStream)
    c.why = "socket type is not stream";
  else if (h.op < kOpRequest || h.op > kOpCreditRequest)
    c.why = "unknown op";
  else if (h.len != payload_bytes)
    c.why = "len does not match the payload present";
  else if (h.len > kMaxPayload)
    c.why = "len above the device's maximum packet";
  else if (h.op != kOpRw && h.len != 0)
    c.why = "payload on a control packet";
  if (c.why == nullptr) return c;
  // virtio 1.2 §5.10.6.5: an RST is never answered with an RST (two peers would ping-pong).
  c.verdict = h.op == kOpRst ? Verdict::kDrop : Verdict::kRst;
  return c;
}

Header rst_reply(const Header& h, uint64_t guest_cid) {
  Header r = host_header(guest_cid, h.dst_port, h.src_port, kOpRst, 0, 0);
  if (h.type == kTypeSeqpacket) r.type = kTypeSeqpacket;
  return r;
}

Header host_header(uint64_t guest_cid, uint32_t local_port, uint32_t peer_port, uint16_t op,
                   uint32_t buf_alloc, uint32_t fwd_cnt) {
  Header h{};
  h.src_cid = kHostCid;
  h.dst_cid = guest_cid;
  h.src_port = local_port;
  h.dst_port = peer_port;
  h.type = kTypeStream;
  h.op = op;
  h.buf_alloc = buf_alloc;
  h.fwd_cnt = fwd_cnt;
  return h;
}

std::optional<uint32_t> parse_connect_line(std::string_view line) {
  constexpr std::string_view kVerb = "CONNECT ";
  if (!line.starts_with(kVerb)) return std::nullopt;
  std::string_view digits = line.substr(kVerb.size());
  if (digits.empty() || digits.size() > 10) return std::nullopt;
  uint64_t port = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    port = port * 10 + static_cast<uint64_t>(ch - '0');
  }
  if (port > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(port);
}

std::string ok_line(uint32_t local_port) {
  return "OK " + std::to_string(local_port) + "\n";
}

const char* op_name(uint16_t op) {
  switch (op) {
    case kOpRequest:
      return "REQUEST";
    case kOpResponse:
      return "RESPONSE";
    case kOpRst:
      return "RST";
    case kOpShutdown:
      return "SHUTDOWN";
    case kOpRw:
      return "RW";
    case kOpCreditUpdate:
      return "CREDIT_UPDATE";
    case kOpCreditRequest:
      return "CREDIT_REQUEST";
  }
  return "INVALID";
}

}  // namespace carapace::vsock
