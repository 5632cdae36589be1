// Pure parsing: request and response heads, framing rules, the chunked decoder.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "common/http/chunked.h"
#include "common/http/message_parser.h"

namespace carapace::http {
namespace {

using namespace std::string_literals;

std::optional<Rejection> parse(std::string head, HttpRequest& out, size_t max_headers = 100) {
  return parse_request_head(head, max_headers, out);
}

int status_of(std::string head) {
  HttpRequest r;
  auto rej = parse(std::move(head), r);
  return rej ? rej->status : 0;
}

// Each head gets `status` (0: accepted); a failure names the head.
void expect_status(int status, std::initializer_list<std::string> heads) {
  for (const std::string& head : heads)
    EXPECT_EQ(status_of(head), status) << head;
}

TEST(HttpMessage, ParsesRequestLineAndHeaders) {
  HttpRequest r;
  ASSERT_FALSE(
      parse("POST /sandboxes/a%20b/exec?x=1&y=2 HTTP/1.1\r\nHost: localhost\r\n"
            "content-TYPE:   application/json  \r\nX-Empty:\r\n",
            r));
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/sandboxes/a%20b/exec?x=1&y=2");
  EXPECT_EQ(r.path, "/sandboxes/a%20b/exec");
  EXPECT_EQ(r.query_string, "x=1&y=2");
  EXPECT_EQ(r.minor_version, 1);
  EXPECT_EQ(r.headers.get("Content-Type"), "application/json");
  EXPECT_EQ(r.headers.get("x-empty"), "");
  EXPECT_FALSE(r.headers.has("Content-Length"));
}

TEST(HttpMessage, AcceptsHttp10) {
  HttpRequest r;
  ASSERT_FALSE(parse("GET / HTTP/1.0\r\n", r));
  EXPECT_EQ(r.minor_version, 0);
  EXPECT_FALSE(wants_keep_alive(r));
  r.headers.add("Connection", "Keep-Alive");
  EXPECT_TRUE(wants_keep_alive(r));
}

TEST(HttpMessage, RejectsMalformedRequestLines) {
  expect_status(
      400, {"GET /\r\n", "GET  / HTTP/1.1\r\n", "GET / HTTP/1.1 extra\r\n", "GET / HTTP/1.1 \r\n",
            " GET / HTTP/1.1\r\n", "G(T / HTTP/1.1\r\n", "GET relative HTTP/1.1\r\n",
            "GET http://evil/ HTTP/1.1\r\n", "GET * HTTP/1.1\r\n", "GET /a\x01 HTTP/1.1\r\n",
            "GET /a\0b HTTP/1.1\r\n"s, "GET /\xff HTTP/1.1\r\n", "GET /#frag HTTP/1.1\r\n",
            "GET / HTTP/1.1\nHost: x\r\n", "GET / HTTP/1.1\rHost: x\r\n",
            std::string(40, 'A') + " / HTTP/1.1\r\n"});
}

TEST(HttpMessage, RejectsBadVersions) {
  for (const char* v : {"HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "http/1.1", "HTTP/1.1x", "HTTP/1",
                        "FTP/1.1", "HTTP/11.1", "HTTP/1.01"}) {
    EXPECT_EQ(status_of(std::string("GET / ") + v + "\r\n"), 400) << v;
  }
}

TEST(HttpMessage, UnknownMethodIs501) {
  EXPECT_EQ(status_of("BREW / HTTP/1.1\r\n"), 501);
  EXPECT_EQ(status_of("get / HTTP/1.1\r\n"), 501);  // methods are case-sensitive
}

TEST(HttpMessage, RejectsMalformedHeaders) {
  expect_status(400,
                {"GET / HTTP/1.1\r\nNoColon\r\n", "GET / HTTP/1.1\r\nBad Name: x\r\n",
                 "GET / HTTP/1.1\r\nName : x\r\n", "GET / HTTP/1.1\r\n: x\r\n",
                 "GET / HTTP/1.1\r\nA: x\r\n  folded\r\n", "GET / HTTP/1.1\r\nA: x\0y\r\n"s,
                 "GET / HTTP/1.1\r\nA: x\x7fy\r\n", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n"});
  // obs-text in values is allowed (RFC 9110 5.5).
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nA: caf\xc3\xa9\r\n"), 0);
}

TEST(HttpMessage, TooManyHeadersIs431) {
  std::string head = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 5; ++i)
    head += "X-" + std::to_string(i) + ": v\r\n";
  HttpRequest r;
  EXPECT_FALSE(parse(head, r, 5));
  HttpRequest r2;
  auto rej = parse(head + "X-6: v\r\n", r2, 5);
  ASSERT_TRUE(rej);
  EXPECT_EQ(rej->status, 431);
}

int framing_status(std::string head, BodyFraming* out = nullptr) {
  HttpRequest r;
  if (auto rej = parse(std::move(head), r)) return rej->status;
  BodyFraming f;
  auto rej = request_framing(r, f);
  if (out) *out = f;
  return rej ? rej->status : 0;
}

TEST(HttpMessage, RequestFraming) {
  BodyFraming f;
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\n", &f), 0);
  EXPECT_EQ(f.kind, BodyFraming::kNone);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: 12\r\n", &f), 0);
  EXPECT_EQ(f.kind, BodyFraming::kLength);
  EXPECT_EQ(f.length, 12u);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: 0\r\n", &f), 0);
  EXPECT_EQ(f.kind, BodyFraming::kNone);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n", &f), 0);
  EXPECT_EQ(f.kind, BodyFraming::kChunked);
}

TEST(HttpMessage, RefusesAmbiguousFraming) {
  // Request smuggling shapes: each must be refused, not interpreted.
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: "
                           "chunked\r\n"),
            400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: -1\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: +5\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: 0x10\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nContent-Length:\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n"), 400);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n"), 501);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n"), 501);
  EXPECT_EQ(framing_status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                           "Transfer-Encoding: chunked\r\n"),
            501);
}

