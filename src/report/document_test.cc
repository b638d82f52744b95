#include "report/document.h"

#include <gtest/gtest.h>

#include "report/html_document.h"
#include "report/markdown_document.h"
#include "report/svg_chart.h"
#include "util/sha256.h"

namespace moetune {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string CspHash(const std::string& text) {
  const auto d = Sha256(text);
  return "'sha256-" + Base64(std::string(d.begin(), d.end())) + "'";
}

Report Sample() {
  Report r;
  r.title = "Report <b>bold</b> & co";
  r.subtitle = "model | x";
  r.generator = "moetune test";
  Figure f;
  f.id = "fig1";
  f.caption = "A chart";
  ChartSpec spec;
  spec.id = "fig1";
  spec.described_by = "fig1-data";
  spec.panels.push_back(ChartPanel{"P", "t/s", AxisFormat::kNumber, true, {}, {}});
  f.svg = RenderSvgChart(spec);
  f.legend = {{"line c0", "measured"}, {"cross", "failed"}};
  f.data.header = {"N", "t/s"};
  f.data.numeric = {true, true};
  f.data.AddRow({"1", "2.0"}, "pick");
  f.data.AddRow({"2", "a|b"}, "failed");
  f.sketch = {"pp ▁█"};
  VerdictBlock v;
  v.headline = "Run it";
  v.command = {"llama-server", "-ot", "blk\\.(1[0-9])\\.ffn_.*_exps=CPU"};
  v.reason = "because";
  v.speedup = "1.4x faster";
  v.facts = {"rule: safety"};
  r.sections.push_back(Section{"verdict", "Verdict", {v}});
  r.sections.push_back(Section{"fig", "Figures", {f, Paragraph{"<not markup>"}}});
  r.sections.push_back(
      Section{"more",
              "More",
              {CodeBlock{"run", "echo ```", true}, BulletList{{"careful"}, true},
               KeyValues{{{"engine", "llama.cpp"}}},
               Collapsible{"raw", DocTable{"", "", {"a"}, {}, {{"1"}}, {""}}, std::nullopt},
               DecisionTable{{{"placement", "--n-cpu-moe 25", "safety rule", "ratio 0.2"}}}}});
  return r;
}

TEST(HtmlDocument, SelfContainedWithHashedStyleAndScript) {
  const std::string html = RenderHtml(Sample());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  const std::string csp = ReportContentSecurityPolicy();
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe"), std::string::npos);
  EXPECT_NE(csp.find("style-src " + CspHash(ReportStylesheet())), std::string::npos);
  EXPECT_NE(csp.find("script-src " + CspHash(ReportScript())), std::string::npos);
  EXPECT_NE(
      html.find("http-equiv=\"Content-Security-Policy\" content=\"default-src &#39;none&#39;"),
      std::string::npos);
  // The hashed texts are embedded byte for byte.
  EXPECT_NE(html.find("<style>" + ReportStylesheet() + "</style>"), std::string::npos);
  EXPECT_NE(html.find("<script>" + ReportScript() + "</script>"), std::string::npos);
  // Nothing refers to another resource: no URL but the SVG namespace, no src/href outside the page.
  std::string stripped = html;
  for (size_t at; (at = stripped.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    stripped.erase(at, 26);
  EXPECT_EQ(stripped.find("http:"), std::string::npos);
  EXPECT_EQ(stripped.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(Count(html, "href=\""), Count(html, "href=\"#"));
  EXPECT_NE(ReportStylesheet().find("prefers-color-scheme:dark"), std::string::npos);
  EXPECT_NE(ReportStylesheet().find("@media print"), std::string::npos);
}

TEST(HtmlDocument, EscapesTextAndLinksTablesToCharts) {
  const std::string html = RenderHtml(Sample());
  EXPECT_EQ(html.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(html.find("<h1>Report &lt;b&gt;bold&lt;/b&gt; &amp; co</h1>"), std::string::npos);
  EXPECT_NE(html.find("<p>&lt;not markup&gt;</p>"), std::string::npos);
  // The chart names its data table, which sits in a <details> under it.
  EXPECT_NE(html.find("aria-describedby=\"fig1-d fig1-data\""), std::string::npos);
  EXPECT_NE(html.find("<details class=\"data\"><summary>Data table</summary>"), std::string::npos);
  EXPECT_NE(html.find("<table id=\"fig1-data\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"pick\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"failed\">"), std::string::npos);
  // The command, shell-quoted, with a copy button pointing at it.
  EXPECT_NE(
      html.find("<code id=\"code-1\">llama-server -ot &#39;blk\\.(1[0-9])\\.ffn_.*_exps=CPU&#39;"
                "</code>"),
      std::string::npos);
  EXPECT_NE(html.find("data-target=\"code-1\""), std::string::npos);
  EXPECT_EQ(Count(html, "<button class=\"copy\""), 2u);  // verdict + the copyable code block
  EXPECT_NE(html.find("<ul class=\"warnings\"><li>careful</li></ul>"), std::string::npos);
  EXPECT_NE(html.find("<dt>engine</dt><dd>llama.cpp</dd>"), std::string::npos);
  EXPECT_NE(html.find("<nav class=\"toc\""), std::string::npos);
}

TEST(MarkdownDocument, TablesCodeAndEscaping) {
  const std::string md = RenderMarkdown(Sample());
  EXPECT_EQ(md.rfind("# Report \\<b\\>bold\\</b\\> & co\n", 0), 0u) << md.substr(0, 80);
  EXPECT_NE(md.find("model \\| x"), std::string::npos);
  EXPECT_NE(md.find("```sh\nllama-server -ot 'blk\\.(1[0-9])\\.ffn_.*_exps=CPU'\n```"),
            std::string::npos)
      << md;
  // A fence longer than the backticks inside.
  EXPECT_NE(md.find("````sh\necho ```\n````"), std::string::npos) << md;
  EXPECT_NE(md.find("a\\|b"), std::string::npos);
  EXPECT_NE(md.find("1 (pick)"), std::string::npos);
  EXPECT_NE(md.find("2 (failed)"), std::string::npos);
  EXPECT_NE(md.find("pp ▁█"), std::string::npos);
  EXPECT_NE(md.find("<details><summary>raw</summary>"), std::string::npos);
  EXPECT_NE(md.find("- **warning:** careful"), std::string::npos);
  EXPECT_EQ(md.find("<svg"), std::string::npos);
}

TEST(ReportFormat, FromThePath) {
  EXPECT_EQ(*ReportFormatForPath("r.html"), ReportFormat::kHtml);
  EXPECT_EQ(*ReportFormatForPath("/tmp/R.HTM"), ReportFormat::kHtml);
  EXPECT_EQ(*ReportFormatForPath("notes.md"), ReportFormat::kMarkdown);
  EXPECT_EQ(*ReportFormatForPath("a.b/notes.markdown"), ReportFormat::kMarkdown);
  auto bad = ReportFormatForPath("report.pdf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("report.pdf"), std::string::npos);
  EXPECT_FALSE(ReportFormatForPath("dir.html/report").ok());
  EXPECT_EQ(CountFigures(Sample()), 1u);
}

}  // namespace
}  // namespace moetune
