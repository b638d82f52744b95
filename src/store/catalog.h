#pragma once
/// `moetune models` as a library call: every store folder searched, every
/// model found with what its header says.

#include <string>
#include <vector>

#include "store/places.h"
#include "store/scan.h"
#include "store/stored_model.h"

namespace moetune {

struct ModelListing {
  /// Every folder searched, in order, each with the models found in it.
  std::vector<RootScan> places;

  /// The models of every place, in order.
  std::vector<const StoredModel*> Models() const;
};

struct ListOptions {
  /// Folders (or files) the user named, searched after the stores.
  std::vector<std::string> folders;
  /// Read each usable model's header (ModelDetails); off, only the stores are read.
  bool read_headers = true;
};

/// Searches every store of `env` and then `options.folders`.
ModelListing ListModels(const StoreEnvironment& env, const ListOptions& options);

/// Reads a usable model's header (every part, through the bounded reader;
/// tensor data is never touched) and fills `details`, or sets kBadHeader with
/// the reader's message. Does nothing for a model with a problem.
void DescribeModel(StoredModel* model);

}  // namespace moetune
