#pragma once
/// One Markdown table renderer for every text report (docs/architecture.md, Reports):
/// columns are padded so the table reads well in a terminal and renders in Markdown.

#include <string>
#include <vector>

namespace moetune {

class MarkdownTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kRight;
  };

  explicit MarkdownTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  /// Adds a row; missing cells are empty, extra cells are dropped.
  void AddRow(std::vector<std::string> cells);
  std::string Render() const;
  size_t rows() const { return rows_.size(); }

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace moetune
