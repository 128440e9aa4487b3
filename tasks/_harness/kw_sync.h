// kw_sync.h: a queued sample closed at the call's own synchronizes, its host time between them on the host's clock,
// its allocations served from a cache (docs/evaluation.md, "Timing protocol").
//
// MSKernelBench's entry points end in cudaDeviceSynchronize(), so in a queued sample the host's wake-up from that
// synchronize lay between the call's last kernel and the stop event: 2-4 us that move by a few per cent from one
// process to the next. Every object of kwbench and of candidate.so is linked with --wrap for the synchronize, the
// allocations and every runtime call that queues GPU work (objcheck.QUEUED_WRAPPED, worker/formats/cuda/build.py),
// so they reach kw_sync.cu's wrappers. While a queued sample is open:
//  - a synchronize ends the sample's current segment with an event recorded before the real synchronize. After it
//    the GPU holds nothing of the call's, so the host's time runs on the host's clock (steady_clock) until the call
//    queues work again: then a short spacer kernel holds stream 0 while the call queues, the next segment starts
//    with an event behind it and lasts to the next synchronize, at least as long as the host took over it. The
//    sample is the sum of the segments and the host's gaps. Left out: the host's time inside the real synchronize
//    (no candidate code runs, the object check refuses threads) and the time a launch takes to reach an idle GPU.
//    A synchronize (or cudaFree) while the call has queued nothing since the last one has nothing to wait for: it
//    returns that one's result without asking the driver, whose round trip on an idle GPU was 0.5-1 us of noise.
//    This holds only for a call whose every way to queue work is wrapped: the evaluator asks for queued samples
//    only where the object check found no other (objcheck.unordered_work), and streams that stream 0 does not
//    order make the run synchronized too. cudaFree synchronizes the device, so it closes a segment the same way.
//  - a synchronous cudaMemcpy between host memory and the device goes through a pinned staging area, as the
//    driver's own does for pageable memory: the copy is on the GPU's timeline (a copy to the host closes a segment
//    when it has landed), the host's part of it on the host's clock, and the host's wake-up is left out as for a
//    synchronize. Any other copy to or from host memory may make the host wait for the GPU, so the segment it opens
//    starts without the spacer (the host would wait for that too). A wait no wrapper knows of (cudaStreamSynchronize)
//    inside a segment opened behind the spacer waits for the rest of it: at most 20 us more, never less.
//  - cudaFree of a block the calls allocated keeps the block for the next cudaMalloc of the same size, as PyTorch's
//    caching allocator does under KernelBench's timing: the driver's mapping and unmapping of pages, whose cost
//    moved by up to 20 % between processes, leaves the calls; what the calls do with their memory stays in them.
//    The harness hands the blocks back to the driver after each size (kw_sync_release).
// Outside an open sample (correctness runs, the harness's own buffers) every call goes straight to the runtime.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
#include <time.h>

// A block a queued sample's calls allocated: in use by the calls, or freed by them and kept for the next request.
struct KwBlock {
  void* ptr;
  size_t bytes;
  bool kept;  // freed by a call: the next cudaMalloc of `bytes` inside a sample gets it
};

// The blocks of one size's samples. Fixed and plain (no allocation, no C++ library type), as kwbench's and
// candidate.so's copies of the wrappers share it.
struct KwAllocCache {
  static constexpr int kCapacity = 64;  // a call with more live blocks allocates the rest straight from the driver
  KwBlock blocks[kCapacity];
  int count = 0;
  long long hits = 0;  // allocations served from kept blocks (reported per size)
};

// Pinned host memory the harness allocates before any candidate code runs: synchronous copies of up to `bytes`
// between pageable memory and the device pass through it while a sample is open.
struct KwStage {
  char* base = nullptr;
  size_t bytes = 0;
  size_t used = 0;  // taken by copies to the device that may still be in flight (free again at each synchronize)
};

struct KwSyncClose {
  bool open = false;           // a queued sample is being timed: the wrappers close segments and keep blocks
  cudaEvent_t from = nullptr;  // the current segment's start: the sample's start event, then each reopening's mark
  cudaEvent_t to = nullptr;    // a segment's end, recorded just before the call's synchronize
  double ms = 0;               // the closed segments' time
  int closed = 0;              // how many synchronizes (explicit, cudaFree's, a copy's) closed a segment
  double first_ms = -1;        // the first closed segment's time (a diagnostic: start to the first synchronize)
  cudaError_t error = cudaSuccess;  // the first failure of the synchronize or of a segment's events: the sample's
  KwAllocCache* cache = nullptr;    // the harness's, kept across the samples of a size
  // After a synchronize, until the call queues work again:
  bool idle = false;      // a synchronize closed the last segment and the call has queued nothing since
  bool reopened = false;  // the current segment began when the call queued work after a synchronize
  long long mark_ns = 0;  // kw_now_ns(): the synchronize's return (idle) or the reopening's end (reopened)
  double host_ms = 0;     // the idle gaps: the call's host time between a synchronize and its next work
  cudaError_t last_wait = cudaSuccess;  // the last real synchronize's result: an idle call's next one returns it
  void (*spacer)(long long ns) = nullptr;  // the harness's: queues its spacer kernel on stream 0
  long long spacer_ns = 0;                 // the reopening spacer's length
  KwStage* stage = nullptr;                // the harness's staging area, or none

  // A new sample's state (the events, the cache, the spacer and the staging area stay): the harness synchronized
  // before it, so no copy from the staging area is in flight.
  void begin_sample(bool queued, cudaEvent_t start) {
    open = queued;
    from = start;
    ms = host_ms = 0;
    closed = 0;
    first_ms = -1;
    error = last_wait = cudaSuccess;
    idle = reopened = false;
    if (stage != nullptr) stage->used = 0;
  }
};

// The host's clock of the segments' host parts (CLOCK_MONOTONIC, as std::chrono::steady_clock on Linux).
static inline long long kw_now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// Points this object's wrappers at the harness's state (kwbench's copy at start, candidate.so's after dlopen).
extern "C" void kw_sync_attach(KwSyncClose* state);
// Hands the kept blocks back to the driver and forgets the ones still in use (a later cudaFree of one goes to the
// driver): after a size's samples, and before retrying an allocation the driver refused.
extern "C" void kw_sync_release(KwAllocCache* cache);
