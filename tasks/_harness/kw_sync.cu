// kw_sync.cu: the cudaDeviceSynchronize wrapper of kw_sync.h. Linked into every kwbench and every candidate.so
// with --wrap=cudaDeviceSynchronize; host code only, position-independent so one object serves both.
#include "kw_sync.h"

extern "C" cudaError_t __real_cudaDeviceSynchronize(void);

static KwSyncClose* g_state = nullptr;

extern "C" void kw_sync_attach(KwSyncClose* state) { g_state = state; }

extern "C" cudaError_t __wrap_cudaDeviceSynchronize(void) {
  KwSyncClose* s = g_state;
  if (s == nullptr || !s->open) return __real_cudaDeviceSynchronize();
  const auto keep = [s](cudaError_t e) {
    if (s->error == cudaSuccess) s->error = e;
    return e == cudaSuccess;
  };
  const bool marked = keep(cudaEventRecord(s->to, 0));
  const cudaError_t done = __real_cudaDeviceSynchronize();
  float ms = 0;
  if (keep(done) && marked && keep(cudaEventElapsedTime(&ms, s->from, s->to))) s->ms += ms;
  keep(cudaEventRecord(s->from, 0));
  ++s->closed;
  return done;
}
