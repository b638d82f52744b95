#include "report/memory_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "report/svg_chart.h"
#include "util/units.h"

namespace moetune {
namespace {

struct RoleGroup {
  TensorRole role;
  const char* label;
  const char* kind;
};

// Each role with a colour of its own; small ones fold into "other weights".
constexpr RoleGroup kRoleGroups[] = {
    {TensorRole::kRoutedExperts, "routed experts", "experts"},
    {TensorRole::kAttention, "attention", "weights"},
    {TensorRole::kSharedExperts, "shared experts", "shexp"},
    {TensorRole::kDenseFfn, "dense FFN", "dense"},
    {TensorRole::kRecurrent, "recurrent", "recur"},
    {TensorRole::kOutput, "output head", "head"},
    {TensorRole::kTokenEmbedding, "token embeddings", "head"},
};

void AddWeights(const RoleBytes& w, std::vector<BarSegment>* out) {
  const int64_t total = Sum(w);
  int64_t rest = total;
  for (const auto& g : kRoleGroups) {
    const int64_t b = At(w, g.role);
    if (b <= 0 || b * 100 < total) continue;  // under 1%: folded into "other weights"
    out->push_back({g.label, b, g.kind});
    rest -= b;
  }
  if (rest > 0) out->push_back({"other weights", rest, "otherw"});
}

std::string Mib(int64_t b) { return FormatMiB(Bytes(b), 1); }

}  // namespace

MemoryBudget BudgetOf(const PlanRequest& r) {
  return {r.vram_free, r.reserve, r.margin, r.host_ram_available};
}

std::vector<BarRow> PlacementMemoryRows(const PlacementOption& o, const MemoryBudget& req) {
  std::vector<BarRow> rows;
  BarRow gpu;
  gpu.label = fmt::format("GPU: {} free", FormatBytes(Bytes(req.vram_free)));
  gpu.capacity = req.vram_free;
  AddWeights(o.gpu.weights, &gpu.segments);
  gpu.segments.push_back({"KV cache", o.gpu.kv, "kv"});
  gpu.segments.push_back({"recurrent state", o.gpu.state, "state"});
  gpu.segments.push_back({"compute buffers", o.gpu.compute, "compute"});
  gpu.segments.push_back({"safety margin", req.margin, "margin"});
  gpu.segments.push_back({"other programs (--reserve)", req.reserve, "others"});
  if (o.headroom > 0) gpu.segments.push_back({"headroom", o.headroom, "free"});
  rows.push_back(std::move(gpu));
  BarRow host;
  host.label = req.host_ram_available > 0 ? fmt::format("Host RAM: {} available",
                                                        FormatBytes(Bytes(req.host_ram_available)))
                                          : "Host RAM";
  host.capacity = req.host_ram_available;
  AddWeights(o.host.weights, &host.segments);
  host.segments.push_back({"KV cache", o.host.kv, "kv"});
  host.segments.push_back({"recurrent state", o.host.state, "state"});
  host.segments.push_back({"compute buffers", o.host.compute, "compute"});
  const int64_t host_free = req.host_ram_available - o.host.total();
  if (req.host_ram_available > 0 && host_free > 0)
    host.segments.push_back({"free RAM", host_free, "free"});
  rows.push_back(std::move(host));
  return rows;
}

Figure MemoryMapFigure(const std::vector<BarRow>& rows, const std::string& id,
                       const std::string& caption) {
  StackedBarSpec spec;
  spec.id = id;
  spec.title = "Memory map per device";
  spec.description = caption;
  spec.described_by = id + "-data";
  spec.rows = rows;
  Figure f;
  f.id = id;
  f.caption = caption;
  f.svg = RenderStackedBars(spec);
  f.data.header = {"device", "part", "MiB", "share of the bar"};
  f.data.numeric = {false, false, true, true};
  std::map<std::string, std::string> legend;  // kind -> first label
  std::vector<std::string> order;
  for (const auto& r : rows) {
    int64_t length = r.capacity;
    if (length <= 0) {
      for (const auto& s : r.segments) length += std::max<int64_t>(s.bytes, 0);
    }
    for (const auto& s : r.segments) {
      if (s.bytes <= 0) continue;
      const double share =
          length > 0 ? 100.0 * static_cast<double>(s.bytes) / static_cast<double>(length) : 0;
      f.data.AddRow({r.label, s.label, Mib(s.bytes), fmt::format("{:.1f}%", share)});
      if (legend.emplace(s.kind, s.label).second) order.push_back(s.kind);
    }
  }
  for (const auto& k : order) {
    f.legend.push_back({k == "free" ? "block seg-free" : "block seg-" + k, legend[k]});
  }
  f.legend.push_back({"limit", "capacity of the device"});
  return f;
}

std::optional<Figure> PlanOptionsFigure(const Plan& plan, const PlanRequest& req,
                                        const std::string& id) {
  if (plan.options.empty()) return std::nullopt;
  const std::string axis = plan.moe ? "N = --n-cpu-moe (layers whose experts stay on the CPU)"
                                    : "-ngl (layers on the GPU)";
  ChartSpec spec;
  spec.id = id;
  spec.described_by = id + "-data";
  spec.title = "GPU memory needed against N, with the usable budget";
  spec.x_label = axis;
  ChartPanel panel;
  panel.title = "GPU memory needed";
  int64_t most = 0;
  for (const auto& o : plan.options) most = std::max(most, o.gpu.total());
  const bool gib = most >= (int64_t{2} << 30);
  panel.y_label = gib ? "GiB" : "MiB";
  panel.y_format = gib ? AxisFormat::kGiB : AxisFormat::kMiB;
  const int64_t usable = plan.budget - plan.margin;
  panel.limits.push_back(
      {static_cast<double>(usable),
       fmt::format("usable: {} (budget minus margin)", FormatBytes(Bytes(usable)))});
  ChartSeries s{"GPU total", 0, false, true, true, {}};
  Figure f;
  f.id = id;
  f.data.header = {plan.moe ? "N" : "ngl", "GPU total MiB", "headroom MiB", "host MiB", "fits"};
  f.data.numeric = {true, true, true, true, false};
  for (size_t i = 0; i < plan.options.size(); ++i) {
    const auto& o = plan.options[i];
    const int x = plan.moe ? o.n_cpu_moe : o.ngl;
    ChartPoint p;
    p.x = x;
    p.y = static_cast<double>(o.gpu.total());
    const bool pick = plan.smallest_fitting && *plan.smallest_fitting == i;
    p.note = fmt::format("{}={}: GPU {} ({}), headroom {}", plan.moe ? "N" : "ngl", x,
                         FormatBytes(Bytes(o.gpu.total())), o.fits ? "fits" : "does not fit",
                         FormatBytes(Bytes(o.headroom)));
    p.mark = pick ? PointMark::kPick : o.fits ? PointMark::kNormal : PointMark::kRejected;
    s.points.push_back(p);
    f.data.AddRow({std::to_string(x), Mib(o.gpu.total()), Mib(o.headroom), Mib(o.host.total()),
                   pick     ? "yes (pick)"
                   : o.fits ? "yes"
                            : "no"},
                  pick     ? "pick"
                  : o.fits ? ""
                           : "rejected");
  }
  panel.series.push_back(std::move(s));
  spec.panels.push_back(std::move(panel));
  if (const PlacementOption* best = plan.best()) {
    const int x = plan.moe ? plan.options[*plan.smallest_fitting].n_cpu_moe : best->ngl;
    spec.markers.push_back({static_cast<double>(x),
                            plan.fine_filled()
                                ? fmt::format("pick {} (run as {} with -ot)", x, best->n_cpu_moe)
                                : fmt::format("pick {}", x),
                            VerticalMarker::Kind::kPick});
  }
  f.caption = fmt::format(
      "GPU memory (weights, KV cache, state, compute) for every {} against the usable budget "
      "({} free, minus {} reserved for other programs, minus the {} safety margin). Points above "
      "the line do not fit.",
      plan.moe ? "N" : "-ngl", FormatBytes(Bytes(req.vram_free)), FormatBytes(Bytes(req.reserve)),
      FormatBytes(Bytes(plan.margin)));
  spec.description = f.caption;
  f.svg = RenderSvgChart(spec);
  f.legend = {{"line c0", "GPU total"},
              {"limit", "usable budget"},
              {"hollow", "does not fit"},
              {"ring", "the pick: smallest N that fits"}};
  return f;
}

}  // namespace moetune
