// A `carapace serve` daemon started in-process over the fake back end (fake_backend.h), in a
// fresh temporary folder, with helpers to call its API over the Unix socket.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "common/http/http_client.h"
#include "daemon/api/daemon.h"
#include "tests/service/fake_backend.h"

namespace carapace::testing {

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // (Re)starts the daemon with `config` (JSON text; "" = defaults plus a fast health check).
  void start_daemon(const std::string& config_json = "");
  void stop_daemon();

  // Every error answer (status >= 400) is also checked with expect_error_body().
  http::HttpResponse call(const std::string& method, const std::string& target,
                          const std::string& body = "", const http::HttpHeaders& headers = {});
  // The response's body as JSON (fails the test on a parse error).
  static nlohmann::json body_json(const http::HttpResponse& r);

  // POST /templates with a fake kernel; returns the template id.
  std::string make_template(uint32_t pool_size, const std::string& isolation = "microvm",
                            const std::string& extra_fields = "");
  // POST /sandboxes; returns the sandbox object.
  nlohmann::json make_sandbox(const std::string& tpl, const nlohmann::json& extra = {});

  std::string dir_;
  std::string socket_;
  std::string state_dir_;
  std::string kernel_;  // a dummy file: the fake back end never boots it
  std::unique_ptr<service::Daemon> daemon_;
  int log_fd_ = -1;
};

// An error answer's body is {"error": {"code", "message"}} with a code of the one vocabulary
// (common/http/error_code.h) whose status is the answer's status.
void expect_error_body(const http::HttpResponse& r);

std::string read_text_file(const std::string& path);
bool path_exists(const std::string& path);
bool process_alive(int pid);

}  // namespace carapace::testing
