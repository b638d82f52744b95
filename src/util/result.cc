#include "util/result.h"

namespace moetune {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "invalid_argument";
    case ErrorKind::kIo:
      return "io";
    case ErrorKind::kFormat:
      return "format";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kNotFound:
      return "not_found";
    case ErrorKind::kEngine:
      return "engine";
    case ErrorKind::kInternal:
      return "internal";
  }
  return "unknown";
}

}  // namespace moetune
