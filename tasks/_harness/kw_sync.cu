// kw_sync.cu: the wrappers of kw_sync.h. Linked into every kwbench and every candidate.so with --wrap for each
// runtime call of objcheck.QUEUED_WRAPPED; host code only, position-independent so one object serves both.
#include <string.h>

#include "kw_sync.h"

extern "C" {
cudaError_t __real_cudaDeviceSynchronize(void);
cudaError_t __real_cudaMalloc(void** ptr, size_t bytes);
cudaError_t __real_cudaFree(void* ptr);
cudaError_t __real___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                                      cudaStream_t stream);
cudaError_t __real_cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                    cudaStream_t stream);
cudaError_t __real_cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                               cudaStream_t stream);
cudaError_t __real_cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args);
cudaError_t __real_cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind);
cudaError_t __real_cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t __real_cudaMemset(void* dst, int value, size_t count);
cudaError_t __real_cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t s);
cudaError_t __real_cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                      cudaMemcpyKind kind);
cudaError_t __real_cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                        cudaMemcpyKind kind);
cudaError_t __real_cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset,
                                           cudaMemcpyKind kind, cudaStream_t s);
cudaError_t __real_cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                             cudaMemcpyKind kind, cudaStream_t s);
cudaError_t __real_cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                size_t height, cudaMemcpyKind kind);
cudaError_t __real_cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                     size_t height, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t __real_cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height);
cudaError_t __real_cudaMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height,
                                     cudaStream_t s);
}

static KwSyncClose* g_state = nullptr;

extern "C" void kw_sync_attach(KwSyncClose* state) { g_state = state; }

static bool keep(KwSyncClose* s, cudaError_t e) {
  if (s->error == cudaSuccess) s->error = e;
  return e == cudaSuccess;
}

// The open sample, or nullptr.
static KwSyncClose* open_sample() { return g_state != nullptr && g_state->open ? g_state : nullptr; }

// The real synchronize, closing the open sample's segment at it (kw_sync.h). After it the GPU holds nothing of the
// call's: the host's clock runs until the call queues work again (queue_work).
static cudaError_t close_segment(KwSyncClose* s) {
  if (s->idle) {  // nothing queued since the last synchronize: nothing to wait for, and the host's gap goes on
    return s->last_wait;
  }
  const long long entered = kw_now_ns();
  const bool marked = keep(s, cudaEventRecord(s->to, 0));
  const cudaError_t done = __real_cudaDeviceSynchronize();
  float ms = 0;
  if (keep(s, done) && marked && keep(s, cudaEventElapsedTime(&ms, s->from, s->to))) {
    // A reopened segment lasts at least as long as the host took over it: host work the spacer covered counts.
    double segment = ms;
    if (s->reopened && (entered - s->mark_ns) / 1e6 > segment) segment = (entered - s->mark_ns) / 1e6;
    s->ms += segment;
    if (s->closed == 0) s->first_ms = segment;
  }
  s->last_wait = done;
  if (s->stage != nullptr) s->stage->used = 0;  // every copy out of the staging area has landed
  s->idle = true;
  s->reopened = false;
  ++s->closed;
  s->mark_ns = kw_now_ns();
  return done;
}

// Every wrapped call that queues GPU work comes here first. After a synchronize the host's gap ends now, and the
// next segment starts behind a short spacer, so a launch's way to an idle GPU is not in it. A copy to or from host
// memory may make the host wait for the GPU (`spaced` false): it would wait for the spacer too, so its segment starts
// without one.
static void queue_work(bool spaced = true) {
  KwSyncClose* s = open_sample();
  if (s == nullptr || !s->idle) return;
  s->host_ms += (kw_now_ns() - s->mark_ns) / 1e6;
  s->idle = false;  // first: the spacer's own launch passes through the launch wrapper
  if (spaced && s->spacer != nullptr) s->spacer(s->spacer_ns);
  keep(s, cudaEventRecord(s->from, 0));
  s->reopened = true;
  s->mark_ns = kw_now_ns();
}

extern "C" cudaError_t __wrap_cudaDeviceSynchronize(void) {
  KwSyncClose* s = open_sample();
  return s != nullptr ? close_segment(s) : __real_cudaDeviceSynchronize();
}