TEST(HttpMessage, ResponseHeadAndFraming) {
  HttpHeaders h;
  auto s = parse_response_head("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n", 10, h);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 404);
  auto f = response_framing("GET", 404, h);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, BodyFraming::kLength);
  EXPECT_EQ(response_framing("HEAD", 200, h)->kind, BodyFraming::kNone);
  EXPECT_EQ(response_framing("GET", 204, HttpHeaders{})->kind, BodyFraming::kNone);
  EXPECT_EQ(response_framing("GET", 200, HttpHeaders{})->kind, BodyFraming::kUntilClose);
  HttpHeaders h2;
  EXPECT_TRUE(parse_response_head("HTTP/1.1 200\r\n", 10, h2));
  EXPECT_FALSE(parse_response_head("HTTP/1.1 20 OK\r\n", 10, h2));
  EXPECT_FALSE(parse_response_head("HTTP/1.1 abc OK\r\n", 10, h2));
  EXPECT_FALSE(parse_response_head("HTTP/1.1 200OK\r\n", 10, h2));
}

TEST(HttpMessage, LoopbackHost) {
  auto check = [](const char* host) {
    HttpHeaders h;
    h.add("Host", host);
    return host_is_loopback(h);
  };
  EXPECT_TRUE(check("localhost"));
  EXPECT_TRUE(check("LocalHost:8080"));
  EXPECT_TRUE(check("127.0.0.1:1"));
  EXPECT_TRUE(check("[::1]:80"));
  EXPECT_TRUE(check("[::1]"));
  EXPECT_FALSE(check("evil.example"));
  EXPECT_FALSE(check("localhost.evil.example"));
  EXPECT_FALSE(check("127.0.0.1:"));
  EXPECT_FALSE(check("127.0.0.1:80x"));
  EXPECT_FALSE(check("[::1"));
  EXPECT_FALSE(check("[::1]x"));
  EXPECT_FALSE(host_is_loopback(HttpHeaders{}));
}

TEST(HttpMessage, HeadersAreCaseInsensitive) {
  HttpHeaders h{{"Connection", "keep-alive, Upgrade"}, {"X-A", "1"}};
  EXPECT_TRUE(h.has_token("connection", "upgrade"));
  EXPECT_FALSE(h.has_token("connection", "close"));
  h.set("x-a", "2");
  EXPECT_EQ(h.count("X-A"), 1u);
  EXPECT_EQ(h.get("X-a"), "2");
  h.remove("X-A");
  EXPECT_FALSE(h.has("x-a"));
}

