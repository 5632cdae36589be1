#include "tests/unit/api/http_test_routes.h"

#include <gtest/gtest.h>

#include <string>

#include "common/http/json_util.h"
#include "common/http/response_writer.h"

namespace carapace::http::test {

void add_ok_status_route(Router& r) {
  EXPECT_TRUE(r.add("GET", "/status", [](const HttpRequest&) {
                 return json_response(200, {{"ok", true}});
               }).ok());
}

void add_upload_route(Router& r, uint64_t max_body_bytes) {
  EXPECT_TRUE(r.add(
                   "PUT", "/upload",
                   [](const HttpRequest& req) {
                     return json_response(200, {{"bytes", req.body.size()}});
                   },
                   RouteOptions{.max_body_bytes = max_body_bytes})
                  .ok());
}

void add_five_line_stream_route(Router& r) {
  EXPECT_TRUE(r.add_streaming("GET", "/stream", [](HttpRequest&, ResponseWriter& w) {
                 if (!w.begin_stream(200, {{"Content-Type", "text/plain"}})) return;
                 for (int i = 0; i < 5; ++i) {
                   if (!w.write_chunk("line " + std::to_string(i) + "\n")) return;
                 }
                 (void)w.finish();
               }).ok());
}

}  // namespace carapace::http::test
