"""Static checks on what was built: the symbols of a candidate's host object, not the text of its source.

A source rule reads text, and the preprocessor can build any identifier out of pieces the rule never sees:
a name split by backslash-newline, `#define F(a, b) a##b` pasting `fopen`, a macro hiding `__asm__`. The
object is what the compiler actually made of it, so here:

- every *undefined* symbol of the host object must be on the allow-list: nvcc's registration and launch
  helpers, the CUDA runtime API (less device control and timing), the C++ runtime basics (operator
  new/delete, exception support, static-init guards), libm, memory and string helpers, and output to
  stdout/stderr (the harness reads its results from a file, never from the candidate's output).
  `atexit`/`__cxa_atexit` are allowed only where nvcc and the C++ compiler put them (the module's
  registration function, static initialisers), never from the candidate's own functions;
- no *defined* global symbol may interpose another party's: the harness's and the baseline's objects,
  libc/libm/libstdc++/the CUDA runtime (`cudaEventElapsedTime`, `clock_gettime`, `malloc`, ...), `main`,
  operator new/delete and anything in `std::`;
- the host code may not contain system-call or time-stamp instructions (`syscall`, `int $0x80`,
  `rdtsc`, ...), however the inline asm that made them was spelled.

Device code is not in the host symbol table; what it may do is limited by the device itself, and device
timer reads are found in the SASS (`device_timer_reads`). The checks use binutils (nm, objdump) and
cuobjdump; nothing here needs a GPU. Each problem names the symbol and, where it can be found, the
function it is used in and the candidate's source line.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from worker.engine.static import Violation, strip_comments

_TOOL_TIMEOUT_S = 60.0

# ---------------------------------------------------------------------------------------------- policy

# nvcc's host stubs: fat-binary registration, kernel launch through the stubs, managed/var registration.
_NVCC_HELPERS = re.compile(
    r"^(__cudaRegister\w*|__cudaUnregisterFatBinary|__cudaPushCallConfiguration|__cudaPopCallConfiguration"
    r"|__cudaLaunchKernel\w*|__cudaGetKernel|__cudaInitModule|__fatbinwrap\w*|__cudaLaunch)$"
)
# CUDA runtime calls a candidate may not make: the harness owns the device, the profiler and the clock.
CUDA_REFUSED = {
    "cudaDeviceReset": "resets the device the harness owns",
    "cudaSetDevice": "changes the device the harness chose",
    "cudaSetDeviceFlags": "changes device flags the harness set",
    "cudaDeviceSetLimit": "changes device limits the harness set",
    "cudaProfilerStart": "drives the profiler",
    "cudaProfilerStop": "drives the profiler",
    "cudaCtxResetPersistingL2Cache": "changes the L2 persistence state the harness flushes",
    "cudaGetDriverEntryPoint": "reaches the driver API by address",
    "cudaGetDriverEntryPointByVersion": "reaches the driver API by address",
    "cudaIpcOpenMemHandle": "opens another process's memory",
    "cudaIpcGetMemHandle": "shares memory with another process",
    "cudaIpcOpenEventHandle": "opens another process's event",
    "cudaIpcGetEventHandle": "shares an event with another process",
}
CUDA_TIMING = (
    "cudaEventCreate",
    "cudaEventCreateWithFlags",
    "cudaEventRecord",
    "cudaEventRecordWithFlags",
    "cudaEventElapsedTime",
    "cudaEventElapsedTime_v2",
    "cudaEventSynchronize",
    "cudaEventQuery",
    "cudaEventDestroy",
)
# Each CUDA library a task may allow: the prefixes of its API.
LIBRARY_PREFIXES = {
    "cublas": ("cublas",),
    "cublasLt": ("cublasLt",),
    "cusparse": ("cusparse",),
    "cufft": ("cufft",),
    "curand": ("curand",),
    "cudnn": ("cudnn",),
    "cusolver": ("cusolver",),
}

_MATH_BASE = (
    "acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 exp10 expm1 frexp ldexp log "
    "log10 log1p log2 logb ilogb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil "
    "floor nearbyint rint lrint llrint round lround llround trunc fmod remainder remquo copysign nan "
    "nextafter nexttoward fdim fmax fmin fma sincos significand gamma j0 j1 jn y0 y1 yn"
).split()
LIBM = frozenset(f"{b}{s}" for b in _MATH_BASE for s in ("", "f", "l")) | frozenset(
    f"__{b}{s}_finite" for b in _MATH_BASE for s in ("", "f", "l")
)
LIBC_ALLOWED = frozenset(
    (
        # memory, strings and sorting: no side effects outside the process's own memory
        "malloc calloc realloc free aligned_alloc posix_memalign memalign memcpy memmove memset memcmp memchr "
        "__memcpy_chk __memmove_chk __memset_chk strlen strnlen strcmp strncmp strcpy strncpy strcat strncat "
        "strchr strrchr strstr __strcpy_chk __strcat_chk qsort bsearch abs labs llabs div ldiv rand srand "
        "rand_r strtol strtoul strtoll strtoull strtof strtod atoi atol atof "
        # output to stdout/stderr (files cannot be opened, so a FILE* is one of these two)
        "printf fprintf vprintf vfprintf puts putchar fputs fputc putc fwrite fflush __printf_chk "
        "__fprintf_chk __vprintf_chk __vfprintf_chk sprintf snprintf vsprintf vsnprintf __sprintf_chk "
        "__snprintf_chk __vsprintf_chk __vsnprintf_chk stdout stderr "
        # ordinary C/C++ support code emitted by the compiler
        "__stack_chk_fail __assert_fail __errno_location __dso_handle __cxa_guard_acquire __cxa_guard_release "
        "__cxa_guard_abort __gxx_personality_v0 _Unwind_Resume __cxa_begin_catch __cxa_end_catch "
        "__cxa_rethrow __cxa_allocate_exception __cxa_free_exception __cxa_throw __cxa_pure_virtual "
        "__cxa_deleted_virtual __cxa_throw_bad_array_new_length __cxa_bad_cast __cxa_bad_typeid "
        "__cxa_atexit __cxa_get_exception_ptr __cxa_call_unexpected __popcountdi2 __udivti3 __divti3 __umodti3 "
        "__modti3 "
        "_GLOBAL_OFFSET_TABLE_"
    ).split()
)
# Allowed only from the functions the compilers generate for module registration and static init/teardown.
RESTRICTED = {"atexit": "registers an exit handler"}
# Ends the process on the candidate's terms. nvcc itself emits `exit(1)` as the host-side body of every
# __device__ function (host code can never call one), so exit is allowed from exactly those.
PROCESS_EXIT = ("exit", "_exit", "_Exit", "abort", "quick_exit")
_GENERATED_INIT = re.compile(
    r"(__sti____cudaRegisterAll|_GLOBAL__sub_I_|__static_initialization_and_destruction|__cudaRegisterLinkedBinary)"
)
# Mangled C++ runtime names a candidate may use: operator new/delete, std:: throw helpers, typeinfo/vtables
# of std exceptions, iostream output to std::cout/std::cerr.
_CXX_ALLOWED = re.compile(
    r"^(_Znw|_Zna|_Zdl|_Zda|_ZSt\d+__throw_\w+|_ZSt9terminatev|_ZTI|_ZTV|_ZTS|_ZNSt9exception|"
    r"_ZNSt\d*(bad_alloc|bad_array_new_length|logic_error|runtime_error|length_error|out_of_range|"
    r"invalid_argument)|_ZSt4cout|_ZSt4cerr|_ZSt4endl|_ZNSo|_ZSt16__ostream_insert|_ZStlsISt11char_traitsIcEE|"
    r"_ZNSt8ios_base4Init|_ZNKSt5ctypeIcE|_ZSt16__throw_bad_cast|_ZNSt7__cxx1112basic_string|"
    r"_ZNSt7__cxx1118basic_stringstream|_ZNSt15basic_streambuf|_ZSt19__throw_logic_error|"
    r"_ZSt20__throw_length_error|_ZSt17__throw_bad_alloc|_ZSt28__throw_bad_array_new_length|"
    r"_ZSt24__throw_out_of_range_fmt|_ZSt18_Rb_tree_\w+|_ZSt29_Rb_tree_insert_and_rebalance|"
    r"_ZNSt8__detail15_List_node_base|_ZdlPv|_ZNKSt7__cxx1112basic_string)"
)
# The rest of the C++ standard library is allowed (containers, strings, iostream to stdout/stderr), except
# what reaches files, threads, clocks or the environment (judged on the demangled name).
_STD = re.compile(r"^_Z(N|NK)?St")
_STD_DENIED = re.compile(
    r"std::(__fs::)?filesystem|std::(thread|jthread|this_thread)\b|std::chrono|basic_(i|o)?fstream|basic_filebuf"
    r"|__basic_file|std::system|std::getenv|std::random_device"
)
# Names whose definition by a candidate would interpose the C++ runtime.
_CXX_RESERVED = re.compile(
    r"^(_Znw|_Zna|_Zdl|_Zda|_ZSt|_ZNSt|_ZNKSt|_ZTISt|_ZTVSt|_ZTSSt|_ZN9__gnu_cxx|_ZN10__cxxabiv1)"
)
# Names whose definition would interpose the CUDA runtime or driver, or nvcc's helpers.
_RUNTIME_RESERVED = re.compile(r"^(cuda[A-Z_]|cu[A-Z]|__cuda|nvrtc|nvtx|nvml|cupti|__nv_|__fatbin)")
# What a hand-written symbol may not be named in C (reserved identifiers the toolchain uses).
_SYSTEM_RESERVED = re.compile(r"^(__|_[A-Z])")
# Defined symbols the compilers themselves emit: fine whatever their binding.
_COMPILER_DEFINED = re.compile(r"^(DW\.ref\.__gxx_personality_v0|__cudaRegisterLinkedBinary\w*|__fatbinwrap\w*|"
                               r"__nv_module_id\w*|_ZGV\w+|_ZZ\w+|_ZTH\w+|_ZTW\w+)$")
# Host instructions that reach the kernel or read a cycle counter directly.
_HOST_INSNS = {
    "syscall": "makes a system call directly",
    "sysenter": "makes a system call directly",
    "int $0x80": "makes a system call directly",
    "rdtsc": "reads the time-stamp counter (timing belongs to the harness)",
    "rdtscp": "reads the time-stamp counter (timing belongs to the harness)",
    "rdpmc": "reads a performance counter",
}
_DEVICE_TIMERS = re.compile(r"\b(SR_(?:GLOBALTIMER|CLOCK)\w*)\b")

FALLBACK_LIBC_NAMES = frozenset(
    "main malloc free calloc realloc clock_gettime gettimeofday time clock open fopen read write close "
    "exit _exit abort system fork execve getenv printf puts memcpy memset pthread_create dlopen dlsym "
    "syscall ptrace kill signal raise".split()
)


@dataclass(frozen=True)
class ObjectPolicy:
    """What a candidate's host object may import and define, beyond the fixed tables above."""

    libraries: tuple[str, ...] = ()  # CUDA libraries the task allows (their API prefixes may be imported; "cub":
    # CUB's device-wide algorithms, which call cudaSetDevice to switch to the current device)
    allow_process_exit: bool = False  # exit/abort (the make format's solutions use them in error checks)
    entry: str = ""  # the extern "C" function the harness calls: must be defined, once, unmangled
    reserved: frozenset[str] = frozenset()  # global symbols other objects of the link define (harness, baseline)
    baseline: frozenset[str] = frozenset()  # of those, the baseline's: importing one means calling the baseline
    also_allowed: frozenset[str] = frozenset()  # further imports a format's rules allow (signals, threads)


