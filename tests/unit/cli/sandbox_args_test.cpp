// `carapace sandbox` argument parsing and `carapace mcp` flags.
#include "clients/cpp/sandbox_args.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "clients/cpp/credential_args.h"
#include "clients/mcp/mcp_command.h"

namespace carapace {
namespace {

using sandbox::CredentialRequest;
using sandbox::parse_credential_spec;
using sandbox::parse_upstream_spec;

Result<SandboxArgs> parse(std::vector<std::string> args) {
  return parse_sandbox_args(args);
}

// The secrets the credential tests read, from the environment and from files.
constexpr char kEnvSecret[] = "env-s3cret-value-0123";
constexpr char kFileSecret[] = "file-s3cret, with a comma";

class CredentialSpecTest : public testing::Test {
 protected:
  void SetUp() override {
    setenv("CARAPACE_TEST_SECRET", kEnvSecret, 1);
    setenv("CARAPACE_TEST_EMPTY", "", 1);
    unsetenv("CARAPACE_TEST_UNSET");
    dir_ =
        std::filesystem::temp_directory_path() / ("carapace-cred-args-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    write("secret", std::string(kFileSecret) + "\nsecond line\n");
    write("crlf", std::string(kFileSecret) + "\r\n");
    write("bare", kFileSecret);
    write("empty", "");
    write("blank-first", "\n" + std::string(kFileSecret) + "\n");
    write("huge", std::string(sandbox::kMaxSecretBytes + 1, 'k') + "\n");
    write("max", std::string(sandbox::kMaxSecretBytes, 'k'));
  }
  void TearDown() override {
    unsetenv("CARAPACE_TEST_SECRET");
    unsetenv("CARAPACE_TEST_EMPTY");
    std::filesystem::remove_all(dir_);
  }
  void write(const std::string& name, const std::string& data) {
    std::ofstream(dir_ / name, std::ios::binary) << data;
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(CredentialSpecTest, GoodForms) {
  auto c = parse_credential_spec(
      "--credential",
      "env=GITHUB_TOKEN,host=api.github.com,secret-env=CARAPACE_TEST_SECRET,header=Authorization: "
      "Bearer {secret}");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(
      *c,
      (CredentialRequest{
          {"api.github.com"}, "Authorization: Bearer {secret}", "", kEnvSecret, "GITHUB_TOKEN"}));
  // Keys in any order before header=; host repeats; a query slot; the secret from a file's first
  // line (commas in it are the secret's: they are never split).
  c = parse_credential_spec("--credential", "host=a.example,secret-file=" + file("secret") +
                                                ",query=api_key,host=*.b.example:443,env=K");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(*c,
            (CredentialRequest{{"a.example", "*.b.example:443"}, "", "api_key", kFileSecret, "K"}));
  // CRLF and no line ending at all.
  for (const char* name : {"crlf", "bare"}) {
    c = parse_credential_spec("--credential", "env=K,host=h,query=q,secret-file=" + file(name));
    ASSERT_TRUE(c.ok()) << name << ": " << c.error().describe();
    EXPECT_EQ(c->secret, kFileSecret) << name;
  }
  c = parse_credential_spec("--credential", "env=K,host=h,query=q,secret-file=" + file("max"));
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->secret.size(), sandbox::kMaxSecretBytes);
  // Everything after header= is the template, commas and '=' included.
  c = parse_credential_spec("--credential",
                            "env=K,host=h,secret-env=CARAPACE_TEST_SECRET,header=X-Auth: "
                            "v=1, key={secret}, scheme=a");
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_EQ(c->header, "X-Auth: v=1, key={secret}, scheme=a");
}

TEST_F(CredentialSpecTest, BadInputIsOneLineWithoutTheSecret) {
  const std::string sfile = ",secret-file=" + file("secret");
  const std::string senv = ",secret-env=CARAPACE_TEST_SECRET";
  struct Case {
    std::string spec;
    std::string says;  // a piece of the message
  };
  for (const Case& c : std::vector<Case>{
           {"", "empty"},
           {"env=K,host=h,query=q" + senv + ",", "empty item"},
           {",env=K,host=h,query=q" + senv, "empty item"},
           {"env=K,,host=h,query=q" + senv, "empty item"},
           {"env=K,host=h,query=q" + senv + ",ghp_pastedsecret", "item 5 is not key=value"},
           {"env=K,host=h,query=q" + senv + ",=x", "item 5 is not key=value"},
           {"env=K,host=h,query=q,c2VjcmV0=" + senv, "item 4 has an unknown key"},
           {"env=K,host=h,query=q,secret=" + std::string(kEnvSecret), "secret= is refused"},
           {"secret=" + std::string(kEnvSecret) + ",env=K,host=h,query=q", "secret= is refused"},
           {"env=K,host=h,secret-env=CARAPACE_TEST_SECRET,header=A: {secret},secret=" +
                std::string(kEnvSecret),
            "header= must be the last key"},
           {"env=K,header=A: {secret},host=h" + senv, "header= must be the last key"},
           {"env=K,host=h,query=q,header=A: {secret}" + senv, "header= must be the last key"},
           {"env=K,host=h" + senv + ",header=", "header= is empty"},
           {"env=,host=h,query=q" + senv, "env= is empty"},
           {"env=K,host=,query=q" + senv, "host= is empty"},
           {"env=K,host=h,query=" + senv, "query= is empty"},
           {"env=K,env=L,host=h,query=q" + senv, "env= given twice"},
           {"env=K,host=h,query=q,query=r" + senv, "query= given twice"},
           {"host=h,query=q" + senv, "env=NAME is required"},
           {"env=K,query=q" + senv, "host=H is required"},
           {"env=K,host=h" + senv, "exactly one of header=TEMPLATE and query=PARAM"},
           {"env=K,host=h,query=q" + senv + ",header=A: {secret}", "exactly one of header="},
           {"env=K,host=h" + senv + ",query=q" + sfile, "exactly one of secret-env=VAR and"},
           {"env=K,host=h,query=q", "exactly one of secret-env=VAR and"},
           {"env=K,host=h,query=q" + senv + senv, "secret-env= given twice"},
           {"env=K,host=h,query=q,secret-env=CARAPACE_TEST_UNSET",
            "CARAPACE_TEST_UNSET is not set"},
           {"env=K,host=h,query=q,secret-env=CARAPACE_TEST_EMPTY", "CARAPACE_TEST_EMPTY is empty"},
           {"env=K,host=h,query=q,secret-file=" + file("absent"), "No such file"},
           {"env=K,host=h,query=q,secret-file=" + file("empty"), "first line is empty"},
           {"env=K,host=h,query=q,secret-file=" + file("blank-first"), "first line is empty"},
           {"env=K,host=h,query=q,secret-file=" + file("huge"), "longer than 4096 bytes"},
           {"env=K,host=h,query=q,secret-file=" + dir_.string(), "secret-file="},
       }) {
    auto r = parse_credential_spec("--credential", c.spec);
    ASSERT_FALSE(r.ok()) << c.spec;
    const std::string m = r.error().describe();  // what the CLI prints
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput) << c.spec;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.rfind("--credential: ", 0), 0u) << m;
    EXPECT_NE(m.find(c.says), std::string::npos) << c.spec << " -> " << m;
    // Neither secret, nor what might be one (an item without its key), nor a header's template.
    for (const std::string& hidden :
         {std::string(kEnvSecret), std::string(kFileSecret), std::string("ghp_pastedsecret"),
          std::string("c2VjcmV0"), std::string("{secret}")})
      EXPECT_EQ(m.find(hidden), std::string::npos) << m;
  }
}

TEST(UpstreamSpec, AliasAndOrigin) {
  auto u = parse_upstream_spec("--upstream", "api.carapace.internal=https://api.example.com:8443");
  ASSERT_TRUE(u.ok()) << u.error().describe();
  EXPECT_EQ(u->alias, "api.carapace.internal");
  EXPECT_EQ(u->origin, "https://api.example.com:8443");
  for (const char* bad : {"", "api.carapace.internal", "=https://api.example.com",
                          "a.internal=http://api.example.com", "a.internal=https://",
                          "a.internal=api.example.com", "a.internal=https://user:pw@api.example"}) {
    auto r = parse_upstream_spec("--upstream", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(r.error().message.find("pw@"), std::string::npos) << r.error().message;
  }
}

// The CLI's request bodies: the credentials with the secret read, the upstreams, for create, fork
// and network alike.
TEST_F(CredentialSpecTest, CreateForkAndNetworkCarryThem) {
  const std::string spec =
      "env=API_TOKEN,host=api.example.com,secret-env=CARAPACE_TEST_SECRET,header=Authorization: "
      "Bearer {secret}";
  const nlohmann::json want = {
      {"allow_hosts", {"api.example.com:443"}},
      {"credentials",
       {{{"hosts", {"api.example.com"}},
         {"header", "Authorization: Bearer {secret}"},
         {"secret", kEnvSecret},
         {"env", "API_TOKEN"}},
        {{"hosts", {"maps.example.com"}},
         {"query", "key"},
         {"secret", kFileSecret},
         {"env", "MAPS_KEY"}}}},
      {"upstreams", {{{"alias", "api.carapace.internal"}, {"origin", "https://api.example.com"}}}}};
  const std::vector<std::string> flags = {
      "--allow-host", "api.example.com:443",
      "--credential", spec,
      "--upstream",   "api.carapace.internal=https://api.example.com",
      "--credential", "env=MAPS_KEY,host=maps.example.com,query=key,secret-file=" + file("secret")};
  auto with = [&](std::vector<std::string> head) {
    head.insert(head.end(), flags.begin(), flags.end());
    return parse(head);
  };
  auto a = with({"create", "--template", "t"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body["network"], want);
  a = with({"fork", "sb-1", "--count", "2"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body["network"], want);
  a = with({"network", "sb-1"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body, want);

  // Refused before anything is sent: a bad spec, a missing value, credentials or upstreams with
  // the off switch or without an allow rule (the daemon would give them no internet).
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"create", "--template", "t", "--allow-host", "h", "--credential"},
           {"create", "--template", "t", "--allow-host", "h", "--upstream"},
           {"create", "--template", "t", "--allow-host", "h", "--credential",
            "env=K,host=h,query=q,secret=" + std::string(kEnvSecret)},
           {"create", "--template", "t", "--credential", spec},
           {"create", "--template", "t", "--upstream", "a.internal=https://h"},
           {"create", "--template", "t", "--no-internet", "--credential", spec},
           {"fork", "sb-1", "--credential", spec},
           {"fork", "sb-1", "--no-internet", "--upstream", "a.internal=https://h"},
           {"network", "sb-1", "--credential", spec},
           {"network", "sb-1", "--off", "--credential", spec},
           {"network", "sb-1", "--allow-host", "h", "--upstream", "a.internal"},
       }) {
    auto r = parse(args);
    ASSERT_FALSE(r.ok()) << testing::PrintToString(args);
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_EQ(r.error().message.find(kEnvSecret), std::string::npos) << r.error().message;
  }
}

// `carapace mcp --credential ...`: the same parser; the credentials go with the policy of the
// sandbox it creates, or, for an existing sandbox, only with the network tool.
TEST_F(CredentialSpecTest, McpTakesTheOperatorsCredentials) {
  const std::string spec = "env=K,host=api.example.com,query=key,secret-env=CARAPACE_TEST_SECRET";
  auto a = parse_mcp_args({"--template", "tpl-1", "--allow-host", "api.example.com", "--credential",
                           spec, "--upstream", "a.internal=https://api.example.com"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  ASSERT_EQ(a->network.credentials.size(), 1u);
  EXPECT_EQ(a->network.credentials[0].secret, kEnvSecret);
  EXPECT_EQ(a->network.upstreams.size(), 1u);
  a = parse_mcp_args({"--sandbox", "sb-1", "--network-tool", "--credential", spec});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->network.credentials.size(), 1u);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--template", "t", "--credential", spec},
           {"--template", "t", "--no-internet", "--credential", spec},
           {"--template", "t", "--allow-host", "h", "--credential", "env=K,secret=x"},
           {"--sandbox", "s", "--credential", spec},
           {"--sandbox", "s", "--upstream", "a.internal=https://h"},
           {"--sandbox", "s", "--network-tool", "--allow-host", "h", "--credential", spec},
       }) {
    auto r = parse_mcp_args(args);
    ASSERT_FALSE(r.ok()) << testing::PrintToString(args);
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(r.error().message.find(kEnvSecret), std::string::npos) << r.error().message;
  }
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

TEST(SandboxArgs, MountsOnCreateAndFork) {
  auto a = parse({"create", "--template", "t", "--mount", "host=/srv/ws/a,guest=/work/a,mode=rw",
                  "--mount", "guest=/mnt/b,host=/srv/ws/b"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body["mounts"],
            nlohmann::json::parse(R"([{"host_path": "/srv/ws/a", "guest_path": "/work/a",
                                        "mode": "rw"},
                                       {"host_path": "/srv/ws/b", "guest_path": "/mnt/b"}])"));
  a = parse({"fork", "sb-1", "--inherit-mounts", "--same-modes", "--count", "2"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body, nlohmann::json({{"mounts", "inherit"}, {"mounts_mode", "same"}}));
  EXPECT_EQ(a->count, 2u);
  a = parse({"fork", "sb-1", "--mount", "host=/srv/ws/a,guest=/work/a"});
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->body["mounts"][0]["guest_path"], "/work/a");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"create", "--template", "t", "--mount"},
           {"create", "--template", "t", "--mount", "host=/a"},
           {"create", "--template", "t", "--mount", "host=/a,guest=/b,size=3"},
           {"create", "--template", "t", "--mount", "host=/a,host=/c,guest=/b"},
           {"fork", "sb-1", "--same-modes"},
           {"fork", "sb-1", "--inherit-mounts", "--mount", "host=/a,guest=/b"},
       }) {
    auto r = parse(args);
    ASSERT_FALSE(r.ok()) << testing::PrintToString(args);
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidInput);
  }
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
