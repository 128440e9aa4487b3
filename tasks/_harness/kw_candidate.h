// kw_candidate.h: the candidate as a shared object, loaded after the lockdown (docs/threat-model.md, "Loaded after
// the lockdown").
//
// Linked into kwbench, the candidate's static constructors run before main, under the first stage of the
// confinement only, which has to leave the CUDA driver its own /proc/<pid>, AF_UNIX sockets and the system's files.
// Built as candidate.so instead (worker/formats/cuda/build.py, KW_LOAD_AFTER_LOCKDOWN), kwbench holds only the
// harness and the baseline, and loads the candidate here once CUDA is up and kw_lockdown.h is in force: its
// constructors, like every call, run with no /proc, no system file and no new socket.
//
// dlopen then opens one file, the candidate's (the lockdown grants it read). Every library it needs (the CUDA
// runtime, the libraries it links, the C and C++ runtimes) is one kwbench loaded at start (the build links
// kwbench against the same libraries, and checks it), so the loader finds each among the loaded objects by its
// soname and opens nothing else. RTLD_LOCAL: the candidate's definitions never become the harness's (a
// cudaEventElapsedTime of its own does not replace the runtime's for the harness's calls).
//
// Plain Linux, no CUDA: the CPU stand-in harness of the tests uses it too.
#pragma once

#include <dlfcn.h>

#include <string>

namespace kw {
namespace candidate {

// The candidate's entry point once loaded (nullptr before, or when it is linked into kwbench).
inline void*& entry() {
  static void* address = nullptr;
  return address;
}

// The loaded candidate.so (nullptr before): the harness looks up the objects it linked into it (kw_sync.cu).
inline void*& handle() {
  static void* loaded = nullptr;
  return loaded;
}

// Loads `path` and resolves `symbol` in it: "" when done, else why not (dlerror's words).
inline std::string load(const std::string& path, const char* symbol) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return std::string("dlopen: ") + (why ? why : "unknown error");
  }
  dlerror();
  void* address = dlsym(handle, symbol);
  if (!address) {
    const char* why = dlerror();
    return std::string("the candidate does not define ") + symbol + (why ? std::string(" (") + why + ")" : "");
  }
  entry() = address;
  candidate::handle() = handle;
  return "";
}

}  // namespace candidate
}  // namespace kw
