// Headless Chromium for the report tests (chromium.h).
#include "chromium.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// One headless Chromium run in a fresh profile. Background networking is off
// and every connection goes to a dead proxy, so nothing leaves the machine.
CommandResult RunChromium(std::vector<std::string> args, const TempDir& dir) {
  const std::string bin = ChromiumBinary();
  std::vector<std::string> argv = {bin,
                                   "--headless",
                                   "--disable-gpu",
                                   "--hide-scrollbars",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-default-apps",
                                   "--disable-extensions",
                                   "--disable-features=Translate,OptimizationHints,MediaRouter",
                                   "--proxy-server=127.0.0.1:9",
                                   "--proxy-bypass-list=<-loopback>",
                                   "--user-data-dir=" + dir.File("profile")};
  // Chromium's sandbox refuses to run as root; as another user it stays on.
  if (::geteuid() == 0) argv.push_back("--no-sandbox");
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, 120);
}

// URLs the page itself requested: URL_REQUEST_START_JOB events whose network
// isolation key is the file:// page (Chromium's own background fetches have
// other keys).
std::vector<std::string> PageRequests(const std::string& netlog_path, std::string* error) {
  const json j = json::parse(ReadText(netlog_path), nullptr, false);
  if (j.is_discarded() || !j.contains("events") || !j.contains("constants")) {
    *error = "the net log " + netlog_path + " is not complete JSON";
    return {};
  }
  int start_job = -1;
  for (const auto& [name, id] : j["constants"]["logEventTypes"].items()) {
    if (name == "URL_REQUEST_START_JOB") start_job = id.get<int>();
  }
  std::vector<std::string> urls;
  for (const auto& e : j["events"]) {
    if (!e.contains("type") || e["type"] != start_job || !e.contains("params")) continue;
    const auto& p = e["params"];
    const std::string nik = p.value("network_isolation_key", "");
    const std::string initiator = p.value("initiator", "");
    if (nik.find("file://") != std::string::npos || initiator == "null")
      urls.push_back(p.value("url", "?"));
  }
  return urls;
}

}  // namespace

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Chromium from Debian's package (scripts/install-deps.sh), or $MOETUNE_CHROMIUM.
std::string ChromiumBinary() {
  if (const char* c = std::getenv("MOETUNE_CHROMIUM"); c && *c) return c;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t colon = std::min(dirs.find(':', start), dirs.size());
    const fs::path p = fs::path(dirs.substr(start, colon - start)) / "chromium";
    if (::access(p.c_str(), X_OK) == 0) return p.string();
    start = colon + 1;
  }
  return "";
}

PageLoad Load(const std::string& html, const TempDir& dir) {
  PageLoad out;
  const std::string netlog = dir.File("net.json");
  const auto r = RunChromium({"--enable-logging=stderr", "--v=0", "--log-net-log=" + netlog,
                              "--virtual-time-budget=3000", "--dump-dom", "file://" + html},
                             dir);
  out.exit_code = r.exit_code;
  out.dom = r.out;
  out.log = r.err;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(":CONSOLE") != std::string::npos || line.find("CONSOLE(") != std::string::npos)
      out.console.push_back(line);
  }
  std::string error;
  out.requests = PageRequests(netlog, &error);
  if (!error.empty()) out.requests.push_back("(" + error + ")");
  return out;
}

std::optional<RgbImage> Screenshot(const std::string& html, int width, int height, bool dark,
                                   const TempDir& dir, const std::string& name) {
  const std::string png = dir.File(name + ".png");
  std::vector<std::string> args = {fmt::format("--window-size={},{}", width, height),
                                   "--screenshot=" + png};
  if (dark) args.push_back("--force-dark-mode");
  args.push_back("file://" + html);
  const auto r = RunChromium(args, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  std::string error;
  auto img = ReadPng(png, &error);
  EXPECT_TRUE(img.has_value()) << error;
  // Keep a copy for people who want to look (MOETUNE_REPORT_SHOTS=folder).
  if (const char* keep = std::getenv("MOETUNE_REPORT_SHOTS"); keep && *keep && img) {
    std::error_code ec;
    fs::copy_file(png, fs::path(keep) / (name + ".png"), fs::copy_options::overwrite_existing, ec);
  }
  return img;
}

size_t CountMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// Everything the issue asks of one HTML report.
void CheckReport(const std::string& html, const Expect& want, const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_FALSE(ChromiumBinary().empty())
      << "chromium is not installed: run scripts/install-deps.sh (Debian package chromium)";
  const std::string text = ReadText(html);
  ASSERT_FALSE(text.empty()) << html;
  EXPECT_NE(
      text.find("http-equiv=\"Content-Security-Policy\" content=\"default-src &#39;none&#39;"),
      std::string::npos);
  // Keep the report for people who want to look (and scripts/report-screenshots.sh).
  if (const char* keep = std::getenv("MOETUNE_REPORT_SHOTS"); keep && *keep) {
    std::error_code ec;
    fs::copy_file(html, fs::path(keep) / (name + ".html"), fs::copy_options::overwrite_existing,
                  ec);
  }
  TempDir dir;
  const PageLoad page = Load(html, dir);
  ASSERT_EQ(page.exit_code, 0) << page.log.substr(0, 3000);
  EXPECT_NE(page.dom.find("data-ready=\"1\""), std::string::npos)
      << "the report's script did not run (blocked by its own Content-Security-Policy?)";
  EXPECT_TRUE(page.console.empty()) << page.console.front();
  EXPECT_TRUE(page.requests.empty()) << page.requests.front();
  EXPECT_EQ(CountMatches(page.dom, "<figure class=\"fig\""), want.figures);
  for (const auto& [chart, n] : want.points) {
    EXPECT_EQ(CountMatches(page.dom, "<g class=\"pt [^\"]*\" data-chart=\"" + chart + "\""), n)
        << chart;
  }
  for (const auto& [chart, n] : want.failed) {
    EXPECT_EQ(CountMatches(page.dom, "<g class=\"pt-failed\" data-chart=\"" + chart + "\""), n)
        << chart;
  }
  struct Size {
    int width, height;
    const char* label;
  };
  for (const Size& size : {Size{1280, 900, "desktop"}, Size{390, 844, "phone"}}) {
    const int w = size.width, h = size.height;
    const std::string label = size.label;
    auto img = Screenshot(html, w, h, false, dir, fmt::format("{}-{}", name, label));
    ASSERT_TRUE(img.has_value());
    EXPECT_EQ(img->width, w);
    const ImageStats s = Analyze(*img);
    // A blank or unstyled page has a handful of colours; a report with charts, many.
    EXPECT_GE(s.distinct_colors, 12u) << label;
    EXPECT_GE(s.non_background, 0.04) << label;
    EXPECT_GT(s.mean_luminance, 180) << label << ": light mode should be light";
  }
}

}  // namespace moetune::itest
