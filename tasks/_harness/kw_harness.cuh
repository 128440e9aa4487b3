// kw_harness.cuh: the one shared KernelWeb harness (protocol in docs/task-format.md).
//
// A task's harness.cu declares its entry point with KW_ENTRY, writes three small
// functions and ends with KW_MAIN:
//
//   setup(kw::Case&)                  inputs for one size (seeded) and the outputs
//   launch(kw::Case&, kw::Impl)       calls the baseline or the candidate entry point
//   reference(kw::Case&, kw::Reference&)  the CPU answer, one ref.expect() per output
//
// Everything else lives here so that every task measures the same way: argument
// parsing, the seeded RNG, typed device buffers with guard zones, restoring inputs
// and poisoning outputs before each call, checking inputs and guards after it, the
// tolerance comparison, the timing loop with L2 flush, and the JSON result, which is
// written only to --out (stdout and stderr belong to the kernels).
//
// The same harness.cu is compiled twice: plain for FP32, with -DKW_BF16 for BF16.
//
// What does not depend on the task (the command line, the driver, checked timing and its kernels, the
// evidence stream, the JSON report: kw::run_main and all it calls) is compiled once per precision, from
// kw_runtime.cu, which defines KW_HARNESS_RUNTIME; a task's harness.cu sees only the declarations of what
// is inside `#ifdef KW_HARNESS_RUNTIME` here, and is linked with that object (docs/evaluation.md, "Build
// and caching").
#pragma once

#include <cuda_bf16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <csignal>
#include <unistd.h>
#include <malloc.h>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kw_candidate.h"
#include "kw_sync.h"
#include "kw_lockdown.h"
#include "kw_turns.h"
#include "kw_timed.cuh"

// ----------------------------------------------------------------------------------
// Precision and entry-point naming
// ----------------------------------------------------------------------------------

namespace kw {
#ifdef KW_BF16
using elem_t = __nv_bfloat16;
constexpr const char* kPrecision = "bf16";
constexpr double kDefaultAtol = 1e-2, kDefaultRtol = 1e-2;
#else
using elem_t = float;
constexpr const char* kPrecision = "fp32";
constexpr double kDefaultAtol = 1e-4, kDefaultRtol = 1e-4;
#endif

enum class Impl { baseline, candidate };
enum class Mode { validate, check, time, profile, outputs, compare };
}  // namespace kw

#define KW_CAT_(a, b) a##b
#define KW_CAT(a, b) KW_CAT_(a, b)
#define KW_STR_(a) #a
#define KW_STR(a) KW_STR_(a)
#ifdef KW_BF16
#define KW_BASE_NAME(op) KW_CAT(op, _bf16)
#else
#define KW_BASE_NAME(op) op
#endif
#define KW_CAND_NAME(op) KW_CAT(KW_BASE_NAME(op), _optimized)

// KW_ENTRY(vector_add, const kw::elem_t* A, const kw::elem_t* B, kw::elem_t* C, int N);
// declares vector_add / vector_add_bf16 (the baseline) and their _optimized twins.
// The candidate is a weak reference: the harness links without one, and then its
// address is null, which --impl candidate reports as a JSON error. With --candidate
// the entry comes from that shared object, loaded after the lockdown (kw_candidate.h).
#define KW_ENTRY(op, ...)                                                            \
  extern "C" void KW_BASE_NAME(op)(__VA_ARGS__);                                     \
  extern "C" __attribute__((weak)) void KW_CAND_NAME(op)(__VA_ARGS__);               \
  using kw_entry_fn = void(__VA_ARGS__);                                             \
  static kw_entry_fn* kw_entry(kw::Impl impl) {                                      \
    if (impl != kw::Impl::candidate) return &KW_BASE_NAME(op);                       \
    void* loaded = kw::candidate::entry();                                           \
    return loaded ? reinterpret_cast<kw_entry_fn*>(loaded) : &KW_CAND_NAME(op);      \
  }                                                                                  \
  static const char* const kw_entry_name = KW_STR(KW_BASE_NAME(op))

namespace kw {

// ----------------------------------------------------------------------------------
// Errors: every failure is a (kind, message) pair that ends up in the JSON `error`
// ----------------------------------------------------------------------------------

struct Failure {
  std::string kind;     // bad_args | no_device | no_candidate | cuda_error | baseline_failed | harness_error
  std::string message;
  std::string code;     // cudaGetErrorName() for cuda_error, else empty
};

[[noreturn]] inline void fail(const std::string& kind, const std::string& message) {
  throw Failure{kind, message, ""};
}

inline void cuda_check(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) {
    throw Failure{"cuda_error", what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")",
                  cudaGetErrorName(err)};
  }
}

// ----------------------------------------------------------------------------------
// Element types and conversions (host side; bf16 by bit manipulation, so the host
// code does not depend on which cuda_bf16 helpers are host-callable)
// ----------------------------------------------------------------------------------

enum class Type { f32, bf16, i32 };

template <class T> struct TypeOf;
template <> struct TypeOf<float> { static constexpr Type value = Type::f32; };
template <> struct TypeOf<__nv_bfloat16> { static constexpr Type value = Type::bf16; };
template <> struct TypeOf<int> { static constexpr Type value = Type::i32; };

inline const char* type_name(Type t) {
  return t == Type::f32 ? "float" : t == Type::bf16 ? "__nv_bfloat16" : "int";
}
inline size_t type_size(Type t) { return t == Type::bf16 ? 2 : 4; }

inline float bf16_bits_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t float_to_bf16_bits(float f) {  // round to nearest even, NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline double to_double(float v) { return v; }
inline double to_double(int v) { return v; }
inline double to_double(__nv_bfloat16 v) { return bf16_bits_to_float(__nv_bfloat16_raw(v).x); }

// Reads element i of a raw array of type t as a double (exact for all three types).
inline double read_element(Type t, const unsigned char* base, size_t i) {
  if (t == Type::f32) {
    float v;
    std::memcpy(&v, base + 4 * i, 4);
    return v;
  }
  if (t == Type::i32) {
    int32_t v;
    std::memcpy(&v, base + 4 * i, 4);
    return v;
  }
  uint16_t v;
  std::memcpy(&v, base + 2 * i, 2);
  return bf16_bits_to_float(v);
}

inline void write_element(Type t, unsigned char* base, size_t i, double value) {
  if (t == Type::f32) {
    const float v = float(value);
    std::memcpy(base + 4 * i, &v, 4);
  } else if (t == Type::i32) {
    const int32_t v = int32_t(std::llround(value));
    std::memcpy(base + 4 * i, &v, 4);
  } else {
    const uint16_t v = float_to_bf16_bits(float(value));
    std::memcpy(base + 2 * i, &v, 2);
  }
}

// ----------------------------------------------------------------------------------
// Seeded RNG: xoshiro256** seeded through splitmix64. Each buffer gets its own
// stream derived from (seed, buffer name), so adding a buffer to a task does not
// change the data of the others.
// ----------------------------------------------------------------------------------

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint64_t stream_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name, then mixed with the seed
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
  uint64_t state = seed ^ h;
  return splitmix64(state);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t state = seed;
    for (auto& word : s_) word = splitmix64(state);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  double uniform01() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }

  double normal(double mean, double stddev) {  // Box-Muller; 1 - u keeps log() finite
    const double u1 = 1.0 - uniform01(), u2 = uniform01();
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  uint64_t below(uint64_t n) {  // uniform in [0, n), unbiased by rejection
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = next(); while (x >= limit);
    return x % n;
  }

  int64_t randint(int64_t lo, int64_t hi) { return lo + int64_t(below(uint64_t(hi - lo) + 1)); }  // inclusive

  template <class T> void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// ----------------------------------------------------------------------------------
// Command line
// ----------------------------------------------------------------------------------

using Params = std::vector<std::pair<std::string, double>>;  // in the order given

#ifdef KW_HARNESS_RUNTIME  // the command line: read by run_main only

struct Options {
  Mode mode = Mode::validate;
  Impl impl = Impl::baseline;
  std::vector<Params> sizes;
  Params constants;
  int seeds = 3;
  uint64_t seed_base = 20251122;
  int warmup = 3;
  int iters = 50;
  long long l2_flush_bytes = -1;  // -1: 2x the device's L2
  bool l2_flush_read = false;     // --l2-flush-mode read: load the buffer instead of writing it (an experiment)
  double atol = kDefaultAtol, rtol = kDefaultRtol;
  // time: a call shorter than batch_below_ms (median of the warm-up) is timed in batches of launches on
  // distinct buffer sets, about batch_target_ms per sample, at most max_batch launches. Off here (0); the
  // evaluator decides batches once from the baseline and passes them as batch_fixed.
  double batch_below_ms = 0, batch_target_ms = 0.5;
  // time: the sample's shape (docs/evaluation.md, "Timing protocol"). Synchronized (false, the default): a
  // device-wide synchronize after every call. Queued (true, opt-in): a spacer kernel holds stream 0 while the
  // host queues the start event, the calls and the stop event, so the events span the GPU's work and not the
  // host's launch latency; the evaluator asks for it only where stream 0 orders all of the candidate's work.
  bool queued = false;
  // time, queued: a size whose warm-up calls closed a segment (they synchronize inside) keeps its batch, but each
  // call of it gets its own L2 flush, spacer and events (a spaced batch), at most max_spaced calls; the sample is
  // their sum. batch_syncing instead queues the whole batch between one event pair (an experiment: docs/
  // benchmarks.md, "Calls that synchronize inside, in batches between one event pair"); max_spaced 1 times one
  // call per sample.
  bool batch_syncing = false;
  int max_spaced = 16;
  // time: warm-up calls go on until they have run warmup_ms in all (at least `warmup` calls, at most 1000),
  // so the GPU's clocks have ramped up before the first sample, as Triton's do_bench warms up by time.
  double warmup_ms = 100;
  int max_batch = 64;
  // time: launches per sample for each size, decided once by the evaluator from the baseline's cached per-call
  // time (so the baseline and every candidate are timed alike, in every process); replaces batch_below_ms.
  std::vector<int> batch_fixed;
  // How the host waits in cudaDeviceSynchronize (cudaSetDeviceFlags before the context exists): auto (the
  // driver's choice), spin, yield or block. Every timed call ends in such a wait, so its wake-up latency is
  // part of every time (docs/benchmarks.md, "Repeatability").
  std::string sync_wait = "auto";
  // outputs/compare: the pipe the evaluator opened between the candidate's process and the reference's
  // (docs/evaluation.md, "Who decides the verdict"): written by `outputs`, read by `compare`.
  int evidence_fd = -1;
  // time: the turn pipes of interleaved timing (docs/evaluation.md, "Interleaved timing"): this process waits for
  // a byte on turn_in before each turn (a size's warm-up, one sample and its checks) and passes one on turn_out
  // after it, so it and the process timing the baseline beside it never use the GPU at the same time.
  int turn_in = -1, turn_out = -1;
  // The second stage of the confinement (kw_lockdown.h), applied once CUDA is up and before the first call.
  bool lockdown = false;
  // The candidate as a shared object (kw_candidate.h), loaded after the lockdown; "" when it is linked in.
  std::string candidate;
  std::string out;
};

inline const char* mode_name(Mode m) {
  switch (m) {
    case Mode::validate: return "validate";
    case Mode::check: return "check";
    case Mode::time: return "time";
    case Mode::profile: return "profile";
    case Mode::outputs: return "outputs";
    case Mode::compare: return "compare";
  }
  return "?";
}
inline const char* impl_name(Impl i) { return i == Impl::baseline ? "baseline" : "candidate"; }

inline bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
}

