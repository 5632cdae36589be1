#include "vmm/devices/vsock/vsock_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace carapace::vsock {

namespace {

// Enough iovecs for one 64 KiB packet in page-sized pieces; a chain cut finer is sent in turns.
constexpr size_t kMaxIov = 32;

// Up to kMaxIov slices of the next `max` bytes of a ChainReader or ChainWriter, taken from a copy
// so `stream` itself does not move; *bytes says how many they hold.
template <typename ChainStream>
size_t gather_slices(ChainStream stream, size_t max, std::array<iovec, kMaxIov>& iov,
                     size_t* bytes) {
  size_t count = 0;
  *bytes = 0;
  while (count < iov.size() && *bytes < max) {
    auto slice = stream.next_slice(max - *bytes);
    if (!slice.ok() || slice->empty()) break;
    iov[count++] = {slice->data(), slice->size()};
    *bytes += slice->size();
  }
  return count;
}

bool would_block(int err) {
  return err == EAGAIN || err == EWOULDBLOCK;
}

// send(2) that never raises SIGPIPE and never blocks; -1/errno as send.
ssize_t send_some(int fd, const iovec* iov, size_t count) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = count;
  ssize_t n;
  do {
    n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n;
}

// Sends `bytes`; *sent says how many went. kBlocked when the socket took fewer.
Io send_bytes(int fd, std::span<const uint8_t> bytes, size_t* sent) {
  *sent = 0;
  while (*sent < bytes.size()) {
    iovec iov{const_cast<uint8_t*>(bytes.data() + *sent), bytes.size() - *sent};
    const ssize_t n = send_some(fd, &iov, 1);
    if (n < 0) return would_block(errno) ? Io::kBlocked : Io::kClosed;
    *sent += static_cast<size_t>(n);
  }
  return Io::kDone;
}

}  // namespace

void OutBuffer::consume(size_t n) {
  head_ += std::min(n, size());
  if (head_ == data_.size()) {
    // Empty: give the memory back (a stalled reader's burst must not stay resident).
    std::vector<uint8_t>().swap(data_);
    head_ = 0;
  } else if (head_ >= 64 * 1024 && head_ * 2 >= data_.size()) {
    data_.erase(data_.begin(), data_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

Status OutBuffer::append(virtio::ChainReader& reader, size_t n) {
  if (n > reader.available()) return as_invalid_input(make_error("vsock: short payload"));
  const size_t old = data_.size();
  data_.resize(old + n);
  auto s = reader.read(std::span<uint8_t>(data_).subspan(old));
  if (!s.ok()) data_.resize(old);
  return s;
}

Io flush_to_host(Connection& c) {
  if (!c.fd.valid()) return Io::kClosed;
  if (!c.prefix.empty()) {
    size_t sent = 0;
    const Io r = send_bytes(
        c.fd.get(), {reinterpret_cast<const uint8_t*>(c.prefix.data()), c.prefix.size()}, &sent);
    c.prefix.erase(0, sent);
    if (r != Io::kDone) {
      if (r == Io::kBlocked) c.host_writable = false;
      return r;
    }
  }
  while (!c.out.empty()) {
    size_t sent = 0;
    const Io r = send_bytes(c.fd.get(), c.out.front(), &sent);
    c.out.consume(sent);
    c.fwd_cnt += static_cast<uint32_t>(sent);  // wrapping, as the spec counts
    if (r != Io::kDone) {
      if (r == Io::kBlocked) c.host_writable = false;
      return r;
    }
  }
  return Io::kDone;
}

Io forward_to_host(Connection& c, virtio::ChainReader& payload, size_t n) {
  c.rx_cnt += static_cast<uint32_t>(n);
  size_t left = n;
  // Straight from guest memory to the socket while nothing is queued ahead of these bytes.
  while (left > 0 && c.fd.valid() && c.host_writable && c.prefix.empty() && c.out.empty()) {
    std::array<iovec, kMaxIov> iov;
    size_t batch = 0;
    // Slices are consumed from a copy of the reader; what the socket does not accept is copied
    // from `payload`, skipped to the first unsent byte.
    const size_t count = gather_slices(payload, left, iov, &batch);
    if (count == 0) break;
    const ssize_t sent = send_some(c.fd.get(), iov.data(), count);
    if (sent < 0) {
      if (!would_block(errno)) return Io::kClosed;
      c.host_writable = false;
      break;
    }
    (void)payload.skip(static_cast<size_t>(sent));
    left -= static_cast<size_t>(sent);
    c.fwd_cnt += static_cast<uint32_t>(sent);
    if (static_cast<size_t>(sent) < batch) c.host_writable = false;
  }
  if (left == 0) return Io::kDone;
  if (!c.out.append(payload, left).ok()) return Io::kClosed;  // cannot happen: len was checked
  return c.host_writable ? flush_to_host(c) : Io::kBlocked;
}

Io read_from_host(Connection& c, virtio::ChainWriter& payload, size_t max, size_t* n, bool* eof) {
  *n = 0;
  *eof = false;
  if (!c.fd.valid()) return Io::kClosed;
  std::array<iovec, kMaxIov> iov;
  size_t total = 0;
  const size_t count = gather_slices(payload, max, iov, &total);
  if (count == 0) return Io::kBlocked;
  ssize_t r;
  do {
    r = ::readv(c.fd.get(), iov.data(), static_cast<int>(count));
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (would_block(errno)) {
      c.host_readable = false;
      return Io::kBlocked;
    }
    return Io::kClosed;
  }
  if (r == 0) {
    *eof = true;
    return Io::kClosed;
  }
  *n = static_cast<size_t>(r);
  (void)payload.skip(*n);
  return Io::kDone;
}

}  // namespace carapace::vsock
