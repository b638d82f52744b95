// A tune whose pick differs from the plan's defaults in -ub, KV type and flash
// attention: the memory map and headroom it reports are the pick's own (they
// were planned with -ub 512, f16 and flash attention on, whatever the pick ran).
#include <gtest/gtest.h>

#include <algorithm>

#include "model/models_test_util.h"
#include "report/document.h"
#include "report/tune_document.h"
#include "report/tune_report.h"
#include "tune/space.h"
#include "tune/tuner.h"
#include "util/units.h"

namespace moetune {
namespace {

// An engine on which a larger micro-batch and no flash attention are faster
// beyond the noise; nothing else changes the speed.
class PrefersLargeBatchWithoutFlash : public Engine {
 public:
  BenchRun Run(const std::vector<RunConfig>& configs, const ProgressCallback& = {}) override {
    BenchRun out;
    for (const auto& c : configs) {
      RunResult r;
      r.config = c;
      double v = c.n_prompt > 0 ? 1000 : 50;
      if (c.n_prompt > 0 && c.n_ubatch >= 1024) v *= 1.3;
      if (c.flash_attn == FlashAttn::kOff) v *= 1.3;
      for (double f : {0.999, 1.0, 1.001}) {
        r.samples_ts.push_back(v * f);
        r.samples_ns.push_back(static_cast<int64_t>((c.n_prompt + c.n_gen) / (v * f) * 1e9));
      }
      r.avg_ts = v;
      out.results.push_back(std::move(r));
    }
    return out;
  }
};

ModelInfo TinyModel() {
  ModelInfo m;
  m.path = "/models/qwen3moe-tiny.gguf";
  m.gguf = SynthHeaderModel("qwen3moe", "tiny");
  auto arch = AnalyzeArchitecture(m.gguf);
  EXPECT_TRUE(arch.ok());
  if (arch.ok()) m.arch = std::move(arch).value();
  m.weights = ComputeWeightMap(m.gguf, m.arch);
  return m;
}

TEST(TuneMemory, ThePicksMapAndHeadroomAreOfItsOwnSettings) {
  const ModelInfo m = TinyModel();
  PlanRequest req;
  req.vram_free = int64_t{8} << 30;
  req.ctx.n_ctx = 8192;
  SpaceInputs in;
  in.model = &m;
  in.plan = req;
  in.fallback_threads = 4;
  std::vector<std::string> notes;
  TuneSpace space = BuildTuneSpace(in, &notes);
  space.base.type_k = space.base.type_v = ggml_type::kQ8_0;  // a q8_0 cache from the start
  space.try_kv_quant = false;
  space.try_load_mode = false;
  TuneOptions o;
  o.ctx = 8192;
  o.budget_seconds = 1e6;
  PrefersLargeBatchWithoutFlash engine;
  const TuneResult r = Tuner(engine, space, o).Run();
  // The pick differs from the plan's defaults (-ub 512, f16, flash attention on).
  ASSERT_EQ(r.best.n_ubatch, 1024);
  ASSERT_EQ(r.best.type_k, ggml_type::kQ8_0);
  ASSERT_EQ(r.best.flash_attn, FlashAttn::kOff);
  EXPECT_EQ(r.best.ctx_size, 8192);
  EXPECT_EQ(r.best.n_parallel, 1);
  // Its map is the plan of its own configuration...
  ASSERT_TRUE(r.memory.has_value());
  auto own = PlanServerConfig(m.gguf, m.arch, m.weights, req, r.best);
  ASSERT_TRUE(own.ok()) << own.error().message();
  EXPECT_EQ(r.memory->gpu.total(), own->gpu.total());
  EXPECT_EQ(r.memory->headroom, own->headroom);
  EXPECT_EQ(r.memory->n_cpu_moe, r.best.placement.n_cpu_moe);
  // ...not the plan's defaults at the same N (what the report showed before).
  PlanRequest defaults = req;
  defaults.fine_fill = false;
  auto plan = PlanPlacement(m.gguf, m.arch, m.weights, defaults);
  ASSERT_TRUE(plan.ok());
  const auto at_n = std::find_if(plan->options.begin(), plan->options.end(), [&](const auto& x) {
    return x.n_cpu_moe == r.best.placement.n_cpu_moe;
  });
  ASSERT_NE(at_n, plan->options.end());
  EXPECT_LT(r.memory->gpu.kv, at_n->gpu.kv);  // q8_0 holds about half of f16
  EXPECT_NE(r.memory->gpu.compute, at_n->gpu.compute);
  EXPECT_NE(r.memory->headroom, at_n->headroom);

  // The report renders that map: JSON, text and the document's memory section.
  TuneReport t;
  t.model_path = m.path;
  t.ctx = o.ctx;
  t.workload = o.workload;
  t.vram_budget = req.vram_free;
  t.result = r;
  const nlohmann::json j = TuneJson(t);
  EXPECT_EQ(j["memory"]["headroom_bytes"], r.memory->headroom);
  EXPECT_EQ(j["memory"]["gpu"]["kv_bytes"], r.memory->gpu.kv);
  EXPECT_EQ(j["pick"]["n_ubatch"], 1024);
  EXPECT_NE(TuneText(t).find("headroom " + FormatBytes(Bytes(r.memory->headroom))),
            std::string::npos);
  const Report doc = TuneDocument(t, {});
  const Section* memory = nullptr;
  for (const auto& s : doc.sections) {
    if (s.id == "memory") memory = &s;
  }
  ASSERT_NE(memory, nullptr);
  const auto& figure = std::get<Figure>(memory->blocks.front());
  EXPECT_NE(figure.caption.find("micro-batch 1024, q8_0 KV cache, flash attention off"),
            std::string::npos)
      << figure.caption;
  EXPECT_NE(figure.caption.find(FormatBytes(Bytes(r.memory->headroom))), std::string::npos);
}

}  // namespace
}  // namespace moetune
