// kw_sync.h: a queued sample closed at the call's own synchronizes, its allocations served from a cache
// (docs/evaluation.md, "Timing protocol").
//
// MSKernelBench's entry points end in cudaDeviceSynchronize(), so in a queued sample the host's wake-up from that
// synchronize lay between the call's last kernel and the stop event: 2-4 us that move by a few per cent from one
// process to the next. Every object of kwbench and of candidate.so is linked with --wrap=cudaDeviceSynchronize,
// --wrap=cudaMalloc and --wrap=cudaFree (worker/formats/cuda/build.py), so a call's synchronize and allocations reach
// kw_sync.cu's wrappers. While a queued sample is open:
//  - a synchronize ends the sample's current segment with an event recorded before the real synchronize and opens
//    the next one with an event recorded after it; the sample is the sum of its segments. Nothing is left out but
//    the time the host spends inside the real synchronize, when no candidate code runs (threads are refused by the
//    object check) and every GPU work stream 0 orders has ended (streams it does not order make the run
//    synchronized). cudaFree synchronizes the device too, so it closes a segment the same way.
//  - cudaFree of a block the calls allocated keeps the block for the next cudaMalloc of the same size, as PyTorch's
//    caching allocator does under KernelBench's timing: the driver's mapping and unmapping of pages, whose cost
//    moved by up to 20 % between processes, leaves the calls; what the calls do with their memory stays in them.
//    The harness hands the blocks back to the driver after each size (kw_sync_release).
// Outside an open sample (correctness runs, the harness's own buffers) every call goes straight to the runtime.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>

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

struct KwSyncClose {
  bool open = false;           // a queued sample is being timed: the wrappers close segments and keep blocks
  cudaEvent_t from = nullptr;  // the current segment's start: the sample's start event, then each post-synchronize mark
  cudaEvent_t to = nullptr;    // a segment's end, recorded just before the call's synchronize
  double ms = 0;               // the closed segments' time
  int closed = 0;              // how many synchronizes (explicit or cudaFree's) closed a segment
  double first_ms = -1;        // the first closed segment's time (a diagnostic: start to the first synchronize)
  cudaError_t error = cudaSuccess;  // the first failure of the synchronize or of a segment's events: the sample's
  KwAllocCache* cache = nullptr;    // the harness's, kept across the samples of a size
};

// Points this object's wrappers at the harness's state (kwbench's copy at start, candidate.so's after dlopen).
extern "C" void kw_sync_attach(KwSyncClose* state);
// Hands the kept blocks back to the driver and forgets the ones still in use (a later cudaFree of one goes to the
// driver): after a size's samples, and before retrying an allocation the driver refused.
extern "C" void kw_sync_release(KwAllocCache* cache);
