// The API's error codes are one vocabulary: common/http/error_code.h (what every layer of the
// code base sends), docs/openapi.yaml's Error.code enum, the table in docs/api.md and the Python
// client's code table must list exactly the same codes with the same statuses.
#include "common/http/error_code.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace carapace::http {
namespace {

std::string read_source(const std::string& relative) {
  std::ifstream f(std::string(CARAPACE_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(f.good()) << relative;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::set<std::string> table_names() {
  std::set<std::string> out;
  for (const auto& e : kErrorCodes)
    out.insert(std::string(e.name));
  return out;
}

std::map<std::string, int> table_statuses() {
  std::map<std::string, int> out;
  for (const auto& e : kErrorCodes)
    out[std::string(e.name)] = e.status;
  return out;
}

// The `enum: [...]` list under `schemas: Error:` (plain text; the list may span lines).
std::set<std::string> openapi_enum() {
  const std::string yaml = read_source("docs/openapi.yaml");
  size_t schemas = yaml.find("\n  schemas:");
  size_t error = yaml.find("\n    Error:", schemas);
  size_t code = yaml.find("code:", error);
  size_t open = yaml.find("enum: [", code);
  size_t close = yaml.find(']', open);
  EXPECT_NE(schemas, std::string::npos);
  EXPECT_NE(open, std::string::npos);
  std::set<std::string> out;
  if (open == std::string::npos || close == std::string::npos) return out;
  std::string list = yaml.substr(open + 7, close - open - 7);
  std::regex word("[a-z_]+");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), word); it != std::sregex_iterator();
       ++it)
    out.insert(it->str());
  return out;
}

// Rows "| `code` | status | ..." of docs/api.md's error table.
std::map<std::string, int> api_md_table() {
  const std::string md = read_source("docs/api.md");
  std::map<std::string, int> out;
  std::regex row(R"(\|\s*`([a-z_]+)`\s*\|\s*([0-9]{3})\s*\|)");
  for (auto it = std::sregex_iterator(md.begin(), md.end(), row); it != std::sregex_iterator();
       ++it)
    out[(*it)[1].str()] = std::stoi((*it)[2].str());
  return out;
}

// Tuples ("code", status, Class) of the Python client's _CODES.
std::map<std::string, int> python_table() {
  const std::string py = read_source("clients/python/carapace_client/errors.py");
  std::map<std::string, int> out;
  std::regex tuple(R"re(\("([a-z_]+)",\s*([0-9]{3}),\s*[A-Za-z]+\))re");
  for (auto it = std::sregex_iterator(py.begin(), py.end(), tuple); it != std::sregex_iterator();
       ++it)
    out[(*it)[1].str()] = std::stoi((*it)[2].str());
  return out;
}

TEST(ErrorCodes, OneCodePerStatusAndBack) {
  std::set<int> statuses;
  std::set<std::string> names;
  for (const auto& e : kErrorCodes) {
    EXPECT_TRUE(statuses.insert(e.status).second) << "two codes for " << e.status;
    EXPECT_TRUE(names.insert(std::string(e.name)).second) << "twice: " << e.name;
    EXPECT_GE(e.status, 400);
    EXPECT_LT(e.status, 600);
    EXPECT_EQ(error_code_for_status(e.status), e.code);
    EXPECT_EQ(parse_error_code(e.name), e.code);
    EXPECT_EQ(to_string(e.code), e.name);
  }
  EXPECT_FALSE(parse_error_code("body_too_large").has_value());
  EXPECT_EQ(error_code_for_status(418), ErrorCode::kBadRequest);
  EXPECT_EQ(error_code_for_status(599), ErrorCode::kInternal);
}

TEST(ErrorCodes, OpenApiEnumIsTheTable) {
  EXPECT_EQ(openapi_enum(), table_names());
}

TEST(ErrorCodes, ApiMdListsEveryCodeWithItsStatus) {
  EXPECT_EQ(api_md_table(), table_statuses());
}

TEST(ErrorCodes, PythonClientKnowsEveryCodeWithItsStatus) {
  EXPECT_EQ(python_table(), table_statuses());
}

}  // namespace
}  // namespace carapace::http
