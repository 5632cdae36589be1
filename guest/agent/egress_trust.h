// The sandbox's trust in its egress proxy's CA (egress/README.md, Credentials, TLS termination):
// the proxy terminates TLS to the hosts with credentials under a CA of its own, which the daemon
// hands to the agent with the egress op at hand-out, never earlier, so no template snapshot holds
// one. The agent writes it, and a bundle of the system CAs with it, to a folder it can write in
// either back end, and every exec gets the variables that point the usual TLS stacks there.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/base/result.h"

namespace carapace::agent {

inline constexpr size_t kMaxEgressCaBytes = 16 * 1024;

// Where the files go, in order of preference: /run/carapace-egress-ca as root (a microVM's agent),
// then /tmp/carapace-egress-ca-UID (the process back end's agent is an unprivileged uid in a user
// namespace, which cannot write /run or /etc; /tmp is its own there).
std::vector<std::string> default_egress_trust_dirs();

// Whether `pem` is one PEM certificate's text as the daemon sends it (printable ASCII and line
// ends, "-----BEGIN CERTIFICATE-----" first, at most kMaxEgressCaBytes).
bool egress_ca_pem_ok(std::string_view pem);

// Writes the CA (ca.pem) and the bundle (ca-bundle.pem: `system_bundle` if readable, then the
// CA) into the first of `dirs` that takes them (created 0755; refused unless a folder of this
// uid, not a link), each by a rename of a fresh file. Returns what every exec then gets:
// SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, PIP_CERT and GIT_SSL_CAINFO name the bundle,
// NODE_EXTRA_CA_CERTS the CA alone (Node adds it to its own store).
Result<std::vector<std::pair<std::string, std::string>>> install_egress_ca(
    const std::string& ca_pem, const std::vector<std::string>& dirs = default_egress_trust_dirs(),
    const std::string& system_bundle = "/etc/ssl/certs/ca-certificates.crt");
// Removes both files from each of `dirs` (no credentials: no CA, no bundle).
void remove_egress_ca(const std::vector<std::string>& dirs = default_egress_trust_dirs());

// The names install_egress_ca sets.
const std::vector<std::string>& egress_trust_env_names();

}  // namespace carapace::agent