inline double parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) fail("bad_args", flag + ": '" + text + "' is not a number");
  return v;
}

inline long long parse_integer(const std::string& flag, const std::string& text, long long lo) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo) {
    fail("bad_args", flag + ": '" + text + "' is not an integer >= " + std::to_string(lo));
  }
  return v;
}

// 'N=1024,K=4096' -> {{"N", 1024}, {"K", 4096}}, appended to `into`
inline void parse_assignments(const std::string& flag, const std::string& text, Params& into) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) fail("bad_args", flag + ": '" + item + "' is not name=value");
    const std::string name = item.substr(0, eq);
    if (!is_identifier(name)) fail("bad_args", flag + ": '" + name + "' is not a parameter name");
    for (const auto& p : into) {
      if (p.first == name) fail("bad_args", flag + ": '" + name + "' is given twice");
    }
    into.emplace_back(name, parse_number(flag + " " + name, item.substr(eq + 1)));
    start = comma + 1;
  }
}

// Finds --out early, so that even a bad command line can be answered in JSON.
inline std::string find_out(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--out=", 0) == 0) return a.substr(6);
  }
  return "";
}

inline Options parse_options(int argc, char** argv) {
  Options o;
  bool have_mode = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i], value;
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (flag.rfind("--", 0) == 0) {
      if (i + 1 >= argc) fail("bad_args", flag + " needs a value");
      value = argv[++i];
    } else {
      fail("bad_args", "unexpected argument '" + flag + "'");
    }
    if (flag == "--mode") {
      have_mode = true;
      if (value == "validate") o.mode = Mode::validate;
      else if (value == "check") o.mode = Mode::check;
      else if (value == "time") o.mode = Mode::time;
      else if (value == "profile") o.mode = Mode::profile;
      else if (value == "outputs") o.mode = Mode::outputs;
      else if (value == "compare") o.mode = Mode::compare;
      else fail("bad_args", "--mode must be validate, check, time, profile, outputs or compare, not '" + value + "'");
    } else if (flag == "--impl") {
      if (value == "baseline") o.impl = Impl::baseline;
      else if (value == "candidate") o.impl = Impl::candidate;
      else fail("bad_args", "--impl must be baseline or candidate, not '" + value + "'");
    } else if (flag == "--size") {
      o.sizes.emplace_back();
      parse_assignments(flag, value, o.sizes.back());
    } else if (flag == "--const") {
      parse_assignments(flag, value, o.constants);
    } else if (flag == "--seeds") {
      o.seeds = int(parse_integer(flag, value, 1));
    } else if (flag == "--seed-base") {
      o.seed_base = uint64_t(parse_integer(flag, value, 0));
    } else if (flag == "--warmup") {
      o.warmup = int(parse_integer(flag, value, 0));
    } else if (flag == "--iters") {
      o.iters = int(parse_integer(flag, value, 1));
    } else if (flag == "--l2-flush-bytes") {
      o.l2_flush_bytes = parse_integer(flag, value, 0);
    } else if (flag == "--l2-flush-mode") {
      if (value != "write" && value != "read") {
        fail("bad_args", "--l2-flush-mode must be write or read, not '" + value + "'");
      }
      o.l2_flush_read = value == "read";
    } else if (flag == "--batch-below-ms") {
      o.batch_below_ms = parse_number(flag, value);
    } else if (flag == "--batch-target-ms") {
      o.batch_target_ms = parse_number(flag, value);
    } else if (flag == "--warmup-ms") {
      o.warmup_ms = parse_number(flag, value);
    } else if (flag == "--sync-wait") {
      if (value != "auto" && value != "spin" && value != "yield" && value != "block") {
        fail("bad_args", "--sync-wait must be auto, spin, yield or block, not '" + value + "'");
      }
      o.sync_wait = value;
    } else if (flag == "--batch-fixed") {
      o.batch_fixed.clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = value.find(',', start);
        const std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        o.batch_fixed.push_back(int(parse_integer(flag, item, 1)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (flag == "--queued") {
      o.queued = parse_integer(flag, value, 0) != 0;
    } else if (flag == "--batch-syncing") {
      o.batch_syncing = parse_integer(flag, value, 0) != 0;
    } else if (flag == "--max-spaced") {
      o.max_spaced = int(parse_integer(flag, value, 1));
    } else if (flag == "--max-batch") {
      o.max_batch = int(parse_integer(flag, value, 1));
    } else if (flag == "--atol") {
      o.atol = parse_number(flag, value);
    } else if (flag == "--rtol") {
      o.rtol = parse_number(flag, value);
    } else if (flag == "--lockdown") {
      o.lockdown = parse_integer(flag, value, 0) != 0;
    } else if (flag == "--candidate") {
      o.candidate = value;
    } else if (flag == "--evidence-fd") {
      o.evidence_fd = int(parse_integer(flag, value, 3));
    } else if (flag == "--turn-fds") {
      const size_t comma = value.find(',');
      if (comma == std::string::npos) fail("bad_args", "--turn-fds takes IN,OUT (two descriptors), not '" + value + "'");
      o.turn_in = int(parse_integer(flag, value.substr(0, comma), 3));
      o.turn_out = int(parse_integer(flag, value.substr(comma + 1), 3));
    } else if (flag == "--out") {
      o.out = value;
    } else {
      fail("bad_args", "unknown option '" + flag + "'");
    }
  }
  if (!have_mode) fail("bad_args", "--mode is required");
  if (o.sizes.empty()) fail("bad_args", "at least one --size is required");
  if (o.out.empty()) fail("bad_args", "--out is required");
  if (o.atol < 0 || o.rtol < 0) fail("bad_args", "--atol and --rtol must be >= 0");
  if ((o.mode == Mode::outputs || o.mode == Mode::compare) && o.evidence_fd < 0) {
    fail("bad_args", std::string("--mode ") + mode_name(o.mode) + " needs --evidence-fd");
  }
  if (o.mode == Mode::compare && o.impl != Impl::baseline) fail("bad_args", "--mode compare runs the baseline only");
  if (o.turn_in >= 0 && o.mode != Mode::time) fail("bad_args", "--turn-fds is for --mode time only");
  if (!o.batch_fixed.empty() && o.batch_fixed.size() != o.sizes.size()) {
    fail("bad_args", "--batch-fixed needs one launch count per --size (" + std::to_string(o.batch_fixed.size()) +
                         " for " + std::to_string(o.sizes.size()) + " sizes)");
  }
  return o;
}

#endif  // KW_HARNESS_RUNTIME

// ----------------------------------------------------------------------------------
// Buffers: one per pointer parameter. The device allocation has a guard zone on
// each side (filled with kGuardByte) so that small out-of-bounds writes, which
// never fault on a GPU, are still caught. Inputs keep a pristine host copy (pinned,
// so restoring before every timed call is quick).
// ----------------------------------------------------------------------------------

enum class Role { input, output, inout };

constexpr size_t kGuardBytes = 64 * 1024;
constexpr unsigned char kGuardByte = 0x5a;
constexpr unsigned char kPoisonByte = 0xff;  // NaN for float and bf16, -1 for int

class Buffer {
 public:
  Buffer(std::string name, Role role, Type type, size_t count, uint64_t seed)
      : name_(std::move(name)), role_(role), type_(type), count_(count), rng_(stream_seed(seed, name_)) {
    const size_t total = bytes() + 2 * kGuardBytes;
    cuda_check(cudaMalloc(&dev_base_, total), "allocate device buffer " + name_);
    cuda_check(cudaMemset(dev_base_, kGuardByte, total), "fill guard zones of " + name_);
    if (role_ != Role::output) {
      cuda_check(cudaMallocHost(&host_, std::max<size_t>(bytes(), 1)), "allocate pinned host copy of " + name_);
      std::memset(host_, 0, bytes());
    }
  }
  ~Buffer() {  // errors ignored: this may run while unwinding from a sticky CUDA error
    if (dev_base_) cudaFree(dev_base_);
    if (host_) cudaFreeHost(host_);
    if (dev_pristine_) cudaFree(dev_pristine_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const std::string& name() const { return name_; }
  Role role() const { return role_; }
  Type type() const { return type_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * type_size(type_); }
  void* dev() const { return dev_base_ + kGuardBytes; }
  // The whole device allocation, guard zones included: what the evidence stream carries.
  unsigned char* allocation() const { return dev_base_; }
  size_t allocation_bytes() const { return bytes() + 2 * kGuardBytes; }
  unsigned char* host() const { return static_cast<unsigned char*>(host_); }
  Rng& rng() { return rng_; }
  std::vector<unsigned char>& result() { return result_; }  // outputs after fetch
  const std::vector<unsigned char>& result() const { return result_; }

  // ---- fills of the pristine copy (inputs and inouts)
  Buffer& fill(const std::function<double(size_t)>& value) {
    unsigned char* h = writable_host();
    for (size_t i = 0; i < count_; ++i) write_element(type_, h, i, value(i));
    return *this;
  }
  Buffer& uniform(double lo, double hi) {
    fill([&](size_t) { return rng_.uniform(lo, hi); });
    fresh_ = Fresh{FreshKind::uniform, lo, hi};
    return *this;
  }
  Buffer& normal(double mean, double stddev) {
    fill([&](size_t) { return rng_.normal(mean, stddev); });
    fresh_ = Fresh{FreshKind::normal, mean, stddev};
    return *this;
  }
  Buffer& randint(long long lo, long long hi) {
    fill([&](size_t) { return double(rng_.randint(lo, hi)); });
    fresh_ = Fresh{FreshKind::randint, double(lo), double(hi)};
    return *this;
  }
  Buffer& constant(double value) {
    return fill([&](size_t) { return value; });
  }
  // Positive values summing to 1 (after rounding to the element type, up to rounding).
  Buffer& probabilities() {
    std::vector<double> v(count_);
    double sum = 0;
    for (auto& x : v) sum += (x = rng_.uniform(0.01, 1.0));
    return fill([&](size_t i) { return v[i] / sum; });
  }
  Buffer& distinct();  // defined below: values that are pairwise different (see there)

  // Output contract: by default an output is poisoned (kPoisonByte) before every call, so an element the
  // call does not write reads back as NaN (-1 for int). An output the benchmark zeroes before each call
  // (an accumulator that kernels atomicAdd into) is declared `.zeroed()`: it starts every call at 0.
  Buffer& zeroed() {
    if (role_ != Role::output) fail("harness_error", "zeroed(" + name_ + "): only an output can be zeroed");
    zeroed_ = true;
    return *this;
  }
  bool is_zeroed() const { return zeroed_; }

  // How the contents were drawn (FreshKind::none when the task wrote them by hand or changed them after).
  const Fresh& fresh() const { return fresh_; }

  // Checked timing (kw_timed.cuh): an input gets new contents for the call seeded `call_seed` (drawn again,
  // or for distinct values permuted and rescaled), or its pristine copy when it has no distribution; an
  // output is poisoned or zeroed. Asynchronous on the default stream.
  void refresh(uint64_t call_seed) {
    if (role_ == Role::output) {
      cuda_check(cudaMemsetAsync(dev(), zeroed_ ? 0 : kPoisonByte, bytes()), "poison output " + name_);
      return;
    }
    const uint64_t seed = stream_seed(call_seed, name_);
    if (fresh_.kind == FreshKind::none || count_ == 0) {
      cuda_check(cudaMemcpyAsync(dev(), host(), bytes(), cudaMemcpyHostToDevice), "restore input " + name_);
    } else if (fresh_.kind == FreshKind::distinct) {
      if (!dev_pristine_) {
        cuda_check(cudaMalloc(&dev_pristine_, bytes()), "allocate the pristine copy of " + name_);
        cuda_check(cudaMemcpy(dev_pristine_, host(), bytes(), cudaMemcpyHostToDevice), "copy " + name_);
      }
      Rng r(seed);
      uint64_t mul = 1 + r.below(count_);
      while (std::gcd<uint64_t, uint64_t>(mul, count_) != 1) mul = 1 + r.below(count_);
      const uint64_t add = r.below(count_);
      const double scale = type_ == Type::i32 ? 1.0 : std::ldexp(r.below(2) ? -1.0 : 1.0, int(r.below(7)) - 3);
      timed::permute_kernel<<<timed::grid_for(count_), 256>>>(dev(), dev_pristine_, int(type_), count_, mul, add,
                                                             scale);
    } else {
      timed::redraw_kernel<<<timed::grid_for(count_), 256>>>(dev(), int(type_), count_, seed, int(fresh_.kind),
                                                            fresh_.a, fresh_.b);
    }
    cuda_check(cudaGetLastError(), "fresh contents for " + name_);
  }

  template <class T> Buffer& set(const std::vector<T>& values) {
    if (TypeOf<T>::value != type_ || values.size() != count_) {
      fail("harness_error", "set(" + name_ + "): expected " + std::to_string(count_) + " values of type " +
                                type_name(type_));
    }
    std::memcpy(writable_host(), values.data(), bytes());
    return *this;
  }

 private:
  unsigned char* writable_host() {
    if (role_ == Role::output) fail("harness_error", "output buffer " + name_ + " cannot be filled");
    fresh_ = Fresh{};  // written by hand from here on; uniform() & co. set it again after their fill
    return host();
  }

  std::string name_;
  Role role_;
  Type type_;
  size_t count_;
  Rng rng_;
  unsigned char* dev_base_ = nullptr;
  void* host_ = nullptr;
  std::vector<unsigned char> result_;
  bool zeroed_ = false;
  Fresh fresh_;
  void* dev_pristine_ = nullptr;  // distinct values: the device copy the permutations read
};

// Distinct values, so that order-dependent outputs (top-k) have one right answer.
//   float: uniform(-1, 1), redrawn until no two compare equal;
//   int:   a random permutation of 0..count-1;
//   bf16:  bf16 has only ~65k finite values, fewer than N = 65536, so values come from
//          the 32768 bf16 numbers with 2^-64 <= |x| < 2^64 (no zeros, no subnormals),
//          shuffled; they are distinct while count <= 32768, and beyond that every
//          value appears at most ceil(count / 32768) times (a task must then define
//          how ties are ordered, e.g. by index).
inline Buffer& Buffer::distinct() {
  unsigned char* h = writable_host();
  if (type_ == Type::i32) {
    std::vector<int> v(count_);
    for (size_t i = 0; i < count_; ++i) v[i] = int(i);
    rng_.shuffle(v);
    std::memcpy(h, v.data(), bytes());
  } else if (type_ == Type::f32) {
    std::vector<float> v(count_);
    for (auto& x : v) x = float(rng_.uniform(-1.0, 1.0));
    for (bool again = true; again;) {
      std::vector<size_t> order(count_);
      for (size_t i = 0; i < count_; ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
      again = false;
      for (size_t i = 1; i < count_; ++i) {
        if (v[order[i]] == v[order[i - 1]]) {  // == also catches -0 vs +0
          v[order[i]] = float(rng_.uniform(-1.0, 1.0));
          again = true;
        }
      }
    }
    std::memcpy(h, v.data(), bytes());
  } else {
    std::vector<uint16_t> pool;
    for (uint16_t sign = 0; sign < 2; ++sign)
      for (uint16_t exponent = 127 - 64; exponent < 127 + 64; ++exponent)
        for (uint16_t mantissa = 0; mantissa < 128; ++mantissa)
          pool.push_back(uint16_t((sign << 15) | (exponent << 7) | mantissa));
    std::vector<uint16_t> v;
    while (v.size() < count_) {
      rng_.shuffle(pool);
      v.insert(v.end(), pool.begin(), pool.begin() + std::min(pool.size(), count_ - v.size()));
    }
    std::memcpy(h, v.data(), bytes());
  }
  fresh_ = Fresh{FreshKind::distinct, 0, 0};
  return *this;
}

// ----------------------------------------------------------------------------------
// Data helpers for task setups
// ----------------------------------------------------------------------------------

// A random CSR pattern with exactly round(rows * cols * density) nonzeros at
// uniformly chosen positions (selection sampling over the row-major positions, so
// row offsets are monotone and the column indices of each row sorted and in range).
struct Csr {
  std::vector<int> row_offsets;  // rows + 1
  std::vector<int> col_indices;  // nnz
  size_t nnz() const { return col_indices.size(); }
};

inline Csr random_csr(Rng& rng, int rows, int cols, double density) {
  const uint64_t total = uint64_t(rows) * uint64_t(cols);
  const uint64_t want = std::min<uint64_t>(total, uint64_t(std::llround(double(total) * density)));
  Csr csr;
  csr.row_offsets.assign(size_t(rows) + 1, 0);
  csr.col_indices.reserve(want);
  uint64_t chosen = 0;
  for (uint64_t t = 0; t < total && chosen < want; ++t) {
    if (double(total - t) * rng.uniform01() < double(want - chosen)) {  // Knuth's algorithm S
      csr.col_indices.push_back(int(t % uint64_t(cols)));
      ++csr.row_offsets[size_t(t / uint64_t(cols)) + 1];
      ++chosen;
    }
  }
  for (int r = 0; r < rows; ++r) csr.row_offsets[r + 1] += csr.row_offsets[r];
  return csr;
}

// ----------------------------------------------------------------------------------
// Case: one size and one seed. Owns the buffers; freeing the Case frees the device
// memory, so sizes of hundreds of MB do not pile up.
// ----------------------------------------------------------------------------------

class Case {
 public:
  Case(const Params& size, const Params& constants, uint64_t seed)
      : size_(size), constants_(constants), seed_(seed) {}

  uint64_t seed() const { return seed_; }

  // An RNG stream of its own for data that is not one buffer (e.g. a sparsity pattern).
  Rng rng(const std::string& purpose) const { return Rng(stream_seed(seed_, purpose)); }

  double param(const std::string& name) const { return lookup(size_, name, "size parameter"); }
  double constant(const std::string& name) const { return lookup(constants_, name, "constant (--const)"); }

  // A size parameter that must be a whole number in int range (interfaces take int).
  int iparam(const std::string& name) const {
    const double v = param(name);
    if (v != std::floor(v) || v < 0 || v > 2147483647.0) {
      fail("bad_args", "size parameter " + name + " = " + std::to_string(v) + " is not a non-negative int");
    }
    return int(v);
  }

  template <class T> Buffer& input(const std::string& name, size_t count) { return add<T>(name, Role::input, count); }
  template <class T> Buffer& output(const std::string& name, size_t count) { return add<T>(name, Role::output, count); }
  template <class T> Buffer& inout(const std::string& name, size_t count) { return add<T>(name, Role::inout, count); }

  Buffer& buffer(const std::string& name) const {
    for (const auto& b : buffers_) {
      if (b->name() == name) return *b;
    }
    fail("harness_error", "no buffer named '" + name + "'");
  }

  template <class T> T* dev(const std::string& name) const { return static_cast<T*>(typed(name, TypeOf<T>::value).dev()); }

  // The pristine input values, for the CPU reference.
  template <class T> const T* host(const std::string& name) const {
    const Buffer& b = typed(name, TypeOf<T>::value);
    if (b.role() == Role::output) fail("harness_error", "host(" + name + "): outputs have no pristine copy");
    return reinterpret_cast<const T*>(b.host());
  }

  const std::vector<std::unique_ptr<Buffer>>& buffers() const { return buffers_; }

  // ---- protocol steps, used by the driver

  // Inputs from the pristine copy, outputs poisoned, so every call starts the same
  // way and an output the call does not write reads back as NaN (-1 for int).
  void prepare() {
    for (const auto& b : buffers_) {
      if (b->role() == Role::output) {
        const unsigned char fill = b->is_zeroed() ? 0 : kPoisonByte;
        cuda_check(cudaMemset(b->dev(), fill, b->bytes()), "poison output " + b->name());
      } else {
        cuda_check(cudaMemcpy(b->dev(), b->host(), b->bytes(), cudaMemcpyHostToDevice), "restore input " + b->name());
      }
    }
    cuda_check(cudaDeviceSynchronize(), "synchronize after restoring inputs");
  }

  // Name of the first pure input whose device contents differ from the pristine copy.
  std::string changed_input() {
    for (const auto& b : buffers_) {
      if (b->role() != Role::input) continue;
      scratch_.resize(b->bytes());
      cuda_check(cudaMemcpy(scratch_.data(), b->dev(), b->bytes(), cudaMemcpyDeviceToHost), "read back input " + b->name());
      if (b->bytes() && std::memcmp(scratch_.data(), b->host(), b->bytes()) != 0) return b->name();
    }
    return "";
  }

  // Describes the first guard-zone byte that changed, or "" when all are intact.
  std::string guard_violation() {
    std::vector<unsigned char> guard(kGuardBytes);
    for (const auto& b : buffers_) {
      const unsigned char* data = static_cast<const unsigned char*>(b->dev());
      const unsigned char* zones[2] = {data - kGuardBytes, data + b->bytes()};
      for (int z = 0; z < 2; ++z) {
        cuda_check(cudaMemcpy(guard.data(), zones[z], kGuardBytes, cudaMemcpyDeviceToHost), "read guard of " + b->name());
        for (size_t i = 0; i < kGuardBytes; ++i) {
          if (guard[i] == kGuardByte) continue;
          const long long offset = z == 0 ? -(long long)(kGuardBytes - i) : (long long)i;
          return "write " + std::string(z == 0 ? "before the start" : "past the end") + " of " + b->name() +
                 " (byte offset " + std::to_string(offset) + (z == 0 ? "" : " after the last element") + ")";
        }
      }
    }
    return "";
  }

  // Checked timing: fresh inputs for one call (Buffer::refresh) and poisoned outputs; asynchronous.
  void refresh(uint64_t call_seed) {
    for (const auto& b : buffers_) b->refresh(call_seed);
  }
  size_t device_bytes() const {
    size_t total = 0;
    for (const auto& b : buffers_) total += b->bytes() + 2 * kGuardBytes;
    return total;
  }

  void fetch_outputs() {
    for (const auto& b : buffers_) {
      if (b->role() == Role::input) continue;
      b->result().resize(b->bytes());
      cuda_check(cudaMemcpy(b->result().data(), b->dev(), b->bytes(), cudaMemcpyDeviceToHost), "read output " + b->name());
    }
  }

 private:
  static double lookup(const Params& params, const std::string& name, const char* what) {
    for (const auto& p : params) {
      if (p.first == name) return p.second;
    }
    fail("bad_args", std::string(what) + " '" + name + "' was not given");
  }

  template <class T> Buffer& add(const std::string& name, Role role, size_t count) {
    for (const auto& b : buffers_) {
      if (b->name() == name) fail("harness_error", "buffer '" + name + "' declared twice");
    }
    buffers_.push_back(std::make_unique<Buffer>(name, role, TypeOf<T>::value, count, seed_));
    return *buffers_.back();
  }

  const Buffer& typed(const std::string& name, Type want) const {
    const Buffer& b = buffer(name);
    if (b.type() != want) {
      fail("harness_error", "buffer '" + name + "' holds " + type_name(b.type()) + ", not " + type_name(want));
    }
    return b;
  }

  Params size_, constants_;
  uint64_t seed_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<unsigned char> scratch_;
};

#ifdef KW_HARNESS_RUNTIME  // the evidence stream: the driver's
// ----------------------------------------------------------------------------------
// Evidence (docs/evaluation.md, "Who decides the verdict"): the candidate's process (mode outputs) runs
// the candidate on every checked case and sends, over a pipe the evaluator opened, the raw device
// allocation of every buffer after the call, guard zones included. The reference's process (mode compare,
// linked without the candidate) rebuilds each case from its seed, runs the baseline, loads what was sent
// into the case's buffers and decides: inputs unchanged, guards intact, outputs within tolerance. The
// stream is written by a process that ran candidate code, so the reader trusts nothing in it: every field
// is checked against the case it rebuilt, and a short or malformed stream is the candidate's failure.
//
// Per case: the 8 bytes "KWCASE1\0", then u64 size index, u64 seed, u64 buffer count; per buffer:
// u64 name length, the name, u64 role, u64 type, u64 allocation bytes, the allocation (native byte order:
// both ends are the same machine).
// ----------------------------------------------------------------------------------

constexpr char kEvidenceMagic[8] = {'K', 'W', 'C', 'A', 'S', 'E', '1', '\0'};
constexpr size_t kEvidenceChunk = size_t(16) << 20;

class EvidenceWriter {
 public:
  explicit EvidenceWriter(int fd) : fd_(fd) {}

  void send(const Case& c, size_t size_index) {
    put(kEvidenceMagic, sizeof kEvidenceMagic);
    u64(size_index);
    u64(c.seed());
    u64(c.buffers().size());
    for (const auto& b : c.buffers()) {
      u64(b->name().size());
      put(b->name().data(), b->name().size());
      u64(uint64_t(b->role()));
      u64(uint64_t(b->type()));
      u64(b->allocation_bytes());
      for (size_t off = 0; off < b->allocation_bytes(); off += kEvidenceChunk) {
        const size_t n = std::min(kEvidenceChunk, b->allocation_bytes() - off);
        staging_.resize(n);
        cuda_check(cudaMemcpy(staging_.data(), b->allocation() + off, n, cudaMemcpyDeviceToHost),
                   "read back " + b->name() + " for the evidence");
        put(staging_.data(), n);
      }
    }
  }

 private:
  void u64(uint64_t v) { put(&v, sizeof v); }
  void put(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        fail("evidence_closed", std::string("the evidence pipe closed (") + std::strerror(errno) +
                                    "): the reference process stopped reading");
      }
      p += w;
      n -= size_t(w);
    }
  }
  int fd_;
  std::vector<unsigned char> staging_;
};

class EvidenceReader {
 public:
  explicit EvidenceReader(int fd) : fd_(fd) {}

  // Loads what the candidate's process sent for (size_index, c.seed()) into c's device allocations.
  void receive(Case& c, size_t size_index) {
    where_ = "size " + std::to_string(size_index) + " seed " + std::to_string(c.seed());
    char magic[sizeof kEvidenceMagic];
    take(magic, sizeof magic, true);
    if (std::memcmp(magic, kEvidenceMagic, sizeof magic) != 0) invalid("the record does not start with its marker");
    expect("size index", u64(), size_index);
    expect("seed", u64(), c.seed());
    expect("buffer count", u64(), c.buffers().size());
    for (const auto& b : c.buffers()) {
      const uint64_t len = u64();
      if (len != b->name().size()) invalid("buffer " + b->name() + ": wrong name length");
      std::string name(len, '\0');
      take(name.data(), len, false);
      if (name != b->name()) invalid("expected buffer " + b->name());
      expect(b->name() + " role", u64(), uint64_t(b->role()));
      expect(b->name() + " type", u64(), uint64_t(b->type()));
      expect(b->name() + " bytes", u64(), b->allocation_bytes());
      for (size_t off = 0; off < b->allocation_bytes(); off += kEvidenceChunk) {
        const size_t n = std::min(kEvidenceChunk, b->allocation_bytes() - off);
        staging_.resize(n);
        take(staging_.data(), n, false);
        cuda_check(cudaMemcpy(b->allocation() + off, staging_.data(), n, cudaMemcpyHostToDevice),
                   "load the candidate's " + b->name());
      }
    }
  }

 private:
  uint64_t u64() {
    uint64_t v = 0;
    take(&v, sizeof v, false);
    return v;
  }
  void expect(const std::string& what, uint64_t got, uint64_t want) {
    if (got != want) invalid(what + " is " + std::to_string(got) + ", not " + std::to_string(want));
  }
  [[noreturn]] void invalid(const std::string& why) {
    fail("evidence_invalid", "the candidate's process sent malformed evidence for " + where_ + ": " + why);
  }
  void take(void* data, size_t n, bool at_record_start) {
    char* p = static_cast<char*>(data);
    const size_t want = n;
    while (n > 0) {
      const ssize_t r = ::read(fd_, p, n);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail("evidence_invalid", std::string("reading the evidence failed: ") + std::strerror(errno));
      if (r == 0) {
        if (at_record_start && n == want) {
          fail("evidence_missing", "the candidate's process sent nothing for " + where_ +
                                       " (it ended, or stopped sending, before that case)");
        }
        invalid("the stream ended inside the record");
      }
      p += r;
      n -= size_t(r);
    }
  }
  int fd_;
  std::string where_;
  std::vector<unsigned char> staging_;
};

#endif  // KW_HARNESS_RUNTIME

// ----------------------------------------------------------------------------------
// Comparison: |got - expected| <= atol + rtol * |expected|, NaN never passes; int
// outputs must match exactly. Keeps the first mismatch and error statistics.
// ----------------------------------------------------------------------------------

struct Mismatch {
  uint64_t seed = 0;
  std::string output;
  size_t index = 0;
  double expected = 0, got = 0, abs_err = 0;
  size_t mismatches = 0, total = 0;
  size_t unwritten = 0;  // mismatching elements still holding the poison pattern: never written by the call
  std::optional<long long> call;  // time mode: the timed call (0-based) that produced it
};

struct Tally {  // per size, over seeds and outputs
  std::optional<Mismatch> first;
  size_t checked = 0, total = 0;
  bool sampled = false;
  bool nonfinite = false;  // some compared value was NaN/inf: the error maxima are reported as "nan"
  double max_abs_err = 0, max_rel_err = 0;
};

inline bool within(double expected, double got, double atol, double rtol) {
  if (got == expected) return true;  // also equal infinities
  return std::fabs(got - expected) <= atol + rtol * std::fabs(expected);  // false for NaN
}

// Whether element i of an output still holds the poison the harness filled it with before the call.
inline bool poisoned_element(const Buffer& out, size_t i) {
  const size_t size = type_size(out.type());
  const unsigned char* p = out.result().data() + i * size;
  for (size_t b = 0; b < size; ++b)
    if (p[b] != kPoisonByte) return false;
  return true;
}

// Compares output `out` at `indices` (all elements when null) against expected(i).
inline void compare_output(const Buffer& out, const std::vector<size_t>* indices,
                           const std::function<double(size_t)>& expected, double atol, double rtol, uint64_t seed,
                           Tally& tally) {
  const bool exact = out.type() == Type::i32;
  const size_t n = indices ? indices->size() : out.count();
  Mismatch m;
  bool failed = false;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = indices ? (*indices)[k] : k;
    const double e = expected(i), g = read_element(out.type(), out.result().data(), i);
    const double err = std::fabs(g - e);
    const bool ok = exact ? g == e : within(e, g, atol, rtol);
    if (std::isfinite(err)) {
      tally.max_abs_err = std::max(tally.max_abs_err, err);
      if (e != 0) tally.max_rel_err = std::max(tally.max_rel_err, err / std::fabs(e));
    } else if (e != g) {
      tally.nonfinite = true;
    }
    if (ok) continue;
    if (!out.is_zeroed() && poisoned_element(out, i)) ++m.unwritten;
    if (!failed) {
      failed = true;
      m.index = i;
      m.expected = e;
      m.got = g;
      m.abs_err = err;
    }
    ++m.mismatches;
  }
  tally.checked += n;
  tally.total += out.count();
  if (failed && !tally.first) {
    m.seed = seed;
    m.output = out.name();
    m.total = n;
    tally.first = m;
  }
}

// ----------------------------------------------------------------------------------
// Reference: how a task's CPU reference reports its answer (validate mode).
//   ref.expect("C", cost, [&](size_t i) { return exact value of C[i]; });
// `cost` is the CPU work per element; when count * cost exceeds kFullCheckOps the
// output is checked at a deterministic sample of indices (first and last 256, the
// rest drawn from the seed) sized to about kSampleOps of work.
// ----------------------------------------------------------------------------------

constexpr double kFullCheckOps = 2e9;
constexpr double kSampleOps = 1e8;
constexpr size_t kMinSample = 4096;

class Reference {
 public:
  Reference(Case& c, double atol, double rtol, Tally& tally) : case_(c), atol_(atol), rtol_(rtol), tally_(tally) {}

  void expect(const std::string& output, double cost, const std::function<double(size_t)>& value) {
    Buffer& b = case_.buffer(output);
    if (b.role() == Role::input) fail("harness_error", "expect(" + output + "): not an output");
    if (std::find(done_.begin(), done_.end(), output) != done_.end()) {
      fail("harness_error", "expect(" + output + ") called twice");
    }
    done_.push_back(output);
    const size_t n = b.count();
    if (double(n) * std::max(cost, 1.0) <= kFullCheckOps) {
      compare_output(b, nullptr, value, atol_, rtol_, case_.seed(), tally_);
      return;
    }
    const std::vector<size_t> indices = sample(n, cost);
    tally_.sampled = true;
    compare_output(b, &indices, value, atol_, rtol_, case_.seed(), tally_);
  }

  // Every output must have been expected: a task bug otherwise, not a candidate's.
  void finish() const {
    for (const auto& b : case_.buffers()) {
      if (b->role() != Role::input && std::find(done_.begin(), done_.end(), b->name()) == done_.end()) {
        fail("harness_error", "the reference gives no expected values for output " + b->name());
      }
    }
  }

 private:
  std::vector<size_t> sample(size_t n, double cost) const {
    const size_t want = std::min(n, std::max(kMinSample, size_t(kSampleOps / cost)));
    Rng rng(stream_seed(case_.seed(), "sample"));
    std::vector<size_t> idx;
    for (size_t i = 0; i < std::min<size_t>(256, n); ++i) {
      idx.push_back(i);
      idx.push_back(n - 1 - i);
    }
    while (idx.size() < want) idx.push_back(size_t(rng.below(n)));
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    return idx;
  }

  Case& case_;
  double atol_, rtol_;
  Tally& tally_;
  std::vector<std::string> done_;
};

#ifdef KW_HARNESS_RUNTIME  // the JSON report: the driver's
// ----------------------------------------------------------------------------------
// JSON: a small writer (commas handled here), and the report it serializes.
// Non-finite numbers are written as the strings "nan", "inf", "-inf".
// ----------------------------------------------------------------------------------

class Json {
 public:
  Json& open_object() { return open('{'); }
  Json& close_object() { return close('}'); }
  Json& open_array() { return open('['); }
  Json& close_array() { return close(']'); }
  Json& key(const std::string& k) {
    separate();
    quote(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  Json& str(const std::string& s) {
    separate();
    quote(s);
    return *this;
  }
  Json& num(double v) {
    separate();
    char buf[40];
    if (std::isnan(v)) return raw("\"nan\"");
    if (std::isinf(v)) return raw(v > 0 ? "\"inf\"" : "\"-inf\"");
    if (v == std::floor(v) && std::fabs(v) < 1e15) {
      std::snprintf(buf, sizeof buf, "%.0f", v);
    } else {
      for (int digits = 15; digits <= 17; ++digits) {  // shortest of these that reads back exactly
        std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
      }
    }
    return raw(buf);
  }
  Json& integer(long long v) {
    separate();
    return raw(std::to_string(v));
  }
  Json& boolean(bool b) {
    separate();
    return raw(b ? "true" : "false");
  }
  Json& null() {
    separate();
    return raw("null");
  }
  Json& optional_bool(const std::optional<bool>& b) { return b ? boolean(*b) : null(); }
  const std::string& text() const { return out_; }

 private:
  Json& open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
    return *this;
  }
  Json& close(char c) {
    out_ += c;
    first_.pop_back();
    return *this;
  }
  Json& raw(const std::string& s) {
    out_ += s;
    return *this;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void quote(const std::string& s) {
    out_ += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += char(c);
      } else if (c == '\n') {
        out_ += "\\n";
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out_ += buf;
      } else {
        out_ += char(c);
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

struct TimingSamples {
  std::vector<double> device_ms, host_ms;  // per call (a batch's time divided by its launches)
  int batch = 1;                           // launches per sample, on distinct buffer sets
  bool spaced = false;                     // queued: each launch of the batch behind its own flush and spacer
  double spacer_us = 0;                    // queued timing: how long the spacer held stream 0 before a sample
  long long closed_syncs = 0;              // queued timing: the calls' synchronizes that closed a segment (kw_sync.h)
  long long kept_allocs = 0;               // queued timing: the calls' allocations served from blocks they freed
  std::vector<double> first_ms, tail_ms;   // queued timing: each sample's first segment and the one after its last
                                           // synchronize (none when the calls close no segment)
  std::vector<double> gap_ms;              // queued timing: each sample's host time between its synchronizes and
                                           // the work queued after them (kw_sync.h; none without a synchronize)
  long long checked_calls = 0;             // timed calls whose output was compared with the baseline's
  double check_p = 0;                      // the share of unforced calls checked (1: every call)
  std::optional<long long> failed_call;    // the first timed call (0-based) whose output was wrong
};

struct SizeRecord {
  size_t index = 0;
  Params params;
  std::optional<bool> correct, inputs_unchanged;
  std::string changed_input;   // first input found modified
  std::string out_of_bounds;   // guard-zone violation, "" if none
  std::vector<uint64_t> seeds;
  Tally tally;
  bool compared = false;       // validate/check: a tally exists
  std::optional<TimingSamples> timing;
};

struct DeviceInfo {
  std::string name, cc;
  int sm_count = 0;
  long long l2_bytes = 0, memory_bytes = 0;
};

struct ErrorRecord {
  Failure failure;
  std::optional<size_t> size_index;
  std::optional<uint64_t> seed;
  std::string phase;
};

inline double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

class Report {
 public:
  Report(const Options& o, const char* entry) : opt_(o), entry_(entry) {}

  std::optional<DeviceInfo> device;
  long long l2_flush_bytes = 0;
  // time: what a timed call of an empty kernel takes (launch, synchronize, the events around them): the
  // floor under every time this harness reports, median and CV over its samples.
  double empty_call_ms = -1, empty_call_cv = 0;
  std::vector<SizeRecord> sizes;
  std::optional<ErrorRecord> error;

  // Written before each risky step with an "incomplete" error naming the step, and
  // again at the end; a process that is killed or crashes leaves the last checkpoint.
  void checkpoint(size_t size_index, uint64_t seed, const std::string& phase) {
    error = ErrorRecord{Failure{"incomplete", "the harness ended (crash, kill or timeout) during " + phase, ""},
                        size_index, seed, phase};
    write();
  }

  void write() const {
    const std::string tmp = opt_.out + ".tmp";
    const std::string text = serialize();
    FILE* f = std::fopen(tmp.c_str(), "w");
    bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f) ok = (std::fclose(f) == 0) && ok;
    if (!ok || std::rename(tmp.c_str(), opt_.out.c_str()) != 0) {
      std::fprintf(stderr, "kwbench: cannot write %s\n", opt_.out.c_str());
      std::exit(2);
    }
  }

  std::string serialize() const {
    Json j;
    j.open_object();
    j.key("mode").str(mode_name(opt_.mode));
    j.key("impl").str(impl_name(opt_.impl));
    j.key("precision").str(kPrecision);
    j.key("entry").str(entry_);
    write_config(j);
    j.key("device");
    if (device) {
      j.open_object().key("name").str(device->name).key("cc").str(device->cc);
      j.key("sm_count").integer(device->sm_count).key("l2_bytes").integer(device->l2_bytes);
      j.key("memory_bytes").integer(device->memory_bytes).close_object();
    } else {
      j.null();
    }
    j.key("empty_call");
    if (empty_call_ms >= 0) {
      j.open_object().key("median_ms").num(empty_call_ms).key("cv").num(empty_call_cv).close_object();
    } else {
      j.null();
    }
    j.key("sizes").open_array();
    for (const auto& s : sizes) write_size(j, s);
    j.close_array();
    j.key("error");
    if (error) {
      j.open_object().key("kind").str(error->failure.kind).key("message").str(error->failure.message);
      j.key("code");
      error->failure.code.empty() ? j.null() : j.str(error->failure.code);
      j.key("size_index");
      error->size_index ? j.integer((long long)*error->size_index) : j.null();
      j.key("seed");
      error->seed ? j.integer((long long)*error->seed) : j.null();
      j.key("phase");
      error->phase.empty() ? j.null() : j.str(error->phase);
      j.close_object();
    } else {
      j.null();
    }
    j.close_object();
    return j.text() + "\n";
  }

 private:
  Options opt_;
  std::string entry_;

  static void write_params(Json& j, const Params& p) {
    j.open_object();
    for (const auto& kv : p) j.key(kv.first).num(kv.second);
    j.close_object();
  }

  void write_config(Json& j) const {
    j.key("config").open_object();
    j.key("seeds").integer(opt_.seeds).key("seed_base").integer((long long)opt_.seed_base);
    j.key("warmup").integer(opt_.warmup).key("iters").integer(opt_.iters);
    j.key("l2_flush_bytes").integer(l2_flush_bytes);
    j.key("l2_flush_mode").str(opt_.l2_flush_read ? "read" : "write");
    j.key("protocol").str(opt_.queued ? "queued" : "synchronized");
    j.key("atol").num(opt_.atol).key("rtol").num(opt_.rtol);
    j.key("constants");
    write_params(j, opt_.constants);
    j.close_object();
  }

  static void write_size(Json& j, const SizeRecord& s) {
    j.open_object();
    j.key("index").integer((long long)s.index);
    j.key("params");
    write_params(j, s.params);
    j.key("correct").optional_bool(s.correct);
    j.key("inputs_unchanged").optional_bool(s.inputs_unchanged);
    j.key("changed_input");
    s.changed_input.empty() ? j.null() : j.str(s.changed_input);
    j.key("out_of_bounds");
    s.out_of_bounds.empty() ? j.null() : j.str(s.out_of_bounds);
    j.key("seeds").open_array();
    for (uint64_t seed : s.seeds) j.integer((long long)seed);
    j.close_array();
    j.key("first_mismatch");
    if (s.tally.first) {
      const Mismatch& m = *s.tally.first;
      j.open_object().key("seed").integer((long long)m.seed).key("output").str(m.output);
      j.key("index").integer((long long)m.index).key("expected").num(m.expected).key("got").num(m.got);
      j.key("abs_err").num(m.abs_err).key("mismatches").integer((long long)m.mismatches);
      j.key("total").integer((long long)m.total).key("unwritten").integer((long long)m.unwritten);
      if (m.call) j.key("timed_call").integer(*m.call);
      j.close_object();
    } else {
      j.null();
    }
    j.key("checked");
    if (s.compared) {
      j.open_object().key("elements").integer((long long)s.tally.checked);
      j.key("total").integer((long long)s.tally.total).key("sampled").boolean(s.tally.sampled);
      const double nan = std::numeric_limits<double>::quiet_NaN();
      j.key("max_abs_err").num(s.tally.nonfinite ? nan : s.tally.max_abs_err);
      j.key("max_rel_err").num(s.tally.nonfinite ? nan : s.tally.max_rel_err).close_object();
    } else {
      j.null();
    }
    j.key("timing");
    if (s.timing) write_timing(j, *s.timing);
    else j.null();
    j.close_object();
  }

  static void write_timing(Json& j, const TimingSamples& t) {
    static const std::vector<double> none{0.0};  // a size whose first timed call failed its check
    const std::vector<double>& v = t.device_ms.empty() ? none : t.device_ms;
    const double mean = mean_of(v);
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    const double sd = v.size() > 1 ? std::sqrt(var / double(v.size() - 1)) : 0.0;
    j.open_object();
    j.key("samples").integer((long long)v.size());
    j.key("mean_ms").num(mean).key("median_ms").num(median_of(v));
    j.key("min_ms").num(*std::min_element(v.begin(), v.end()));
    j.key("max_ms").num(*std::max_element(v.begin(), v.end()));
    j.key("std_ms").num(sd).key("cv").num(mean > 0 ? sd / mean : 0.0);
    j.key("host_mean_ms").num(mean_of(t.host_ms)).key("host_median_ms").num(median_of(t.host_ms));
    j.key("batch").integer(t.batch).key("spaced").boolean(t.spaced).key("spacer_us").num(t.spacer_us);
    j.key("closed_syncs").integer(t.closed_syncs);
    j.key("kept_allocs").integer(t.kept_allocs);
    if (!t.tail_ms.empty()) {
      j.key("first_segment_median_ms").num(median_of(t.first_ms)).key("tail_median_ms").num(median_of(t.tail_ms));
      j.key("host_gap_median_ms").num(median_of(t.gap_ms));
    }
    j.key("checked_calls").integer(t.checked_calls).key("check_p").num(t.check_p);
    j.key("failed_call");
    t.failed_call ? j.integer(*t.failed_call) : j.null();
    j.key("samples_ms").open_array();
    for (double x : v) j.num(x);
    j.close_array();
    j.close_object();
  }
};

#endif  // KW_HARNESS_RUNTIME

// ----------------------------------------------------------------------------------
// The driver
// ----------------------------------------------------------------------------------

struct TaskDef {
  const char* entry;      // baseline entry point name, e.g. "vector_add_bf16"
  bool candidate_linked;  // the weak _optimized symbol resolved
  void (*setup)(Case&);
  void (*launch)(Case&, Impl);
  void (*reference)(Case&, Reference&);
};

#ifdef KW_HARNESS_RUNTIME  // the driver: run_main's
class Driver {
 public:
  Driver(const Options& o, const TaskDef& t, Report& r)
      : opt_(o), task_(t), report_(r), turns_(o.turn_in, o.turn_out) {}

  ~Driver() {
    if (flush_) cudaFree(flush_);
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (sync_.to) cudaEventDestroy(sync_.to);
    if (stage_.base) cudaFreeHost(stage_.base);
  }

  void run() {
    open_device();
    if (opt_.impl == Impl::candidate && !task_.candidate_linked && opt_.candidate.empty()) {
      fail("no_candidate", std::string("this kwbench was linked without a candidate: ") + task_.entry +
                               "_optimized is not defined");
    }
    if (opt_.mode == Mode::time) prepare_timing();
    if (opt_.mode == Mode::outputs) {
      std::signal(SIGPIPE, SIG_IGN);  // a reader that stopped is an error to report, not a silent death
      writer_.emplace(opt_.evidence_fd);
    }
    if (opt_.mode == Mode::compare) reader_.emplace(opt_.evidence_fd);
    if (opt_.lockdown) {
      const std::string why = lockdown::apply(lockdown::folder_of(opt_.out), opt_.candidate);
      if (!why.empty()) {
        fail("lockdown", "the harness could not lock itself down before the first call (" + why +
                             "): a worker problem, not the candidate's; KW_LOCKDOWN=0 turns the lockdown off");
      }
    }
    if (opt_.impl == Impl::candidate && !opt_.candidate.empty()) {  // its constructors run here, locked down
      const std::string why = candidate::load(opt_.candidate, (std::string(task_.entry) + "_optimized").c_str());
      if (!why.empty()) {
        fail("candidate_load", "the candidate's shared object could not be loaded (" + why +
                                   "): a worker problem, not the candidate's; KW_LOAD_AFTER_LOCKDOWN=0 links it in");
      }
      // candidate.so carries its own copy of kw_sync.cu's wrapper (its link wraps cudaDeviceSynchronize too).
      if (void* attach = dlsym(candidate::handle(), "kw_sync_attach")) {
        reinterpret_cast<void (*)(KwSyncClose*)>(attach)(&sync_);
      }
    }
    for (size_t i = 0; i < opt_.sizes.size(); ++i) {
      report_.sizes.emplace_back();
      SizeRecord& rec = report_.sizes.back();
      rec.index = i;
      rec.params = opt_.sizes[i];
      switch (opt_.mode) {
        case Mode::validate: correctness(rec, false); break;
        case Mode::check: correctness(rec, true); break;
        case Mode::time: timing(rec); break;
        case Mode::profile: profile(rec); break;
        case Mode::outputs: send_outputs(rec); break;
        case Mode::compare: correctness(rec, true); break;
      }
    }
  }

 private:
  void open_device() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      fail("no_device", std::string("no CUDA device: ") +
                            (err != cudaSuccess ? cudaGetErrorString(err) : "cudaGetDeviceCount returned 0"));
    }
    int dev = 0, major = 0, minor = 0, sms = 0, l2 = 0;
    cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
    cudaDeviceProp prop;
    cuda_check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
    cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "compute capability");
    cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "compute capability");
    cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
    cuda_check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "L2 size");
    report_.device = DeviceInfo{prop.name, std::to_string(major) + "." + std::to_string(minor), sms, l2,
                                (long long)prop.totalGlobalMem};
    report_.l2_flush_bytes = opt_.l2_flush_bytes >= 0 ? opt_.l2_flush_bytes : 2LL * l2;
    // The primary context now, not at the first allocation: creating it talks to the driver over a socket and
    // opens files, which the lockdown after this refuses (on an H200 every first cudaMalloc after it failed
    // with cudaErrorDevicesUnavailable).
    if (opt_.sync_wait != "auto") {
      const unsigned flag = opt_.sync_wait == "spin"    ? cudaDeviceScheduleSpin
                            : opt_.sync_wait == "yield" ? cudaDeviceScheduleYield
                                                        : cudaDeviceScheduleBlockingSync;
      cuda_check(cudaSetDeviceFlags(flag), "cudaSetDeviceFlags (--sync-wait)");
    }
    cuda_check(cudaFree(nullptr), "create the CUDA context");
  }

  void prepare_timing() {
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&sync_.to), "cudaEventCreate");
    // Queued samples reopen behind a short spacer after a call's synchronize, and stage its small synchronous copies
    // through pinned memory allocated here, before any candidate code runs (kw_sync.h).
    sync_.cache = &cache_;
    sync_.spacer = [](long long ns) { timed::spacer_kernel<<<1, 1>>>(ns); };
    sync_.spacer_ns = kReopenSpacerNs;
    if (opt_.queued) {
      // Host memory a call frees stays with the process for its next allocation (glibc otherwise maps blocks of
      // 128 KiB and more afresh and returns freed memory at the heap's top: page faults inside every call), as
      // the device blocks do in kw_sync.h's cache.
      mallopt(M_MMAP_THRESHOLD, 32 << 20);
      mallopt(M_TRIM_THRESHOLD, 1 << 30);
      cuda_check(cudaMallocHost(&stage_.base, kStageBytes), "allocate the pinned staging area");
      stage_.bytes = kStageBytes;
      sync_.stage = &stage_;
    }
    kw_sync_attach(&sync_);
    if (report_.l2_flush_bytes > 0) {
      cuda_check(cudaMalloc(&flush_, size_t(report_.l2_flush_bytes)), "allocate the L2 flush buffer");
      if (opt_.l2_flush_read) {  // zeros, so read_flush_kernel's sum is known (its store never happens)
        cuda_check(cudaMemset(flush_, 0, size_t(report_.l2_flush_bytes)), "clear the L2 flush buffer");
      }
    }
    measure_empty_call();
  }

  // Before each sample: nothing of the last one stays in L2. Written by default (a memset of the buffer);
  // --l2-flush-mode read loads it instead, leaving no dirty lines (read_flush_kernel).
  void flush_l2(int it) {
    const size_t bytes = size_t(report_.l2_flush_bytes);
    if (opt_.l2_flush_read) {
      const size_t n = bytes / sizeof(uint4);
      timed::read_flush_kernel<<<timed::grid_for(n), 256>>>(static_cast<const uint4*>(flush_), n,
                                                            static_cast<unsigned*>(flush_));
      cuda_check(cudaGetLastError(), "L2 flush");
    } else {
      cuda_check(cudaMemsetAsync(flush_, it & 0xff, bytes), "L2 flush");
    }
  }

  // The floor: an empty kernel timed as a timed call is (in the protocol of this run, sample()).
  void measure_empty_call() {
    const Turn turn(turns_);
    std::vector<double> v;
    for (int it = 0; it < 120; ++it) {
      cuda_check(cudaDeviceSynchronize(), "synchronize before an empty call");
      const float ms = sample(1, [](int) { timed::empty_kernel<<<1, 32>>>(); }, "empty call", kMinSpacerNs);
      if (it >= 20) v.push_back(ms);  // the first 20 warm up
    }
    const double mean = mean_of(v);
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    report_.empty_call_ms = median_of(v);
    report_.empty_call_cv = mean > 0 ? std::sqrt(var / double(v.size() - 1)) / mean : 0.0;
  }

  std::unique_ptr<Case> make_case(size_t size_index, uint64_t seed) {
    where_ = {size_index, seed};
    report_.checkpoint(size_index, seed, "setup (inputs and allocation)");
    auto c = std::make_unique<Case>(opt_.sizes[size_index], opt_.constants, seed);
    task_.setup(*c);
    return c;
  }

  // One call with the protocol around it: restore/poison before, then both the
  // launch error and the synchronize error are checked.
  void call(Case& c, Impl impl, const std::string& phase) {
    c.prepare();
    report_.checkpoint(where_.first, where_.second, phase);
    cuda_check(cudaGetLastError(), "before " + phase);
    task_.launch(c, impl);
    const cudaError_t launch = cudaGetLastError();
    const cudaError_t sync = cudaDeviceSynchronize();
    cuda_check(launch, phase + " (cudaGetLastError after the call)");
    cuda_check(sync, phase + " (cudaDeviceSynchronize after the call)");
  }

  // After a call: inputs intact and guard zones intact; returns false otherwise.
  bool after_call(Case& c, SizeRecord& rec) {
    const std::string changed = c.changed_input();
    const std::string oob = c.guard_violation();
    if (!changed.empty() && rec.changed_input.empty()) rec.changed_input = changed;
    if (!oob.empty() && rec.out_of_bounds.empty()) rec.out_of_bounds = oob;
    if (!rec.inputs_unchanged || *rec.inputs_unchanged) rec.inputs_unchanged = changed.empty();
    return changed.empty() && oob.empty();
  }

  // validate: impl vs the CPU reference; check: impl vs the baseline, same inputs; compare: what the
  // candidate's process sent (EvidenceReader) vs the baseline, every seed (the sender sends them all).
  void correctness(SizeRecord& rec, bool against_baseline) {
    rec.compared = true;
    bool ok = true;
    const bool evidence = opt_.mode == Mode::compare;
    for (int s = 0; s < opt_.seeds && (ok || evidence); ++s) {
      const uint64_t seed = opt_.seed_base + uint64_t(s);
      rec.seeds.push_back(seed);
      auto c = make_case(rec.index, seed);
      std::vector<std::vector<unsigned char>> expected;
      if (against_baseline) {
        call(*c, Impl::baseline, "baseline call");
        SizeRecord scratch;
        if (!after_call(*c, scratch)) {
          fail("baseline_failed", "the baseline " + (scratch.changed_input.empty()
                                                          ? scratch.out_of_bounds
                                                          : "modified input " + scratch.changed_input));
        }
        c->fetch_outputs();
        for (const auto& b : c->buffers()) expected.push_back(std::move(b->result()));
      }
      if (evidence) {
        report_.checkpoint(rec.index, seed, "reading the candidate's evidence");
        reader_->receive(*c, rec.index);
      } else {
        call(*c, opt_.impl, std::string(impl_name(opt_.impl)) + " call");
      }
      const bool intact = after_call(*c, rec);
      c->fetch_outputs();
      report_.checkpoint(rec.index, seed, "comparison");
      if (against_baseline) {
        const auto& bufs = c->buffers();
        for (size_t k = 0; k < bufs.size(); ++k) {
          if (bufs[k]->role() == Role::input) continue;
          const Buffer& truth = *bufs[k];
          const std::vector<unsigned char>& exp = expected[k];
          compare_output(truth, nullptr, [&](size_t i) { return read_element(truth.type(), exp.data(), i); },
                         opt_.atol, opt_.rtol, seed, rec.tally);
        }
      } else {
        Reference ref(*c, opt_.atol, opt_.rtol, rec.tally);
        task_.reference(*c, ref);
        ref.finish();
      }
      ok = ok && intact && !rec.tally.first;
    }
    rec.correct = ok;
  }

  // outputs: the candidate on every size and seed of the check; each case is sent, as it is after the call,
  // to the reference's process, which decides (compare). Nothing is judged here.
  void send_outputs(SizeRecord& rec) {
    for (int s = 0; s < opt_.seeds; ++s) {
      const uint64_t seed = opt_.seed_base + uint64_t(s);
      rec.seeds.push_back(seed);
      auto c = make_case(rec.index, seed);
      call(*c, opt_.impl, std::string(impl_name(opt_.impl)) + " call");
      report_.checkpoint(rec.index, seed, "sending the evidence");
      writer_->send(*c, rec.index);
    }
  }

  // time (docs/evaluation.md, "Timing" and "Every timed call is checked"): warm-up calls, then samples.
  // Before each sample every buffer set gets fresh inputs (kw_timed.cuh); then the L2 flush, the start
  // event, the launches (one per buffer set, a device-wide synchronize after each, so work on any stream
  // is inside the call), the stop event. Then, outside the timed region, a candidate's calls are checked:
  // its outputs are set aside, the same inputs are drawn again, the baseline runs on them and the two are
  // compared on the GPU. The first and the last timed call are always checked, the others each with
  // probability check_p, drawn after the call returned (so a call cannot know whether it will be checked);
  // check_p is 1 unless the baseline is much slower than the candidate (docs/evaluation.md).
  // Calls shorter than batch_below_ms are timed `batch` at a time on distinct buffer sets, so one event
  // pair spans about batch_target_ms and the L2 flush still leaves every call's inputs cold; queued calls that
  // synchronize inside are batched spaced, each call behind its own flush and spacer.
  void timing(SizeRecord& rec) {
    const uint64_t seed = opt_.seed_base;
    rec.seeds.push_back(seed);
    const bool checked = opt_.impl == Impl::candidate;
    // Every GPU step of this size happens in a turn: the buffers and the warm-up, each sample with its checks,
    // and the frees at the end (`held`, declared first, is destroyed after everything below).
    std::optional<Turn> held(std::in_place, turns_);
    std::vector<std::unique_ptr<Case>> sets;
    sets.push_back(make_case(rec.index, seed));
    // The size's kept blocks (kw_sync.h) go back to the driver when the size ends, whatever ends it.
    struct CacheRelease {
      KwAllocCache& c;
      ~CacheRelease() { kw_sync_release(&c); }
    } cache_release{cache_};
    cache_.hits = 0;
    std::vector<double> warm, enqueue;  // each warm-up call's device time, and the host's time to queue it
    double warmed = 0;
    long long warm_closed = 0;  // queued: synchronizes of the warm-up calls that closed a segment
    for (int w = 0; w < opt_.warmup || (warmed < opt_.warmup_ms && w < 1000); ++w) {
      enqueue.push_back(0);
      warm.push_back(timed_warmup(*sets[0], &enqueue.back(), &warm_closed));
      warmed += warm.back();
    }
    // Queued, a call that synchronizes inside is timed in a spaced batch: each call behind its own flush and
    // spacer, its own events, the sample their sum. Between one event pair every call after the first would add
    // the host's time from the previous call's synchronize to its own first launch (kw_sync.h), which moves with
    // the host's speed (measured with --batch-syncing: the shortest calls stopped repeating; docs/benchmarks.md,
    // "Calls that synchronize inside, in batches between one event pair"); spaced, each call starts as a call
    // alone does, and the batch still averages a cold short call's spread over its calls ("Spaced batches").
    const bool synchronizes_inside = opt_.queued && warm_closed > 0;
    const bool spaced = synchronizes_inside && !opt_.batch_syncing;
    int batch = opt_.batch_fixed.empty() ? batch_size(warm.empty() ? 1e9 : median_of(warm), sets[0]->device_bytes())
                                         : fit_in_memory(opt_.batch_fixed[rec.index], sets[0]->device_bytes());
    if (spaced) batch = std::min(batch, std::max(opt_.max_spaced, 1));  // each call costs a flush and a spacer
    // The spacer outlasts the host's queuing of a whole sample twice over (the warm-up median, measured behind the
    // shortest spacer, so sizes do not compound), so the GPU meets the start event with the calls queued behind
    // it. A call that took longer than that spacer to return waited for the GPU inside (MSKernelBench's entry
    // points end in cudaDeviceSynchronize): a longer spacer cannot help it and only lengthens that wait, so it
    // keeps the shortest. A host slower than the spacer only adds its own time to a sample, never hides GPU work.
    const double enqueue_ms = enqueue.empty() ? 0.0 : median_of(enqueue);
    const bool waits_inside = synchronizes_inside || enqueue_ms * 1e6 >= double(kMinSpacerNs);
    const long long spacer_ns =
        waits_inside ? kMinSpacerNs : std::min(kMaxSpacerNs, kMinSpacerNs + (long long)(2e6 * enqueue_ms * batch));
    for (int b = 1; b < batch; ++b) sets.push_back(make_case(rec.index, seed + 0x9e3779b9ULL * uint64_t(b)));
    std::vector<std::vector<void*>> saved(checked ? sets.size() : 0);  // a checked call's outputs, set aside
    for (size_t b = 0; b < saved.size(); ++b) {
      for (const auto& buf : sets[b]->buffers()) {
        void* p = nullptr;
        if (buf->role() != Role::input) cuda_check(cudaMalloc(&p, std::max<size_t>(buf->bytes(), 1)), "set aside outputs");
        saved[b].push_back(p);
      }
    }
    struct Freer {
      std::vector<std::vector<void*>>& e;
      ~Freer() {
        for (auto& v : e) for (void* p : v) if (p) cudaFree(p);
      }
    } freer{saved};
    unsigned long long* counters = nullptr;  // [bad, first index]
    cuda_check(cudaMalloc(&counters, 2 * sizeof(unsigned long long)), "allocate the check counters");
    struct CounterFreer {
      unsigned long long* p;
      ~CounterFreer() { cudaFree(p); }
    } counter_freer{counters};
    std::random_device entropy;  // which calls are checked is drawn after each call, from the OS
    double check_p = 1.0;

    report_.checkpoint(rec.index, seed, "timed calls");
    TimingSamples t;
    t.batch = batch;
    t.spaced = spaced && batch > 1;
    const int per_pair = t.spaced ? 1 : batch;  // launches between one event pair
    const int pairs = batch / per_pair;         // event pairs per sample
    t.spacer_us = opt_.queued ? spacer_ns / 1e3 : 0.0;
    held.reset();
    for (int it = 0; it < opt_.iters; ++it) {
      held.emplace(turns_);  // one sample and its checks
      const uint64_t sample_seed = stream_seed(seed, "timed sample " + std::to_string(it));
      for (size_t b = 0; b < sets.size(); ++b) sets[b]->refresh(sample_seed + b);
      double ms = 0, host_ms = 0, first_ms = 0, tail_ms = 0, gap_ms = 0;
      int segmented = 0;
      for (int from = 0; from < batch; from += per_pair) {
        if (flush_) flush_l2(it * batch + from);
        cuda_check(cudaDeviceSynchronize(), "synchronize before a timed call");
        double pair_host_ms = 0;
        ms += sample(per_pair, [&](int b) { task_.launch(*sets[from + b], opt_.impl); }, "timed call", spacer_ns,
                     &pair_host_ms, &t.closed_syncs);
        host_ms += pair_host_ms;
        if (last_tail_ms_ >= 0) {
          first_ms += last_first_ms_;
          tail_ms += last_tail_ms_;
          gap_ms += sync_.host_ms;
          ++segmented;
        }
      }
      const double call_ms = ms / batch;
      t.device_ms.push_back(call_ms);
      t.host_ms.push_back(host_ms / batch);
      if (segmented == pairs) {  // per event pair, as for a call alone
        t.first_ms.push_back(first_ms / pairs);
        t.tail_ms.push_back(tail_ms / pairs);
        t.gap_ms.push_back(gap_ms / pairs);
      }
      if (!checked) continue;
      for (size_t b = 0; b < sets.size(); ++b) {
        const long long call = (long long)it * batch + (long long)b;
        const bool forced = (it == 0 && b == 0) || (it == opt_.iters - 1 && b + 1 == sets.size());
        if (!forced && double(entropy()) / 4294967296.0 >= check_p) continue;
        const double baseline_ms = check_timed_call(*sets[b], saved[b], counters, sample_seed + b, call, rec);
        ++t.checked_calls;
        if (baseline_ms < 0) {
          t.failed_call = call;
          rec.correct = false;
          rec.timing = std::move(t);
          return;
        }
        // A baseline far slower than the candidate (an O(N^2) naive kernel) would dominate the run: check
        // a random share of the calls instead, at least one in ten.
        if (call == 0 && baseline_ms > 0) check_p = std::min(1.0, std::max(0.1, 4.0 * call_ms / baseline_ms));
      }
    }
    t.check_p = checked ? check_p : 0.0;
    t.kept_allocs = cache_.hits;
    if (checked) rec.correct = true;
    rec.out_of_bounds = sets[0]->guard_violation();  // informational: correctness is the check mode's job
    rec.timing = std::move(t);
  }

  // One warm-up call on fresh inputs (not checked): its device time decides the batch size, the host's time to
  // queue it the spacer's length.
  double timed_warmup(Case& c, double* enqueue_ms, long long* closed_syncs) {
    c.refresh(stream_seed(opt_.seed_base, "warm-up"));
    cuda_check(cudaDeviceSynchronize(), "fresh inputs before a warm-up call");
    report_.checkpoint(where_.first, where_.second, "warm-up call");
    return sample(1, [&](int) { task_.launch(c, opt_.impl); }, "warm-up call", kMinSpacerNs, enqueue_ms,
                  closed_syncs);
  }

  // One sample: `launches` calls between the start and stop events (docs/evaluation.md, "Timing protocol"), queued
  // behind a spacer of `spacer_ns` when the run is queued;
  // *host_ms gets the host's time from the start event to the last call's return (queued: queuing the calls;
  // synchronized: running them).
  //  - synchronized: a device-wide synchronize after each call, then the stop event. Work on any stream is inside
  //    the sample, and so are the host's launch latency and its wake-up from each synchronize (~10 us per call
  //    on an H200, varying by 10 % from one process to the next: docs/benchmarks.md).
  //  - queued (--queued 1): the spacer holds stream 0 while the host queues the start event, the calls and the
  //    stop event, so the pair spans the GPU's work. A call's own cudaDeviceSynchronize closes a segment
  //    (kw_sync.h): the sample is the sum of its segments and of the host's time between a synchronize and the
  //    work queued after it, without the host's time inside those synchronizes (*closed_syncs counts them).
  //    Stream 0 is the legacy default stream: the work of every blocking stream (cudaStreamCreate,
  //    cudaStreamPerThread, a library's handle on stream 0) waits for the spacer and is waited for by the stop
  //    event and by each segment's end. The evaluator asks for it only where the object check
  //    found no other kind of stream.
  template <class Launch>
  float sample(int launches, Launch launch, const std::string& what, long long spacer_ns, double* host_ms = nullptr,
               long long* closed_syncs = nullptr) {
    const bool queued = opt_.queued;
    if (queued) {
      timed::spacer_kernel<<<1, 1>>>(spacer_ns);
      cuda_check(cudaGetLastError(), "launch the spacer before " + what);
    }
    cuda_check(cudaEventRecord(start_, 0), "record start event");
    // Queued: each synchronize of the calls closes a segment (kw_sync.h); the last runs to the stop event.
    sync_.begin_sample(queued, start_);
    const auto t0 = std::chrono::steady_clock::now();
    cudaError_t stop_recorded = cudaSuccess;
    long long returned_ns = 0;
    for (int b = 0; b < launches; ++b) {
      launch(b);
      // Queued, the stop event goes in as soon as the last call returns: the harness's own error check is no
      // part of the tail after the call's last synchronize (a launch error stays pending until it is read).
      if (queued && b + 1 == launches) {
        returned_ns = kw_now_ns();
        stop_recorded = cudaEventRecord(stop_, 0);
      }
      const cudaError_t launched = cudaGetLastError();
      const cudaError_t sync = queued ? cudaSuccess : cudaDeviceSynchronize();
      cuda_check(launched, what + " (cudaGetLastError after the call)");
      cuda_check(sync, what + " (cudaDeviceSynchronize after the call)");
    }
    if (host_ms) *host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!queued) stop_recorded = cudaEventRecord(stop_, 0);
    cuda_check(stop_recorded, "record stop event");
    const cudaError_t stopped = cudaEventSynchronize(stop_);
    sync_.open = false;
    if (queued) cuda_check(cudaDeviceSynchronize(), what + " (cudaDeviceSynchronize after the call)");
    cuda_check(stopped, "wait for stop event");
    cuda_check(sync_.error, what + " (its cudaDeviceSynchronize, a queued sample's segment closed there)");
    // The last segment: to the stop event; where the call queued nothing after its last synchronize, the GPU was
    // idle since, and the call's host time to its return is the whole of it (kw_sync.h).
    double tail = 0;
    if (queued && sync_.idle) {
      tail = (returned_ns - sync_.mark_ns) / 1e6;
    } else {
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, sync_.from, stop_), "cudaEventElapsedTime");
      tail = ms;
      if (queued && sync_.reopened) tail = std::max(tail, (returned_ns - sync_.mark_ns) / 1e6);
    }
    if (closed_syncs) *closed_syncs += sync_.closed;
    last_first_ms_ = sync_.closed > 0 ? sync_.first_ms : -1;
    last_tail_ms_ = sync_.closed > 0 ? tail : -1;
    return float(sync_.ms + sync_.host_ms + tail);
  }

  // Launches per sample: 1 for calls of batch_below_ms or longer; else enough for batch_target_ms, at most
  // max_batch, and no more buffer sets (with their expected outputs) than fit in a quarter of free memory.
  int batch_size(double call_ms, size_t set_bytes) const {
    if (call_ms >= opt_.batch_below_ms || opt_.max_batch <= 1) return 1;
    const int b = int(std::ceil(opt_.batch_target_ms / std::max(call_ms, 1e-4)));
    return fit_in_memory(std::min(std::max(b, 1), opt_.max_batch), set_bytes);
  }

  int fit_in_memory(int b, size_t set_bytes) const {
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && set_bytes > 0) {
      const size_t fit = free_bytes / 4 / (2 * set_bytes);
      b = int(std::min<size_t>(size_t(b), std::max<size_t>(fit, 1)));
    }
    return b;
  }

  // Checks one timed call: its outputs are set aside, the call's inputs are drawn again (the same seed), the
  // baseline runs on them and kw_timed.cuh's compare_kernel compares. Returns the baseline's time in ms, or
  // -1 after recording the mismatch (naming the call) as the size's first mismatch.
  double check_timed_call(Case& c, const std::vector<void*>& saved, unsigned long long* counters,
                          uint64_t call_seed, long long call, SizeRecord& rec) {
    const auto& bufs = c.buffers();
    for (size_t k = 0; k < bufs.size(); ++k) {
      if (saved[k]) {
        cuda_check(cudaMemcpy(saved[k], bufs[k]->dev(), bufs[k]->bytes(), cudaMemcpyDeviceToDevice),
                   "set aside a timed call's outputs");
      }
    }
    c.refresh(call_seed);  // the same inputs again (whatever the call did to them), outputs poisoned
    cuda_check(cudaEventRecord(start_, 0), "record start event");
    task_.launch(c, Impl::baseline);
    cuda_check(cudaGetLastError(), "baseline call for a timed call's check");
    cuda_check(cudaDeviceSynchronize(), "baseline call for a timed call's check");
    cuda_check(cudaEventRecord(stop_, 0), "record stop event");
    cuda_check(cudaEventSynchronize(stop_), "wait for stop event");
    float baseline_ms = 0;
    cuda_check(cudaEventElapsedTime(&baseline_ms, start_, stop_), "cudaEventElapsedTime");
    rec.compared = true;
    for (size_t k = 0; k < bufs.size(); ++k) {
      if (!saved[k]) continue;
      const Buffer& expected = *bufs[k];
      const unsigned long long init[2] = {0ULL, ~0ULL};
      cuda_check(cudaMemcpy(counters, init, sizeof(init), cudaMemcpyHostToDevice), "reset the check counters");
      timed::compare_kernel<<<timed::grid_for(expected.count()), 256>>>(saved[k], expected.dev(), int(expected.type()),
                                                                        expected.count(), opt_.atol, opt_.rtol,
                                                                        counters, counters + 1);
      cuda_check(cudaGetLastError(), "compare a timed call's output");
      unsigned long long got[2] = {0, 0};
      cuda_check(cudaMemcpy(got, counters, sizeof(got), cudaMemcpyDeviceToHost), "read the check counters");
      rec.tally.checked += expected.count();
      rec.tally.total += expected.count();
      if (got[0] == 0) continue;
      const size_t i = size_t(got[1]);
      const size_t es = type_size(expected.type());
      unsigned char g[4] = {0}, e[4] = {0};
      cuda_check(cudaMemcpy(g, static_cast<unsigned char*>(saved[k]) + i * es, es, cudaMemcpyDeviceToHost), "read");
      cuda_check(cudaMemcpy(e, static_cast<unsigned char*>(expected.dev()) + i * es, es, cudaMemcpyDeviceToHost),
                 "read");
      Mismatch m;
      m.seed = call_seed;
      m.output = expected.name();
      m.index = i;
      m.expected = read_element(expected.type(), e, 0);
      m.got = read_element(expected.type(), g, 0);
      m.abs_err = std::fabs(m.got - m.expected);
      m.mismatches = size_t(got[0]);
      m.total = expected.count();
      m.call = call;
      rec.tally.first = m;
      return -1.0;
    }
    return baseline_ms;
  }

  // profile: one warm-up call, then one call inside cudaProfilerStart/Stop (ncu runs
  // with --profile-from-start off, so only that call is measured).
  void profile(SizeRecord& rec) {
    const uint64_t seed = opt_.seed_base;
    rec.seeds.push_back(seed);
    auto c = make_case(rec.index, seed);
    call(*c, opt_.impl, "warm-up call");
    c->prepare();
    report_.checkpoint(rec.index, seed, "profiled call");
    cuda_check(cudaProfilerStart(), "cudaProfilerStart");
    task_.launch(*c, opt_.impl);
    const cudaError_t launch = cudaGetLastError();
    const cudaError_t sync = cudaDeviceSynchronize();
    cuda_check(cudaProfilerStop(), "cudaProfilerStop");
    cuda_check(launch, "profiled call (cudaGetLastError after the call)");
    cuda_check(sync, "profiled call (cudaDeviceSynchronize after the call)");
    after_call(*c, rec);
  }

  const Options& opt_;
  const TaskDef& task_;
  Report& report_;
  std::pair<size_t, uint64_t> where_{0, 0};
  void* flush_ = nullptr;
  // Queued timing's spacer: at least 50 us (an H200's launch latency is about 5 us), at most 2 ms.
  static constexpr long long kMinSpacerNs = 50000, kMaxSpacerNs = 2000000;
  // The spacer behind which a call's work after its synchronize is queued (kw_sync.h): several launches' worth.
  static constexpr long long kReopenSpacerNs = 20000;
  static constexpr size_t kStageBytes = size_t(4) << 20;  // pinned staging for a call's small synchronous copies
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  KwSyncClose sync_;     // a queued sample's segments (kw_sync.h)
  KwAllocCache cache_;  // the blocks a size's queued samples allocated (kw_sync.h)
  KwStage stage_;       // the pinned staging area of a queued run's synchronous copies (kw_sync.h)
  double last_first_ms_ = -1, last_tail_ms_ = -1;  // the last sample's first and tail segments (-1: one segment)
  Turns turns_;
  std::optional<EvidenceWriter> writer_;
  std::optional<EvidenceReader> reader_;
};

