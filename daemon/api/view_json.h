// The JSON the routes answer with (docs/api.md "Templates", "Sandboxes", "Health"): the
// service's views rendered, one function per view, so every route shows an object the same way.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/core/service_requests.h"

namespace carapace::service {

nlohmann::json to_json(const TemplateView& t);
nlohmann::json to_json(const SandboxView& s);
nlohmann::json to_json(const HealthView& h);

// [to_json(v) for v in views].
template <typename View>
nlohmann::json to_json(const std::vector<View>& views) {
  nlohmann::json list = nlohmann::json::array();
  for (const View& v : views)
    list.push_back(to_json(v));
  return list;
}

}  // namespace carapace::service
