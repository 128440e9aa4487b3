// kw_turns.h: the turns of interleaved timing (docs/evaluation.md, "Interleaved timing"), shared by the harness
// (kw_harness.cuh) and the engine tests' CPU stand-in.
//
// Two processes time at once, the candidate's and the baseline's, and take turns: a byte received on `in` is
// this process's turn, a byte sent on `out` hands it back. So they never use the GPU at the same time, and
// whatever slows the host for a while (another tenant, the CPU's clock) slows both alike. A peer that ended
// (end of file, a broken pipe) takes no more turns and this process runs on alone: neither side can block the
// other past its own end.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace kw {

class Turns {
 public:
  Turns(int in, int out) : in_(in), out_(out) {
    if (out_ >= 0) std::signal(SIGPIPE, SIG_IGN);  // a peer that ended is an EPIPE here, not a death
  }
  void begin() {
    if (in_ < 0) return;
    char c;
    ssize_t n;
    do n = ::read(in_, &c, 1); while (n < 0 && errno == EINTR);
    if (n != 1) {
      ::close(in_);
      in_ = -1;
    }
  }
  void end() {
    if (out_ < 0) return;
    ssize_t n;
    do n = ::write(out_, "t", 1); while (n < 0 && errno == EINTR);
    if (n != 1) {
      ::close(out_);
      out_ = -1;
    }
  }

 private:
  int in_, out_;
};

// One turn, handed back however its scope is left.
class Turn {
 public:
  explicit Turn(Turns& t) : t_(t) { t_.begin(); }
  ~Turn() { t_.end(); }
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;

 private:
  Turns& t_;
};

}  // namespace kw
