#pragma once
/// Model files inside a folder: which .gguf files are models, the quant tag of
/// a file name, how a QUANT picks a file, and how split parts join into one
/// model. The rules follow llama.cpp's own `-hf REPO:QUANT` choice
/// (common/download.cpp: gguf_filename_is_model, get_gguf_split_info,
/// find_best_model), so that a reference picks the file llama.cpp would.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "store/stored_model.h"

namespace moetune {

/// True for "*.gguf" (any case).
bool HasGgufExtension(std::string_view file_name);

/// True for a .gguf file that holds a model rather than a companion file:
/// names containing "mmproj" (a vision projector) or "imatrix" (an importance
/// matrix) are not models (llama.cpp gguf_filename_is_model).
bool IsModelFileName(std::string_view file_name);

/// The quant tag of a file name as llama.cpp reads it (get_gguf_split_info):
/// without ".gguf" and a "-00001-of-00003" split suffix, the last run of
/// [A-Za-z0-9_] after a '-' or '.', upper case. "Qwen3-30B-A3B-Q4_K_M.gguf" is
/// "Q4_K_M", "model.q8_0.gguf" is "Q8_0"; "" when there is none.
std::string FileNameTag(std::string_view file_name);

/// True when QUANT names this file the way llama.cpp's `-hf REPO:QUANT` does
/// (find_best_model: QUANT followed by '.' or '-' in the path, any case; here
/// also preceded by the start, '/', '-', '.' or '_', so Q4_K does not match
/// IQ4_K), or equals the file name's tag.
bool FileMatchesQuant(std::string_view relative_path, std::string_view quant);

/// Every .gguf model file under `folder` as a path relative to it, sorted;
/// folder links are followed once each (a loop is not walked twice), at most
/// `max_depth` folders deep and `max_entries` entries read in all.
/// `truncated` is set when a limit stopped the walk.
std::vector<std::string> FindModelFiles(const std::string& folder, int max_depth,
                                        std::size_t max_entries, bool* truncated);

/// The names in `folder` (only sub-folders, following links, when
/// `folders_only`; else everything but folders), sorted; empty when it cannot
/// be listed. At most `max_entries` names are read.
std::vector<std::string> ListFolder(const std::string& folder, bool folders_only,
                                    std::size_t max_entries = 100000);

/// A part at `path`: its size when it is a readable regular file; present
/// unless nothing at all is there (a dangling link or an unreachable file is
/// present, with size 0).
ModelPart StatPart(const std::string& path);

/// Joins files (paths relative to `base`) into models: a split model's parts
/// ("NAME-00001-of-00003.gguf" ...) become one entry whose path is part 1,
/// with a kMissingPart problem when a part is absent. Every entry copies
/// `proto` (store, root, name) and gets file, path, tag, parts with sizes, and
/// for a symbolic link the name of the blob it points to as the digest.
std::vector<StoredModel> GroupModelFiles(const std::string& base,
                                         const std::vector<std::string>& relative,
                                         const StoredModel& proto);

}  // namespace moetune
