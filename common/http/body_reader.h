// Reads one message body off a SocketReader, whatever its framing, for the server (requests) and
// the client (responses). Decoded bytes go to a sink piece by piece, so a streaming consumer
// never holds the whole body.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "common/http/message_parser.h"
#include "common/http/socket_io.h"

namespace carapace::http {

enum class BodyStatus {
  kOk,
  kClosed,  // EOF before the end of the body (kUntilClose: EOF is the end, kOk)
  kTimeout,
  kTooLarge,   // past max_bytes
  kMalformed,  // bad chunked coding
  kError,
  kStopped,  // the sink returned false
};

// The deadline for the next read, given the body bytes received so far: the server grants time
// in proportion to progress, the client waits a fixed time for each piece.
using DeadlineFn = std::function<Clock::time_point(uint64_t received)>;
// Receives each decoded piece; false stops reading.
using SinkFn = std::function<bool(std::string_view piece)>;

BodyStatus read_body(SocketReader& reader, const BodyFraming& framing, uint64_t max_bytes,
                     const DeadlineFn& deadline, const SinkFn& sink);

}  // namespace carapace::http
