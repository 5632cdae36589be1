// put_file, get_file, list, stat: every path goes through SandboxRoot (docs/security.md #28).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "common/agent/base64.h"
#include "common/agent/errors.h"
#include "common/agent/wire.h"
#include "guest/agent/ops.h"

namespace carapace::agent {
namespace {

const char* type_name(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "dir";
  if (S_ISLNK(m)) return "symlink";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISCHR(m)) return "char";
  if (S_ISBLK(m)) return "block";
  return "other";
}

json describe(const struct stat& st) {
  return json{{"type", type_name(st.st_mode)},
              {"size", static_cast<uint64_t>(st.st_size)},
              {"mode", static_cast<unsigned>(st.st_mode & 07777)},
              {"mtime", static_cast<int64_t>(st.st_mtim.tv_sec)}};
}

// A list reply stops adding entries at this many bytes, well below the frame limit.
constexpr size_t kListBudgetBytes = kMaxFrameBytes - 64 * 1024;

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

}  // namespace

Status op_put_file(AgentContext& ctx, ConnectionState& conn, const Request& req) {
  std::string data = TRY(opt_bytes(req.body, "data", kMaxChunkBytes));
  bool more = TRY(opt_bool(req.body, "more", false));
  auto path = TRY(opt_string(req.body, "path"));
  if (!conn.upload) {
    if (!path) return protocol_error(code::kBadRequest, "\"path\" must be a string");
    auto mode = static_cast<mode_t>(TRY(opt_u64(req.body, "mode", 0644, 0777)));
    bool parents = TRY(opt_bool(req.body, "parents", false));
    uint64_t size = TRY(opt_u64(req.body, "size", 0, UINT64_MAX));
    if (size > ctx.options.max_file_bytes)
      return protocol_error(code::kTooLarge, "'" + *path + "' exceeds the " +
                                                 std::to_string(ctx.options.max_file_bytes) +
                                                 "-byte file limit");
    conn.upload =
        TRY(Upload::begin(ctx.root, req.id, *path, mode, parents, ctx.options.max_file_bytes));
  } else if (path && *path != conn.upload->path()) {
    return protocol_error(code::kBadRequest, "a put_file chunk names another path");
  }
  Status s = conn.upload->append(data);
  if (s.ok() && !more) s = conn.upload->commit();
  if (!s.ok()) {
    conn.upload.reset();
    return s;
  }
  uint64_t size = conn.upload->size();
  if (more) return req.out.send({{"ok", true}, {"received", size}});
  conn.upload.reset();
  return req.out.send({{"ok", true}, {"size", size}});
}

Status op_get_file(AgentContext& ctx, ConnectionState&, const Request& req) {
  std::string path = TRY(req_string(req.body, "path"));
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the fstat below refuses it.
  UniqueFd fd = TRY(ctx.root.open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY));
  struct stat st;
  if (::fstat(fd.get(), &st) < 0) return sys_error("stat '" + path + "'");
  if (!S_ISREG(st.st_mode))
    return protocol_error(code::kNotRegularFile,
                          "'" + path + "' is a " + type_name(st.st_mode) + ", not a file");
  const uint64_t cap = ctx.options.max_file_bytes;
  auto too_large = [&] {
    return protocol_error(code::kTooLarge,
                          "'" + path + "' exceeds the " + std::to_string(cap) + "-byte file limit");
  };
  if (static_cast<uint64_t>(st.st_size) > cap) return too_large();
  std::string buf(kMaxChunkBytes, '\0');
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("read '" + path + "'");
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > cap) return too_large();  // it grew while being read
    TRY_STATUS(req.out.send({{"data", base64_encode(std::string_view(buf.data(), n))}}));
  }
  return req.out.send({{"ok", true}, {"size", total}, {"mode", st.st_mode & 07777}});
}

Status op_list(AgentContext& ctx, ConnectionState&, const Request& req) {
  std::string path = TRY(opt_string(req.body, "path")).value_or(".");
  UniqueFd fd = TRY(ctx.root.open(path, O_RDONLY | O_DIRECTORY));
  std::unique_ptr<DIR, DirCloser> dir(::fdopendir(fd.get()));
  if (!dir) return sys_error("list '" + path + "'");
  fd.release();  // owned by dir now
  std::vector<std::pair<std::string, json>> entries;
  size_t budget = 0;
  bool truncated = false;
  errno = 0;
  while (dirent* d = ::readdir(dir.get())) {
    std::string name = d->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(::dirfd(dir.get()), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    json e = describe(st);
    e["name"] = name;
    budget += dump_json(e).size() + 1;
    if (budget > kListBudgetBytes) {
      truncated = true;
      break;
    }
    entries.emplace_back(std::move(name), std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  json list = json::array();
  for (auto& e : entries)
    list.push_back(std::move(e.second));
  return req.out.send({{"entries", std::move(list)}, {"truncated", truncated}});
}

Status op_stat(AgentContext& ctx, ConnectionState&, const Request& req) {
  std::string path = TRY(req_string(req.body, "path"));
  // O_PATH | O_NOFOLLOW: opens nothing for I/O (no FIFO or device side effects) and, with
  // RESOLVE_NO_SYMLINKS, describes a final symlink instead of refusing it.
  UniqueFd fd = TRY(ctx.root.open(path, O_PATH | O_NOFOLLOW));
  struct stat st;
  if (::fstat(fd.get(), &st) < 0) return sys_error("stat '" + path + "'");
  return req.out.send(describe(st));
}

}  // namespace carapace::agent
