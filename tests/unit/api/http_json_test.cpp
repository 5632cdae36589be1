// JSON helpers, bearer tokens and SSE formatting.
#include <gtest/gtest.h>

#include "common/http/auth.h"
#include "common/http/json_util.h"
#include "common/http/response_writer.h"

namespace carapace::http {
namespace {

using namespace std::string_literals;

TEST(HttpJson, ResponseHelpers) {
  auto r = json_response(201, {{"id", "sb-1"}});
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.headers.get("Content-Type"), "application/json");
  EXPECT_EQ(nlohmann::json::parse(r.body)["id"], "sb-1");

  auto e = error_response(404, "no such sandbox");
  EXPECT_EQ(e.status, 404);
  auto j = nlohmann::json::parse(e.body);
  EXPECT_EQ(j["error"]["code"], "not_found");
  EXPECT_EQ(j["error"]["message"], "no such sandbox");

  EXPECT_EQ(error_response(as_invalid_input(make_error("bad"))).status, 400);
  EXPECT_EQ(error_response(make_error("disk on fire")).status, 500);
  auto c = error_response(ErrorCode::kConflict, "x");
  EXPECT_EQ(c.status, 409);
  EXPECT_EQ(nlohmann::json::parse(c.body)["error"]["code"], "conflict");
  // Every status gets the table's one code.
  EXPECT_EQ(nlohmann::json::parse(error_response(413, "x").body)["error"]["code"], "too_large");
  EXPECT_EQ(nlohmann::json::parse(error_response(429, "x").body)["error"]["code"], "limit");
}

TEST(HttpJson, InvalidUtf8IsReplacedNotThrown) {
  auto r = json_response(200, {{"stdout", std::string("ok\xff\xfe")}});
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("ok"), std::string::npos);
}

TEST(HttpJson, ParseObjectAcceptsKnownFields) {
  auto j = parse_json_object(R"({"cmd": ["ls"], "timeout_ms": 5})", {"cmd", "timeout_ms", "env"});
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ((*j)["timeout_ms"], 5);
}

TEST(HttpJson, ParseObjectNamesUnknownField) {
  auto j = parse_json_object(R"({"cmd": [], "evil": 1})", {"cmd"});
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().kind, ErrorKind::kInvalidInput);
  EXPECT_NE(j.error().message.find("\"evil\""), std::string::npos) << j.error().message;
  // A huge unknown field name is not echoed in full.
  auto big = parse_json_object("{\"" + std::string(100000, 'k') + "\": 1}", {});
  ASSERT_FALSE(big.ok());
  EXPECT_LT(big.error().message.size(), 200u);
}

TEST(HttpJson, ParseRejectsMalformed) {
  for (const char* bad :
       {"", "{", "{\"a\":}", "[1,2", "{'a':1}", "nul", "{\"a\":1}x", "{\"a\":\"\xff\"}"}) {
    auto j = parse_json(bad);
    ASSERT_FALSE(j.ok()) << bad;
    EXPECT_EQ(j.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(j.error().message.rfind("malformed JSON", 0), 0u) << j.error().message;
  }
  auto not_object = parse_json_object("[1]", {});
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.error().message.find("object"), std::string::npos);
}

TEST(HttpJson, RejectsDeepNestingAndDuplicates) {
  std::string deep(100000, '[');
  EXPECT_FALSE(parse_json(deep).ok());
  std::string ok_depth = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_json(ok_depth).ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(parse_json("{\"a\": \"" + std::string(1000, '[') + "\\\"\"}").ok());

  auto dup = parse_json(R"({"a": 1, "b": {"a": 2}, "a": 3})");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("duplicate field \"a\""), std::string::npos);
  EXPECT_TRUE(parse_json(R"({"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]})").ok());
}

TEST(HttpAuth, BearerToken) {
  HttpHeaders h{{"Authorization", "Bearer s3cret-token"}};
  EXPECT_TRUE(bearer_token_matches(h, "s3cret-token"));
  EXPECT_FALSE(bearer_token_matches(h, "s3cret-tokem"));
  EXPECT_FALSE(bearer_token_matches(h, "s3cret-token-longer"));
  EXPECT_FALSE(bearer_token_matches(h, "s3cret"));
  EXPECT_FALSE(bearer_token_matches(h, ""));
  EXPECT_TRUE(
      bearer_token_matches(HttpHeaders{{"authorization", "bearer s3cret-token"}}, "s3cret-token"));
  EXPECT_FALSE(
      bearer_token_matches(HttpHeaders{{"Authorization", "Basic s3cret-token"}}, "s3cret-token"));
  EXPECT_FALSE(bearer_token_matches(HttpHeaders{}, "x"));
  HttpHeaders two{{"Authorization", "Bearer a"}, {"Authorization", "Bearer a"}};
  EXPECT_FALSE(bearer_token_matches(two, "a"));
  EXPECT_FALSE(bearer_token_matches(HttpHeaders{{"Authorization", "Bearer "}}, "x"));
  EXPECT_TRUE(constant_time_equals("", ""));
  EXPECT_FALSE(constant_time_equals("a", ""));
}

TEST(HttpSse, FormatsEvents) {
  EXPECT_EQ(*format_sse_event("hello"), "data: hello\n\n");
  EXPECT_EQ(*format_sse_event("a\nb\r\nc\rd", "stdout", "7"),
            "event: stdout\nid: 7\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  EXPECT_EQ(*format_sse_event("x\n"), "data: x\ndata: \n\n");
  EXPECT_FALSE(format_sse_event("x", "bad\nevent").ok());
  EXPECT_FALSE(format_sse_event("x", "", "bad\rid").ok());
  EXPECT_FALSE(format_sse_event("x", "a\0b"s).ok());
}

TEST(HttpDate, Rfc9110Format) {
  EXPECT_EQ(http_date(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
}

}  // namespace
}  // namespace carapace::http
