#include "vmm/base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace carapace {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
const char* const kNames[] = {"error", "warn", "info", "debug"};
}  // namespace

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level));
}
LogLevel log_level() {
  return static_cast<LogLevel>(g_level.load());
}

void log_message(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed)) return;
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "carapace: %s: ", kNames[static_cast<int>(level)]);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
  va_end(ap);
  size_t len = n + (m < 0 ? 0 : (m >= int(sizeof buf) - n - 1 ? sizeof buf - n - 2 : size_t(m)));
  buf[len++] = '\n';
  // One write per line so lines from several threads do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, buf, len);
  (void)ignored;
}

}  // namespace carapace