#endif  // KW_HARNESS_RUNTIME

// Exit status: 0 = JSON complete (correct or not); 1 = JSON written with an error;
// 2 = no JSON could be written (no --out, or the file could not be written).
int run_main(int argc, char** argv, const TaskDef& task);

#ifdef KW_HARNESS_RUNTIME
int run_main(int argc, char** argv, const TaskDef& task) {
  Options opt;
  try {
    opt = parse_options(argc, argv);
  } catch (const Failure& f) {
    opt.out = find_out(argc, argv);
    if (opt.out.empty()) {
      std::fprintf(stderr, "kwbench: %s (and no --out to report it in)\n", f.message.c_str());
      return 2;
    }
    Report report(opt, task.entry);
    report.error = ErrorRecord{f, std::nullopt, std::nullopt, "arguments"};
    report.write();
    return 1;
  }
  Report report(opt, task.entry);
  try {
    Driver driver(opt, task, report);
    driver.run();
    report.error.reset();
    report.write();
    return 0;
  } catch (const Failure& f) {
    // Keep where the last checkpoint said we were; replace the "incomplete" reason.
    ErrorRecord rec = report.error ? *report.error : ErrorRecord{};
    rec.failure = f;
    report.error = rec;
  } catch (const std::exception& e) {
    ErrorRecord rec = report.error ? *report.error : ErrorRecord{};
    rec.failure = Failure{"harness_error", e.what(), ""};
    report.error = rec;
  }
  report.write();
  return 1;
}
#endif  // KW_HARNESS_RUNTIME

}  // namespace kw

// Ends a task's harness.cu: KW_MAIN(setup, launch, reference)
#define KW_MAIN(setup_fn, launch_fn, reference_fn)                                                     \
  int main(int argc, char** argv) {                                                                    \
    const kw::TaskDef task{kw_entry_name, kw_entry(kw::Impl::candidate) != nullptr, setup_fn, launch_fn, \
                           reference_fn};                                                              \
    return kw::run_main(argc, argv, task);                                                             \
  }
