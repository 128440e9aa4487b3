// kw_sync.h: a queued sample closed at the call's own cudaDeviceSynchronize (docs/evaluation.md, "Timing protocol").
//
// MSKernelBench's entry points end in cudaDeviceSynchronize(), so in a queued sample the host's wake-up from that
// synchronize lay between the call's last kernel and the stop event: 2-4 us that move by a few per cent from one
// process to the next. Every object of kwbench and of candidate.so is linked with --wrap=cudaDeviceSynchronize
// (worker/formats/cuda/build.py), so a call's synchronize reaches kw_sync.cu's wrapper. While a queued sample is
// open the wrapper ends the sample's current segment with an event recorded before the real synchronize and opens
// the next one with an event recorded after it; the sample is the sum of its segments. Nothing is left out but the
// time the host spends inside the real synchronize, when no candidate code runs (threads are refused by the object
// check) and every GPU work stream 0 orders has ended (streams it does not order make the run synchronized).
#pragma once

#include <cuda_runtime.h>

struct KwSyncClose {
  bool open = false;           // a queued sample is being timed: the wrapper closes segments
  cudaEvent_t from = nullptr;  // the current segment's start: the sample's start event, then each post-synchronize mark
  cudaEvent_t to = nullptr;    // a segment's end, recorded just before the call's synchronize
  double ms = 0;               // the closed segments' time
  int closed = 0;              // how many synchronizes closed a segment
  cudaError_t error = cudaSuccess;  // the first failure of the synchronize or of a segment's events: the sample's
};

// Points this object's wrapper at the harness's state (kwbench's copy at start, candidate.so's after dlopen).
extern "C" void kw_sync_attach(KwSyncClose* state);
