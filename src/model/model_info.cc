#include "model/model_info.h"

#include "gguf/split.h"

namespace moetune {

Result<ModelInfo> LoadModelInfo(const std::string& path) {
  ModelInfo info;
  info.path = path;
  MOETUNE_ASSIGN_OR_RETURN(info.gguf, OpenGgufModel(path));
  auto arch = AnalyzeArchitecture(info.gguf);
  if (!arch.ok()) return arch.take_error().Context(path);
  info.arch = std::move(arch).value();
  info.weights = ComputeWeightMap(info.gguf, info.arch);
  return info;
}

std::string CommandModelPath(const ModelInfo& m) {
  return m.gguf.parts.size() > 1 ? m.gguf.parts.front().path : m.path;
}

std::vector<std::string> ModelFiles(const ModelInfo& m) {
  std::vector<std::string> files = {m.path};
  for (const auto& part : m.gguf.parts) files.push_back(part.path);
  return files;
}

}  // namespace moetune
