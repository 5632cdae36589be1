#include "daemon/core/json_log.h"

#include <unistd.h>

#include <atomic>
#include <ctime>
#include <mutex>

namespace carapace::service {
namespace {

std::mutex g_log_mu;
std::atomic<int> g_log_fd{STDERR_FILENO};

}  // namespace

void set_json_log_fd(int fd) {
  g_log_fd = fd;
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

void json_log(std::string_view level, std::string_view msg, const nlohmann::json& fields) {
  nlohmann::json line = {
      {"ts", rfc3339(std::chrono::system_clock::now())}, {"level", level}, {"msg", msg}};
  if (fields.is_object()) {
    for (const auto& [k, v] : fields.items())
      line[k] = v;
  }
  // Guest-provided strings may hold invalid UTF-8: replaced, never thrown.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(g_log_mu);
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(g_log_fd.load(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to log to: dropping the line is all that is left
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace carapace::service
