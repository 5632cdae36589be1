// POST /sandboxes/{id}/documents through the real docgen (guest/docgen, put on the sandbox's PATH
// through its env), and the daemon's answers when the spec is invalid or docgen is missing.
#include "tests/service/daemon_harness.h"

namespace carapace::testing {
namespace {

using nlohmann::json;

json spec() {
  json table = {{"type", "table"},
                {"header", json::array({"a", "b"})},
                {"rows", json::array({json::array({"1", "2"}), json::array({"3", "4"})})}};
  json blocks = json::array();
  blocks.push_back({{"type", "heading"}, {"level", 1}, {"text", "Hello"}});
  blocks.push_back(
      {{"type", "paragraph"}, {"runs", json::array({{{"text", "From the sandbox daemon."}}})}});
  blocks.push_back(table);
  return {{"title", "Daemon test"}, {"blocks", blocks}};
}

class DocumentsTest : public DaemonTest {
 protected:
  std::string sandbox_with_docgen() {
    start_daemon();
    std::string tpl = make_template(1);
    // docgen runs with /usr/bin/python3 (tools/setup installs its modules there).
    json env = {{"PATH", std::string(CARAPACE_DOCGEN_DIR) + ":/usr/bin:/bin"}};
    return make_sandbox(tpl, {{"env", env}})["id"];
  }
};

TEST_F(DocumentsTest, AllFourFormatsWithTheirMagicBytes) {
  std::string id = sandbox_with_docgen();
  struct Format {
    const char* name;
    std::string magic;
    const char* type;
  } formats[] = {
      {"docx", "PK\x03\x04", "wordprocessingml"},
      {"pptx", "PK\x03\x04", "presentationml"},
      {"xlsx", "PK\x03\x04", "spreadsheetml"},
      {"pdf", "%PDF", "application/pdf"},
  };
  for (const auto& f : formats) {
    auto r = call("POST", "/sandboxes/" + id + "/documents",
                  json{{"spec", spec()}, {"format", f.name}}.dump());
    ASSERT_EQ(r.status, 200) << f.name << ": " << r.body.substr(0, 500);
    EXPECT_EQ(r.body.substr(0, 4), f.magic) << f.name;
    EXPECT_NE(r.headers.get("Content-Type").value_or("").find(f.type), std::string::npos) << f.name;
    EXPECT_GT(r.body.size(), 500u) << f.name;
  }
  // The temporaries are gone.
  auto list = call("GET", "/sandboxes/" + id + "/files/list?path=.carapace");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(body_json(list)["entries"].size(), 0u) << list.body;
}

TEST_F(DocumentsTest, InvalidSpecIs400WithDocgensMessages) {
  std::string id = sandbox_with_docgen();
  auto r = call("POST", "/sandboxes/" + id + "/documents",
                R"({"spec": {"title": 5, "blocks": []}, "format": "pdf"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("invalid spec: title"), std::string::npos) << r.body;
  for (const char* body :
       {R"({"spec": {"title": "x"}, "format": "odt"})", R"({"spec": "text", "format": "pdf"})",
        R"({"format": "pdf"})", R"({"spec": {}, "format": "pdf", "x": 1})"}) {
    EXPECT_EQ(call("POST", "/sandboxes/" + id + "/documents", body).status, 400) << body;
  }
}

TEST_F(DocumentsTest, TemplateWithoutDocgenIs409) {
  start_daemon();
  std::string tpl = make_template(0);
  std::string id = make_sandbox(tpl, {{"env", {{"PATH", "/nonexistent"}}}})["id"];
  auto r = call("POST", "/sandboxes/" + id + "/documents",
                json{{"spec", spec()}, {"format", "pdf"}}.dump());
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("no docgen"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace carapace::testing
