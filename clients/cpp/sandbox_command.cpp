#include "clients/cpp/sandbox_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "clients/cpp/daemon_client.h"
#include "clients/cpp/sandbox_args.h"
#include "common/base/exit_code.h"
#include "common/http/json_util.h"

namespace carapace {
namespace {

using nlohmann::json;
using sandbox::DaemonClient;

int fail(const Error& e) {
  fprintf(stderr, "carapace sandbox: %s\n", e.describe().c_str());
  return e.kind == ErrorKind::kInvalidInput ? kExitUsage : kExitHostError;
}

Result<std::string> read_local(const std::string& path) {
  std::ifstream in;
  std::istream* src = &std::cin;
  if (path != "-") {
    in.open(path, std::ios::binary);
    if (!in) return as_invalid_input(sys_error("open " + path));
    src = &in;
  }
  std::stringstream ss;
  ss << src->rdbuf();
  if (src->bad()) return sys_error("read " + path);
  return ss.str();
}

Status write_local(const std::string& path, std::string_view data) {
  FILE* f = path == "-" ? stdout : fopen(path.c_str(), "wb");
  if (!f) return sys_error("open " + path);
  bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = (path == "-" ? fflush(f) : fclose(f)) == 0 && ok;
  if (!ok) return sys_error("write " + path);
  return ok_status();
}

// The daemon resolves paths itself, relative to its own working directory: send absolute ones.
void absolutize(json& body, const char* key) {
  if (!body.contains(key)) return;
  std::error_code ec;
  auto p = std::filesystem::absolute(body[key].get<std::string>(), ec);
  if (!ec) body[key] = p.lexically_normal().string();
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

void print_templates(const json& list) {
  printf("%-16s %-12s %-9s %-10s %s\n", "ID", "NAME", "ISOLATION", "POOL", "SANDBOXES");
  for (const json& t : list) {
    std::string pool = "-";
    if (auto p = t.find("pool"); p != t.end() && p->is_object())
      pool = str(*p, "ready") + "/" + str(*p, "size");
    printf("%-16s %-12s %-9s %-10s %s\n", str(t, "id").c_str(), str(t, "name").c_str(),
           str(t, "isolation").c_str(), pool.c_str(), str(t, "sandboxes").c_str());
  }
}

void print_sandboxes(const json& list) {
  printf("%-15s %-16s %-9s %-8s %s\n", "ID", "TEMPLATE", "ISOLATION", "STATE", "EXPIRES");
  for (const json& s : list) {
    printf("%-15s %-16s %-9s %-8s %s\n", str(s, "id").c_str(), str(s, "template").c_str(),
           str(s, "isolation").c_str(), str(s, "state").c_str(), str(s, "expires_at").c_str());
  }
}

// The array under `key` of a list answer.
Result<json> list_of(const json& answer, const char* key) {
  auto it = answer.find(key);
  if (!answer.is_object() || it == answer.end() || !it->is_array())
    return make_error(std::string("daemon answer has no '") + key + "' list");
  return *it;
}

Result<int> run_exec(DaemonClient& client, const SandboxArgs& a) {
  // Each wait for bytes may last as long as the command may run, plus slack.
  uint64_t run_ms = a.exec.timeout_ms != 0 ? a.exec.timeout_ms : 10 * 60 * 1000;
  client.set_wait_timeout(std::chrono::milliseconds(run_ms + 30'000));
  sandbox::ExecResult r;
  if (a.stream) {
    auto out = [](std::string_view b) {
      fwrite(b.data(), 1, b.size(), stdout);
      fflush(stdout);
    };
    auto err = [](std::string_view b) {
      fwrite(b.data(), 1, b.size(), stderr);
      fflush(stderr);
    };
    r = TRY(client.exec(a.id, a.exec, out, err));
  } else {
    r = TRY(client.exec(a.id, a.exec));
    fwrite(r.stdout_data.data(), 1, r.stdout_data.size(), stdout);
    fflush(stdout);
    fwrite(r.stderr_data.data(), 1, r.stderr_data.size(), stderr);
  }
  if (r.timed_out) fprintf(stderr, "carapace sandbox: command timed out\n");
  if (r.truncated) fprintf(stderr, "carapace sandbox: output truncated\n");
  return sandbox::exit_status_of(r);
}

Result<int> run(const SandboxArgs& a) {
  DaemonClient client(sandbox::resolve_socket(a.socket));
  switch (a.op) {
    case SandboxOp::kHelp:
      fputs(kSandboxUsage, stdout);
      return kExitOk;
    case SandboxOp::kTemplateCreate: {
      json body = a.body;
      for (const char* k : {"kernel", "rootfs", "initrd"})
        absolutize(body, k);
      client.set_wait_timeout(std::chrono::minutes(15));  // boots and snapshots first
      json t = TRY(client.post("/templates", body));
      printf("%s\n", str(t, "id").c_str());
      return kExitOk;
    }
    case SandboxOp::kTemplateList: {
      json answer = TRY(client.get("/templates"));
      json list = TRY(list_of(answer, "templates"));
      if (a.json)
        printf("%s\n", list.dump(2).c_str());
      else
        print_templates(list);
      return kExitOk;
    }
    case SandboxOp::kTemplateRemove:
      (void)TRY(client.del("/templates/" + http::percent_encode(a.id)));
      return kExitOk;
    case SandboxOp::kCreate: {
      json sb = TRY(client.post("/sandboxes", a.body));
      printf("%s\n", str(sb, "id").c_str());
      return kExitOk;
    }
    case SandboxOp::kExec:
      return run_exec(client, a);
    case SandboxOp::kPut: {
      std::string data = TRY(read_local(a.paths[0]));
      (void)TRY(client.put_file(a.id, a.paths[1], data));
      return kExitOk;
    }
    case SandboxOp::kGet: {
      std::string data = TRY(client.get_file(a.id, a.paths[0]));
      TRY_STATUS(write_local(a.paths[1], data));
      return kExitOk;
    }
    case SandboxOp::kRemove:
      (void)TRY(client.del(sandbox::sandbox_target(a.id)));
      return kExitOk;
    case SandboxOp::kList: {
      json answer = TRY(client.get("/sandboxes"));
      json list = TRY(list_of(answer, "sandboxes"));
      if (a.json)
        printf("%s\n", list.dump(2).c_str());
      else
        print_sandboxes(list);
      return kExitOk;
    }
    case SandboxOp::kFork: {
      json body = a.body;
      body["count"] = a.count;
      json answer = TRY(client.post(sandbox::sandbox_target(a.id, "/fork"), body));
      json children = TRY(list_of(answer, "children"));
      for (const json& c : children)
        printf("%s\n", str(c, "id").c_str());
      return kExitOk;
    }
    case SandboxOp::kNetwork: {
      json sb = TRY(client.put(sandbox::sandbox_target(a.id, "/network"), a.body));
      printf("%s\n", sb.dump(2).c_str());
      return kExitOk;
    }
    case SandboxOp::kPause:
    case SandboxOp::kResume: {
      const char* what = a.op == SandboxOp::kPause ? "/pause" : "/resume";
      (void)TRY(client.post(sandbox::sandbox_target(a.id, what), json::object()));
      return kExitOk;
    }
    case SandboxOp::kDocument: {
      std::string text = TRY(read_local(a.paths[0]));
      auto spec = http::parse_json(text);
      if (!spec.ok() || !spec->is_object())
        return as_invalid_input(make_error(a.paths[0] + ": not a JSON object" +
                                           (spec.ok() ? "" : ": " + spec.error().message)));
      client.set_wait_timeout(std::chrono::minutes(5));
      std::string doc = TRY(client.document(a.id, *spec, a.format));
      TRY_STATUS(write_local(a.paths[1], doc));
      return kExitOk;
    }
  }
  return make_error("unhandled command");
}

}  // namespace

int cmd_sandbox(const std::vector<std::string>& args) {
  auto parsed = parse_sandbox_args(args);
  if (!parsed.ok()) return fail(parsed.error());
  auto r = run(*parsed);
  if (!r.ok()) return fail(r.error());
  return *r;
}

}  // namespace carapace
