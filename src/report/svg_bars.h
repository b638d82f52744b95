#pragma once
/// Horizontal stacked bars drawn as inline SVG: the memory map of a placement,
/// one bar per device (GPU, host), each segment one kind of memory (weights by
/// role, KV cache, recurrent state, compute buffers, the safety margin, what
/// other programs hold, the headroom left). Each bar spans the plot at its own
/// scale (its capacity, or its total when larger), so a 12 GiB GPU and 64 GiB
/// of RAM both read as "how full"; the axis is in percent of each device and
/// the sizes are in the labels, the tooltips and the data table. Colours come
/// from CSS classes (`seg-<kind>`) in the document's stylesheet.

#include <cstdint>
#include <string>
#include <vector>

namespace moetune {

struct BarSegment {
  std::string label;  // "experts", "KV cache", "headroom"
  int64_t bytes = 0;
  std::string kind;  // CSS suffix: "weights", "experts", "kv", "state", "compute", "margin",
                     // "others", "free", "over"
};

struct BarRow {
  std::string label;     // "GPU (12.0 GiB free)"
  int64_t capacity = 0;  // the bar's full length (e.g. free VRAM); 0 = sum of segments
  std::vector<BarSegment> segments;
};

struct StackedBarSpec {
  std::string id;
  std::string title;
  std::string description;
  std::string described_by;  // the data table's id
  std::vector<BarRow> rows;
  int width = 560;
};

/// The bars as an `<svg>`. Segments of 0 bytes or less are skipped; a row whose
/// segments exceed its capacity is drawn to the segments' sum with the
/// capacity marked by a line.
std::string RenderStackedBars(const StackedBarSpec& spec);

}  // namespace moetune
