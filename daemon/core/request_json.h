// The JSON form of the service's requests (docs/api.md): the bodies of the REST routes and the
// template records of the state dir, which keep the request a template was built from. Parsing
// checks the shape (known fields, types, the API's ranges) and names the first bad field in a
// 400; what depends on the host or the daemon's configuration (files, max_ttl_s) is checked by
// SandboxService itself.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "daemon/core/service_requests.h"

namespace carapace::service {

ApiResult<TemplateRequest> parse_template_request(const nlohmann::json& body);
// The request as parse_template_request reads it back (only the fields that are set, and no
// credentials: a record never holds a secret).
nlohmann::json template_request_json(const TemplateRequest& req);

ApiResult<SandboxRequest> parse_sandbox_request(const nlohmann::json& body);
ApiResult<ForkRequest> parse_fork_request(const nlohmann::json& body);
// {"allow_hosts": [...], "deny_hosts": [...], "internet": bool} (POST /sandboxes, fork, templates,
// PUT /sandboxes/{id}/network). internet defaults to whether any allow rule is given; false with
// allow rules is refused. Errors name `field`, e.g. "network.allow_hosts[2]: ...".
ApiResult<NetworkSpec> parse_network_spec(const nlohmann::json& v, const std::string& field);
// The view: the rules, internet and, with `with_credentials`, each credential with its secret
// redacted. Records are written without credentials at all.
nlohmann::json network_spec_json(const NetworkSpec& n, bool with_credentials = true);
ApiResult<TimeoutRequest> parse_timeout_request(const nlohmann::json& body);

// [{"host_path": "/srv/ws/proj", "guest_path": "/work/data", "mode": "ro"|"rw"|"rw-nodelete"}]
// (mode defaults to "ro"), with the checks of check_mount_requests (daemon/core/mounts.h): the
// list's shape and its paths, nothing on the host yet. Errors name `field`, e.g.
// "mounts[1].mode: ...".
ApiResult<std::vector<MountRequest>> parse_mounts(const nlohmann::json& v,
                                                  const std::string& field);
// The list as parse_mounts reads it back (the views and the template records).
nlohmann::json mounts_json(const std::vector<MountRequest>& mounts);

// An integer in `range`, or range_error(field, range).
ApiResult<int64_t> integer_in(const nlohmann::json& v, const char* field, FieldRange range);

// Environment objects of the API: {"NAME": "value"}; names non-empty, without '=' or NUL. A
// null is no variables.
ApiResult<EnvList> parse_env(const nlohmann::json& v, const std::string& field);

}  // namespace carapace::service
