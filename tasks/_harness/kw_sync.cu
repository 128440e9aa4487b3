// kw_sync.cu: the wrappers of kw_sync.h. Linked into every kwbench and every candidate.so with
// --wrap=cudaDeviceSynchronize, --wrap=cudaMalloc and --wrap=cudaFree; host code only, position-independent so one
// object serves both.
#include "kw_sync.h"

extern "C" cudaError_t __real_cudaDeviceSynchronize(void);
extern "C" cudaError_t __real_cudaMalloc(void** ptr, size_t bytes);
extern "C" cudaError_t __real_cudaFree(void* ptr);

static KwSyncClose* g_state = nullptr;

extern "C" void kw_sync_attach(KwSyncClose* state) { g_state = state; }

// The real synchronize, closing the open sample's segment around it (kw_sync.h).
static cudaError_t close_segment(KwSyncClose* s) {
  const auto keep = [s](cudaError_t e) {
    if (s->error == cudaSuccess) s->error = e;
    return e == cudaSuccess;
  };
  const bool marked = keep(cudaEventRecord(s->to, 0));
  const cudaError_t done = __real_cudaDeviceSynchronize();
  float ms = 0;
  if (keep(done) && marked && keep(cudaEventElapsedTime(&ms, s->from, s->to))) {
    s->ms += ms;
    if (s->closed == 0) s->first_ms = ms;
  }
  keep(cudaEventRecord(s->from, 0));
  ++s->closed;
  return done;
}

extern "C" cudaError_t __wrap_cudaDeviceSynchronize(void) {
  KwSyncClose* s = g_state;
  return s != nullptr && s->open ? close_segment(s) : __real_cudaDeviceSynchronize();
}

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
  KwSyncClose* s = g_state;
  KwAllocCache* cache = s != nullptr && s->open ? s->cache : nullptr;
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
  KwSyncClose* s = g_state;
  if (s == nullptr || !s->open) {
    // A block of the cache freed outside a sample (a call that keeps memory between calls) goes to the driver.
    if (KwBlock* b = s != nullptr ? find_block(s->cache, ptr) : nullptr) *b = s->cache->blocks[--s->cache->count];
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
