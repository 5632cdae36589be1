// The tools of `carapace mcp`: their schemas (tools/list) and their calls (tools/call).
#include <filesystem>
#include <fstream>

#include "clients/mcp/mcp_server.h"
#include "common/agent/base64.h"

namespace carapace::mcp {
namespace {

using nlohmann::json;

// The daemon's bound on each of allow_hosts and deny_hosts.
constexpr size_t kMaxHostRules = 256;

json text_result(std::string text, bool is_error) {
  return {{"content", json::array({{{"type", "text"}, {"text", std::move(text)}}})},
          {"isError", is_error}};
}

json tool_failure(const Error& e) {
  return text_result(e.describe(), true);
}

// UTF-8 well-formedness (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

const char* mime_type(const std::string& format) {
  if (format == "docx")
    return "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
  if (format == "pptx")
    return "application/vnd.openxmlformats-officedocument.presentationml.presentation";
  if (format == "xlsx") return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
  return "application/pdf";
}

// Checks `args` against the few shapes the schemas allow; the message names the field.
struct ArgReader {
  const json& args;
  std::string error;

  std::optional<std::string> string(const char* key, bool required) {
    auto it = args.find(key);
    if (it == args.end() || it->is_null()) {
      if (required && error.empty()) error = std::string("missing required argument '") + key + "'";
      return std::nullopt;
    }
    if (!it->is_string()) {
      if (error.empty()) error = std::string("argument '") + key + "' must be a string";
      return std::nullopt;
    }
    return it->get<std::string>();
  }
  uint64_t number(const char* key, uint64_t lo, uint64_t hi) {
    auto it = args.find(key);
    if (it == args.end() || it->is_null()) return 0;
    if (!it->is_number_unsigned() || it->get<uint64_t>() < lo || it->get<uint64_t>() > hi) {
      if (error.empty())
        error = std::string("argument '") + key + "' must be an integer " + std::to_string(lo) +
                ".." + std::to_string(hi);
      return 0;
    }
    return it->get<uint64_t>();
  }
  // An array of strings; absent is empty.
  std::vector<std::string> strings(const char* key, size_t max) {
    auto it = args.find(key);
    if (it == args.end() || it->is_null()) return {};
    bool all_strings = it->is_array();
    for (size_t i = 0; all_strings && i < it->size(); ++i)
      all_strings = (*it)[i].is_string();
    if (!all_strings || it->size() > max) {
      if (error.empty())
        error = std::string("argument '") + key + "' must be an array of at most " +
                std::to_string(max) + " strings";
      return {};
    }
    return it->get<std::vector<std::string>>();
  }
  std::optional<bool> boolean(const char* key) {
    auto it = args.find(key);
    if (it == args.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) {
      if (error.empty()) error = std::string("argument '") + key + "' must be a boolean";
      return std::nullopt;
    }
    return it->get<bool>();
  }
  std::string encoding() {
    std::string e = string("encoding", false).value_or("utf-8");
    if (e != "utf-8" && e != "base64" && error.empty())
      error = "argument 'encoding' must be \"utf-8\" or \"base64\"";
    return e;
  }
  // Refuses arguments the schema does not name.
  void only(std::initializer_list<const char*> keys) {
    for (auto it = args.begin(); it != args.end(); ++it) {
      bool known = false;
      for (const char* k : keys)
        known = known || it.key() == k;
      if (!known && error.empty()) error = "unknown argument '" + it.key() + "'";
    }
  }
};

RpcOutcome run_command(SandboxOps& ops, ArgReader& a) {
  a.only({"command", "cwd", "timeout_ms"});
  auto command = a.string("command", true);
  auto cwd = a.string("cwd", false);
  uint64_t timeout_ms = a.number("timeout_ms", 1, 3'600'000);
  if (!a.error.empty()) return RpcOutcome::error(kInvalidParams, "run_command: " + a.error);
  if (command->empty()) return RpcOutcome::error(kInvalidParams, "run_command: empty command");
  auto r = ops.run_command(*command, cwd.value_or(""), timeout_ms);
  if (!r.ok()) return RpcOutcome::ok(tool_failure(r.error()));
  int status = sandbox::exit_status_of(*r);
  std::string text;
  if (r->timed_out)
    text = "timed out";
  else if (r->signal)
    text = "killed by signal " + std::to_string(*r->signal);
  else
    text = "exit code " + std::to_string(status);
  if (r->truncated) text += " (output truncated)";
  text += "\n--- stdout ---\n" + r->stdout_data + "\n--- stderr ---\n" + r->stderr_data;
  // A failing command is the model's business: it gets the output and the status, flagged.
  return RpcOutcome::ok(text_result(std::move(text), status != 0));
}

RpcOutcome write_file(SandboxOps& ops, ArgReader& a) {
  a.only({"path", "content", "encoding"});
  auto path = a.string("path", true);
  auto content = a.string("content", true);
  std::string encoding = a.encoding();
  if (!a.error.empty()) return RpcOutcome::error(kInvalidParams, "write_file: " + a.error);
  std::string data = *content;
  if (encoding == "base64") {
    auto decoded = agent::base64_decode(*content);
    if (!decoded)
      return RpcOutcome::error(kInvalidParams, "write_file: 'content' is not valid base64");
    data = std::move(*decoded);
  }
  if (Status s = ops.write_file(*path, data); !s.ok())
    return RpcOutcome::ok(tool_failure(s.error()));
  return RpcOutcome::ok(
      text_result("wrote " + std::to_string(data.size()) + " bytes to " + *path, false));
}

RpcOutcome read_file(SandboxOps& ops, ArgReader& a) {
  a.only({"path", "encoding"});
  auto path = a.string("path", true);
  std::string encoding = a.encoding();
  if (!a.error.empty()) return RpcOutcome::error(kInvalidParams, "read_file: " + a.error);
  auto data = ops.read_file(*path);
  if (!data.ok()) return RpcOutcome::ok(tool_failure(data.error()));
  if (data->size() > kMaxResultBytes)
    return RpcOutcome::ok(text_result(*path + ": " + std::to_string(data->size()) +
                                          " bytes, more than a tool result may hold (" +
                                          std::to_string(kMaxResultBytes) + ")",
                                      true));
  if (encoding == "base64") return RpcOutcome::ok(text_result(agent::base64_encode(*data), false));
  if (!valid_utf8(*data))
    return RpcOutcome::ok(
        text_result(*path + " is not UTF-8 text; read it with encoding \"base64\"", true));
  return RpcOutcome::ok(text_result(std::move(*data), false));
}

RpcOutcome generate_document(SandboxOps& ops, const McpOptions& options, ArgReader& a,
                             unsigned& documents) {
  a.only({"spec", "format", "path"});
  auto format = a.string("format", true);
  auto path = a.string("path", false);
  auto spec = a.args.find("spec");
  if (a.error.empty() && (spec == a.args.end() || !spec->is_object()))
    a.error = "argument 'spec' must be an object (the docgen spec)";
  if (a.error.empty() && *format != "docx" && *format != "pptx" && *format != "xlsx" &&
      *format != "pdf")
    a.error = "argument 'format' must be docx, pptx, xlsx or pdf";
  if (!a.error.empty()) return RpcOutcome::error(kInvalidParams, "generate_document: " + a.error);
  auto doc = ops.generate_document(*spec, *format);
  if (!doc.ok()) return RpcOutcome::ok(tool_failure(doc.error()));
  std::string said =
      "generated a " + *format + " document (" + std::to_string(doc->size()) + " bytes)";
  if (path && !path->empty()) {
    if (Status s = ops.write_file(*path, *doc); !s.ok())
      return RpcOutcome::ok(tool_failure(s.error()));
    said += ", saved in the sandbox as " + *path;
  }
  if (!options.out_dir.empty()) {
    // The host name is ours, never the model's: a path from the model must not pick where on
    // the host a file lands.
    std::string name = "document-" + std::to_string(++documents) + "." + *format;
    std::filesystem::path host = std::filesystem::path(options.out_dir) / name;
    std::ofstream out(host, std::ios::binary | std::ios::trunc);
    out.write(doc->data(), static_cast<std::streamsize>(doc->size()));
    out.close();
    if (!out) return RpcOutcome::ok(tool_failure(sys_error("write " + host.string())));
    said += ", saved on the host as " + host.string();
    return RpcOutcome::ok(text_result(std::move(said), false));
  }
  if (doc->size() > kMaxResultBytes)
    return RpcOutcome::ok(
        text_result(said + ": too large to return inline; use --out-dir or path", true));
  json resource = {
      {"uri", "carapace://documents/document-" + std::to_string(++documents) + "." + *format},
      {"mimeType", mime_type(*format)},
      {"blob", agent::base64_encode(*doc)}};
  return RpcOutcome::ok({{"content", json::array({{{"type", "text"}, {"text", said}},
                                                  {{"type", "resource"}, {"resource", resource}}})},
                         {"isError", false}});
}

// A network view for the model: the daemon's already shows each credential's secret as
// "<redacted>"; this makes sure of it, whatever the answer holds, since the secrets are the
// operator's and the model must never see one.
json redacted_network(json network) {
  if (!network.is_object()) return network;
  auto creds = network.find("credentials");
  if (creds == network.end() || !creds->is_array()) return network;
  for (json& c : *creds)
    if (c.is_object() && c.contains("secret")) c["secret"] = "<redacted>";
  return network;
}

// The daemon checks the rules themselves (and internet false with allow_hosts): its one-line
// message comes back as the tool's error, which names the bad entry.
RpcOutcome set_sandbox_network(SandboxOps& ops, ArgReader& a) {
  a.only({"allow_hosts", "deny_hosts", "internet"});
  sandbox::NetworkRequest network;
  network.allow_hosts = a.strings("allow_hosts", kMaxHostRules);
  network.deny_hosts = a.strings("deny_hosts", kMaxHostRules);
  network.internet = a.boolean("internet");
  if (!a.error.empty()) return RpcOutcome::error(kInvalidParams, "set_sandbox_network: " + a.error);
  auto view = ops.set_network(network);
  if (!view.ok()) return RpcOutcome::ok(tool_failure(view.error()));
  auto net = view->is_object() ? view->find("network") : view->end();
  std::string now = redacted_network(view->is_object() && net != view->end() ? *net : *view).dump();
  return RpcOutcome::ok(text_result("the sandbox's network is now " + now, false));
}

}  // namespace

json tool_definitions(const McpOptions& options) {
  json encoding = {{"type", "string"}, {"enum", {"utf-8", "base64"}}, {"default", "utf-8"}};
  json tools = json::array({
      {{"name", "run_command"},
       {"description",
        "Run a shell command (sh -c) in the sandbox. Returns the exit status, stdout and stderr."},
       {"inputSchema",
        {{"type", "object"},
         {"properties",
          {{"command", {{"type", "string"}, {"description", "shell command line"}}},
           {"cwd", {{"type", "string"}, {"description", "working directory (default /work)"}}},
           {"timeout_ms",
            {{"type", "integer"},
             {"minimum", 1},
             {"maximum", 3600000},
             {"description", "kill after this long"}}}}},
         {"required", {"command"}},
         {"additionalProperties", false}}}},
      {{"name", "write_file"},
       {"description",
        "Write a file in the sandbox (relative to /work; missing parent folders are created)."},
       {"inputSchema",
        {{"type", "object"},
         {"properties",
          {{"path", {{"type", "string"}}},
           {"content", {{"type", "string"}}},
           {"encoding", encoding}}},
         {"required", {"path", "content"}},
         {"additionalProperties", false}}}},
      {{"name", "read_file"},
       {"description", "Read a file from the sandbox (relative to /work)."},
       {"inputSchema",
        {{"type", "object"},
         {"properties", {{"path", {{"type", "string"}}}, {"encoding", encoding}}},
         {"required", {"path"}},
         {"additionalProperties", false}}}},
      {{"name", "generate_document"},
       {"description",
        "Generate a DOCX, PPTX, XLSX or PDF document in the sandbox from a docgen JSON spec "
        "(title, blocks: heading, paragraph, list, table, chart, image, ...)."},
       {"inputSchema",
        {{"type", "object"},
         {"properties",
          {{"spec", {{"type", "object"}, {"description", "the docgen spec"}}},
           {"format", {{"type", "string"}, {"enum", {"docx", "pptx", "xlsx", "pdf"}}}},
           {"path", {{"type", "string"}, {"description", "also save it in the sandbox here"}}}}},
         {"required", {"spec", "format"}},
         {"additionalProperties", false}}}},
  });
  if (!options.network_tool) return tools;
  json rules = {{"type", "array"}, {"maxItems", kMaxHostRules}, {"items", {{"type", "string"}}}};
  json allow = rules, deny = rules;
  allow["description"] =
      "hosts the sandbox may connect to: a name (pypi.org), *.suffix, *, an IP address or CIDR "
      "network ([v6] in brackets), each with an optional :port";
  deny["description"] = "hosts refused even when an allow rule matches (deny wins)";
  tools.push_back(
      {{"name", "set_sandbox_network"},
       {"description",
        "Replace the sandbox's network egress policy. Programs in the sandbox reach allowed hosts "
        "through an HTTP proxy (HTTP_PROXY/HTTPS_PROXY are set for every command); loopback, "
        "link-local and the host's own addresses stay refused, private ones unless a network "
        "rule allows them. Open connections the new policy denies are cut. Without allow_hosts "
        "(or with internet false) the sandbox has no way out at all. Credentials the operator "
        "configured stay in force: their environment variables hold placeholders that the proxy "
        "replaces with the real secret on requests to their own hosts (an allow rule must "
        "still admit those hosts)."},
       {"inputSchema",
        {{"type", "object"},
         {"properties",
          {{"allow_hosts", allow},
           {"deny_hosts", deny},
           {"internet",
            {{"type", "boolean"},
             {"description",
              "false: no network at all (no allow_hosts then); default: true when allow_hosts "
              "is not empty"}}}}},
         {"required", json::array()},
         {"additionalProperties", false}}}});
  return tools;
}

RpcOutcome call_tool(SandboxOps& ops, const McpOptions& options, const json& params,
                     unsigned& documents) {
  auto name = params.find("name");
  if (name == params.end() || !name->is_string())
    return RpcOutcome::error(kInvalidParams, "tools/call: 'name' must be a string");
  json empty = json::object();
  auto args_it = params.find("arguments");
  if (args_it != params.end() && !args_it->is_object() && !args_it->is_null())
    return RpcOutcome::error(kInvalidParams, "tools/call: 'arguments' must be an object");
  const json& args = args_it != params.end() && args_it->is_object() ? *args_it : empty;
  ArgReader reader{args, {}};
  const std::string& n = name->get_ref<const std::string&>();
  if (n == "run_command") return run_command(ops, reader);
  if (n == "write_file") return write_file(ops, reader);
  if (n == "read_file") return read_file(ops, reader);
  if (n == "generate_document") return generate_document(ops, options, reader, documents);
  if (n == "set_sandbox_network" && options.network_tool) return set_sandbox_network(ops, reader);
  return RpcOutcome::error(kInvalidParams, "Unknown tool: " + n);
}

}  // namespace carapace::mcp
