#include "util/table.h"

#include <algorithm>

namespace moetune {
namespace {

// Display width: count UTF-8 code points, not bytes (± and … are multi-byte).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

void MarkdownTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string MarkdownTable::Render() const {
  std::vector<size_t> w(columns_.size(), 3);
  for (size_t c = 0; c < columns_.size(); ++c) {
    w[c] = std::max(w[c], Width(columns_[c].title));
    for (const auto& r : rows_) w[c] = std::max(w[c], Width(r[c]));
  }
  auto cell = [&](const std::string& s, size_t c) {
    const std::string pad(w[c] - Width(s), ' ');
    return columns_[c].align == Align::kRight ? pad + s : s + pad;
  };
  std::string out = "|";
  for (size_t c = 0; c < columns_.size(); ++c) out += " " + cell(columns_[c].title, c) + " |";
  out += "\n|";
  for (size_t c = 0; c < columns_.size(); ++c) {
    std::string dash(w[c], '-');
    if (columns_[c].align == Align::kRight) dash.back() = ':';
    out += " " + dash + " |";
  }
  out += "\n";
  for (const auto& r : rows_) {
    out += "|";
    for (size_t c = 0; c < columns_.size(); ++c) out += " " + cell(r[c], c) + " |";
    out += "\n";
  }
  return out;
}

}  // namespace moetune
