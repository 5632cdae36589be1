// `carapace sandbox` argument parsing and `carapace mcp` flags.
#include "clients/cpp/sandbox_args.h"

#include <gtest/gtest.h>

#include "clients/mcp/mcp_command.h"

namespace carapace {
namespace {

Result<SandboxArgs> parse(std::vector<std::string> args) {
  return parse_sandbox_args(args);
}

TEST(SandboxArgs, HelpWithoutCommand) {
  auto a = parse({});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->op, SandboxOp::kHelp);
  a = parse({"--socket", "/s", "--help"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->op, SandboxOp::kHelp);
  EXPECT_EQ(a->socket, "/s");
}

TEST(SandboxArgs, TemplateCreate) {
  auto a =
      parse({"--socket", "/run/x.sock", "template", "create", "--rootfs", "r.ext4", "--isolation",
             "process", "--pool", "0", "--mem", "512", "--boot-args", "quiet", "--name", "docs"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->op, SandboxOp::kTemplateCreate);
  EXPECT_EQ(a->socket, "/run/x.sock");
  EXPECT_EQ(a->body["rootfs"], "r.ext4");
  EXPECT_EQ(a->body["isolation"], "process");
  EXPECT_EQ(a->body["pool_size"], 0);
  EXPECT_EQ(a->body["mem_mib"], 512);
  EXPECT_EQ(a->body["boot_args"], "quiet");
  EXPECT_EQ(a->body["name"], "docs");
  EXPECT_FALSE(a->body.contains("kernel"));
}

TEST(SandboxArgs, CreateWithEnvAndTimeout) {
  auto a = parse({"create", "--template", "tpl-0123456789ab", "--timeout", "60", "--env", "A=1",
                  "--env", "B=x=y", "--env", "C="});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->op, SandboxOp::kCreate);
  EXPECT_EQ(a->body["template"], "tpl-0123456789ab");
  EXPECT_EQ(a->body["timeout_s"], 60);
  EXPECT_EQ(a->body["env"]["A"], "1");
  EXPECT_EQ(a->body["env"]["B"], "x=y");
  EXPECT_EQ(a->body["env"]["C"], "");
}

TEST(SandboxArgs, CreateWithNetworkRules) {
  auto a = parse({"create", "--allow-host", "pypi.org:443", "--template", "t", "--allow-host",
                  "*.pythonhosted.org", "--deny-host", "evil.pypi.org", "--allow-host",
                  "[2001:db8::1]:443"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body["template"], "t");
  // The rules in the order given, and no "internet": the daemon's default (on with rules).
  EXPECT_EQ(
      a->body["network"],
      nlohmann::json({{"allow_hosts", {"pypi.org:443", "*.pythonhosted.org", "[2001:db8::1]:443"}},
                      {"deny_hosts", {"evil.pypi.org"}}}));
  a = parse({"create", "--template", "t", "--no-internet"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body["network"], nlohmann::json({{"internet", false}}));
  // No network flag: no network member, so the template's default policy applies.
  a = parse({"create", "--template", "t"});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->body.contains("network"));
}

TEST(SandboxArgs, ForkWithAndWithoutNetwork) {
  auto a = parse({"fork", "sb-1", "--allow-host", "pypi.org", "--count", "2"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->op, SandboxOp::kFork);
  EXPECT_EQ(a->count, 2u);
  EXPECT_EQ(a->body, nlohmann::json({{"network", {{"allow_hosts", {"pypi.org"}}}}}));
  a = parse({"fork", "sb-1", "--no-internet"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body["network"], nlohmann::json({{"internet", false}}));
  // Without network flags the children keep the parent's policy: nothing is sent.
  a = parse({"fork", "sb-1"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->body, nlohmann::json::object());
}

TEST(SandboxArgs, NetworkReplacesThePolicy) {
  auto a = parse({"network", "sb-1", "--allow-host", "10.0.0.0/8:443", "--deny-host", "*.evil.org",
                  "--allow-host", "*"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->op, SandboxOp::kNetwork);
  EXPECT_EQ(a->id, "sb-1");
  EXPECT_EQ(a->body, nlohmann::json({{"allow_hosts", {"10.0.0.0/8:443", "*"}},
                                     {"deny_hosts", {"*.evil.org"}}}));
  a = parse({"network", "sb-1", "--off"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body, nlohmann::json({{"internet", false}}));
}

TEST(SandboxArgs, ExecTakesEverythingAfterTheSeparator) {
  auto a = parse({"exec", "sb-1", "--stream", "--env", "K=V", "--cwd", "sub", "--timeout-ms",
                  "5000", "--", "sh", "-c", "echo --stream"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->op, SandboxOp::kExec);
  EXPECT_EQ(a->id, "sb-1");
  EXPECT_TRUE(a->stream);
  EXPECT_EQ(a->exec.env.at("K"), "V");
  EXPECT_EQ(a->exec.cwd, "sub");
  EXPECT_EQ(a->exec.timeout_ms, 5000u);
  EXPECT_EQ(a->exec.argv, (std::vector<std::string>{"sh", "-c", "echo --stream"}));
  // Without "--", the first non-option starts the command.
  a = parse({"exec", "sb-1", "ls", "-l", "--all"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_FALSE(a->stream);
  EXPECT_EQ(a->exec.argv, (std::vector<std::string>{"ls", "-l", "--all"}));
}

TEST(SandboxArgs, Positionals) {
  auto a = parse({"put", "sb-1", "local.txt", "in/box.txt"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->op, SandboxOp::kPut);
  EXPECT_EQ(a->paths, (std::vector<std::string>{"local.txt", "in/box.txt"}));
  a = parse({"get", "sb-1", "in/box.txt", "-"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->op, SandboxOp::kGet);
  EXPECT_EQ(a->paths[1], "-");
  a = parse({"doc", "sb-1", "spec.json", "pdf", "out.pdf"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->op, SandboxOp::kDocument);
  EXPECT_EQ(a->format, "pdf");
  EXPECT_EQ(a->paths, (std::vector<std::string>{"spec.json", "out.pdf"}));
  a = parse({"fork", "sb-1", "--count", "4"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->count, 4u);
  a = parse({"ls", "--json"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->json);
  for (const char* op : {"rm", "pause", "resume"}) {
    a = parse({op, "sb-9"});
    ASSERT_TRUE(a.ok()) << op;
    EXPECT_EQ(a->id, "sb-9");
  }
  a = parse({"template", "rm", "tpl-1"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->op, SandboxOp::kTemplateRemove);
}

TEST(SandboxArgs, RefusesBadInputWithOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"bogus"},
           {"--socket"},
           {"template"},
           {"template", "frob"},
           {"template", "create"},
           {"template", "create", "--kernel"},
           {"template", "create", "--kernel", ""},
           {"template", "create", "--kernel", "k", "--isolation", "container"},
           {"template", "create", "--kernel", "k", "--pool", "-1"},
           {"template", "create", "--kernel", "k", "--mem", "0"},
           {"template", "create", "--kernel", "k", "--frob"},
           {"template", "rm"},
           {"create"},
           {"create", "--template"},
           {"create", "--template", "t", "--timeout", "0"},
           {"create", "--template", "t", "--env", "=v"},
           {"create", "--template", "t", "--env", "novalue"},
           {"exec"},
           {"exec", "sb-1"},
           {"exec", "sb-1", "--"},
           {"exec", "sb-1", "--timeout-ms", "x", "--", "ls"},
           {"exec", "sb-1", "--bogus", "--", "ls"},
           {"exec", "--stream", "--", "ls"},
           {"put", "sb-1", "a"},
           {"put", "sb-1", "a", "b", "c"},
           {"get", "sb-1", "", "b"},
           {"doc", "sb-1", "s.json", "odt", "out"},
           {"rm"},
           {"rm", "a", "b"},
           {"ls", "--all"},
           {"fork", "sb-1", "--count", "0"},
           {"fork", "sb-1", "--count", "17"},
           // Network flags: a missing or empty rule, the off switch with rules, deny rules
           // alone, the other subcommand's off switch, and `network` with nothing to set.
           {"create", "--template", "t", "--allow-host"},
           {"create", "--template", "t", "--allow-host", ""},
           {"create", "--template", "t", "--no-internet", "--allow-host", "pypi.org"},
           {"create", "--template", "t", "--allow-host", "pypi.org", "--no-internet"},
           {"create", "--template", "t", "--no-internet", "--deny-host", "pypi.org"},
           {"create", "--template", "t", "--deny-host", "evil.org"},
           {"create", "--template", "t", "--off"},
           {"fork", "sb-1", "--no-internet", "--allow-host", "pypi.org"},
           {"fork", "sb-1", "--off"},
           {"fork", "sb-1", "--deny-host"},
           {"network"},
           {"network", "--off"},
           {"network", "sb-1"},
           {"network", "sb-1", "--off", "--allow-host", "pypi.org"},
           {"network", "sb-1", "--deny-host", "pypi.org", "--off"},
           {"network", "sb-1", "--deny-host", "evil.org"},
           {"network", "sb-1", "--no-internet"},
           {"network", "sb-1", "--allow-host", "pypi.org", "extra"},
       }) {
    auto a = parse(args);
    ASSERT_FALSE(a.ok()) << testing::PrintToString(args);
    EXPECT_EQ(a.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(a.error().message.find('\n'), std::string::npos);
  }
}

TEST(McpArgs, NetworkOfTheSandboxItCreates) {
  auto a = parse_mcp_args({"--template", "tpl-1", "--allow-host", "pypi.org:443", "--deny-host",
                           "evil.pypi.org", "--allow-host", "*.pythonhosted.org"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->network.allow_hosts,
            (std::vector<std::string>{"pypi.org:443", "*.pythonhosted.org"}));
  EXPECT_EQ(a->network.deny_hosts, std::vector<std::string>{"evil.pypi.org"});
  EXPECT_FALSE(a->network.internet.has_value());
  EXPECT_FALSE(a->network_tool);
  a = parse_mcp_args({"--template", "tpl-1", "--no-internet"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->network.internet, false);
  // The tool is the operator's to offer, for an existing sandbox too.
  a = parse_mcp_args({"--sandbox", "sb-1", "--network-tool"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_TRUE(a->network_tool);
  EXPECT_TRUE(a->network.empty());
}

TEST(McpArgs, TemplateOrSandboxExactlyOnce) {
  auto a = parse_mcp_args({"--template", "tpl-1", "--out-dir", "/tmp", "--socket", "/s"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->template_id, "tpl-1");
  EXPECT_EQ(a->out_dir, "/tmp");
  EXPECT_EQ(a->socket, "/s");
  a = parse_mcp_args({"--sandbox", "sb-1"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->sandbox_id, "sb-1");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {},
           {"--template", "t", "--sandbox", "s"},
           {"--sandbox", "s", "--allow-host", "pypi.org"},
           {"--sandbox", "s", "--no-internet"},
           {"--template", "t", "--no-internet", "--allow-host", "pypi.org"},
           {"--template", "t", "--deny-host", "evil.org"},
           {"--template", "t", "--allow-host"},
           {"--template", "t", "--allow-host", ""},
           {"--template"},
           {"--template", ""},
           {"--template", "t", "--timeout", "0"},
           {"--template", "t", "--frob"},
       }) {
    auto r = parse_mcp_args(args);
    ASSERT_FALSE(r.ok()) << testing::PrintToString(args);
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  }
}

}  // namespace
}  // namespace carapace
