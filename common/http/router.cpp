#include "common/http/router.h"

#include <algorithm>

#include "common/http/query.h"
#include "common/http/response_writer.h"

namespace carapace::http {
namespace {

bool is_param(std::string_view seg) {
  return seg.size() > 2 && seg.front() == '{' && seg.back() == '}';
}

// "/a/b" -> {"a", "b"}; "/" -> {}. Empty segments ("//", a trailing '/') are kept as "", which
// no pattern matches.
std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  if (path.size() <= 1) return out;
  path.remove_prefix(1);
  for (;;) {
    size_t slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace

Status Router::add_streaming(std::string method, std::string_view pattern, Handler handler,
                             RouteOptions options) {
  if (!is_token(method)) return make_error("route: invalid method '" + method + "'");
  if (pattern.empty() || pattern[0] != '/')
    return make_error("route: pattern must start with /: " + std::string(pattern));
  Route r{std::move(method), std::string(pattern), {}, std::move(handler), options};
  for (std::string_view seg : split_path(pattern)) {
    bool braces = seg.find_first_of("{}") != std::string_view::npos;
    if (seg.empty() || (braces && !is_param(seg)))
      return make_error("route: bad segment in " + r.pattern);
    if (is_param(seg) && seg.substr(1, seg.size() - 2).find_first_of("{}") != std::string::npos)
      return make_error("route: bad parameter in " + r.pattern);
    r.segments.emplace_back(seg);
  }
  for (const Route& o : routes_) {
    if (o.method == r.method && o.segments.size() == r.segments.size()) {
      bool same = true;
      for (size_t i = 0; i < o.segments.size() && same; ++i) {
        bool p1 = is_param(o.segments[i]);
        same = p1 == is_param(r.segments[i]) && (p1 || o.segments[i] == r.segments[i]);
      }
      if (same) return make_error("route: duplicate " + r.method + " " + r.pattern);
    }
  }
  routes_.push_back(std::move(r));
  return ok_status();
}

Status Router::add(std::string method, std::string_view pattern, SimpleHandler handler,
                   RouteOptions options) {
  return add_streaming(
      std::move(method), pattern,
      [h = std::move(handler)](HttpRequest& req, ResponseWriter& w) { (void)w.send(h(req)); },
      options);
}

Router::Match Router::find(std::string_view method, std::string_view raw_path) const {
  Match m;
  std::vector<std::string> segs;
  for (std::string_view raw : split_path(raw_path)) {
    auto dec = percent_decode(raw, /*plus_is_space=*/false);
    if (!dec) {
      m.kind = Match::kBadPath;
      m.error = "path: " + dec.error().message;
      return m;
    }
    if (*dec == "." || *dec == ".." || dec->find('/') != std::string::npos) {
      m.kind = Match::kBadPath;
      // The segment itself stays out of the message: decoded, it may hold control bytes.
      m.error = "path segments may not be '.' or '..' or hold an encoded '/'";
      return m;
    }
    segs.push_back(std::move(*dec));
  }

  int best_literals = -1;
  std::vector<std::string> allowed;
  for (const Route& r : routes_) {
    if (r.segments.size() != segs.size()) continue;
    int literals = 0;
    bool ok = true;
    for (size_t i = 0; i < segs.size() && ok; ++i) {
      if (is_param(r.segments[i])) {
        ok = !segs[i].empty();
      } else {
        ok = r.segments[i] == segs[i];
        ++literals;
      }
    }
    if (!ok) continue;
    if (r.method != method) {
      allowed.push_back(r.method);
      continue;
    }
    if (literals > best_literals) {
      best_literals = literals;
      m.route = &r;
    }
  }
  if (m.route) {
    m.kind = Match::kFound;
    for (size_t i = 0; i < segs.size(); ++i) {
      const std::string& s = m.route->segments[i];
      if (is_param(s)) m.params.emplace_back(s.substr(1, s.size() - 2), segs[i]);
    }
    return m;
  }
  if (allowed.empty()) return m;  // kNotFound
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  m.kind = Match::kMethodNotAllowed;
  for (const auto& a : allowed)
    m.allow += (m.allow.empty() ? "" : ", ") + a;
  return m;
}

}  // namespace carapace::http
