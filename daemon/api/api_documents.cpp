// POST /sandboxes/{id}/documents: runs the sandbox's own `docgen` (guest/docgen) on a spec and
// returns the document. The output lives in the sandbox's .carapace/ folder only for the call;
// docgen validates the spec, so its messages are the 400's.
#include <atomic>
#include <sstream>

#include "daemon/api/api_common.h"

namespace carapace::service {

using nlohmann::json;

namespace {

constexpr uint64_t kDocgenTimeoutMs = 300'000;  // a large PDF on a slow guest

const char* content_type(const std::string& format) {
  if (format == "docx")
    return "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
  if (format == "pptx")
    return "application/vnd.openxmlformats-officedocument.presentationml.presentation";
  if (format == "xlsx") return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
  if (format == "pdf") return "application/pdf";
  return nullptr;
}

// docgen's "docgen: invalid spec: ..." lines, one message.
std::string docgen_messages(const std::string& stderr_text) {
  std::istringstream in(stderr_text);
  std::string line, out;
  int n = 0;
  while (std::getline(in, line) && n < 50) {
    if (line.empty()) continue;
    out += (out.empty() ? "" : "; ") + line;
    ++n;
  }
  return out.empty() ? "docgen refused the spec" : out;
}

http::HttpResponse make_document(SandboxService& svc, const http::HttpRequest& req) {
  static std::atomic<uint64_t> counter{0};
  auto body = json_body(req, false);
  if (!body) return api_error_response(body.error());
  for (const auto& [k, v] : body->items()) {
    if (k != "spec" && k != "format") return api_error_response(bad_request(k + ": unknown field"));
  }
  if (!body->contains("spec") || !(*body)["spec"].is_object())
    return api_error_response(bad_request("spec: required (a docgen spec object)"));
  // Not body->value("format", ""): that throws on a format that is not a string.
  std::string format;
  if (auto f = body->find("format"); f != body->end() && f->is_string()) format = *f;
  const char* type = content_type(format);
  if (!type) return api_error_response(bad_request("format: one of docx, pptx, xlsx, pdf"));

  auto target = svc.agent_target(std::string(req.param("id")));
  if (!target) return api_error_response(target.error());
  auto client = target->endpoint.connect();
  if (!client.ok())
    return api_error_response(internal("agent unreachable: " + client.error().describe()));

  uint64_t n = ++counter;
  // The output goes to a folder of its own; the spec goes on docgen's stdin and docgen runs in the
  // sandbox's work directory, so image paths in the spec are relative to /work, where the caller
  // put them with PUT /files.
  std::string out_path = ".carapace/doc-" + std::to_string(n) + "." + format;
  if (Status s = client->put_file(".carapace/.keep", "", 0600, true); !s.ok())
    return api_error_response(agent_api_error(s.error()));

  AgentExecOptions opts;
  opts.env = target->env;
  opts.timeout_ms = kDocgenTimeoutMs;
  opts.max_output = 256 * 1024;
  opts.stdin_data = (*body)["spec"].dump();
  std::string err;
  auto run = client->exec({"docgen", "--spec", "-", "--out", out_path}, opts, nullptr,
                          [&](std::string_view b) { err.append(b); });
  http::HttpResponse resp;
  if (!run.ok()) {
    if (agent_error_code(run.error()) == "exec_failed") {
      resp = api_error_response(conflict("this sandbox's template has no docgen"));
    } else {
      resp = api_error_response(agent_api_error(run.error()));
    }
  } else if (run->exited && run->exit_code == 2) {
    resp = api_error_response(bad_request(docgen_messages(err)));
  } else if (!run->exited || run->exit_code != 0) {
    resp = api_error_response(internal("docgen failed: " + docgen_messages(err)));
  } else {
    auto data = client->get_file(out_path, svc.config().max_upload_bytes);
    if (!data.ok()) {
      resp = api_error_response(agent_api_error(data.error()));
    } else {
      resp.status = 200;
      resp.headers.set("Content-Type", type);
      resp.headers.set("Content-Disposition", "attachment; filename=\"document." + format + "\"");
      resp.body = std::move(*data);
    }
  }
  // The temporaries go whatever happened; a failure here changes nothing for the caller.
  if (client->fd() >= 0) {
    AgentExecOptions rm;
    rm.timeout_ms = 10'000;
    (void)client->exec({"rm", "-f", "--", out_path, ".carapace/.keep"}, rm, nullptr, nullptr);
  }
  return resp;
}

}  // namespace

Status add_document_routes(http::Router& r, SandboxService& svc) {
  return add_route(r, svc, "POST", "/sandboxes/{id}/documents",
                   [&svc](const http::HttpRequest& req) { return make_document(svc, req); });
}

}  // namespace carapace::service
