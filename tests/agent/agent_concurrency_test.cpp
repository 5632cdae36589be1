// Several clients at once, and the cap on connections.
#include <chrono>
#include <thread>
#include <vector>

#include "tests/agent/agent_test_util.h"

namespace carapace::testing {
namespace {

TEST(AgentConcurrencyTest, EightClientsAreServedAtOnce) {
  AgentProcess agent;
  ASSERT_TRUE(agent.started()) << agent.error();
  constexpr int kClients = 8;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kClients);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      auto c = agent.try_connect();
      if (!c.ok()) {
        failures[i] = c.error().describe();
        return;
      }
      std::string name = "client" + std::to_string(i);
      std::string data(100000 + i, static_cast<char>('a' + i));
      // Each exec sleeps: run one after another they would take 8 x 1 s.
      auto r = run_exec(*c, {"sh", "-c", "sleep 1; echo " + name});
      if (!r.ok() || r->out != name + "\n") {
        failures[i] = "exec: " + (r.ok() ? r->out : r.error().describe());
        return;
      }
      if (Status s = c->put_file(name, data); !s.ok()) {
        failures[i] = "put: " + s.error().describe();
        return;
      }
      auto got = c->get_file(name);
      if (!got.ok() || *got != data) failures[i] = "get: mismatch";
    });
  }
  for (auto& t : threads)
    t.join();
  for (int i = 0; i < kClients; ++i)
    EXPECT_EQ(failures[i], "") << "client " << i;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(6000));
  EXPECT_EQ(dir_names(agent.root()).size(), static_cast<size_t>(kClients));
}

TEST(AgentConcurrencyTest, ConnectionsBeyondTheCapAreToldBusy) {
  AgentProcess agent({"--max-connections", "2"});
  ASSERT_TRUE(agent.started()) << agent.error();
  std::vector<AgentClient> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(agent.connect());
    ASSERT_TRUE(held.back().ping().ok());
  }
  AgentClient extra = agent.connect();
  auto p = extra.ping();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(agent_error_code(p.error()), "busy");
  held.pop_back();  // frees a slot once the agent sees the close
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool served = false;
  while (!served && std::chrono::steady_clock::now() < until) {
    AgentClient again = agent.connect();
    served = again.ping().ok();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(served);
  EXPECT_TRUE(held[0].ping().ok());
}

}  // namespace
}  // namespace carapace::testing
