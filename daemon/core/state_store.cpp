#include "daemon/core/state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/base/unique_fd.h"
#include "common/http/json_util.h"
#include "daemon/core/record_fields.h"
#include "jailer/jail_fs.h"

namespace carapace::service {
namespace {

Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return sys_error("cannot create " + path);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return as_invalid_input(make_error(path + " is not a directory"));
  return ok_status();
}

Result<std::string> read_text(const std::string& path, size_t cap) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return sys_error("cannot open " + path);
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot read " + path);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > cap) return make_error(path + ": too large");
  }
  return text;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = ::opendir(path.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(d);
  return names;
}

}  // namespace

Result<StateStore> StateStore::open(const std::string& dir) {
  if (dir.empty() || dir[0] != '/')
    return as_invalid_input(make_error("--state-dir must be an absolute path"));
  TRY_STATUS(make_dir(dir));
  TRY_STATUS(make_dir(dir + "/templates"));
  TRY_STATUS(make_dir(dir + "/sandboxes"));
  return StateStore(dir);
}

std::string StateStore::template_dir(const std::string& id) const {
  return dir_ + "/templates/" + id;
}

Status StateStore::write_template(const std::string& id, const nlohmann::json& record) {
  return write_file_atomic(template_dir(id) + "/template.json", record.dump(2) + "\n");
}

std::vector<nlohmann::json> StateStore::read_templates(std::vector<std::string>* errors) const {
  std::vector<nlohmann::json> out;
  for (const auto& name : list_dir(dir_ + "/templates")) {
    std::string path = template_dir(name) + "/template.json";
    auto text = read_text(path, 1 << 20);
    auto parsed = text.ok() ? http::parse_json(*text) : Result<nlohmann::json>(text.error());
    if (!parsed.ok() || !parsed->is_object() || string_field(*parsed, "id") != name) {
      if (errors) errors->push_back(path + ": unreadable template record");
      continue;
    }
    out.push_back(std::move(*parsed));
  }
  return out;
}

Status StateStore::remove_template(const std::string& id) {
  return remove_tree(template_dir(id));
}

Status StateStore::write_sandbox(const std::string& id, const nlohmann::json& record) {
  return write_file_atomic(dir_ + "/sandboxes/" + id + ".json", record.dump(2) + "\n");
}

std::vector<nlohmann::json> StateStore::read_sandboxes(std::vector<std::string>* errors) const {
  std::vector<nlohmann::json> out;
  for (const auto& name : list_dir(dir_ + "/sandboxes")) {
    std::string path = dir_ + "/sandboxes/" + name;
    if (name.size() < 6 || name.substr(name.size() - 5) != ".json") {
      ::unlink(path.c_str());  // a temporary file of an interrupted write
      continue;
    }
    auto text = read_text(path, 1 << 20);
    auto parsed = text.ok() ? http::parse_json(*text) : Result<nlohmann::json>(text.error());
    if (!parsed.ok() || !parsed->is_object()) {
      if (errors) errors->push_back(path + ": unreadable sandbox record (removed)");
      ::unlink(path.c_str());
      continue;
    }
    (*parsed)["record_path"] = path;
    out.push_back(std::move(*parsed));
  }
  return out;
}

Status StateStore::remove_sandbox(const std::string& id) {
  std::string path = dir_ + "/sandboxes/" + id + ".json";
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return sys_error("cannot remove " + path);
  return ok_status();
}

Status write_file_atomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return sys_error("cannot create " + tmp);
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = sys_error("cannot write " + tmp);
      ::unlink(tmp.c_str());
      return e;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Error e = sys_error("cannot rename " + tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  return ok_status();
}

uint64_t process_start_time(pid_t pid) {
  if (pid <= 0) return 0;
  auto text = read_text("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!text.ok()) return 0;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  size_t close = text->rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text->substr(close + 1));
  std::string field;
  // Fields 3.. follow; the start time is field 22, the 20th after the ')'.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

bool kill_if_same_process(pid_t pid, uint64_t start_time) {
  if (pid <= 1 || start_time == 0) return false;
  // A pidfd pins the process: once it is open, the start-time check and the signal are about the
  // same process even if the pid is reused in between.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return false;
  if (process_start_time(pid) != start_time) return false;
  if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0) != 0) return false;
  // SIGKILL is only queued; the process ends once the kernel has torn it down (long for a
  // process with large mappings). The pidfd turns readable when it has exited (pidfd_open(2)),
  // so the cleanup that follows, and the daemon's serving, come after it is gone. Bounded: a
  // process stuck in the kernel (D state) does not hold the restart up for more than this.
  pollfd pfd{pidfd.get(), POLLIN, 0};
  for (int waited_ms = 0; waited_ms < 5000; waited_ms += 100) {
    int n = ::poll(&pfd, 1, 100);
    if (n > 0 || (n < 0 && errno != EINTR)) break;
  }
  return true;
}

}  // namespace carapace::service