@dataclass(frozen=True)
class ObjectSymbols:
    undefined: tuple[str, ...]
    defined: tuple[tuple[str, str], ...]  # (name, nm type letter), global only
    references: tuple[tuple[str, str, str], ...]  # (section, function or '', symbol) for every relocation
    host_insns: tuple[tuple[str, str], ...]  # (function, instruction) of the _HOST_INSNS kinds
    demangled: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ObjectReport:
    violations: tuple[Violation, ...]
    symbols: ObjectSymbols | None = None
    note: str = ""  # why the check could not run (tools missing): the build then goes on without it

    @property
    def ok(self) -> bool:
        return not self.violations

    def messages(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.violations)


# ---------------------------------------------------------------------------------------------- reading


def _tool(name: str) -> str | None:
    return shutil.which(name)


def _run(argv: list[str], stdin: str | None = None) -> str:
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, errors="replace",
                          timeout=_TOOL_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise OSError(f"{Path(argv[0]).name} failed on {argv[-1]}: {done.stderr.strip()[:300]}")
    return done.stdout


def demangle(names: Iterable[str]) -> dict[str, str]:
    names = [n for n in names if n.startswith("_Z")]
    tool = _tool("c++filt")
    if not names or tool is None:
        return {}
    out = _run([tool], "\n".join(names) + "\n").splitlines()
    return dict(zip(names, out, strict=False))


