// moetune synth: write a synthetic GGUF model of a preset or config.json shape.
#include "model/synth.h"

#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/validators.h"
#include "model/arch.h"
#include "model/synth_sparse.h"
#include "util/command_files.h"
#include "util/json_parse.h"
#include "util/read_file.h"
#include "util/units.h"

namespace moetune {
namespace {

struct SynthArgs {
  std::string preset;
  std::string config;
  std::string scale = "tiny";
  int64_t layers = 0;
  std::string quant = "q8_0";
  uint64_t seed = 42;
  int64_t ctx_train = 0;
  std::string out;
  bool dry_run = false;
  bool sparse = false;
};

Result<SynthSpec> LoadSpec(const SynthArgs& a) {
  if (!a.preset.empty()) return SynthPreset(a.preset);
  // A config.json is a few KiB; the bound keeps a wrong path (/dev/zero, a
  // model file) from being read without end.
  auto text = ReadRegularFile(a.config, std::size_t{16} << 20);
  if (!text.ok()) return text.take_error().Context("--config");
  MOETUNE_TRY(NoteInputFile(a.config, "the --config file"));
  auto parsed = ParseJson(*text, fmt::format("'{}'", a.config));
  if (!parsed.ok()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}; give a Hugging Face config.json", parsed.error().message()));
  }
  const nlohmann::json& j = *parsed;
  auto spec = SynthSpecFromHfConfig(j);
  if (!spec.ok()) return spec.take_error().Context(a.config);
  return spec;
}

int Run(const SynthArgs& a) {
  // Command-line errors (exit 2) before any work.
  if (a.preset.empty() == a.config.empty()) {
    std::cerr
        << "moetune synth: error: give exactly one of --preset NAME or --config config.json\n";
    return kExitUsage;
  }
  if (a.out.empty() && !a.dry_run) {
    std::cerr << "moetune synth: error: missing -o OUT.gguf (or --dry-run)\n";
    return kExitUsage;
  }
  auto spec_r = LoadSpec(a);
  if (!spec_r.ok()) return ReportError(spec_r.error());
  SynthOptions o;
  o.spec = ScaleSynthSpec(*spec_r, *ParseSynthScale(a.scale));  // validated
  if (a.layers > 0) o.spec.n_layer = a.layers;
  if (a.ctx_train > 0) o.spec.n_ctx_train = a.ctx_train;
  o.quant = *ParseSynthQuant(a.quant);  // validated
  o.seed = a.seed;
  if (auto st = ValidateSynthSpec(o.spec); !st.ok()) return ReportError(st.error());
  auto sum = SummarizeSynth(o.spec, o.quant);
  if (!sum.ok()) return ReportError(sum.error());
  const std::string desc = fmt::format(
      "{} ({}): {} layers, hidden {}, {} experts ({} used), vocab {}, {} tensors, {} params, {} of "
      "tensor data",
      o.spec.model_name, o.spec.arch, o.spec.n_layer, o.spec.n_embd, o.spec.n_expert,
      o.spec.n_expert_used, o.spec.n_vocab, sum->n_tensors, sum->n_params,
      FormatBytes(Bytes(static_cast<int64_t>(sum->tensor_bytes))));
  if (a.dry_run) {
    std::cout << desc << "\n";
    return kExitOk;
  }
  std::cerr << "moetune synth: writing " << a.out << (a.sparse ? " (sparse)" : "") << ": " << desc
            << "\n";
  // The config.json it was made from is an input: -o onto it is refused.
  std::vector<std::string> inputs;
  if (!a.config.empty()) inputs.push_back(a.config);
  if (a.sparse) {
    auto r = WriteSparseSynthModel(o, a.out, inputs);
    return r.ok() ? kExitOk : ReportError(r.error());
  }
  // Progress on stderr every ~1 GiB, for full-scale writes.
  auto next = std::make_shared<uint64_t>(uint64_t{1} << 30);
  o.progress = [next](uint64_t done, uint64_t total) -> Status {
    if (done >= *next) {
      std::cerr << fmt::format("  {:.1f}%\n",
                               100.0 * static_cast<double>(done) / static_cast<double>(total));
      *next += uint64_t{1} << 30;
    }
    return OkStatus();
  };
  auto r = WriteSynthModel(o, a.out, inputs);
  if (!r.ok()) return ReportError(r.error());
  return kExitOk;
}

}  // namespace

void RegisterSynthCommand(CLI::App& app, CommandRun* run) {
  auto args = std::make_shared<SynthArgs>();
  auto* cmd = app.add_subcommand(
      "synth", "Write a synthetic GGUF model (random weights) of a real model's shape");
  std::string presets;
  for (const auto& n : SynthPresetNames()) presets += (presets.empty() ? "" : ", ") + n;
  auto* preset = cmd->add_option("--preset", args->preset, "Model shape: " + presets)
                     ->check(Parses(SynthPreset, "PRESET"));
  cmd->add_option("--config", args->config, "Hugging Face config.json to take the shape from")
      ->excludes(preset);
  cmd->add_option("--scale", args->scale,
                  "tiny (default, a few MB), small, full, or a width factor in (0,1]")
      ->check(Parses(ParseSynthScale, "SCALE"));
  cmd->add_option("--layers", args->layers, "Override the layer count")
      ->check(IntRange(1, kMaxLayers));
  cmd->add_option("--quant", args->quant,
                  "llama.cpp file type, with llama-quantize's per-tensor mix: f16, q8_0 (default), "
                  "q6_k, q5_k_m, q5_k_s, q4_k_m, q4_k_s (or q4_k), mxfp4")
      ->check(Parses(ParseSynthQuant, "QUANT"));
  cmd->add_option("--seed", args->seed, "Random seed (same seed, same file)")->check(SeedValue());
  // GGUF stores the training context as a 32-bit count ({arch}.context_length).
  cmd->add_option("--ctx-train", args->ctx_train, "Override the training context length")
      ->check(IntRange(1, kMaxTrainContext));
  cmd->add_option("-o,--output", args->out, "Output .gguf path");
  cmd->add_flag("--dry-run", args->dry_run, "Print the shape and sizes without writing");
  cmd->add_flag("--sparse", args->sparse,
                "Write the header only; the weights are a hole of zeros (a sparse file that takes "
                "no disk space), for memory dry runs of full-scale shapes");
  cmd->callback([args, run] { *run = [args] { return Run(*args); }; });
}

}  // namespace moetune
