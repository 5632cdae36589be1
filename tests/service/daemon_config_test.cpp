// The daemon's config file and pure helpers: parsing (every field optional, unknown ones refused),
// token files, label escaping and histogram rendering.
#include <unistd.h>

#include <gtest/gtest.h>

#include "daemon/core/daemon_config.h"
#include "daemon/core/service_metrics.h"

namespace carapace::service {
namespace {

TEST(DaemonConfig, EmptyObjectGivesDefaults) {
  auto c = parse_daemon_config("{}");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->default_ttl_s, 300u);
  EXPECT_EQ(c->on_shutdown, OnShutdown::kDestroy);
  EXPECT_FALSE(c->tcp.has_value());
  EXPECT_TRUE(c->seccomp);
  EXPECT_FALSE(c->jail.has_value());
  EXPECT_DOUBLE_EQ(c->vm_start_timeout_s, 10);
  EXPECT_DOUBLE_EQ(c->hand_out_timeout_s, 10);
  // Unset, VMMs are jailed whenever the daemon can jail them: as root, with seccomp.
  EXPECT_EQ(jail_microvms(*c), ::geteuid() == 0);
}

TEST(DaemonConfig, EveryField) {
  auto c = parse_daemon_config(R"({"max_sandboxes": 5, "max_memory_mib": 4096,
    "default_ttl_s": 60, "max_ttl_s": 600, "max_request_bytes": 2048,
    "max_upload_bytes": 1048576, "health_interval_s": 0.5, "health_timeout_s": 2,
    "header_timeout_s": 3, "max_connections": 8, "on_shutdown": "persist",
    "vm_start_timeout_s": 120, "hand_out_timeout_s": 90.5,
    "tcp": {"port": 8080, "token_file": "/etc/token"}, "seccomp": false})");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->max_sandboxes, 5u);
  EXPECT_EQ(c->max_memory_mib, 4096u);
  EXPECT_EQ(c->default_ttl_s, 60u);
  EXPECT_EQ(c->max_ttl_s, 600u);
  EXPECT_EQ(c->max_request_bytes, 2048u);
  EXPECT_EQ(c->max_upload_bytes, 1048576u);
  EXPECT_DOUBLE_EQ(c->health_interval_s, 0.5);
  EXPECT_DOUBLE_EQ(c->health_timeout_s, 2);
  EXPECT_DOUBLE_EQ(c->header_timeout_s, 3);
  EXPECT_DOUBLE_EQ(c->vm_start_timeout_s, 120);
  EXPECT_DOUBLE_EQ(c->hand_out_timeout_s, 90.5);
  EXPECT_EQ(c->max_connections, 8u);
  EXPECT_EQ(c->on_shutdown, OnShutdown::kPersist);
  ASSERT_TRUE(c->tcp.has_value());
  EXPECT_EQ(c->tcp->port, 8080);
  EXPECT_EQ(c->tcp->token_file, "/etc/token");
  EXPECT_FALSE(c->seccomp);
  EXPECT_FALSE(jail_microvms(*c));  // without seccomp, the jail is off unless asked for
}

TEST(DaemonConfig, JailCanBeSetEitherWay) {
  auto on = parse_daemon_config(R"({"jail": true})");
  ASSERT_TRUE(on.ok()) << on.error().describe();
  EXPECT_TRUE(jail_microvms(*on));
  auto off = parse_daemon_config(R"({"jail": false})");
  ASSERT_TRUE(off.ok()) << off.error().describe();
  EXPECT_FALSE(jail_microvms(*off));
}

TEST(DaemonConfig, EgressCaFileIsAnAbsolutePath) {
  auto c = parse_daemon_config(R"({"egress_ca_file": "/etc/carapace/origins.pem"})");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->egress_ca_file, "/etc/carapace/origins.pem");
  auto none = parse_daemon_config("{}");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->egress_ca_file, "");
  for (const char* bad : {R"({"egress_ca_file": "ca.pem"})", R"({"egress_ca_file": ""})",
                          R"({"egress_ca_file": 1})"}) {
    auto r = parse_daemon_config(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("egress_ca_file"), std::string::npos) << r.error().message;
  }
}

TEST(DaemonConfig, BadInputNamesTheField) {
  struct Case {
    const char* text;
    const char* field;
  } cases[] = {
      {R"({"max_sandbox": 1})", "max_sandbox"},
      {R"({"max_sandboxes": -1})", "max_sandboxes"},
      {R"({"max_sandboxes": 0})", "max_sandboxes"},
      {R"({"max_sandboxes": "10"})", "max_sandboxes"},
      {R"({"max_sandboxes": 1.5})", "max_sandboxes"},
      {R"({"default_ttl_s": 100, "max_ttl_s": 50})", "default_ttl_s"},
      {R"({"on_shutdown": "snapshot"})", "on_shutdown"},
      {R"({"health_interval_s": -1})", "health_interval_s"},
      {R"({"vm_start_timeout_s": 0})", "vm_start_timeout_s"},
      {R"({"hand_out_timeout_s": "10"})", "hand_out_timeout_s"},
      {R"({"tcp": {"port": 80}})", "token_file"},
      {R"({"tcp": {"port": 70000, "token_file": "/t"}})", "port"},
      {R"({"tcp": {"token_file": "/t", "host": "0.0.0.0"}})", "tcp.host"},
      {R"({"seccomp": "yes"})", "seccomp"},
      {R"({"jail": 1})", "jail"},
      {R"({"jail": true, "seccomp": false})", "jail"},
      {R"([])", "object"},
      {R"({"a": )", "(file)"},
  };
  for (const auto& c : cases) {
    auto r = parse_daemon_config(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(r.error().message.find(c.field), std::string::npos)
        << c.text << " -> " << r.error().message;
  }
}

TEST(DaemonConfig, MissingFileIsAClearError) {
  auto r = load_daemon_config("/nonexistent/carapace.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().describe().find("/nonexistent/carapace.json"), std::string::npos);
  EXPECT_FALSE(load_token_file("/nonexistent/token").ok());
}

TEST(Metrics, LabelValuesAreEscaped) {
  EXPECT_EQ(escape_label_value(R"(a"b\c)"
                               "\n"),
            R"(a\"b\\c\n)");
}

TEST(Metrics, HistogramIsCumulativeInSeconds) {
  Histogram h;
  h.observe_ms(0.5);  // <= 1 ms
  h.observe_ms(30);   // <= 50 ms
  h.observe_ms(1e9);  // past every bucket
  std::string out;
  h.render(out, "x_seconds", "source=\"pool\"");
  EXPECT_NE(out.find("x_seconds_bucket{source=\"pool\",le=\"0.001\"} 1\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("x_seconds_bucket{source=\"pool\",le=\"0.025\"} 1\n"), std::string::npos);
  EXPECT_NE(out.find("x_seconds_bucket{source=\"pool\",le=\"0.05\"} 2\n"), std::string::npos);
  EXPECT_NE(out.find("x_seconds_bucket{source=\"pool\",le=\"300\"} 2\n"), std::string::npos);
  EXPECT_NE(out.find("x_seconds_bucket{source=\"pool\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(out.find("x_seconds_count{source=\"pool\"} 3\n"), std::string::npos);
}

}  // namespace
}  // namespace carapace::service
