// Progress lines for whoever watches the agent: /dev/console when it is the guest's PID 1 (the
// VMM's serial console), stderr otherwise. Every line starts with "carapace-agent: ", which the
// image tests and the host look for (e.g. "carapace-agent: ready").
#pragma once

#include <string_view>

namespace carapace::agent {

// Switches output to /dev/console (PID 1, once devtmpfs is mounted). Keeps stderr on failure.
void console_use_device();
// One line: "carapace-agent: " + the formatted text + "\n", written with one write(2) so lines
// from several threads do not interleave.
void console_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Raw bytes (a selftest's output), no prefix.
void console_write(std::string_view bytes);
// The descriptor lines go to (for a selftest's stdout and stderr).
int console_fd();

}  // namespace carapace::agent
