#pragma once
/// A file descriptor closed on every exit path (one owner, not copyable).

#include <unistd.h>

namespace moetune {

class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  /// The descriptor (negative when the open failed).
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace moetune