// --------------------------------------------------------------------------------------------- allocations

// The cache's entry for `ptr`, or nullptr.
static KwBlock* find_block(KwAllocCache* cache, const void* ptr) {
  for (int i = 0; cache != nullptr && ptr != nullptr && i < cache->count; ++i) {
    if (cache->blocks[i].ptr == ptr) return &cache->blocks[i];
  }
  return nullptr;
}

extern "C" void kw_sync_release(KwAllocCache* cache) {
  if (cache == nullptr) return;
  for (int i = 0; i < cache->count; ++i) {
    if (cache->blocks[i].kept) __real_cudaFree(cache->blocks[i].ptr);
  }
  cache->count = 0;
}

extern "C" cudaError_t __wrap_cudaMalloc(void** ptr, size_t bytes) {
  KwSyncClose* s = open_sample();
  KwAllocCache* cache = s != nullptr ? s->cache : nullptr;
  if (cache == nullptr || ptr == nullptr) return __real_cudaMalloc(ptr, bytes);
  for (int i = 0; i < cache->count; ++i) {
    KwBlock& b = cache->blocks[i];
    if (b.kept && b.bytes == bytes) {
      b.kept = false;
      ++cache->hits;
      *ptr = b.ptr;
      return cudaSuccess;
    }
  }
  // A refusal with blocks kept is retried once they are handed back; the refusal is cleared from the runtime's
  // last error only then, and only if no earlier error was pending (that one stays for the harness to see).
  const bool clean = cudaPeekAtLastError() == cudaSuccess;
  cudaError_t e = __real_cudaMalloc(ptr, bytes);
  if (e == cudaErrorMemoryAllocation && cache->count > 0) {
    kw_sync_release(cache);
    e = __real_cudaMalloc(ptr, bytes);
    if (e == cudaSuccess && clean) cudaGetLastError();
  }
  if (e == cudaSuccess && cache->count < KwAllocCache::kCapacity) {
    cache->blocks[cache->count++] = KwBlock{*ptr, bytes, false};
  }
  return e;
}

extern "C" cudaError_t __wrap_cudaFree(void* ptr) {
  KwSyncClose* s = open_sample();
  if (s == nullptr) {
    // A block of the cache freed outside a sample (a call that keeps memory between calls) goes to the driver.
    KwSyncClose* g = g_state;
    if (KwBlock* b = g != nullptr ? find_block(g->cache, ptr) : nullptr) *b = g->cache->blocks[--g->cache->count];
    return __real_cudaFree(ptr);
  }
  const cudaError_t done = close_segment(s);  // cudaFree waits for the device: its wait is the synchronize's
  if (KwBlock* b = find_block(s->cache, ptr)) {
    if (b->kept) return cudaErrorInvalidValue;  // freed twice: the driver would refuse it too
    b->kept = true;
    return done;
  }
  const cudaError_t freed = __real_cudaFree(ptr);
  return done != cudaSuccess ? done : freed;
}

// --------------------------------------------------------------------------------------------- queued work

extern "C" cudaError_t __wrap___cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                                 size_t shared, cudaStream_t stream) {
  queue_work();
  return __real___cudaLaunchKernel(kernel, grid, block, args, shared, stream);
}

extern "C" cudaError_t __wrap_cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void** args, size_t shared,
                                               cudaStream_t stream) {
  queue_work();
  return __real_cudaLaunchKernel(func, grid, block, args, shared, stream);
}

extern "C" cudaError_t __wrap_cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args,
                                                          size_t shared, cudaStream_t stream) {
  queue_work();
  return __real_cudaLaunchCooperativeKernel(func, grid, block, args, shared, stream);
}

extern "C" cudaError_t __wrap_cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  queue_work();
  return __real_cudaLaunchKernelExC(config, func, args);
}

// Host memory, pageable or pinned (not the device's, not managed): what a synchronous copy may stage.
static bool host_memory(const void* ptr) {
  cudaPointerAttributes a;
  const bool clean = cudaPeekAtLastError() == cudaSuccess;
  if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
    if (clean) cudaGetLastError();  // a refusal to describe the pointer is no error of the call's
    return false;
  }
  return a.type == cudaMemoryTypeUnregistered || a.type == cudaMemoryTypeHost;
}

