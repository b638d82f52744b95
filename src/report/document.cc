#include "report/document.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "report/html_document.h"
#include "report/markdown_document.h"

namespace moetune {

Result<ReportFormat> ReportFormatForPath(std::string_view path) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  std::string ext;
  if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
    ext = std::string(path.substr(dot + 1));
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  if (ext == "html" || ext == "htm") return ReportFormat::kHtml;
  if (ext == "md" || ext == "markdown") return ReportFormat::kMarkdown;
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("--report '{}': the file name must end in .html (a self-contained web "
                           "page) or .md (Markdown)",
                           path));
}

std::string RenderReport(const Report& report, ReportFormat format) {
  return format == ReportFormat::kHtml ? RenderHtml(report) : RenderMarkdown(report);
}

size_t CountFigures(const Report& report) {
  size_t n = 0;
  for (const auto& s : report.sections) {
    for (const auto& b : s.blocks) n += std::holds_alternative<Figure>(b) ? 1 : 0;
  }
  return n;
}

}  // namespace moetune
