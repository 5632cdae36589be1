// docs/security.md #33: agent frames that are malformed or oversized are refused. Each bad input
// gets an error reply, its connection is closed, and the agent goes on serving new connections.
#include <sys/socket.h>

#include "tests/agent/agent_test_util.h"

namespace carapace::testing {
namespace {

using nlohmann::json;

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i)
    s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

class AgentFramesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(agent_.started()) << agent_.error(); }

  // Sends `bytes` on a fresh connection (optionally half-closing it), expects an error reply
  // with `code`, then end of stream; then checks that a new connection is served.
  void expect_refused(const std::string& bytes, const std::string& code, bool half_close = false) {
    SCOPED_TRACE(code);
    {
      AgentClient c = agent_.connect();
      ASSERT_TRUE(c.send_raw(bytes).ok());
      if (half_close) ::shutdown(c.fd(), SHUT_WR);
      auto reply = c.read_frame_text();
      ASSERT_TRUE(reply.ok()) << reply.error().describe();
      json j = json::parse(*reply, nullptr, false);
      ASSERT_TRUE(j.is_object()) << *reply;
      EXPECT_EQ(j["error"]["code"], code) << *reply;
      auto eof = c.read_frame_text();
      EXPECT_FALSE(eof.ok()) << "the connection stayed open";
    }
    AgentClient fresh = agent_.connect();
    EXPECT_TRUE(fresh.ping().ok());
  }

  void expect_request_refused(const json& req, const std::string& code) {
    expect_refused(agent::encode_frame(req.dump()), code);
  }

  AgentProcess agent_;
};