// Whether a copy's segment may start behind the spacer: only one between device buffers never makes the host wait.
static bool spaced_for(cudaMemcpyKind kind) { return kind == cudaMemcpyDeviceToDevice; }

// A synchronous copy between host memory and the device, through the staging area (kw_sync.h): to the device the
// host copies into the area and the GPU from it, queued on stream 0 (the runtime's copy of pageable memory also
// returns before its transfer has ended); to the host the GPU copies into the area, the segment closes when the copy
// has landed and the host copies out of the area on its clock. A copy larger than the area has free goes to the
// runtime unchanged, its segment without the spacer it would wait for.
extern "C" cudaError_t __wrap_cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  KwSyncClose* s = open_sample();
  if (s == nullptr) return __real_cudaMemcpy(dst, src, count, kind);
  KwStage* st = s->stage;
  const bool to_host = st != nullptr && count > 0 && kind == cudaMemcpyDeviceToHost && count <= st->bytes;
  const bool to_device =
      st != nullptr && count > 0 && kind == cudaMemcpyHostToDevice && count <= st->bytes - st->used;
  if (!to_host && !to_device) {
    queue_work(spaced_for(kind));
    return __real_cudaMemcpy(dst, src, count, kind);
  }
  queue_work();
  if (to_host && host_memory(dst)) {
    const cudaError_t queued = __real_cudaMemcpyAsync(st->base, src, count, kind, 0);
    if (queued != cudaSuccess) return queued;
    const cudaError_t done = close_segment(s);
    if (done == cudaSuccess) memcpy(dst, st->base, count);
    return done;
  }
  if (to_device && host_memory(src)) {
    char* slot = st->base + st->used;
    memcpy(slot, src, count);
    const cudaError_t queued = __real_cudaMemcpyAsync(dst, slot, count, kind, 0);
    if (queued == cudaSuccess) st->used += (count + 255) & ~size_t(255);
    return queued;
  }
  // Managed memory named as host memory: the runtime's copy, which may wait behind the spacer (an over-count of at
  // most the spacer, never an under-count).
  return __real_cudaMemcpy(dst, src, count, kind);
}

extern "C" cudaError_t __wrap_cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                              cudaStream_t stream) {
  queue_work(spaced_for(kind));
  return __real_cudaMemcpyAsync(dst, src, count, kind, stream);
}

extern "C" cudaError_t __wrap_cudaMemset(void* dst, int value, size_t count) {
  queue_work();
  return __real_cudaMemset(dst, value, count);
}

extern "C" cudaError_t __wrap_cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t stream) {
  queue_work();
  return __real_cudaMemsetAsync(dst, value, count, stream);
}

extern "C" cudaError_t __wrap_cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                                                 cudaMemcpyKind kind) {
  queue_work(spaced_for(kind));
  return __real_cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

extern "C" cudaError_t __wrap_cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                                   cudaMemcpyKind kind) {
  queue_work(spaced_for(kind));
  return __real_cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}

extern "C" cudaError_t __wrap_cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                                      size_t offset, cudaMemcpyKind kind, cudaStream_t stream) {
  queue_work(spaced_for(kind));
  return __real_cudaMemcpyToSymbolAsync(symbol, src, count, offset, kind, stream);
}

extern "C" cudaError_t __wrap_cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                                        cudaMemcpyKind kind, cudaStream_t stream) {
  queue_work(spaced_for(kind));
  return __real_cudaMemcpyFromSymbolAsync(dst, symbol, count, offset, kind, stream);
}

extern "C" cudaError_t __wrap_cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                           size_t height, cudaMemcpyKind kind) {
  queue_work(spaced_for(kind));
  return __real_cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

extern "C" cudaError_t __wrap_cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                                size_t width, size_t height, cudaMemcpyKind kind,
                                                cudaStream_t stream) {
  queue_work(spaced_for(kind));
  return __real_cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream);
}

extern "C" cudaError_t __wrap_cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height) {
  queue_work();
  return __real_cudaMemset2D(dst, pitch, value, width, height);
}

extern "C" cudaError_t __wrap_cudaMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height,
                                                cudaStream_t stream) {
  queue_work();
  return __real_cudaMemset2DAsync(dst, pitch, value, width, height, stream);
}
