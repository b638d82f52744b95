#include "model/synth_sparse.h"

#include "util/checked.h"
#include "util/output_file.h"

namespace moetune {

Result<SynthSummary> WriteSparseSynthModel(const SynthOptions& options, const std::string& path,
                                           const std::vector<std::string>& inputs) {
  SynthSummary sum;
  MOETUNE_ASSIGN_OR_RETURN(GgufWriter w, BuildSynthWriter(options, &sum));
  MOETUNE_ASSIGN_OR_RETURN(std::vector<uint8_t> header, w.HeaderBytes());
  // The data section: every tensor padded to the alignment (gguf.cpp, gguf_write).
  uint64_t size = header.size();
  for (const auto& t : w.tensors()) {
    auto padded = CheckedAlignUp(t.n_bytes, w.alignment());
    auto next = padded ? CheckedAdd(size, *padded) : std::nullopt;
    if (!next)
      return Error(ErrorKind::kInvalidArgument, "the model's data section overflows a file size");
    size = *next;
  }
  OutputFileOptions out_options;
  out_options.inputs = inputs;
  MOETUNE_ASSIGN_OR_RETURN(auto out, OutputFile::Open(path, out_options));
  MOETUNE_TRY(out->Write(std::span<const uint8_t>(header)));
  MOETUNE_TRY(out->ExtendTo(size));
  MOETUNE_TRY(out->Commit());
  return sum;
}

}  // namespace moetune
