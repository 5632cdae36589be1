// The service's egress half (docs/api.md, Egress): a sandbox with internet has its own
// `carapace egress-proxy` (daemon/backends/egress_sidecar.h) where its back end says the
// sandbox's side reaches it, and its agent forwarding 127.0.0.1:kProxyPort there. Without
// internet there is no proxy and no socket: the sandbox has no way out at all.
#include <sys/stat.h>

#include "daemon/core/json_log.h"
#include "daemon/core/sandbox_service.h"
#include "daemon/core/service_entries.h"
#include "egress/credentials/sentinel.h"

namespace carapace::service {

using nlohmann::json;

namespace {

// Where the agent listens inside the sandbox (the proxy variables every exec gets name it).
constexpr uint16_t kProxyPort = 3128;
constexpr uint16_t kStubDnsPort = 53;

// The set for `specs`: an entry whose env the sandbox already has keeps its sentinel (its
// programs hold it), a new one gets a fresh sentinel.
Result<egress::CredentialSet> credentials_for(const egress::CredentialSet& had,
                                              std::vector<egress::CredentialSpec> specs) {
  std::vector<std::string> sentinels;
  for (const egress::CredentialSpec& spec : specs) {
    const egress::Credential* old = had.find(spec.env);
    sentinels.push_back(old ? old->sentinel : TRY(egress::make_sentinel()));
  }
  return egress::CredentialSet::with_sentinels(std::move(specs), sentinels);
}

}  // namespace

Status SandboxService::apply_network(SandboxEntry& s, const NetworkSpec& network) {
  if (!network.internet) {
    // A fork child's agent is a copy of its parent's, forwarder included.
    if (s.egress || !s.parent.empty()) {
      // Stopping the proxy alone already leaves the forwarder nothing to reach; the agent is
      // told too so that the proxy variables go from new execs.
      auto c = s.instance->agent().connect();
      if (c.ok()) {
        c->set_io_timeout_ms(5000);
        if (auto r = c->set_egress(""); !r.ok())
          json_log("warn", "sandbox egress: the agent did not stop its forwarder",
                   {{"id", s.id}, {"error", r.error().describe()}});
      }
    }
    s.egress.reset();
    s.network = network;
    s.credentials = {};
    s.proxy_url.clear();
    return ok_status();
  }
  const std::vector<uint16_t> ports = egress::transparent_ports(network.policy);
  egress::CredentialSet credentials = TRY(credentials_for(s.credentials, network.credentials));
  if (s.egress && s.egress->alive()) {
    TRY_STATUS(s.egress->set_policy(network.policy));
    if (!credentials.empty() || !s.credentials.empty() || !network.upstreams.empty() ||
        !s.network.upstreams.empty())
      TRY_STATUS(s.egress->set_credentials(credentials, network.upstreams));
    if (ports != egress::transparent_ports(s.network.policy) ||
        credentials.env() != s.credentials.env()) {
      // New captured ports: the agent's forwarder restarts on them (its tunnels are cut; the
      // stand-in addresses stay). New sentinels only change what the next execs get.
      // With credentials, the proxy's CA too: their hosts' TLS is terminated under it.
      const std::string ca = credentials.empty() ? std::string() : TRY(s.egress->ca_pem());
      auto client = TRY(s.instance->agent().connect());
      client.set_io_timeout_ms(5000);
      TRY(client.set_egress(s.egress->spec().placement.agent_upstream, kProxyPort, ports,
                            kStubDnsPort, credentials.env(), ca));
    }
    s.network = network;
    s.credentials = std::move(credentials);
    return ok_status();
  }
  s.egress.reset();  // one that died: replaced
  const EgressPlacement place = TRY(s.instance->egress_placement());
  const std::string control_dir = store_.dir() + "/egress";
  if (::mkdir(control_dir.c_str(), 0700) != 0 && errno != EEXIST)
    return sys_error("mkdir " + control_dir);
  EgressSidecarSpec spec;
  spec.carapace_exe = options_.carapace_exe;
  spec.sandbox = s.id;
  spec.control_path = control_dir + "/" + s.id + ".sock";
  spec.placement = place;
  spec.policy = network.policy;
  spec.ca_file = options_.config.egress_ca_file;
  auto sidecar = TRY(EgressSidecar::start(std::move(spec)));
  // Before the agent is pointed at it: the first request already finds its credentials.
  if (!credentials.empty() || !network.upstreams.empty())
    TRY_STATUS(sidecar->set_credentials(credentials, network.upstreams));
  // The proxy's CA goes to the agent now, at hand-out (never into a template): with credentials
  // only, since only their hosts are terminated.
  const std::string ca = credentials.empty() ? std::string() : TRY(sidecar->ca_pem());
  auto client = TRY(s.instance->agent().connect());
  client.set_io_timeout_ms(5000);
  // A fork child's agent still holds its parent's sentinels: the env given here replaces them.
  std::string url = TRY(client.set_egress(place.agent_upstream, kProxyPort, ports, kStubDnsPort,
                                          credentials.env(), ca));
  s.egress = std::move(sidecar);
  s.proxy_url = std::move(url);
  s.network = network;
  s.credentials = std::move(credentials);
  json_log("info", "sandbox egress on",
           {{"id", s.id},
            {"pid", s.egress->pid()},
            {"allow_hosts", network.policy.allow_texts()},
            {"deny_hosts", network.policy.deny_texts()},
            {"credentials", s.credentials.describe()}});
  return ok_status();
}

ApiResult<SandboxView> SandboxService::set_network(const std::string& id,
                                                   const NetworkSpec& network) {
  auto s = find_sandbox(id);
  if (!s) return not_found("no sandbox " + id);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->instance) return not_found("no sandbox " + id);
    if (s->instance->paused())
      return conflict("sandbox " + id + " is paused; its agent cannot take a new network");
    if (!s->instance->alive()) return conflict("sandbox " + id + " has ended");
    if (Status e = apply_network(*s, network); !e.ok()) {
      if (e.error().kind == ErrorKind::kInvalidInput) return bad_request(e.error().describe());
      return internal("egress proxy: " + e.error().describe());
    }
    if (Status w = store_.write_sandbox(s->id, sandbox_record(*s)); !w.ok())
      json_log("warn", "sandbox record not rewritten",
               {{"id", id}, {"error", w.error().describe()}});
  }
  json_log("info", "sandbox network set",
           {{"id", id},
            {"internet", network.internet},
            {"allow_hosts", network.policy.allow_texts()},
            {"deny_hosts", network.policy.deny_texts()}});
  return describe_sandbox(*s);
}

}  // namespace carapace::service
