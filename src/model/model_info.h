#pragma once
/// A model opened for planning: header, architecture analysis and weight map.

#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/memory_map.h"
#include "util/result.h"

namespace moetune {

struct ModelInfo {
  std::string path;
  GgufModel gguf;
  ModelArch arch;
  WeightMap weights;
};

/// Opens a model (any part of a split model), analyses it and maps its weights.
Result<ModelInfo> LoadModelInfo(const std::string& path);

/// The path to give llama.cpp: part 1 of a split model (the engine loads the
/// other parts from it), else the path as given.
std::string CommandModelPath(const ModelInfo& m);

/// Every file of the model (each part of a split model), for the inputs an
/// output may not overwrite.
std::vector<std::string> ModelFiles(const ModelInfo& m);

}  // namespace moetune
