// Routes that several HTTP test routers serve alike, so each test file keeps only the routes
// that are its own.
#pragma once

#include <cstdint>

#include "common/http/router.h"

namespace carapace::http::test {

// GET /status: 200 {"ok": true}.
void add_ok_status_route(Router& r);
// PUT /upload: 200 {"bytes": <body size>}, bodies up to `max_body_bytes`.
void add_upload_route(Router& r, uint64_t max_body_bytes);
// GET /stream: a chunked text/plain stream of five lines, "line 0\n" to "line 4\n".
void add_five_line_stream_route(Router& r);

}  // namespace carapace::http::test
