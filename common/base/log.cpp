#include "common/base/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>

namespace carapace {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
const char* const kNames[] = {"error", "warn", "info", "debug"};

// A guest can provoke warnings (a bad descriptor, a refused packet) as fast as it likes, so the
// lines that reach stderr — a file the daemon keeps per VM — are bounded (docs/security.md #29): a
// bucket of kBurstLines refilled at kLinesPerSecond, and kMaxLogBytes over the process's life.
// Dropped lines are counted; the next line that passes says how many. At --log-level debug the
// operator asked for everything, so only the byte cap applies.
constexpr double kBurstLines = 200;
constexpr double kLinesPerSecond = 20;
constexpr uint64_t kMaxLogBytes = 16ull << 20;

std::mutex g_limit_mu;
double g_tokens = kBurstLines;
std::chrono::steady_clock::time_point g_last_refill = std::chrono::steady_clock::now();
uint64_t g_bytes_written = 0;
uint64_t g_unreported_drops = 0;
std::atomic<uint64_t> g_dropped{0};

// Whether a line of `len` bytes may be written; on true, `pending_drops` is the number of lines
// dropped since the last line that passed.
bool admit_line(size_t len, uint64_t& pending_drops) {
  std::lock_guard<std::mutex> lock(g_limit_mu);
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - g_last_refill).count();
  g_last_refill = now;
  g_tokens = std::min(kBurstLines, g_tokens + elapsed * kLinesPerSecond);
  const bool rate_ok =
      g_level.load(std::memory_order_relaxed) >= static_cast<int>(LogLevel::kDebug) ||
      g_tokens >= 1;
  if (!rate_ok || g_bytes_written + len > kMaxLogBytes) {
    ++g_unreported_drops;
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  g_tokens = std::max(0.0, g_tokens - 1);
  g_bytes_written += len;
  pending_drops = g_unreported_drops;
  g_unreported_drops = 0;
  return true;
}
}  // namespace

uint64_t log_lines_dropped() {
  return g_dropped.load(std::memory_order_relaxed);
}

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
  uint64_t drops = 0;
  if (!admit_line(len, drops)) return;
  if (drops > 0) {
    char note[96];
    int k = snprintf(note, sizeof note, "carapace: warn: %llu log lines dropped (rate limit)\n",
                     static_cast<unsigned long long>(drops));
    ssize_t ignored = ::write(STDERR_FILENO, note, static_cast<size_t>(k));
    (void)ignored;
  }
  // One write per line so lines from several threads do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, buf, len);
  (void)ignored;
}

}  // namespace carapace
