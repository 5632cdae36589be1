// The pure parts of virtio-vsock: header checks (docs/security.md #17), credit arithmetic, the
// CONNECT line.
#include "vmm/devices/vsock/vsock_packet.h"

#include <gtest/gtest.h>

#include "vmm/devices/vsock/vsock_connection.h"

namespace carapace::vsock {
namespace {

constexpr uint64_t kCid = 42;

Header good(uint16_t op = kOpRw, uint32_t len = 0) {
  Header h{};
  h.src_cid = kCid;
  h.dst_cid = kHostCid;
  h.src_port = 1000;
  h.dst_port = 52;
  h.len = len;
  h.type = kTypeStream;
  h.op = op;
  return h;
}

TEST(VsockPacket, LayoutMatchesTheSpec) {
  EXPECT_EQ(sizeof(Header), 44u);
  EXPECT_EQ(offsetof(Header, dst_port), 20u);
  EXPECT_EQ(offsetof(Header, op), 30u);
  EXPECT_EQ(offsetof(Header, fwd_cnt), 40u);
}

TEST(VsockPacket, AcceptsWellFormedPackets) {
  for (uint16_t op = kOpRequest; op <= kOpCreditRequest; ++op)
    EXPECT_EQ(check_guest_header(good(op), kCid, 0).verdict, Verdict::kAccept) << op;
  EXPECT_EQ(check_guest_header(good(kOpRw, 100), kCid, 100).verdict, Verdict::kAccept);
  EXPECT_EQ(check_guest_header(good(kOpRw, kMaxPayload), kCid, kMaxPayload).verdict,
            Verdict::kAccept);
}

TEST(VsockPacket, SecurityCheck17_BadHeadersGetRst) {
  struct Case {
    const char* what;
    Header h;
    uint64_t payload;
  };
  auto with = [](auto f) {
    Header h = good();
    f(h);
    return h;
  };
  const Case cases[] = {
      {"spoofed source", with([](Header& h) { h.src_cid = kCid + 1; }), 0},
      {"host as source", with([](Header& h) { h.src_cid = kHostCid; }), 0},
      {"cid upper bits", with([](Header& h) { h.src_cid = kCid | (1ull << 32); }), 0},
      {"to another guest", with([](Header& h) { h.dst_cid = 7; }), 0},
      {"to itself", with([](Header& h) { h.dst_cid = kCid; }), 0},
      {"seqpacket", with([](Header& h) { h.type = kTypeSeqpacket; }), 0},
      {"type 0", with([](Header& h) { h.type = 0; }), 0},
      {"op 0", with([](Header& h) { h.op = 0; }), 0},
      {"op 8", with([](Header& h) { h.op = 8; }), 0},
      {"op 0xffff", with([](Header& h) { h.op = 0xffff; }), 0},
      {"len > payload", with([](Header& h) { h.len = 10; }), 9},
      {"len < payload", with([](Header& h) { h.len = 10; }), 11},
      {"len huge", with([](Header& h) { h.len = UINT32_MAX; }), 0},
      {"len > max", with([](Header& h) { h.len = kMaxPayload + 1; }), kMaxPayload + 1},
      {"payload on REQUEST", with([](Header& h) {
         h.op = kOpRequest;
         h.len = 4;
       }),
       4},
      {"payload on CREDIT_UPDATE", with([](Header& h) {
         h.op = kOpCreditUpdate;
         h.len = 1;
       }),
       1},
  };
  for (const Case& c : cases) {
    Check r = check_guest_header(c.h, kCid, c.payload);
    EXPECT_EQ(r.verdict, Verdict::kRst) << c.what;
    EXPECT_NE(r.why, nullptr) << c.what;
  }
}

TEST(VsockPacket, SecurityCheck17_BadRstIsDroppedNotAnswered) {
  Header h = good(kOpRst);
  h.src_cid = 99;
  EXPECT_EQ(check_guest_header(h, kCid, 0).verdict, Verdict::kDrop);
  h = good(kOpRst, 5);
  EXPECT_EQ(check_guest_header(h, kCid, 0).verdict, Verdict::kDrop);
}

TEST(VsockPacket, RstReplySwapsPortsAndAddressesTheGuest) {
  Header h = good(kOpRequest);
  h.src_cid = 1234;  // even a spoofed source gets its answer at the real guest CID
  Header r = rst_reply(h, kCid);
  EXPECT_EQ(r.op, kOpRst);
  EXPECT_EQ(r.src_cid, kHostCid);
  EXPECT_EQ(r.dst_cid, kCid);
  EXPECT_EQ(r.src_port, 52u);
  EXPECT_EQ(r.dst_port, 1000u);
  EXPECT_EQ(r.len, 0u);
  EXPECT_EQ(r.type, kTypeStream);
  h.type = kTypeSeqpacket;
  EXPECT_EQ(rst_reply(h, kCid).type, kTypeSeqpacket);
}

TEST(VsockPacket, SecurityCheck17_CreditArithmeticCannotWrap) {
  EXPECT_EQ(free_credit(1000, 0, 0), 1000u);
  EXPECT_EQ(free_credit(1000, 600, 100), 500u);
  EXPECT_EQ(free_credit(1000, 1100, 100), 0u);
  EXPECT_EQ(free_credit(1000, 5000, 100), 0u);  // more in flight than the buffer: no credit
  // A peer claiming to have consumed more than was sent: no credit, not 4 GiB.
  EXPECT_EQ(free_credit(1000, 100, 200), 0u);
  EXPECT_EQ(free_credit(UINT32_MAX, 0, 1), 0u);
  // Counters wrap as the spec says: sent wrapped past 2^32, fwd_cnt not yet.
  EXPECT_EQ(free_credit(1000, 5, UINT32_MAX - 10), 1000u - 16);
  EXPECT_EQ(free_credit(0, 0, 0), 0u);
  EXPECT_EQ(free_credit(UINT32_MAX, 0, 0), UINT32_MAX);
}

TEST(VsockPacket, ConnectLine) {
  EXPECT_EQ(parse_connect_line("CONNECT 52"), 52u);
  EXPECT_EQ(parse_connect_line("CONNECT 0"), 0u);
  EXPECT_EQ(parse_connect_line("CONNECT 4294967295"), 4294967295u);
  for (const char* bad : {"CONNECT 4294967296", "CONNECT 99999999999", "CONNECT ", "CONNECT",
                          "connect 52", "CONNECT  52", "CONNECT 52 ", "CONNECT -1", "CONNECT +1",
                          "CONNECT 5a", "CONNECT 52\r", "", "OK 52"})
    EXPECT_FALSE(parse_connect_line(bad).has_value()) << bad;
  EXPECT_EQ(ok_line(1073741824), "OK 1073741824\n");
}

}  // namespace
}  // namespace carapace::vsock