// Feeds `wire` to a decoder in pieces of `step` bytes.
ChunkedDecoder::Status decode(std::string_view wire, std::string& out, uint64_t max = 1 << 20,
                              size_t step = 1, size_t* leftover = nullptr) {
  ChunkedDecoder d(max);
  size_t off = 0;
  auto st = ChunkedDecoder::Status::kNeedMore;
  while (off < wire.size()) {
    size_t used = 0;
    std::string_view piece = wire.substr(off, step);
    st = d.feed(piece, out, &used);
    off += used;
    if (st != ChunkedDecoder::Status::kNeedMore) break;
    EXPECT_EQ(used, piece.size());
  }
  if (leftover) *leftover = wire.size() - off;
  return st;
}

TEST(HttpChunked, DecodesWholeAndBytewise) {
  std::string wire = "5\r\nhello\r\nA;ext=1\r\n, chunked!\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  for (size_t step : {1u, 3u, 7u, 1000u}) {
    std::string out;
    size_t leftover = 0;
    EXPECT_EQ(decode(wire, out, 1 << 20, step, &leftover), ChunkedDecoder::Status::kDone) << step;
    EXPECT_EQ(out, "hello, chunked!");
    EXPECT_EQ(leftover, 4u) << "bytes after the body belong to the next request";
  }
}

TEST(HttpChunked, RoundTripsEncoder) {
  std::string data(100000, 'x');
  std::string wire = encode_chunk(data.substr(0, 4096)) + encode_chunk(data.substr(4096)) +
                     encode_chunk("") + std::string(kLastChunk);
  std::string out;
  EXPECT_EQ(decode(wire, out, 1 << 20, 999), ChunkedDecoder::Status::kDone);
  EXPECT_EQ(out, data);
  EXPECT_EQ(encode_chunk("abc"), "3\r\nabc\r\n");
}

TEST(HttpChunked, RejectsMalformed) {
  for (const char* bad :
       {"\r\n", "x\r\n", "5\nhello\r\n0\r\n\r\n", "5\r\nhelloX\r\n", "5\r\nhello\rX", "-5\r\n",
        "5\x01\r\n", "5;a\nb\r\n", "0\r\nTrailer\nx\r\n\r\n", "0\r\n\rX"}) {
    std::string out;
    EXPECT_EQ(decode(bad, out), ChunkedDecoder::Status::kMalformed) << bad;
  }
  std::string long_ext = "5;" + std::string(2000, 'a') + "\r\n";
  std::string out;
  EXPECT_EQ(decode(long_ext, out), ChunkedDecoder::Status::kMalformed);
  std::string long_trailer = "0\r\nX: " + std::string(10000, 'a') + "\r\n\r\n";
  EXPECT_EQ(decode(long_trailer, out), ChunkedDecoder::Status::kMalformed);
}

TEST(HttpChunked, SizeCapCheckedBeforeData) {
  std::string out;
  // The declared size alone passes the cap: refused before any data byte arrives.
  EXPECT_EQ(decode("11\r\n", out, 16), ChunkedDecoder::Status::kTooLarge);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(decode("8\r\n12345678\r\n9\r\n", out, 16), ChunkedDecoder::Status::kTooLarge);
  // 64-bit overflow of the size.
  EXPECT_EQ(decode("ffffffffffffffffff\r\n", out, UINT64_MAX), ChunkedDecoder::Status::kTooLarge);
  EXPECT_EQ(decode("0000000000000000001\r\n", out, UINT64_MAX), ChunkedDecoder::Status::kTooLarge);
  std::string ok;
  EXPECT_EQ(decode("10\r\n0123456789abcdef\r\n0\r\n\r\n", ok, 16), ChunkedDecoder::Status::kDone);
}

TEST(HttpChunked, StaysFailed) {
  ChunkedDecoder d(100);
  std::string out;
  size_t used;
  EXPECT_EQ(d.feed("zz", out, &used), ChunkedDecoder::Status::kMalformed);
  EXPECT_EQ(d.feed("0\r\n\r\n", out, &used), ChunkedDecoder::Status::kMalformed);
}

}  // namespace
}  // namespace carapace::http
