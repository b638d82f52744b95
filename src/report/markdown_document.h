#pragma once
/// A Report (report/document.h) as Markdown: the same sections and numbers as
/// the HTML file, with every chart given as its data table (and a sparkline
/// where a curve matters), commands in fenced blocks, collapsed parts as
/// <details> (which GitHub and most viewers render).

#include <string>

#include "report/document.h"

namespace moetune {

std::string RenderMarkdown(const Report& report);

}  // namespace moetune
