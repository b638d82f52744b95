#include "store/stored_model.h"

#include <limits>

#include "util/checked.h"

namespace moetune {

const char* EntryProblemName(EntryProblem problem) {
  switch (problem) {
    case EntryProblem::kNone:
      return "none";
    case EntryProblem::kAccess:
      return "unreadable";
    case EntryProblem::kMissingBlob:
      return "missing-blob";
    case EntryProblem::kMissingPart:
      return "missing-part";
    case EntryProblem::kBadManifest:
      return "bad-manifest";
    case EntryProblem::kNoModelLayer:
      return "no-model-layer";
    case EntryProblem::kBadHeader:
      return "bad-header";
  }
  return "none";
}

uint64_t StoredModel::size() const {
  uint64_t total = 0;
  for (const auto& p : parts) {
    // Sparse files can claim any size: saturate rather than wrap.
    total = CheckedAdd(total, p.size).value_or(std::numeric_limits<uint64_t>::max());
  }
  return total > 0 ? total : declared_size;
}

}  // namespace moetune
