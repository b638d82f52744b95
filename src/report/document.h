#pragma once
/// A report as a document: sections of blocks (a verdict, figures with their
/// data tables, tables, commands, lists) that know nothing about the output
/// format. Each command builds one (report/command_documents.h) from the
/// pieces in report/report_blocks.h and report/curve_figures.h; `tune` composes
/// the same pieces. RenderReport writes it as one self-contained HTML file
/// (report/html_document.h) or as Markdown (report/markdown_document.h).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "util/result.h"

namespace moetune {

/// A table of text. `numeric[c]` right-aligns column c.
struct DocTable {
  std::string id;  // element id (HTML); empty = none
  std::string caption;
  std::vector<std::string> header;
  std::vector<bool> numeric;
  std::vector<std::vector<std::string>> rows;
  /// Per row (optional): "pick", "rejected", "failed" highlight the row.
  std::vector<std::string> row_class;
  /// On a narrow screen, show each row as a card of "column: value" lines
  /// (for tables of text such as decisions) instead of scrolling sideways.
  bool stack = false;

  void AddRow(std::vector<std::string> cells, std::string cls = {}) {
    rows.push_back(std::move(cells));
    row_class.push_back(std::move(cls));
  }
};

/// One entry of a figure's legend. `swatch` is a CSS class list: "line c0",
/// "line dashed c1", "ring", "hollow", "cross", "mk-cliff", "mk-pick",
/// "block seg-kv", "limit".
struct LegendItem {
  std::string swatch;
  std::string label;
};

/// A chart with the same numbers as a table beside it (for screen readers, for
/// print, for Markdown).
struct Figure {
  std::string id;       // the chart's id; the data table gets id + "-data"
  std::string caption;  // what the chart shows and how to read it
  std::string svg;      // from report/svg_chart.h or report/svg_bars.h
  std::vector<LegendItem> legend;
  DocTable data;
  /// Sparklines for text renderings (Markdown), one per line; may be empty.
  std::vector<std::string> sketch;
};

/// The answer first: what to run, why, and by how much it beats the defaults.
struct VerdictBlock {
  std::string headline;
  std::vector<std::string> command;  // argument vector, shown shell-quoted with a copy button
  std::string reason;                // one line
  std::string speedup;               // e.g. "1.42x faster than llama.cpp's defaults"; may be empty
  std::vector<std::string> facts;    // short extra lines (the rule applied, what was not measured)
  /// A warning as prominent as the headline, shown above it in the same weight
  /// (a simulated tune: "SIMULATED: ..."); empty for none.
  std::string banner;
};

struct Paragraph {
  std::string text;
};

struct CodeBlock {
  std::string label;  // shown above the code (may be empty)
  std::string text;
  bool copy = false;  // a copy button
};

struct BulletList {
  std::vector<std::string> items;
  bool warnings = false;  // styled as warnings
};

struct KeyValues {
  std::vector<std::pair<std::string, std::string>> items;
};

/// A closed-by-default part (raw measurements): a table and/or code.
struct Collapsible {
  std::string summary;
  std::optional<DocTable> table;
  std::optional<CodeBlock> code;
};

/// A decision with the rule that made it and the figures behind it.
struct DecisionRow {
  std::string what;      // "placement", "threads"
  std::string choice;    // "--n-cpu-moe 25"
  std::string rule;      // "safety rule: one layer more conservative than the edge"
  std::string evidence;  // "prefill 627 t/s at N=25 vs 130 t/s at N=23"
};
struct DecisionTable {
  std::vector<DecisionRow> decisions;
};

using DocBlock = std::variant<Paragraph, VerdictBlock, Figure, DocTable, CodeBlock, BulletList,
                              KeyValues, Collapsible, DecisionTable>;

struct Section {
  std::string id;  // anchor (letters, digits, '-')
  std::string title;
  std::vector<DocBlock> blocks;
};

struct Report {
  std::string title;
  std::string subtitle;   // model, machine, date
  std::string generator;  // "moetune 0.1.0"
  std::vector<Section> sections;
};

enum class ReportFormat { kHtml, kMarkdown };

/// The format for a `--report` path: .html/.htm or .md/.markdown (any case).
/// Errors name the path and the accepted extensions.
Result<ReportFormat> ReportFormatForPath(std::string_view path);

/// The whole report as text in `format`.
std::string RenderReport(const Report& report, ReportFormat format);

/// Number of figures in a report (tests, and the table of contents).
size_t CountFigures(const Report& report);

}  // namespace moetune
