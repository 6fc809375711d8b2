// docs/checks.md names every code healthd can emit: a code written in the source of a check, the
// engine or the actions and missing from the reference fails here. A code built from a prefix
// ("EFA-COUNTER-" + name) is documented as the prefix followed by a placeholder ("EFA-COUNTER-<name>").
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "checks/gpu/xid_policy.hpp"
#include "checks/registry.hpp"
#include "policy/cure_plan.hpp"
#include "state/journal.hpp"

namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every string literal that looks like a code: upper-case words joined by '-', possibly ending in '-'.
std::set<std::string> codes_in_source() {
  const std::regex literal("\"([A-Z][A-Z0-9]*-(?:[A-Z0-9]+-)*[A-Z0-9]*)\"");
  std::set<std::string> codes;
  for (const char* dir : {"healthd/checks", "healthd/engine", "healthd/actions"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::filesystem::path(AR_SOURCE_DIR) / dir)) {
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      const auto text = read(entry.path());
      for (std::sregex_iterator it(text.begin(), text.end(), literal), end; it != end; ++it) codes.insert((*it)[1]);
    }
  }
  return codes;
}

}  // namespace

TEST(CheckReference, EveryCodeInTheSourceIsDocumented) {
  const auto reference = read(std::filesystem::path(AR_SOURCE_DIR) / "docs/checks.md");
  ASSERT_FALSE(reference.empty());
  const auto codes = codes_in_source();
  // The scan finds what it should: a fixed code, and prefixes of built ones.
  ASSERT_TRUE(codes.contains("GPU-ROW-REMAP-FAILED"));
  ASSERT_TRUE(codes.contains("EFA-COUNTER-"));
  ASSERT_TRUE(codes.contains("SCRIPT-"));
  for (const auto& code : codes) {
    const bool prefix = code.back() == '-';
    const auto documented = prefix ? "`" + code + "<" : "`" + code + "`";
    EXPECT_NE(reference.find(documented), std::string::npos) << code << " is missing from docs/checks.md";
  }
}

// The cure table of docs/checks.md is the catalogue the code applies: each code's default chain, and
// for an XID the action its table gives it.
TEST(CheckReference, TheCureTableIsTheDefaultChainOfEachCode) {
  using namespace ar::healthd;
  const auto reference = read(std::filesystem::path(AR_SOURCE_DIR) / "docs/checks.md");
  const auto table = reference.find("| code | default action | default chain |");
  ASSERT_NE(table, std::string::npos);
  std::istringstream rows(reference.substr(table));
  std::string row;
  std::getline(rows, row);
  std::getline(rows, row);  // |---|
  int checked = 0;
  const auto xids = XidPolicy::defaults();
  while (std::getline(rows, row) && row.starts_with("| ")) {
    if (row.starts_with("| any")) continue;
    std::vector<std::string> cells;
    for (std::size_t at = 1, next; (next = row.find(" |", at)) != std::string::npos; at = next + 2)
      cells.push_back(row.substr(at + 1, next - at - 1));
    ASSERT_EQ(cells.size(), 3u) << row;
    const auto action = parse_remedy(cells[1]);
    ASSERT_TRUE(action) << row;
    const std::regex code_re("`([A-Z0-9-]+)`");
    for (std::sregex_iterator it(cells[0].begin(), cells[0].end(), code_re), end; it != end; ++it) {
      const std::string code = (*it)[1];
      EXPECT_EQ(chain_text(policy::default_cure_chain(code, *action)), cells[2]) << code;
      if (auto xid = policy::xid_of_code(code)) {
        EXPECT_EQ(node_action_of(xids.rule_for(*xid).action), *action) << code;
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

// The GPU kind keeps the GPU list of `healthctl gpus` and the per-GPU metrics; no other kind keeps one
// of the same name (the status would hold only the last).
TEST(CheckRegistry, TheGpuKindKeepsTheGpuListAndNoNameIsKeptTwice) {
  std::set<std::string> names;
  for (const auto& inventory : device_inventories()) EXPECT_TRUE(names.insert(inventory.name).second) << inventory.name;
  EXPECT_TRUE(names.contains("gpus"));
  for (const auto& inventory : device_inventories()) {
    const auto list = inventory.build({});
    EXPECT_EQ(list.listed, nlohmann::json::array()) << inventory.name << ": no results, no devices";
    EXPECT_TRUE(list.readings.empty()) << inventory.name;
  }
}
