// kw_lockdown.h: the second stage of a candidate run's confinement (docs/threat-model.md, "Lockdown").
//
// The first stage (worker/engine/confine.py) is applied before execve and must let the CUDA driver start: it
// grants the process its own /proc/<pid>, AF_UNIX sockets, the device files, the system's libraries and its run
// folder. Once the harness has initialised CUDA, none of that is needed for new opens any more, so before the
// first candidate call the harness applies this stage on top (Landlock and seccomp stack; neither can be undone):
//
//   - Landlock: every filesystem right handled, and the run folder (where the harness rewrites its result JSON)
//     the only place where files may be opened, created, renamed or removed, besides the GPU's own device files
//     (/dev/nvidia*: read, write, ioctl), which the driver may open again after initialisation (granting them
//     gives a candidate nothing its process does not hold already). No /proc, no system file, no other device
//     file. Descriptors opened before (the driver's) keep working. The harness creates its CUDA context before
//     this stage: created lazily at the first allocation, after it, the context could not be made (on an H200
//     every first cudaMalloc failed with cudaErrorDevicesUnavailable). Landlock (up to ABI 7) restricts the
//     calling thread, the one that calls the candidate; threads the CUDA driver started at initialisation (where
//     a host callback would run) keep the first stage.
//   - seccomp: socket, socketpair and connect answer EPERM (the driver's socket exists already; a candidate could
//     otherwise reach a pathname socket such as PostgreSQL's).
//
// Plain Linux system calls, no CUDA and no libseccomp, so the CPU stand-in harness of the tests uses it too.
// A candidate linked into kwbench runs its static constructors before main, under the first stage only; one built
// as a shared object is loaded after this stage (kw_candidate.h), which then grants read on that one file.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string>

namespace kw {
namespace lockdown {

#ifndef __x86_64__
#error "kw_lockdown.h: only x86-64 is supported (the seccomp filter checks the native system call numbers)"
#endif

constexpr long kCreateRuleset = 444, kAddRule = 445, kRestrictSelf = 446;  // x86-64 Landlock system calls
constexpr uint32_t kRulesetVersion = 1u << 0;
constexpr uint32_t kRulePathBeneath = 1;
constexpr uint32_t kAuditArchX86_64 = 0xC000003Eu;

struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct __attribute__((packed)) PathBeneath {
  uint64_t allowed_access;
  int32_t parent_fd;
};

// Landlock's filesystem rights (linux/landlock.h), by the ABI that introduced them.
constexpr uint64_t kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2, kReadDir = 1ull << 3,
                   kRemoveDir = 1ull << 4, kRemoveFile = 1ull << 5, kMakeReg = 1ull << 8, kRefer = 1ull << 13,
                   kTruncate = 1ull << 14, kIoctlDev = 1ull << 15;

// Read, write and ioctl on every /dev/nvidia* entry (a folder such as nvidia-caps: what lies beneath it). "" or
// why a rule could not be added. None exist on a machine without the NVIDIA driver (the CPU stand-in's).
inline std::string grant_gpu_devices(int ruleset, uint64_t handled) {
  DIR* dev = opendir("/dev");
  if (!dev) return "";
  std::string problem;
  while (const dirent* e = readdir(dev)) {
    if (std::strncmp(e->d_name, "nvidia", 6) != 0) continue;
    const std::string path = std::string("/dev/") + e->d_name;
    const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    const bool folder = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    PathBeneath rule{(kReadFile | kWriteFile | kIoctlDev | (folder ? kReadDir : 0)) & handled, fd};
    const bool added = syscall(kAddRule, ruleset, kRulePathBeneath, &rule, 0) == 0;
    const int err = errno;
    if (!added && problem.empty()) problem = "landlock_add_rule " + path + ": " + std::strerror(err);
    close(fd);
  }
  closedir(dev);
  return problem;
}

// "" when in force, else why not. `folder`: where files may still be opened (the run folder); `library`: one file
// that may still be read (the candidate's shared object, loaded after this), or "".
inline std::string apply(const std::string& folder, const std::string& library = "") {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("no_new_privs: ") + std::strerror(errno);

  const long abi = syscall(kCreateRuleset, nullptr, 0, kRulesetVersion);
  if (abi < 1) return std::string("Landlock is not available: ") + std::strerror(errno);
  uint64_t handled = (1ull << 13) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) handled |= kRefer;
  if (abi >= 3) handled |= kTruncate;
  if (abi >= 5) handled |= kIoctlDev;
  RulesetAttr attr{handled, 0, 0};
  const size_t size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 16 : 8;  // only the fields this ABI knows
  const int ruleset = int(syscall(kCreateRuleset, &attr, size, 0));
  if (ruleset < 0) return std::string("landlock_create_ruleset: ") + std::strerror(errno);
  const int dir = open(folder.c_str(), O_PATH | O_CLOEXEC | O_DIRECTORY);
  if (dir < 0) {
    close(ruleset);
    return "cannot open the run folder " + folder + ": " + std::strerror(errno);
  }
  PathBeneath rule{(kReadFile | kReadDir | kWriteFile | kRemoveFile | kMakeReg | kRefer | kTruncate) & handled, dir};
  const bool added = syscall(kAddRule, ruleset, kRulePathBeneath, &rule, 0) == 0;
  const int err = errno;
  close(dir);
  if (!added) {
    close(ruleset);
    return std::string("landlock_add_rule: ") + std::strerror(err);
  }
  if (!library.empty()) {
    const int file = open(library.c_str(), O_PATH | O_CLOEXEC);
    PathBeneath read{kReadFile & handled, file};
    const bool granted = file >= 0 && syscall(kAddRule, ruleset, kRulePathBeneath, &read, 0) == 0;
    const int ferr = errno;
    if (file >= 0) close(file);
    if (!granted) {
      close(ruleset);
      return "cannot grant read on " + library + ": " + std::strerror(ferr);
    }
  }
  const std::string devices = grant_gpu_devices(ruleset, handled);
  if (!devices.empty()) {
    close(ruleset);
    return devices;
  }
  const bool restricted = syscall(kRestrictSelf, ruleset, 0) == 0;
  const int rerr = errno;
  close(ruleset);
  if (!restricted) return std::string("landlock_restrict_self: ") + std::strerror(rerr);

  // seccomp: EPERM for new sockets and connect. Foreign architectures are the first stage's to kill.
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArchX86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socketpair, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_connect, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  // TSYNC: every thread of the process, the driver's included (a host callback runs on one of those).
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) {
    return std::string("seccomp: ") + std::strerror(errno);
  }
  return "";
}

// The folder of a path ("." when it has none): the run folder, from --out.
inline std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace lockdown
}  // namespace kw
