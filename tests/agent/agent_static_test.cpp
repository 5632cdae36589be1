// The guest copy of the agent is fully static (it runs as PID 1 in a Debian rootfs without
// depending on its libc), and it serves the same protocol as the host copy.
#include <elf.h>

#include <fstream>

#include "tests/agent/agent_test_util.h"

namespace carapace::testing {
namespace {

TEST(AgentStaticTest, GuestBinaryHasNoInterpreterAndNoDynamicSection) {
  std::ifstream in(CARAPACE_AGENT_STATIC, std::ios::binary);
  ASSERT_TRUE(in) << CARAPACE_AGENT_STATIC;
  Elf64_Ehdr eh{};
  in.read(reinterpret_cast<char*>(&eh), sizeof eh);
  ASSERT_TRUE(in);
  ASSERT_EQ(std::string(reinterpret_cast<char*>(eh.e_ident), 4), std::string(ELFMAG, 4));
  EXPECT_EQ(eh.e_ident[EI_CLASS], ELFCLASS64);
  EXPECT_EQ(eh.e_machine, EM_X86_64);
  ASSERT_EQ(eh.e_phentsize, sizeof(Elf64_Phdr));
  ASSERT_GT(eh.e_phnum, 0);
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(static_cast<std::streamoff>(eh.e_phoff + i * sizeof ph));
    in.read(reinterpret_cast<char*>(&ph), sizeof ph);
    ASSERT_TRUE(in);
    EXPECT_NE(ph.p_type, static_cast<uint32_t>(PT_INTERP)) << "program header " << i;
    EXPECT_NE(ph.p_type, static_cast<uint32_t>(PT_DYNAMIC)) << "program header " << i;
  }
}

TEST(AgentStaticTest, GuestBinaryServesTheProtocol) {
  AgentProcess agent({}, CARAPACE_AGENT_STATIC);
  ASSERT_TRUE(agent.started()) << agent.error();
  AgentClient c = agent.connect();
  ASSERT_TRUE(c.ping().ok());
  auto r = run_exec(c, {"sh", "-c", "echo static"});
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->out, "static\n");
  ASSERT_TRUE(c.put_file("f", "data").ok());
  auto got = c.get_file("f");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "data");
  EXPECT_EQ(code_of(c.get_file("../outside/secret")), "path_refused");
}

}  // namespace
}  // namespace carapace::testing
