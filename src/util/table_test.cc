#include "util/table.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(MarkdownTable, PadsAndAligns) {
  MarkdownTable t({{"name", MarkdownTable::Align::kLeft}, {"value"}});
  t.AddRow({"a", "1"});
  t.AddRow({"longer", "12345678"});
  EXPECT_EQ(t.Render(),
            "| name   |    value |\n"
            "| ------ | -------: |\n"
            "| a      |        1 |\n"
            "| longer | 12345678 |\n");
}

TEST(MarkdownTable, CountsUtf8AsOneColumn) {
  MarkdownTable t({{"x"}});
  t.AddRow({"1 ± 2"});
  EXPECT_NE(t.Render().find("| 1 ± 2 |"), std::string::npos);
}

}  // namespace
}  // namespace moetune
