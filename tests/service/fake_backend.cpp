#include "tests/service/fake_backend.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "daemon/core/state_store.h"
#include "jailer/jail_fs.h"

namespace carapace::testing {

std::atomic<int> g_fake_instances{0};
std::atomic<int> g_agent_sanitizer_reports{0};

namespace {

using nlohmann::json;
using service::AgentEndpoint;
using service::Instance;

std::string random_hex(size_t bytes) {
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    unsigned char b = 0;
    while (::getrandom(&b, 1, 0) != 1) {
    }
    char hex[3];
    snprintf(hex, sizeof hex, "%02x", b);
    out += hex;
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FakeInstance : public Instance {
 public:
  static Result<std::unique_ptr<FakeInstance>> spawn(const std::string& agent_exe,
                                                     const std::string& dir) {
    std::unique_ptr<FakeInstance> inst(new FakeInstance());
    inst->dir_ = dir;
    if (::mkdir(dir.c_str(), 0700) != 0) return sys_error("mkdir " + dir);
    std::string root = dir + "/root";
    ::mkdir(root.c_str(), 0755);
    inst->endpoint_.kind = AgentEndpoint::Kind::kUnix;
    inst->endpoint_.path = dir + "/agent.sock";
    inst->endpoint_.token = random_hex(16);
    std::string log = dir + "/agent.log";
    std::vector<std::string> args = {
        agent_exe, "--listen", "unix:" + inst->endpoint_.path, "--root",
        root,      "--token",  inst->endpoint_.token};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
      ::setpgid(0, 0);  // like a VMM: not in the daemon's process group (no terminal signals)
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(log_fd);
    if (pid < 0) return sys_error("fork");
    inst->pid_ = pid;
    ++g_fake_instances;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      if (slurp(log).find("carapace-agent: ready") != std::string::npos) return inst;
      if (!inst->alive()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return make_error("fake instance: the agent did not become ready: " + slurp(log));
  }

  ~FakeInstance() override {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    if (pid_ > 0) --g_fake_instances;
    // A sanitizer report from the (sanitized) host agent fails the test that provoked it.
    std::string log = slurp(dir_ + "/agent.log");
    for (const char* marker :
         {"ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer"}) {
      if (log.find(marker) != std::string::npos) {
        ++g_agent_sanitizer_reports;
        fprintf(stderr, "fake instance agent log:\n%s\n", log.c_str());
        break;
      }
    }
    (void)carapace::remove_tree(dir_);
  }

  const AgentEndpoint& agent() const override { return endpoint_; }
  Status pause() override {
    if (paused_) return as_invalid_input(make_error("already paused"));
    ::kill(pid_, SIGSTOP);
    paused_ = true;
    return ok_status();
  }
  Status resume() override {
    if (!paused_) return as_invalid_input(make_error("not paused"));
    ::kill(pid_, SIGCONT);
    paused_ = false;
    return ok_status();
  }
  bool paused() const override { return paused_; }
  bool alive() override {
    if (reaped_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      reaped_ = true;
      exit_ = WIFSIGNALED(st) ? "killed by signal " + std::to_string(WTERMSIG(st))
                              : "exited with status " + std::to_string(WEXITSTATUS(st));
      return false;
    }
    return true;
  }
  std::string exit_description() override { return exit_; }
  int pid() const override { return pid_; }
  json describe() const override {
    return {{"pid", pid_},
            {"agent_socket", endpoint_.path},
            {"files", json::array({dir_})},
            {"mounts_given", mounts_}};
  }
  // What the back end was given for each mount, and the folder its descriptor names (what a real
  // back end would mount), for the tests to check.
  void set_mounts(const std::vector<service::SandboxMount>& mounts) {
    mounts_ = json::array();
    for (const auto& m : mounts) {
      char target[4096] = {};
      const std::string link = "/proc/self/fd/" + std::to_string(m.dir ? m.dir->get() : -1);
      ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      mounts_.push_back({{"guest_path", m.guest_path},
                         {"mode", carapace::share_mode_name(m.mode)},
                         {"folder", n > 0 ? std::string(target, static_cast<size_t>(n)) : ""}});
    }
  }
  std::map<std::string, uint64_t> counters() override {
    return {{"console_dropped_bytes", 0}, {"egress_dropped_packets", 1}};
  }

 private:
  FakeInstance() = default;
  std::string dir_;
  AgentEndpoint endpoint_;
  pid_t pid_ = -1;
  bool paused_ = false;
  bool reaped_ = false;
  std::string exit_;
  json mounts_ = json::array();
};

class FakeBackend : public service::TemplateBackend {
 public:
  FakeBackend(FakeBackendOptions o, service::TemplateSpec spec, service::BackendContext ctx)
      : options_(std::move(o)), spec_(std::move(spec)), ctx_(std::move(ctx)) {}

  Status fill() {
    for (uint32_t i = 0; i < spec_.pool_size; ++i) {
      auto inst = make();
      if (!inst.ok()) return inst.take_error();
      pool_.push_back(std::move(*inst));
    }
    return ok_status();
  }

  Result<std::unique_ptr<Instance>> acquire(const service::InstanceOptions& opts,
                                            bool* from_pool) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!pool_.empty()) {
        auto inst = std::move(pool_.front());
        pool_.pop_front();
        ++hits_;
        *from_pool = true;
        inst->set_mounts(opts.mounts);
        return std::unique_ptr<Instance>(std::move(inst));
      }
      ++misses_;
    }
    *from_pool = false;
    auto inst = make();
    if (!inst.ok()) return inst.take_error();
    (*inst)->set_mounts(opts.mounts);
    // boot_args "fake.fail_acquire": the instance starts, then the hand-out fails (the instance
    // is destroyed here, as a real back end must).
    if (spec_.boot_args.find("fake.fail_acquire") != std::string::npos)
      return make_error("fake: hand-out failed after the instance started");
    return std::unique_ptr<Instance>(std::move(*inst));
  }

