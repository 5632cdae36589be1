// Routing, path parameters and query decoding.
#include <gtest/gtest.h>

#include <utility>

#include "common/http/query.h"
#include "common/http/response_writer.h"
#include "common/http/router.h"

namespace carapace::http {
namespace {

SimpleHandler ok_handler() {
  return [](const HttpRequest&) { return HttpResponse{}; };
}

// A method and a path pattern.
using RouteSpec = std::pair<const char*, const char*>;

constexpr RouteSpec kSampleRoutes[] = {{"GET", "/"},
                                       {"GET", "/sandboxes"},
                                       {"POST", "/sandboxes"},
                                       {"GET", "/sandboxes/{id}"},
                                       {"DELETE", "/sandboxes/{id}"},
                                       {"GET", "/sandboxes/stats"},
                                       {"POST", "/sandboxes/{id}/exec"},
                                       {"PUT", "/sandboxes/{id}/files/{name}"}};

Router sample_router() {
  Router r;
  for (auto [method, pattern] : kSampleRoutes) {
    EXPECT_TRUE(r.add(method, pattern, ok_handler()).ok()) << method << " " << pattern;
  }
  return r;
}

TEST(HttpRouter, MatchesLiteralsAndParams) {
  Router r = sample_router();
  auto m = r.find("POST", "/sandboxes/sb-1/exec");
  ASSERT_EQ(m.kind, Router::Match::kFound);
  EXPECT_EQ(m.route->pattern, "/sandboxes/{id}/exec");
  ASSERT_EQ(m.params.size(), 1u);
  EXPECT_EQ(m.params[0], (std::pair<std::string, std::string>("id", "sb-1")));

  m = r.find("PUT", "/sandboxes/a/files/b%20c.txt");
  ASSERT_EQ(m.kind, Router::Match::kFound);
  EXPECT_EQ(m.params[1].second, "b c.txt");

  EXPECT_EQ(r.find("GET", "/").kind, Router::Match::kFound);
  EXPECT_EQ(r.find("GET", "/sandboxes").route->pattern, "/sandboxes");
}

TEST(HttpRouter, LiteralBeatsParameter) {
  Router r = sample_router();
  EXPECT_EQ(r.find("GET", "/sandboxes/stats").route->pattern, "/sandboxes/stats");
  EXPECT_EQ(r.find("GET", "/sandboxes/stat").route->pattern, "/sandboxes/{id}");
}

TEST(HttpRouter, NotFoundAndMethodNotAllowed) {
  Router r = sample_router();
  EXPECT_EQ(r.find("GET", "/nope").kind, Router::Match::kNotFound);
  EXPECT_EQ(r.find("GET", "/sandboxes/").kind, Router::Match::kNotFound);  // empty segment
  EXPECT_EQ(r.find("GET", "//sandboxes").kind, Router::Match::kNotFound);
  EXPECT_EQ(r.find("GET", "/sandboxes/a/exec/x").kind, Router::Match::kNotFound);
  auto m = r.find("PATCH", "/sandboxes/x");
  ASSERT_EQ(m.kind, Router::Match::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "DELETE, GET");
  m = r.find("GET", "/sandboxes/x/exec");
  ASSERT_EQ(m.kind, Router::Match::kMethodNotAllowed);
  EXPECT_EQ(m.allow, "POST");
}

TEST(HttpRouter, RefusesDangerousSegments) {
  Router r = sample_router();
  for (const char* p : {"/sandboxes/..", "/sandboxes/.", "/sandboxes/%2e%2E", "/sandboxes/a%2Fb",
                        "/sandboxes/a%00", "/sandboxes/%zz", "/sandboxes/%4"}) {
    EXPECT_EQ(r.find("GET", p).kind, Router::Match::kBadPath) << p;
  }
  // '+' is literal in paths.
  auto m = r.find("GET", "/sandboxes/a+b");
  ASSERT_EQ(m.kind, Router::Match::kFound);
  EXPECT_EQ(m.params[0].second, "a+b");
}

TEST(HttpRouter, RefusesBadPatterns) {
  Router r;
  const RouteSpec bad[] = {{"GET", "nope"},  {"GET", "/a//b"},   {"GET", "/a/{}"},
                           {"GET", "/a/{x"}, {"GET", "/a/x{y}"}, {"G T", "/a"}};
  for (auto [method, pattern] : bad) {
    EXPECT_FALSE(r.add(method, pattern, ok_handler()).ok()) << method << " " << pattern;
  }
  EXPECT_TRUE(r.add("GET", "/a/{x}", ok_handler()).ok());
  EXPECT_FALSE(r.add("GET", "/a/{y}", ok_handler()).ok()) << "same shape twice";
  EXPECT_TRUE(r.add("POST", "/a/{y}", ok_handler()).ok());
}

TEST(HttpQuery, DecodesPairs) {
  auto q = QueryParams::parse("path=%2Fhome%2Fuser%2Fa%20b.txt&flag&x=1+2&&x=3&empty=");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->get("path"), "/home/user/a b.txt");
  EXPECT_EQ(q->get("flag"), "");
  EXPECT_EQ(q->get("x"), "1 2");
  EXPECT_EQ(q->get("empty"), "");
  EXPECT_FALSE(q->get("missing"));
  EXPECT_EQ(q->entries().size(), 5u);
  EXPECT_TRUE(QueryParams::parse("").ok());
}

TEST(HttpQuery, RejectsBadEncoding) {
  for (const char* bad : {"path=%", "path=%2", "path=%G0", "path=a%00b", "%00=1", "p=%%41"}) {
    auto q = QueryParams::parse(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_EQ(q.error().kind, ErrorKind::kInvalidInput);
  }
}

TEST(HttpQuery, PercentRoundTrip) {
  std::string all;
  for (int c = 1; c < 256; ++c)
    all.push_back(static_cast<char>(c));
  auto dec = percent_decode(percent_encode(all), false);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, all);
  EXPECT_EQ(percent_encode("a b/c~"), "a%20b%2Fc~");
}

}  // namespace
}  // namespace carapace::http