TEST_F(AgentFramesTest, SecurityCheck33_GarbageBytesAreRefused) {
  // "GET " read as a length is ~540 MB: refused before any payload is read.
  expect_refused("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "frame_too_large");
  expect_refused(le32(5) + "hello", "bad_json");
  expect_refused(le32(3) + "\xff\xfe\xfd", "bad_json");
  expect_refused(le32(8) + "\"\xc3\x28\"xxxx", "bad_json");  // invalid UTF-8
}

TEST_F(AgentFramesTest, SecurityCheck33_ZeroLengthFrameIsRefused) {
  expect_refused(le32(0), "bad_frame");
}

TEST_F(AgentFramesTest, SecurityCheck33_OversizedFrameIsRefusedUnread) {
  expect_refused(le32(agent::kMaxFrameBytes + 1), "frame_too_large");
  expect_refused(le32(0xffffffffu) + std::string(100, 'x'), "frame_too_large");
}

TEST_F(AgentFramesTest, SecurityCheck33_TruncatedFrameIsRefused) {
  expect_refused(le32(100) + "{\"id\":1,", "bad_frame", /*half_close=*/true);
  expect_refused(le32(100).substr(0, 2), "bad_frame", /*half_close=*/true);
}

TEST_F(AgentFramesTest, SecurityCheck33_NonObjectJsonIsRefused) {
  expect_refused(agent::encode_frame("[1,2,3]"), "bad_request");
  expect_refused(agent::encode_frame("\"ping\""), "bad_request");
  expect_refused(agent::encode_frame("42"), "bad_request");
  expect_refused(agent::encode_frame("null"), "bad_request");
  expect_refused(agent::encode_frame("{\"id\":1,\"op\":\"ping\"} trailing"), "bad_json");
}

TEST_F(AgentFramesTest, SecurityCheck33_DeeplyNestedJsonIsRefusedWithoutCrashing) {
  std::string deep = std::string(400000, '[') + std::string(400000, ']');
  expect_refused(agent::encode_frame(deep), "bad_request");
  std::string unterminated = "{\"a\":" + std::string(500000, '[');
  expect_refused(agent::encode_frame(unterminated), "bad_json");
}

TEST_F(AgentFramesTest, SecurityCheck33_MissingOrMistypedMembersAreRefused) {
  const std::string t = kTestToken;
  expect_request_refused({{"op", "ping"}}, "bad_request");               // no id
  expect_request_refused({{"id", "1"}, {"op", "ping"}}, "bad_request");  // id a string
  expect_request_refused({{"id", -1}, {"op", "ping"}}, "bad_request");   // negative id
  expect_request_refused({{"id", 1.5}, {"op", "ping"}}, "bad_request");  // fractional
  expect_request_refused({{"id", 1}}, "bad_request");                    // no op
  expect_request_refused({{"id", 1}, {"op", 7}}, "bad_request");         // op a number
  expect_request_refused({{"id", 1}, {"op", "exec"}, {"token", t}, {"argv", "ls"}}, "bad_request");
  expect_request_refused({{"id", 1}, {"op", "exec"}, {"token", t}, {"argv", json::array()}},
                         "bad_request");
  expect_request_refused({{"id", 1}, {"op", "exec"}, {"token", t}, {"argv", {1, 2}}},
                         "bad_request");
  expect_request_refused(
      {{"id", 1}, {"op", "exec"}, {"token", t}, {"argv", {"true"}}, {"timeout_ms", -5}},
      "bad_request");
  expect_request_refused(
      {{"id", 1}, {"op", "exec"}, {"token", t}, {"argv", {"true"}}, {"env", {{"A", 1}}}},
      "bad_request");
  expect_request_refused(
      {{"id", 1}, {"op", "exec"}, {"token", t}, {"argv", {std::string("a\0b", 3)}}}, "bad_request");
  expect_request_refused({{"id", 1}, {"op", "get_file"}, {"token", t}, {"path", 7}}, "bad_request");
  expect_request_refused({{"id", 1}, {"op", "get_file"}, {"token", t}}, "bad_request");
  expect_request_refused(
      {{"id", 1}, {"op", "put_file"}, {"token", t}, {"path", "a"}, {"data", "!!notbase64"}},
      "bad_request");
  expect_request_refused(
      {{"id", 1}, {"op", "put_file"}, {"token", t}, {"path", "a"}, {"mode", 04755}}, "bad_request");
  expect_request_refused({{"id", 1}, {"op", "kill"}, {"token", t}, {"target", "x"}}, "bad_request");
  EXPECT_TRUE(dir_names(agent_.root()).empty());
}

TEST_F(AgentFramesTest, SecurityCheck33_UnknownOpIsRefused) {
  expect_request_refused({{"id", 1}, {"op", "format_disk"}, {"token", kTestToken}}, "unknown_op");
}

TEST_F(AgentFramesTest, WrongOrMissingTokenIsUnauthorized) {
  expect_request_refused({{"id", 1}, {"op", "list"}}, "unauthorized");
  expect_request_refused({{"id", 1}, {"op", "list"}, {"token", "c0ffee"}}, "unauthorized");
  expect_request_refused({{"id", 1}, {"op", "list"}, {"token", 12345}}, "unauthorized");
  std::string longer = std::string(kTestToken) + "00";
  expect_request_refused({{"id", 1}, {"op", "exec"}, {"token", longer}, {"argv", {"touch", "x"}}},
                         "unauthorized");
  EXPECT_TRUE(dir_names(agent_.root()).empty());
}

TEST(AgentNoTokenTest, WithoutATokenOnlyPingIsAnswered) {
  AgentProcess agent({}, CARAPACE_AGENT_HOST, /*with_token=*/false);
  ASSERT_TRUE(agent.started()) << agent.error();
  AgentClient c = agent.connect();
  auto p = c.ping();
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_FALSE(p->token_set);
  EXPECT_EQ(code_of(c.list(".")), "unauthorized");
  AgentClient c2 = agent.connect();
  c2.set_token("");
  EXPECT_EQ(code_of(c2.list(".")), "unauthorized");
}

}  // namespace
}  // namespace carapace::testing