  Result<std::vector<std::unique_ptr<Instance>>> fork(
      Instance&, uint32_t count, const service::InstanceOptions& opts) override {
    if (!options_.can_fork)
      return as_invalid_input(make_error("process isolation cannot fork a sandbox"));
    std::vector<std::unique_ptr<Instance>> out;
    for (uint32_t i = 0; i < count; ++i) {
      auto inst = make();
      if (!inst.ok()) return inst.take_error();  // `out` destroys the ones made so far
      (*inst)->set_mounts(opts.mounts);
      out.push_back(std::move(*inst));
    }
    return out;
  }

  service::PoolStats pool_stats() override {
    std::lock_guard<std::mutex> lock(mu_);
    return {static_cast<uint32_t>(pool_.size()), spec_.pool_size, hits_, misses_, 0};
  }
  json describe() const override { return {{"fake", true}}; }
  void shutdown() override {
    std::lock_guard<std::mutex> lock(mu_);
    pool_.clear();
  }

 private:
  Result<std::unique_ptr<FakeInstance>> make() {
    uint64_t n = next_.fetch_add(1);
    return FakeInstance::spawn(
        options_.agent_exe,
        ctx_.dir + "/inst-" + std::to_string(::getpid()) + "-" + std::to_string(n));
  }

  FakeBackendOptions options_;
  service::TemplateSpec spec_;
  service::BackendContext ctx_;
  std::mutex mu_;
  std::deque<std::unique_ptr<FakeInstance>> pool_;
  uint64_t hits_ = 0, misses_ = 0;
  std::atomic<uint64_t> next_{0};
};

}  // namespace

service::BackendFactory fake_backend_factory(FakeBackendOptions options) {
  return [options](const service::TemplateSpec& spec, const service::BackendContext& ctx)
             -> Result<std::unique_ptr<service::TemplateBackend>> {
    auto b = std::make_unique<FakeBackend>(options, spec, ctx);
    TRY_STATUS(b->fill());
    return std::unique_ptr<service::TemplateBackend>(std::move(b));
  };
}

}  // namespace carapace::testing