def global_definitions(obj: Path | str) -> frozenset[str]:
    """Every global symbol an object defines (for the harness's and baseline's objects)."""
    text = _run(["nm", "-g", "--defined-only", str(obj)])
    return frozenset(line.split()[-1] for line in text.splitlines() if len(line.split()) >= 3)


def needed_libraries(path: Path | str) -> frozenset[str]:
    """The sonames a linked ELF file names as DT_NEEDED, the libraries the loader brings in with it."""
    text = _run(["objdump", "-p", str(path)])
    return frozenset(m.group(1) for m in re.finditer(r"^\s*NEEDED\s+(\S+)", text, re.M))


_RELOC = re.compile(r"^\s*[0-9a-f]+:\s+R_\w+\s+([^\s+-]+)")
_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_SECTION = re.compile(r"^Disassembly of section (\S+):$")
_RELOC_SECTION = re.compile(r"^RELOCATION RECORDS FOR \[([^\]]+)\]:$")
_RELOC_ROW = re.compile(r"^[0-9a-f]+\s+R_\w+\s+([^\s+-]+)")


def read_object(obj: Path | str) -> ObjectSymbols:
    obj = str(obj)
    undefined, defined = [], []
    for line in _run(["nm", obj]).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w", "v"):
            undefined.append(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRVWGSCiu":  # upper case: global; V/W: weak; u: unique
            defined.append((parts[2], parts[1]))
    references: list[tuple[str, str, str]] = []
    insns: list[tuple[str, str]] = []
    section, function = "", ""
    for line in _run(["objdump", "-dr", "--no-show-raw-insn", obj]).splitlines():
        if m := _SECTION.match(line):
            section, function = m.group(1), ""
        elif m := _FUNC.match(line):
            function = m.group(1)
        elif m := _RELOC.match(line):
            references.append((section, function, m.group(1)))
        else:
            body = line.split(":", 1)[1].strip() if re.match(r"^\s*[0-9a-f]+:", line) else ""
            op = " ".join(body.split()[:2]) if body.startswith("int ") else body.split(" ")[0] if body else ""
            if op in _HOST_INSNS:
                insns.append((function, op))
    code_sections = {s for s, _f, _n in references}
    section = ""
    for line in _run(["objdump", "-r", obj]).splitlines():
        if m := _RELOC_SECTION.match(line):
            section = m.group(1)
        elif (m := _RELOC_ROW.match(line)) and section not in code_sections and not section.startswith(
            (".text", ".eh_frame", ".debug", ".nv")
        ):
            references.append((section, "", m.group(1)))
    names = undefined + [n for n, _t in defined] + [f for _s, f, _n in references if f]
    return ObjectSymbols(tuple(undefined), tuple(defined), tuple(references), tuple(insns), demangle(set(names)))


def read_imports(obj: Path | str) -> ObjectSymbols | None:
    """An object's undefined symbols alone (for unordered_work), or None when it cannot be read."""
    try:
        text = _run(["nm", "-u", str(obj)])
    except (OSError, subprocess.SubprocessError):
        return None
    return ObjectSymbols(tuple(line.split()[-1] for line in text.splitlines() if line.strip()), (), (), ())


@functools.lru_cache(maxsize=1)
def system_library_names() -> frozenset[str]:
    """Names libc, libm, libstdc++ and libgcc_s export on this machine (a candidate may not define them)."""
    names: set[str] = set(FALLBACK_LIBC_NAMES)
    cc = _tool("g++") or _tool("gcc")
    for lib in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2"):
        path = ""
        if cc:
            try:
                path = _run([cc, f"-print-file-name={lib}"]).strip()
            except (OSError, subprocess.SubprocessError):
                path = ""
        if not path or not Path(path).is_file():
            continue
        try:
            text = _run(["nm", "-D", "--defined-only", path])
        except (OSError, subprocess.SubprocessError):
            continue
        names |= {line.split()[-1].split("@")[0] for line in text.splitlines() if len(line.split()) >= 3}
    return frozenset(names)


# ---------------------------------------------------------------------------------------------- judging


def _import_problem(name: str, policy: ObjectPolicy, shown: str = "") -> str:
    """'' when the host object may import `name` (`shown`: demangled), else why not."""
    if _STD.match(name):
        return "is a C++ library facility for files, threads, clocks or the environment" if _STD_DENIED.search(
            shown or name) else ""
    if _NVCC_HELPERS.match(name) or _CXX_ALLOWED.match(name) or name in LIBM or name in LIBC_ALLOWED:
        return ""
    if name in policy.also_allowed:
        return ""
    if name in PROCESS_EXIT:
        return "" if policy.allow_process_exit else "ends the process from the candidate's code"
    if name in policy.baseline or _plain(name) in {_plain(b) for b in policy.baseline}:
        return "is the baseline's: the candidate may not use the baseline"
    if name == "cudaSetDevice" and "cub" in policy.libraries:
        return ""  # CUB's device-wide algorithms switch to the current device; a task allowing CUB allows them
    if name in CUDA_REFUSED:
        return f"{CUDA_REFUSED[name]}; the harness owns the device and the profiler"
    if name in CUDA_TIMING:
        return "is a timing call; timing belongs to the harness"
    if re.match(r"^cuda[A-Z]\w*$", name):
        return ""
    for lib, prefixes in LIBRARY_PREFIXES.items():
        if name.startswith(prefixes):
            return "" if lib in policy.libraries or (lib == "cublasLt" and "cublas" in policy.libraries) else (
                f"is {lib}'s, which this task does not allow")
    if re.match(r"^cu[A-Z]", name):
        return "is the CUDA driver API; the harness owns the context and the device"
    if name in RESTRICTED:
        return ""  # judged by where it is used
    if name.startswith("_Z"):
        return ("is declared but defined nowhere in the candidate (a function of another file, e.g. the "
                "benchmark's own; the candidate must be one self-contained file)")
    return ("is neither defined by the candidate nor an allowed runtime function (allowed: the CUDA runtime, "
            "libm, memory and string helpers, output to stdout/stderr, the C++ runtime basics)")


def _plain(name: str) -> str:
    """'_Z18conv_2d_bf16_kernelPKfPfiii' -> 'conv_2d_bf16_kernel' (a plain function name as written)."""
    m = re.match(r"^_Z(\d+)", name)
    return name[m.end() : m.end() + int(m.group(1))] if m else name


def _definition_problem(name: str, kind: str, policy: ObjectPolicy) -> str:
    if name == policy.entry or _COMPILER_DEFINED.match(name):
        return ""
    if name in policy.reserved and kind not in "WVu":
        # A weak or unique definition (an inline function or template instantiation both objects emit) cannot
        # replace theirs: the link puts baseline.o and harness.o before candidate.o, the linker keeps the first
        # weak definition it sees, and a strong one of theirs wins over any weak one (cuda/build.py).
        return "is also defined by the harness or the baseline; defining it again would replace theirs"
    if name == "main":
        return "is the harness's main; the harness owns main"
    if re.match(r"^(_Znw|_Zna|_Zdl|_Zda)", name):
        return "replaces the global operator new/delete, which the harness uses too"
    if _CXX_RESERVED.match(name) and kind not in "WVu":  # weak: an implicit std:: template instantiation
        return "belongs to the C++ runtime (operator new/delete, std::); defining it would interpose the runtime's"
    if _RUNTIME_RESERVED.match(name):
        return "is a CUDA runtime/driver name; defining it would interpose the runtime's"
    if name.startswith("_Z"):
        return ""  # a C++ function or variable of the candidate's own
    if name in system_library_names():
        return "is a C library name; defining it would interpose libc's (e.g. timing or memory functions)"
    if _SYSTEM_RESERVED.match(name):
        return "is a reserved identifier (leading __ or _X) of the toolchain"
    return ""


def check_object(obj: Path | str, policy: ObjectPolicy, source: str = "") -> ObjectReport:
    """Judge a compiled host object; `source` (the candidate's text) is only for line numbers."""
    if not (_tool("nm") and _tool("objdump")):
        return ObjectReport((), None, "nm/objdump not found (binutils): the object check was skipped")
    try:
        symbols = read_object(obj)
    except (OSError, subprocess.SubprocessError) as exc:
        return ObjectReport((), None, f"the object check could not read {Path(obj).name}: {exc}")
    lines = SourceLines(source)
    out: list[Violation] = []

    def show(name: str) -> str:
        return symbols.demangled.get(name, name)

    def used_in(name: str) -> list[str]:
        return sorted({f for _s, f, n in symbols.references if n == name and f})

    def add(rule: str, name: str, message: str, functions: Iterable[str] = ()) -> None:
        functions = [f for f in functions if f]
        where = f" (in {', '.join(show(f) for f in functions[:3])})" if functions else ""
        line = lines.of_symbol(show(name)) or next((lines.of_function(show(f)) for f in functions
                                                   if lines.of_function(show(f))), 0)
        hidden = "" if lines.written(show(name)) or not source else (
            "; the name is not written in the source: the preprocessor built it (macro, token pasting or "
            "line splicing)")
        out.append(Violation(rule, line, f"{show(name)} {message}{where}{hidden}"))

    for name in symbols.undefined:
        problem = _import_problem(name, policy, show(name))
        if problem and name == "exit":
            users = used_in(name)
            stray = [s for s, f, n in symbols.references if n == name and not f]
            if users and not stray and all(lines.device_only(show(f)) for f in users):
                problem = ""  # nvcc's host stubs of __device__ functions
        if problem:
            rule = "calls-baseline" if problem.startswith("is the baseline's") else "object-import"
            add(rule, name, problem, used_in(name))
        elif name in RESTRICTED:
            bad = [(s, f) for s, f, n in symbols.references if n == name and not _GENERATED_INIT.search(f)]
            if bad:
                funcs = list(dict.fromkeys(f for _s, f in bad if f))
                add("object-import", name, f"{RESTRICTED[name]}; only the compiler's own module "
                    "initialisation may", funcs or [f"a reference from {bad[0][0]}"])
    entries = 0
    for name, kind in symbols.defined:
        if policy.entry and name == policy.entry and kind == "T":
            entries += 1
        problem = _definition_problem(name, kind, policy)
        if problem:
            add("object-defines", name, f"is defined by the candidate and {problem}")
    if policy.entry and entries == 0:
        cxx = [show(n) for n, _k in symbols.defined if n.startswith("_Z") and
               show(n).split("(")[0].split("::")[-1] == policy.entry]
        found = f"; found C++ linkage {cxx[0]} (declare it extern \"C\")" if cxx else ""
        out.append(Violation("entry-point", lines.of_symbol(policy.entry),
                             f'the object does not define extern "C" {policy.entry}{found}'))
    for function, insn in sorted(set(symbols.host_insns)):
        line = lines.of_function(show(function)) if function else 0
        where = f" in {show(function)}" if function else ""
        out.append(Violation("host-instruction", line, f"host code{where} contains `{insn}`: it {_HOST_INSNS[insn]}"))
    out.sort(key=lambda v: (v.line, v.rule, v.message))
    return ObjectReport(tuple(dict.fromkeys(out)), symbols)


# Queued timing (docs/evaluation.md, "Timing protocol") relies on stream 0, the legacy default stream, ordering
# all of a call's work: it orders every blocking stream (cudaStreamCreate's, cudaStreamPerThread). These imports can
# put work where stream 0 does not see it: a stream made with flags or a priority (cudaStreamNonBlocking), or a CUDA
# library's calls, whose internal streams no listing of the candidate shows.
_UNORDERED_STREAM_CALLS = ("cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority")
# It also relies on seeing every way a call queues GPU work, waits for the device or allocates: every link wraps these
# runtime calls (worker/formats/cuda/build.py, tasks/_harness/kw_sync.cu), so the sample knows when the GPU is idle
# after a synchronize and when the call queues work again.
QUEUED_WRAPPED = (
    "cudaDeviceSynchronize", "cudaMalloc", "cudaFree", "__cudaLaunchKernel", "cudaLaunchKernel",
    "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cudaMemcpy", "cudaMemcpyAsync", "cudaMemset",
    "cudaMemsetAsync", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol", "cudaMemcpyToSymbolAsync",
    "cudaMemcpyFromSymbolAsync", "cudaMemcpy2D", "cudaMemcpy2DAsync", "cudaMemset2D", "cudaMemset2DAsync",
)
# Runtime calls that queue no GPU work (queries, attributes, blocking streams, host memory, waits the sample need
# not see): an object may import them and still be timed queued. Any other runtime call (graphs, host functions,
# stream-ordered allocation, prefetches, per-thread-stream launches) makes the timing synchronized.
_QUEUED_INERT = frozenset({
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName", "cudaGetDevice",
    "cudaGetDeviceCount", "cudaGetDeviceProperties", "cudaGetDeviceProperties_v2", "cudaDeviceGetAttribute",
    "cudaDeviceGetLimit", "cudaDeviceGetCacheConfig", "cudaDeviceGetStreamPriorityRange", "cudaFuncSetAttribute",
    "cudaFuncGetAttributes", "cudaFuncSetCacheConfig", "cudaFuncSetSharedMemConfig", "cudaDeviceSetCacheConfig",
    "cudaDeviceSetSharedMemConfig", "cudaMemGetInfo", "cudaPointerGetAttributes", "cudaStreamCreate",
    "cudaStreamDestroy", "cudaStreamSynchronize", "cudaStreamQuery", "cudaMallocHost", "cudaFreeHost",
    "cudaHostAlloc", "cudaHostGetDevicePointer", "cudaMallocPitch", "cudaGetSymbolAddress", "cudaGetSymbolSize",
    "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaSetDevice", "cudaGetFuncBySymbol", "cudaChooseDevice",
    "cudaThreadSynchronize",
})
_QUEUED_INERT_PREFIXES = ("cudaOccupancy",)


def _unseen_by_queued(name: str) -> bool:
    """A CUDA runtime import the queued sample's wrappers neither see nor may ignore."""
    if not re.match(r"^(cuda[A-Z]|__cuda)", name):
        return False  # not the runtime's (the object check refuses the driver API)
    if name in QUEUED_WRAPPED or name in _QUEUED_INERT or name.startswith(_QUEUED_INERT_PREFIXES):
        return False
    # nvcc's registration stubs queue nothing; its other launch entries (per-thread stream, legacy) no wrapper sees.
    return not (_NVCC_HELPERS.match(name) and not name.startswith("__cudaLaunch"))


def unordered_work(symbols: ObjectSymbols | None, libraries: Iterable[str] = ()) -> tuple[str, ...]:
    """What in an object a queued sample cannot time: the stream-making calls and library APIs it imports (work
    stream 0 does not order), and runtime calls that queue work no wrapper sees. Any one means the candidate is timed
    with a device-wide synchronize after every call, its baseline too. An object that could not be read counts as
    such."""
    if symbols is None:
        return ("an object the check could not read",)
    prefixes = tuple(p for lib in libraries for p in LIBRARY_PREFIXES.get(lib, ()))
    return tuple(n for n in symbols.undefined
                 if n in _UNORDERED_STREAM_CALLS or (prefixes and n.startswith(prefixes)) or _unseen_by_queued(n))


def device_timer_reads(sass: str) -> tuple[str, ...]:
    """The special registers a device listing reads that are clocks (SR_CLOCKLO, SR_GLOBALTIMERLO, ...)."""
    return tuple(sorted(set(_DEVICE_TIMERS.findall(sass))))


# ---------------------------------------------------------------------------------------------- lines


class SourceLines:
    """Where a name is written in the source, also when backslash-newline splits it across lines."""

    def __init__(self, source: str):
        source = strip_comments(source, blank_strings=True)  # a name in a comment or string is not a use
        self.source = source
        # Joining spliced lines keeps a map from each joined character back to its original line.
        chars, line_of = [], []
        line, i = 1, 0
        while i < len(source):
            if source[i] == "\\" and source[i + 1 : i + 2] == "\n":
                i += 2
                line += 1
                continue
            chars.append(source[i])
            line_of.append(line)
            line += source[i] == "\n"
            i += 1
        self.joined = "".join(chars)
        self.line_of = line_of

    def _find(self, pattern: str) -> int:
        m = re.search(pattern, self.joined)
        return self.line_of[m.start()] if m else 0

    @staticmethod
    def _base(name: str) -> str:
        return re.sub(r"\(.*$", "", name).split("::")[-1].strip()

    def written(self, name: str) -> bool:
        base = self._base(name)
        return bool(base) and re.search(rf"(?<![\w]){re.escape(base)}(?!\w)", self.source) is not None

    def of_symbol(self, name: str) -> int:
        base = self._base(name)
        return self._find(rf"(?<![\w]){re.escape(base)}(?!\w)") if base else 0

    def device_only(self, name: str) -> bool:
        """The source declares `name` __device__ (not __host__ __device__): host code cannot call it."""
        base = self._base(name)
        if not base:
            return False
        heads = re.finditer(rf"\b__device__\b([^;{{}}()]*?)(?<![\w]){re.escape(base)}\s*\(", self.joined)
        return any("__host__" not in self.joined[max(0, m.start() - 40) : m.end()] for m in heads)

    def of_function(self, name: str) -> int:
        """The line of the definition of the function (its name followed by a parameter list)."""
        base = self._base(name)
        if not base or base.startswith("_"):
            return 0
        return self._find(rf"(?<![\w.]){re.escape(base)}\s*(<[^;{{]*>)?\s*\([^;]*\)[^;{{]*\{{")
