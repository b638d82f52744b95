#pragma once
/// Expected failures as values (docs/architecture.md, Conventions).
///
/// std::expected is C++23 and this project targets C++20 on GCC 12, so a small
/// Result<T> is written here instead. An Error carries a kind, a message that
/// names what was expected and what was found, and context prepended by each
/// layer it passes through ("tensor 12 'blk.3.ffn_up_exps': offset past end").

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace moetune {

enum class ErrorKind {
  kInvalidArgument,  // user input (flags, sizes) is wrong
  kIo,               // a file could not be opened/read/written
  kFormat,           // a file's content is malformed (model files are untrusted)
  kUnsupported,      // valid but not handled (unknown type id, version)
  kNotFound,         // a file, key, tensor or program is missing
  kEngine,           // the inference engine failed (see engine/ for finer kinds)
  kInternal,
};

const char* ErrorKindName(ErrorKind kind);

class Error {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }

  /// Returns a copy with "context: " prepended, for adding context at each layer.
  Error Context(const std::string& context) const& {
    return Error(kind_, context + ": " + message_);
  }
  Error Context(const std::string& context) && {
    message_ = context + ": " + message_;
    return std::move(*this);
  }

 private:
  ErrorKind kind_;
  std::string message_;
};

/// Either a value or an Error. Access to the wrong alternative is a programming
/// error (asserted), never a content-dependent abort.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& take_error() {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

/// Result for operations without a value.
struct Ok {};
using Status = Result<Ok>;
inline Status OkStatus() { return Ok{}; }

}  // namespace moetune

/// Propagate an error from an expression returning Result/Status.
#define MOETUNE_TRY(expr)                                         \
  do {                                                            \
    auto moetune_try_r_ = (expr);                                 \
    if (!moetune_try_r_.ok()) return moetune_try_r_.take_error(); \
  } while (0)

#define MOETUNE_CONCAT_INNER(a, b) a##b
#define MOETUNE_CONCAT(a, b) MOETUNE_CONCAT_INNER(a, b)
/// MOETUNE_ASSIGN_OR_RETURN(auto x, Foo()); moves the value into x or returns the error.
#define MOETUNE_ASSIGN_OR_RETURN(lhs, expr) \
  MOETUNE_ASSIGN_OR_RETURN_IMPL(MOETUNE_CONCAT(moetune_r_, __LINE__), lhs, expr)
// `lhs` is a declaration ("auto x") or an lvalue, so it cannot be parenthesized;
// `tmp` is a generated identifier.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define MOETUNE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.take_error();             \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
