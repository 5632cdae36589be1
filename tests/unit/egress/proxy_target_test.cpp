// The proxy's request targets (RFC 9112 3.2.2-3.2.3) and the request it sends on.
#include "egress/proxy/proxy_target.h"

#include <gtest/gtest.h>

#include "common/http/message_parser.h"

namespace carapace::egress {
namespace {

Result<ProxyTarget> target_of(const std::string& head, http::HttpRequest* out = nullptr) {
  http::HttpRequest req;
  if (auto r = http::parse_request_head(head, 100, req, http::TargetForms::kProxy))
    return make_error(std::to_string(r->status) + " " + r->message);
  if (out) *out = req;
  return parse_proxy_target(req);
}

TEST(ProxyTarget, ConnectNeedsHostAndPort) {
  auto t = target_of("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kind, ProxyTarget::Kind::kConnect);
  EXPECT_EQ(t->host, "pypi.org");
  EXPECT_EQ(t->port, 443);
  auto v6 = target_of("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "2001:db8::1");
  EXPECT_EQ(v6->port, 8443);
  EXPECT_FALSE(target_of("CONNECT pypi.org HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT pypi.org:0 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT pypi.org:65536 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT pypi.org:0443 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT pypi.org:+443 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT :443 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT 2001:db8::1:443 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT [2001:db8::1 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT [::1]x:443 HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("CONNECT /pypi.org:443 HTTP/1.1\r\n").ok());
}

TEST(ProxyTarget, UserInformationIsRefused) {
  auto t = target_of("CONNECT user@pypi.org:443 HTTP/1.1\r\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("CONNECT needs an authority-form"), std::string::npos);
  auto f = target_of("GET http://evil.example@pypi.org/ HTTP/1.1\r\n");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("user information"), std::string::npos);
}

TEST(ProxyTarget, AbsoluteFormDefaultsToPort80AndSlash) {
  auto t = target_of("GET http://Example.COM HTTP/1.1\r\n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->kind, ProxyTarget::Kind::kForward);
  EXPECT_EQ(t->host, "Example.COM");  // normalised later, by the policy
  EXPECT_EQ(t->port, 80);
  EXPECT_EQ(t->origin_target, "/");
  auto q = target_of("GET HTTP://files.example:8080?x=1 HTTP/1.1\r\n");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->port, 8080);
  EXPECT_EQ(q->origin_target, "/?x=1");
  auto p = target_of("POST http://[2001:db8::5]:81/a/b?c HTTP/1.0\r\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->host, "2001:db8::5");
  EXPECT_EQ(p->origin_target, "/a/b?c");
}

TEST(ProxyTarget, OnlyProxyFormsAreTaken) {
  auto origin = target_of("GET /index.html HTTP/1.1\r\nHost: x\r\n");
  ASSERT_FALSE(origin.ok());
  EXPECT_NE(origin.error().message.find("400 a proxy request needs an absolute http:// target"),
            std::string::npos);
  auto tls = target_of("GET https://pypi.org/ HTTP/1.1\r\n");
  ASSERT_FALSE(tls.ok());
  EXPECT_NE(tls.error().message.find("needs CONNECT"), std::string::npos);
  EXPECT_FALSE(target_of("GET http:// HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("GET ftp://x/ HTTP/1.1\r\n").ok());
  EXPECT_FALSE(target_of("GET http://x/#frag HTTP/1.1\r\n").ok());
  // The origin server's parser is unchanged: absolute-form stays refused there.
  http::HttpRequest req;
  EXPECT_TRUE(http::parse_request_head("GET http://x/ HTTP/1.1\r\n", 100, req).has_value());
}

TEST(ProxyTarget, ForwardedHeadIsOriginFormWithoutHopByHopFields) {
  http::HttpRequest req;
  auto t = target_of(
      "POST http://api.example:8080/v1/x?y=2 HTTP/1.1\r\nHost: attacker.example\r\n"
      "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic abc\r\nConnection: X-Secret, "
      "keep-alive\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\n"
      "Content-Length: 3\r\nAccept: */*\r\n",
      &req);
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::string head = forward_request_head(req, *t);
  EXPECT_EQ(head,
            "POST /v1/x?y=2 HTTP/1.1\r\nHost: api.example:8080\r\nContent-Length: 3\r\n"
            "Accept: */*\r\nConnection: close\r\n\r\n");
  auto v6 = target_of("GET http://[2001:db8::5]/ HTTP/1.0\r\n", &req);
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(forward_request_head(req, *v6),
            "GET / HTTP/1.0\r\nHost: [2001:db8::5]\r\nConnection: close\r\n\r\n");
}

}  // namespace
}  // namespace carapace::egress
