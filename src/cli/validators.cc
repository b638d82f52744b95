#include "cli/validators.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "engine/rpc_host.h"
#include "engine/run_config.h"
#include "model/context_support.h"
#include "tune/objective.h"
#include "util/text.h"
#include "util/units.h"

namespace moetune {

CLI::Validator TokenCount(int64_t min, int64_t max) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        auto r = ParseTokenCount(s);
        if (!r.ok()) return r.error().message();
        if (*r < min || *r > max) {
          return fmt::format("{} tokens is outside the accepted range {} to {}", *r, min, max);
        }
        return "";
      },
      "TOKENS");
}

CLI::Validator ByteSize(int64_t min, int64_t max) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        auto r = ParseBytes(s);
        if (!r.ok()) return r.error().message();
        if (r->count() < min || r->count() > max) {
          return fmt::format("{} is outside the accepted range {} to {}", FormatBytes(*r),
                             FormatBytes(Bytes(min)), FormatBytes(Bytes(max)));
        }
        return "";
      },
      "SIZE");
}

CLI::Validator ByteSizeList(int64_t min, int64_t max, int max_items) {
  const CLI::Validator one = ByteSize(min, max);
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        const std::vector<std::string> items = SplitList(s, ',');
        if (static_cast<int>(items.size()) > max_items)
          return fmt::format("{} sizes given; at most {} (one per device)", items.size(),
                             max_items);
        for (std::string item : items) {
          // The message names the size it could not read.
          if (std::string e = one(item); !e.empty()) return e;
        }
        return "";
      },
      "SIZE[,SIZE...]");
}

std::vector<int64_t> ByteSizesOf(const std::string& list) {
  std::vector<int64_t> out;
  for (const std::string& item : SplitList(list, ',')) {
    auto b = ParseBytes(item);
    if (b.ok()) out.push_back(b->count());
  }
  return out;
}

CLI::Validator WorkloadName() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        auto r = ParseWorkload(s);
        return r.ok() ? "" : r.error().message();
      },
      "chat|agent|P:A");
}

CLI::Validator IntList(int min, int max, int max_items) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        auto r = ParseIntList(s);
        if (!r.ok()) return r.error().message();
        if (static_cast<int>(r->size()) > max_items) {
          return fmt::format("'{}' expands to {} values; at most {} are accepted", s, r->size(),
                             max_items);
        }
        for (int v : *r) {
          if (v < min || v > max) {
            return fmt::format("{} in '{}' is outside the accepted range {} to {}", v, s, min, max);
          }
        }
        return "";
      },
      "LIST");
}

CLI::Validator Seconds(double min, double max) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(v)) {
          return fmt::format("'{}' is not a number of seconds (e.g. 5 or 0.5)", s);
        }
        if (v < min || v > max) {
          return fmt::format("{} s is outside the accepted range {} to {} seconds", s, min, max);
        }
        return "";
      },
      "SECONDS");
}

CLI::Validator IntRange(int64_t min, int64_t max) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        int64_t v = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
          return fmt::format("'{}' is not a whole number (accepted range {} to {})", s, min, max);
        }
        if (v < min || v > max) {
          return fmt::format("{} is outside the accepted range {} to {}", v, min, max);
        }
        return "";
      },
      "INT");
}

CLI::Validator NumberRange(double min, double max) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end == s.c_str() || *end != '\0' || !std::isfinite(v)) {
          return fmt::format("'{}' is not a number (accepted range {} to {})", s, min, max);
        }
        if (v < min || v > max) {
          return fmt::format("{} is outside the accepted range {} to {}", s, min, max);
        }
        return "";
      },
      "NUMBER");
}

CLI::Validator SeedValue() {
  CLI::Validator v = IntRange(0, INT64_MAX);
  v.name("SEED");
  return v;
}

CLI::Validator Accepted(std::function<Status(const std::string&)> check, std::string type_name) {
  return CLI::Validator(
      [check = std::move(check)](std::string& s) -> std::string {
        auto st = check(s);
        return st.ok() ? "" : st.error().message();
      },
      std::move(type_name));
}

CLI::Validator KvCacheType(bool list) {
  return Accepted(
      [list](const std::string& s) -> Status {
        for (const auto& item : list ? SplitList(s) : std::vector<std::string>{s}) {
          auto t = ParseKvCacheType(item);
          if (!t.ok()) return t.take_error();
        }
        return OkStatus();
      },
      list ? "TYPE[,TYPE...]" : "TYPE");
}

CLI::Validator FlashAttnList() {
  return Accepted(
      [](const std::string& s) -> Status {
        for (const auto& item : SplitList(s)) {
          auto v = ParseFlashAttn(item);
          if (!v.ok()) return v.take_error();
        }
        return OkStatus();
      },
      "on|off|auto[,...]");
}

CLI::Validator RpcServerList() { return Parses(ParseRpcList, "HOST:PORT[,...]"); }

}  // namespace moetune
