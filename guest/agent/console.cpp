#include "guest/agent/console.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

namespace carapace::agent {
namespace {

std::atomic<int> g_fd{STDERR_FILENO};

}  // namespace

void console_use_device() {
  int fd = ::open("/dev/console", O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd >= 0) g_fd.store(fd);
}

int console_fd() {
  return g_fd.load();
}

void console_write(std::string_view bytes) {
  int fd = g_fd.load();
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere else to report it
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void console_line(const char* fmt, ...) {
  char buf[1024];
  int prefix = snprintf(buf, sizeof buf, "carapace-agent: ");
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + prefix, sizeof buf - prefix - 1, fmt, ap);
  va_end(ap);
  size_t len = prefix + (n < 0 ? 0 : std::min<size_t>(n, sizeof buf - prefix - 2));
  buf[len++] = '\n';
  console_write(std::string_view(buf, len));
}

}  // namespace carapace::agent
