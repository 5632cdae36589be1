#include "common/http/body_reader.h"

#include <algorithm>
#include <string>

#include "common/http/chunked.h"

namespace carapace::http {
namespace {

BodyStatus from_io(IoStatus st) {
  switch (st) {
    case IoStatus::kOk:
      return BodyStatus::kOk;
    case IoStatus::kClosed:
      return BodyStatus::kClosed;
    case IoStatus::kTimeout:
      return BodyStatus::kTimeout;
    default:
      return BodyStatus::kError;
  }
}

constexpr size_t kPiece = 64 * 1024;

BodyStatus read_length(SocketReader& reader, uint64_t length, const DeadlineFn& deadline,
                       const SinkFn& sink) {
  uint64_t received = 0;
  std::string piece;
  while (received < length) {
    reader.set_deadline(deadline(received));
    piece.clear();
    IoStatus st =
        reader.read_some(piece, static_cast<size_t>(std::min<uint64_t>(kPiece, length - received)));
    if (st != IoStatus::kOk) return from_io(st);
    received += piece.size();
    if (!sink(piece)) return BodyStatus::kStopped;
  }
  return BodyStatus::kOk;
}

BodyStatus read_until_close(SocketReader& reader, uint64_t max_bytes, const DeadlineFn& deadline,
                            const SinkFn& sink) {
  uint64_t received = 0;
  std::string piece;
  for (;;) {
    reader.set_deadline(deadline(received));
    piece.clear();
    IoStatus st = reader.read_some(piece, kPiece);
    if (st == IoStatus::kClosed) return BodyStatus::kOk;
    if (st != IoStatus::kOk) return from_io(st);
    received += piece.size();
    if (received > max_bytes) return BodyStatus::kTooLarge;
    if (!sink(piece)) return BodyStatus::kStopped;
  }
}

BodyStatus read_chunked(SocketReader& reader, uint64_t max_bytes, const DeadlineFn& deadline,
                        const SinkFn& sink) {
  ChunkedDecoder decoder(max_bytes);
  std::string raw;
  std::string decoded;
  for (;;) {
    reader.set_deadline(deadline(decoder.body_size()));
    raw.clear();
    // Take only what is buffered or one recv; bytes after the last chunk must stay in the reader
    // for the next request, so they are pushed back below by consuming exactly `used`.
    IoStatus st = reader.read_some(raw, kPiece);
    if (st != IoStatus::kOk) return from_io(st);
    decoded.clear();
    size_t used = 0;
    auto ds = decoder.feed(raw, decoded, &used);
    if (!decoded.empty() && !sink(decoded)) return BodyStatus::kStopped;
    switch (ds) {
      case ChunkedDecoder::Status::kNeedMore:
        break;
      case ChunkedDecoder::Status::kMalformed:
        return BodyStatus::kMalformed;
      case ChunkedDecoder::Status::kTooLarge:
        return BodyStatus::kTooLarge;
      case ChunkedDecoder::Status::kDone:
        reader.unread(raw.size() - used);
        return BodyStatus::kOk;
    }
  }
}

}  // namespace

BodyStatus read_body(SocketReader& reader, const BodyFraming& framing, uint64_t max_bytes,
                     const DeadlineFn& deadline, const SinkFn& sink) {
  switch (framing.kind) {
    case BodyFraming::kNone:
      return BodyStatus::kOk;
    case BodyFraming::kLength:
      if (framing.length > max_bytes) return BodyStatus::kTooLarge;
      return read_length(reader, framing.length, deadline, sink);
    case BodyFraming::kChunked:
      return read_chunked(reader, max_bytes, deadline, sink);
    case BodyFraming::kUntilClose:
      return read_until_close(reader, max_bytes, deadline, sink);
  }
  return BodyStatus::kError;
}

}  // namespace carapace::http
