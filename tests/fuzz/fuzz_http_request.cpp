// Fuzzes what an API client controls in the HTTP/1.1 layer (common/http): request heads, the
// framing and host checks, query strings and routing, the chunked body decoder; and what a
// daemon controls for the client side: response heads and their framing.
//
// Input: [mode:1] then
//   mode % 5 == 0 (request head): [max_headers:1] then the head (lines ending in CRLF, without
//     the final empty line, as SocketReader::read_head hands it over). An accepted head goes on
//     through request_framing, keep-alive, the loopback Host and bearer-token checks, the query
//     parser and a router holding the daemon's route shapes, as a connection would.
//   mode % 5 == 1 (response head): [method:1][max_headers:1] then the head; response_framing.
//   mode % 5 == 2 (chunked body): [max_body:4][npieces:1] npieces x [len:2], then the body. It is
//     fed in those pieces (what is left over after each kDone-or-failure is dropped) and the
//     result must be exactly what one feed of the whole body gives: the decoder keeps its state
//     between pieces, so where a read happens to split the bytes must never change the outcome.
//   mode % 5 == 3 (percent coding): [plus:1] then text: percent_decode, and the round trip
//     percent_decode(percent_encode(text)) == text for text without NUL.
//   mode % 5 == 4 (query string): QueryParams::parse of the rest.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/http/auth.h"
#include "common/http/chunked.h"
#include "common/http/message_parser.h"
#include "common/http/query.h"
#include "common/http/response_writer.h"
#include "common/http/router.h"
#include "tests/fuzz/fuzz_memory.h"
#include "tests/fuzz/fuzz_modes.h"

using namespace carapace;
using namespace carapace::http;
using carapace::fuzz::Input;

namespace {

const Router& daemon_like_router() {
  static const Router* router = [] {
    auto* r = new Router();
    const char* routes[][2] = {
        {"GET", "/health"},
        {"GET", "/metrics"},
        {"POST", "/templates"},
        {"GET", "/templates/{id}"},
        {"DELETE", "/templates/{id}"},
        {"POST", "/sandboxes"},
        {"GET", "/sandboxes/stats"},
        {"GET", "/sandboxes/{id}"},
        {"POST", "/sandboxes/{id}/exec"},
        {"PUT", "/sandboxes/{id}/files"},
        {"GET", "/sandboxes/{id}/files"},
        {"GET", "/sandboxes/{id}/files/list"},
        {"POST", "/sandboxes/{id}/fork"},
    };
    for (const auto& [method, pattern] : routes) {
      if (!r->add(method, pattern, [](const HttpRequest&) { return HttpResponse{}; }).ok())
        __builtin_trap();
    }
    return r;
  }();
  return *router;
}

std::string_view rest_of(const Input& in) {
  return {reinterpret_cast<const char*>(in.data()), in.size()};
}

void fuzz_request_head(Input& in) {
  const size_t max_headers = in.take<uint8_t>();
  HttpRequest req;
  if (auto rejected = parse_request_head(rest_of(in), max_headers, req)) {
    if (rejected->status < 400 || rejected->status > 599) __builtin_trap();
    return;
  }
  if (!is_token(req.method) || req.path.empty() || req.path[0] != '/') __builtin_trap();
  if (req.headers.size() > max_headers) __builtin_trap();
  BodyFraming framing;
  if (auto rejected = request_framing(req, framing)) {
    if (rejected->status < 400 || rejected->status > 599) __builtin_trap();
  } else if (framing.kind == BodyFraming::kLength && framing.length == 0) {
    __builtin_trap();  // an empty body is kNone
  }
  (void)wants_keep_alive(req);
  (void)host_is_loopback(req.headers);
  (void)bearer_token_matches(req.headers, "0123456789abcdef0123456789abcdef");
  (void)QueryParams::parse(req.query_string);
  Router::Match m = daemon_like_router().find(req.method, req.path);
  if (m.kind == Router::Match::kFound && m.route == nullptr) __builtin_trap();
  for (const auto& [name, value] : m.params) {
    // The router's promise to handlers: no parameter can become a path outside its folder.
    if (value.empty() || value == "." || value == ".." ||
        value.find_first_of(std::string_view("/\0", 2)) != std::string::npos)
      __builtin_trap();
  }
}

void fuzz_response_head(Input& in) {
  static constexpr std::string_view kMethods[] = {"GET", "HEAD", "POST", "PUT"};
  const std::string_view method = kMethods[in.take<uint8_t>() % 4];
  const size_t max_headers = in.take<uint8_t>();
  HttpHeaders headers;
  auto line = parse_response_head(rest_of(in), max_headers, headers);
  if (!line.ok()) return;
  if (line->status < 100 || line->status > 599) __builtin_trap();
  (void)response_framing(method, line->status, headers);
}

struct Decoded {
  ChunkedDecoder::Status status;
  std::string out;
  size_t consumed;  // of the whole body, up to kDone or the failure
};

Decoded decode_in_pieces(std::string_view body, uint64_t max_body,
                         const std::vector<size_t>& pieces) {
  ChunkedDecoder d(max_body);
  Decoded r{ChunkedDecoder::Status::kNeedMore, {}, 0};
  size_t at = 0;
  for (size_t i = 0; i <= pieces.size() && at < body.size(); ++i) {
    const size_t len = i < pieces.size() ? std::min(pieces[i], body.size() - at) : body.size() - at;
    size_t used = 0;
    r.status = d.feed(body.substr(at, len), r.out, &used);
    if (used > len) __builtin_trap();
    r.consumed = at + used;
    if (r.status != ChunkedDecoder::Status::kNeedMore) break;
    if (used != len) __builtin_trap();  // kNeedMore takes every byte it is given
    at += len;
  }
  if (d.body_size() != r.out.size() || r.out.size() > max_body) __builtin_trap();
  return r;
}

void fuzz_chunked(Input& in) {
  uint64_t max_body = in.take<uint32_t>();
  const size_t npieces = in.take<uint8_t>() % 32;
  std::vector<size_t> pieces;
  for (size_t i = 0; i < npieces; ++i)
    pieces.push_back(in.take<uint16_t>() % 512);
  const std::string_view body = rest_of(in);
  Decoded whole = decode_in_pieces(body, max_body, {});
  Decoded split = decode_in_pieces(body, max_body, pieces);
  if (whole.status != split.status || whole.out != split.out) __builtin_trap();
  if (whole.status == ChunkedDecoder::Status::kDone && whole.consumed != split.consumed)
    __builtin_trap();
  // What the encoder writes, the decoder reads back.
  if (whole.status == ChunkedDecoder::Status::kDone && !whole.out.empty()) {
    std::string again = encode_chunk(whole.out) + std::string(kLastChunk);
    Decoded back = decode_in_pieces(again, max_body, pieces);
    if (back.status != ChunkedDecoder::Status::kDone || back.out != whole.out) __builtin_trap();
  }
}

void fuzz_percent(Input& in) {
  const bool plus = in.take<uint8_t>() & 1;
  const std::string_view text = rest_of(in);
  (void)percent_decode(text, plus);
  if (text.find('\0') != std::string_view::npos) return;
  auto back = percent_decode(percent_encode(text), plus);
  if (!back.ok() || *back != text) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return fuzz::run_one_mode(data, size,
                            {fuzz_request_head, fuzz_response_head, fuzz_chunked, fuzz_percent,
                             [](Input& in) { (void)QueryParams::parse(rest_of(in)); }});
}
