// Minimal leveled logging to stderr. The VMM logs one line per event; the guest console never
// goes through here (it has its own bounded sink).
#pragma once

#include <cstdarg>
#include <cstdint>

namespace carapace {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Lines not written because of the rate or size limit (docs/security.md #29; see log.cpp).
uint64_t log_lines_dropped();

}  // namespace carapace

#define LOG_ERROR(...) ::carapace::log_message(::carapace::LogLevel::kError, __VA_ARGS__)
#define LOG_WARN(...) ::carapace::log_message(::carapace::LogLevel::kWarn, __VA_ARGS__)
#define LOG_INFO(...) ::carapace::log_message(::carapace::LogLevel::kInfo, __VA_ARGS__)
#define LOG_DEBUG(...) ::carapace::log_message(::carapace::LogLevel::kDebug, __VA_ARGS__)
