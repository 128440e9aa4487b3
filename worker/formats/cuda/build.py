"""Build the harness executable: baseline.o + harness.o (+ candidate.o), linked by nvcc.

The three objects compile in parallel, each cached by a content hash of what
determines it (source, flags, nvcc version, arch, and for the harness the
shared protocol header), so a new candidate recompiles only candidate.o and a
repeated candidate recompiles nothing. Compile errors come back verbatim with
the exact command. Nothing here needs a GPU.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from worker.engine import assembly, confine, objcheck, sandbox
from worker.engine.context import HARNESS_DIR, REPO_ROOT  # noqa: F401  (REPO_ROOT: worker.cli reads it here)
from worker.engine.harness import CANDIDATE_LIBRARY
from worker.engine.results import CompileResult
from worker.engine.toolchain import Toolchain
from worker.formats.cuda.flags import FlagCheck, check_flags
from worker.formats.cuda.ptxas import asks_ptxas_verbose, parse_ptxas
from worker.formats.cuda.spec import TaskSpec

EXECUTABLE = "kwbench"
REFERENCE_EXECUTABLE = "kwref"  # baseline + harness without the candidate: baseline runs and the check's verdict
BASELINE_FLAGS = ("-O3", "-std=c++17", "-lineinfo")
HARNESS_FLAGS = ("-O2", "-std=c++17")
# The harness's task-independent part (options, the driver, checked timing, the JSON report), compiled once per
# precision and linked with every task's harness.o, which then compiles only the task's setup, launch and reference
# (docs/evaluation.md, "Build and caching"). A harness folder without it (the tests' CPU stand-in) has none.
RUNTIME_SOURCE = "kw_runtime.cu"
# The wrappers that close a queued sample's segments at a call's synchronizes, see the work it queues and keep the
# blocks its calls free (tasks/_harness/kw_sync.h): always the shipped ones, linked into every executable and every
# candidate.so, whose links all wrap these symbols.
SYNC_SOURCE = "kw_sync.cu"
WRAP_SYNC = tuple(a for name in objcheck.QUEUED_WRAPPED for a in ("-Xlinker", f"--wrap={name}"))
COMPILE_TIMEOUT_S = 300.0
_CACHE_FORMAT = "1"  # bump to invalidate every cached object after a change in how they are built


def default_cache_dir() -> Path:
    return Path(os.environ.get("KW_BUILD_CACHE") or Path.home() / ".cache" / "kernelweb" / "build")


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    executable: str | None
    baseline: CompileResult
    harness: CompileResult
    candidate: CompileResult | None
    link: CompileResult | None
    flags: FlagCheck | None
    seconds: float
    libraries: tuple[str, ...] = ()
    arch: str = ""
    key: str = ""  # hash of the linked executable's inputs
    notes: tuple[str, ...] = field(default_factory=tuple)
    # What the object check refused in the candidate's host object (worker.engine.objcheck): the build
    # stops before the link, and the evaluation is REJECTED with these messages.
    refused: tuple[str, ...] = ()
    # Why the link failed, with the party at fault: the candidate when a symbol in the error is one it
    # defines or imports, else the task/harness.
    link_blame: str = ""
    candidate_at_fault: bool = True
    # The harness linked without the candidate (kwref): the baseline's runs and the check's verdict happen in a
    # process that never ran candidate code. The executable itself when there is no candidate.
    reference: str | None = None
    # The candidate's shared object when it is loaded after the lockdown (CANDIDATE_LIBRARY beside `executable`),
    # else None: the candidate is linked into the executable.
    library: str | None = None
    # What the checked candidate imports that can run work stream 0 does not order (objcheck.unordered_work): when
    # any, its timing synchronizes the device after every call instead of queuing (docs/evaluation.md).
    unordered: tuple[str, ...] = ()

    @property
    def failure(self) -> CompileResult | None:
        for step in (self.candidate, self.baseline, self.harness, self.link):
            if step is not None and not step.ok:
                return step
        return None

    @property
    def cache_hits(self) -> tuple[str, ...]:
        steps = (self.baseline, self.harness, self.candidate, self.link)
        return tuple(s.role for s in steps if s is not None and s.cached)


def _sha(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def harness_hash(harness_dir: Path) -> str:
    """Hash of the shared protocol sources (the headers and the runtime, RUNTIME_SOURCE): part of every harness key
    and of the baseline-time cache key."""
    files = sorted(
        p for p in Path(harness_dir).glob("*") if p.is_file() and p.suffix in (".cuh", ".h", ".hpp", ".cu")
    )
    return _sha(*[p.name + "\0" + p.read_text(encoding="utf-8", errors="replace") for p in files])


def _atomic_write(dst: Path, write) -> None:
    """Write through a temporary file in dst's folder, then rename: a concurrent reader never sees half a
    file, and a failed write (a full disk) leaves no entry behind, not even the temporary file."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _store(src: Path, dst: Path) -> None:
    _atomic_write(dst, lambda fh: fh.write(src.read_bytes()))


def _store_text(text: str, dst: Path) -> None:
    _atomic_write(dst, lambda fh: fh.write(text.encode("utf-8")))


def _cache_put(job: _Job, result: CompileResult) -> CompileResult:
    """Keep a successful compile; the object first and its metadata last, since a hit needs both. A cache
    that cannot be written (full disk, read-only) costs only the reuse: the build goes on, and says so."""
    meta_path = job.cached_as.with_suffix(".json")
    try:
        _store(job.output, job.cached_as)
        _store_text(result.to_json(), meta_path)
    except OSError as exc:
        meta_path.unlink(missing_ok=True)
        return replace(result, log=result.log + f"\n[build cache {job.cached_as.parent}: {exc.strerror or exc}; "
                                                f"this {job.role} object was not cached]")
    return result


def _display(argv: list[str]) -> str:
    return shlex.join(["nvcc", *argv[1:]])


@dataclass(frozen=True)
class _Job:
    role: str
    argv: list[str]
    cwd: Path
    output: Path  # the file nvcc writes
    key: str
    cached_as: Path


# Roles whose object the viewer shows as PTX/SASS.
_LISTED = ("candidate", "baseline")


def _with_assembly(result: CompileResult, obj: Path) -> CompileResult:
    listing = assembly.dump(obj)
    return replace(result, ptx=listing.ptx, sass=listing.sass, assembly_note=listing.note)


def _run_job(job: _Job, timeout_s: float) -> CompileResult:
    meta_path = job.cached_as.with_suffix(".json")
    if job.cached_as.is_file() and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            job.output.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(job.cached_as, job.output)
            result = CompileResult.from_dict(meta)
            hit = replace(result, role=job.role, ok=True, command=_display(job.argv), cached=True, seconds=0.0)
            if job.role in _LISTED and not (result.ptx or result.assembly_note):
                hit = _with_assembly(hit, job.output)  # an entry cached before listings were kept
                with contextlib.suppress(OSError):
                    _store_text(replace(hit, cached=False).to_json(), meta_path)
            return hit
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged entry is rebuilt below
    # Confined (docs/threat-model.md): the candidate's compile reads no file outside the toolkit and the system's
    # headers (an `#include "/etc/passwd"` fails); the task's own compiles also read the folders their argv names.
    reads = () if job.role == "candidate" else confine.paths_in(job.argv)
    res = sandbox.run(job.argv, job.cwd, timeout_s, name=f"nvcc-{job.role}",
                      policy=confine.build_policy(job.cwd, read=reads))
    log = res.output
    if res.timed_out:
        log += f"\n[compile of {job.role} timed out after {timeout_s:.0f} s]"
    ok = res.ok and job.output.is_file()
    result = CompileResult(job.role, ok, _display(job.argv), log, parse_ptxas(log), False, res.wall_s)
    if ok and job.role in _LISTED:
        result = _with_assembly(result, job.output)
    return _cache_put(job, result) if ok else result


def _library_dirs() -> Path | None:
    """KW_CUDA_EXTRA: a folder with include/ and lib/ of NVIDIA libraries the toolkit lacks (cuBLAS,
    cuSPARSE from their PyPI wheels, see `make .cuda-libs`); full toolkits on GPU hosts need none."""
    root = os.environ.get("KW_CUDA_EXTRA")
    return Path(root) if root and Path(root, "include").is_dir() else None


def _link_dirs(libraries: tuple[str, ...]) -> list[str]:
    extra = _library_dirs()
    if not libraries or extra is None:
        return []
    lib = extra / "lib"
    return [f"-L{lib}", "-Xlinker", f"-rpath={lib}", "-Xlinker", f"-rpath-link={lib}"]


@functools.cache
def _cudart_dir(nvcc: str) -> str | None:
    """The folder nvcc links libcudart.so from (its own -L, read from a dry run: `nvcc` may be a wrapper script
    outside the toolkit): the run path of a harness linked to the shared runtime, so it loads the toolkit's
    whatever the host's loader cache holds."""
    try:
        done = subprocess.run([nvcc, "-dryrun", "-cudart", "shared", "kw.o", "-o", "kw"], capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    for folder in re.findall(r'"-L([^"]+)"', done.stdout + done.stderr):
        if Path(folder, "libcudart.so").exists():
            return os.path.realpath(folder)
    return None


def _late_load_shapes(nvcc: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(kwbench's, candidate.so's) link flags when the candidate is loaded after the lockdown. Both use the CUDA
    runtime as a shared library, so there is one runtime in the process (the candidate's launch errors reach the
    harness's cudaGetLastError). kwbench names every library the candidate may link, needed or not
    (--no-as-needed), so they are loaded before the lockdown; the candidate's object may leave no symbol undefined
    (the link, not the loader after the lockdown, reports it, with the candidate's line) and binds its own
    definitions first (-Bsymbolic)."""
    cudart = _cudart_dir(nvcc)
    run_path = ["-Xlinker", f"-rpath={cudart}"] if cudart else []
    executable = ("-cudart", "shared", *run_path, "-Xlinker", "--no-as-needed")
    library = ("-shared", "-cudart", "shared", *run_path, "-Xlinker", "--no-undefined", "-Xlinker", "-Bsymbolic")
    return executable, library


def build(
    spec: TaskSpec,
    precision: str,
    toolchain: Toolchain,
    candidate_source: str | None = None,
    proposed_flags: str | None = None,
    *,
    work_dir: Path | str,
    harness_dir: Path | str = HARNESS_DIR,
    cache_dir: Path | str | None = None,
    timeout_s: float = COMPILE_TIMEOUT_S,
    trusted_libraries: tuple[str, ...] = (),
    trusted: bool = False,
) -> BuildResult:
    """Compile and link the harness for (spec, precision), with the candidate when one is given.

    `proposed_flags` is the Compiler agent's command line; it goes through the whitelist,
    and a rejected proposal is replaced by the default flags (the reason is in `.flags`).
    `trusted_libraries` are linked without the whitelist: only for a task's own library reference, which
    is also `trusted`: its object is not checked (worker.engine.objcheck), every candidate's is.
    """
    start = time.monotonic()
    if not toolchain.nvcc:
        missing = CompileResult(
            "baseline", False, "nvcc", "nvcc not found: install the CUDA toolkit or set CUDA_HOME"
        )
        return BuildResult(False, None, missing, missing, None, None, None, 0.0, arch=toolchain.arch)
    arch = toolchain.arch
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    harness_dir = Path(harness_dir).resolve()
    nvcc = toolchain.nvcc
    common = (_CACHE_FORMAT, toolchain.nvcc_version, arch)
    late = candidate_source is not None and confine.loads_after_lockdown()
    # A library from an earlier build of this folder must never be loaded into this one's kwbench.
    (work / CANDIDATE_LIBRARY).unlink(missing_ok=True)

    baseline_src = spec.baseline_source(precision).resolve()
    baseline_text = baseline_src.read_bytes()
    baseline_argv = [
        nvcc,
        *BASELINE_FLAGS,
        f"-arch={arch}",
        "-Xptxas",
        "-v",
        "-c",
        str(baseline_src),
        "-o",
        "baseline.o",
    ]
    harness_src = spec.harness_source().resolve()
    # A harness folder of its own (the tests' CPU stand-in) still includes the shipped headers (kw_lockdown.h).
    shipped_dir = Path(HARNESS_DIR).resolve()
    shipped = [] if shipped_dir == harness_dir else ["-I", str(shipped_dir)]
    bf16 = ["-DKW_BF16"] if precision == "bf16" else []

    def harness_argv_for(source: Path, output: str) -> list[str]:  # the task's harness.cu and the shared runtime
        return [nvcc, *HARNESS_FLAGS, f"-arch={arch}", *bf16, "-I", str(harness_dir), *shipped, "-c", str(source),
                "-o", output]

    harness_argv = harness_argv_for(harness_src, "harness.o")
    # The protocol's sources, read once: part of the harness's key and the runtime's.
    protocol = (harness_hash(harness_dir), *([harness_hash(shipped_dir)] if shipped else []))
    jobs = []
    key = _sha(*common, "baseline", " ".join(baseline_argv[1:-4]), baseline_text)
    jobs.append(
        _Job(
            "baseline",
            baseline_argv,
            work / "baseline",
            work / "baseline" / "baseline.o",
            key,
            cache / "objects" / f"{key}.o",
        )
    )
    key = _sha(*common, "harness", " ".join(harness_argv[1:-4]), harness_src.read_bytes(), *protocol)
    jobs.append(
        _Job(
            "harness",
            harness_argv,
            work / "harness",
            work / "harness" / "harness.o",
            key,
            cache / "objects" / f"{key}.o",
        )
    )

    runtime_src = harness_dir / RUNTIME_SOURCE
    if runtime_src.is_file():
        runtime_argv = harness_argv_for(runtime_src, "kw_runtime.o")
        # No task in the key: one object per precision serves every task.
        key = _sha(*common, "runtime", " ".join(runtime_argv[1:-4]), *protocol)
        jobs.append(_Job("runtime", runtime_argv, work / "runtime", work / "runtime" / "kw_runtime.o", key,
                         cache / "objects" / f"{key}.o"))
    sync_argv = [nvcc, *HARNESS_FLAGS, f"-arch={arch}", "-Xcompiler", "-fPIC", "-I", str(shipped_dir), "-c",
                 str(shipped_dir / SYNC_SOURCE), "-o", "kw_sync.o"]
    key = _sha(*common, "sync", " ".join(sync_argv[1:-4]), harness_hash(shipped_dir))
    sync_job = _Job("sync", sync_argv, work / "sync", work / "sync" / "kw_sync.o", key, cache / "objects" / f"{key}.o")
    jobs.append(sync_job)
    fixed = len(jobs)  # the objects every executable of this build links: baseline, harness, runtime, kw_sync.o

    flag_check = None
    libraries: tuple[str, ...] = ()
    notes: list[str] = []
    if candidate_source is not None:
        flag_check = check_flags(proposed_flags, arch, spec.allowed_libraries)
        if not flag_check.ok:
            notes.append(
                f"compile flags rejected ({flag_check.reason}); used the defaults: {flag_check.command}"
            )
        libraries = tuple(dict.fromkeys((*flag_check.libraries, *trusted_libraries)))
        cand_dir = work / "candidate"
        cand_dir.mkdir(parents=True, exist_ok=True)
        (cand_dir / "candidate.cu").write_text(candidate_source, encoding="utf-8")
        # ptxas -v is always on (the viewer shows registers and spills); do not repeat it if proposed.
        verbose = [] if asks_ptxas_verbose(flag_check.flags) else ["-Xptxas", "-v"]
        extra = _library_dirs() if trusted_libraries else None
        include = [f"-I{extra / 'include'}"] if extra else []
        # NVTX's header-only loader (pulled in by CUB's device algorithms) dlopens an injection library named
        # by an environment variable; the harness owns profiling, so candidates build without it.
        no_nvtx = ["-DCCCL_DISABLE_NVTX", "-DNVTX_DISABLE"]
        # -lineinfo only adds line tables (no change to the code): the viewer maps SASS and PTX to source lines.
        lineinfo = [] if {"-lineinfo", "--generate-line-info"} & set(flag_check.flags) else ["-lineinfo"]
        # Position-independent when it becomes a shared object, loaded after the lockdown.
        pic = ["-Xcompiler", "-fPIC"] if late else []
        cand_argv = [nvcc, *flag_check.flags, *verbose, *lineinfo, *include, *no_nvtx, *pic, "-c", "candidate.cu",
                     "-o", "candidate.o"]
        key = _sha(*common, "candidate", " ".join(cand_argv[1:]), candidate_source)
        jobs.append(
            _Job(
                "candidate",
                cand_argv,
                cand_dir,
                cand_dir / "candidate.o",
                key,
                cache / "objects" / f"{key}.o",
            )
        )

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        done = list(pool.map(lambda j: _run_job(j, timeout_s), jobs))
    results = {job.role: result for job, result in zip(jobs, done, strict=True)}
    baseline, candidate = results["baseline"], results.get("candidate")
    harness = _harness_side(results["harness"], results.get("runtime"), results["sync"])
    failed = [r for r in (baseline, harness, candidate) if r is not None and not r.ok]
    if failed:
        return BuildResult(
            False,
            None,
            baseline,
            harness,
            candidate,
            None,
            flag_check,
            time.monotonic() - start,
            libraries,
            arch,
            notes=tuple(notes),
        )

    checked: objcheck.ObjectReport | None = None
    unordered: tuple[str, ...] = ()
    allowed = (*libraries, *spec.allowed_libraries)
    if candidate is not None and not trusted and not trusted_libraries:
        checked = check_candidate_object(spec, precision, work, [j.output for j in jobs[1:fixed]],
                                         candidate_source or "", allowed)
        if checked.note:
            notes.append(checked.note)
        if not checked.ok:
            return BuildResult(False, None, baseline, harness, candidate, None, flag_check,
                               time.monotonic() - start, libraries, arch, notes=tuple(notes),
                               refused=checked.messages())

    # What a queued sample could not time, in the candidate's code or in the baseline's (timed alike): then both are
    # timed synchronized (docs/evaluation.md, "Timing protocol").
    if candidate is not None:
        symbols = checked.symbols if checked is not None else objcheck.read_imports(work / "candidate" / "candidate.o")
        unordered = objcheck.unordered_work(symbols, allowed)
    baseline_imports = objcheck.read_imports(work / "baseline" / "baseline.o")
    unordered = tuple(dict.fromkeys((*unordered, *objcheck.unordered_work(baseline_imports, allowed))))

    # The reference first: without the candidate, so its failure is the task's, whatever the candidate did.
    ref_link, ref_key = _link(nvcc, arch, common, jobs[:fixed], (), work, REFERENCE_EXECUTABLE, cache, timeout_s,
                              WRAP_SYNC)
    reference = str(work / REFERENCE_EXECUTABLE) if ref_link.ok else None
    if not ref_link.ok or candidate is None:
        return BuildResult(ref_link.ok, reference, baseline, harness, candidate, ref_link, flag_check,
                           time.monotonic() - start, libraries, arch, key=ref_key, notes=tuple(notes),
                           candidate_at_fault=False, reference=reference, unordered=unordered,
                           link_blame="" if ref_link.ok else link_failure(ref_link.log, None, "")[0])
    library: Path | None = None
    problem = ""  # why a late-loaded candidate's library could not be loaded, the task's or the worker's fault
    if late:
        exe_shape, lib_shape = _late_load_shapes(nvcc)
        link, link_key = _link(nvcc, arch, common, jobs[:fixed], libraries, work, EXECUTABLE, cache, timeout_s,
                               (*exe_shape, *WRAP_SYNC))
        if link.ok:
            library = work / CANDIDATE_LIBRARY
            link, lib_key = _link(nvcc, arch, common, [*jobs[fixed:], sync_job], libraries, work, library.name,
                                  cache, timeout_s, (*lib_shape, *WRAP_SYNC))
            link_key = _sha(link_key, lib_key)
        if link.ok:
            problem = _not_preloaded(work / EXECUTABLE, library)
            if problem:
                link = replace(link, ok=False, log=f"{link.log}\n{problem}")
    else:
        link, link_key = _link(nvcc, arch, common, jobs, libraries, work, EXECUTABLE, cache, timeout_s, WRAP_SYNC)
    exe = work / EXECUTABLE
    blame, at_fault = (problem, False) if problem else ("", True)
    if not link.ok and not problem:
        blame, at_fault = link_failure(link.log, checked, candidate_source or "")
    return BuildResult(
        link.ok,
        str(exe) if link.ok else None,
        baseline,
        harness,
        candidate,
        link,
        flag_check,
        time.monotonic() - start,
        libraries,
        arch,
        key=link_key,
        notes=tuple(notes),
        link_blame=blame,
        candidate_at_fault=at_fault,
        reference=reference,
        library=str(library) if link.ok and library is not None else None,
        unordered=unordered,
    )


def _harness_side(harness: CompileResult, *others: CompileResult | None) -> CompileResult:
    """The task's harness.o, the shared runtime's object and kw_sync.o reported as one step, the harness: all are
    the task's side of the build, and a failure of any is a task/harness problem."""
    parts = [harness, *(r for r in others if r is not None)]
    return replace(
        harness,
        ok=all(r.ok for r in parts),
        command="\n".join(r.command for r in parts),
        log="\n".join(r.log for r in parts if r.log.strip()),
        cached=all(r.cached for r in parts),
        seconds=max(r.seconds for r in parts),  # compiled side by side
    )


def _not_preloaded(exe: Path, library: Path) -> str:
    """"" when every library the candidate's shared object needs is one kwbench loads at start, else why it could
    not be loaded after the lockdown, where the loader can open no other file (the two link lines disagree)."""
    try:
        missing = sorted(objcheck.needed_libraries(library) - objcheck.needed_libraries(exe))
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{exc}: whether {library.name} can be loaded after the lockdown is unknown (a task/harness problem)"
    if not missing:
        return ""
    return (f"the candidate's library needs {', '.join(missing)}, which {exe.name} does not load at start, so it "
            "could not be loaded after the lockdown (a task/harness problem, not the candidate's; "
            "KW_LOAD_AFTER_LOCKDOWN=0 links the candidate in)")


def _link(nvcc: str, arch: str, common: tuple[str, ...], jobs: list[_Job], libraries: tuple[str, ...], work: Path,
          name: str, cache: Path, timeout_s: float, shape: tuple[str, ...] = ()) -> tuple[CompileResult, str]:
    """Links the objects of `jobs` into work/name, cached by what went in; (result, that key). `shape`: flags that
    make it something else than a plain executable (the late-loaded candidate's library and its kwbench)."""
    key = _sha(*common, "link", *[j.key for j in jobs], *libraries, *_link_dirs(libraries), *shape)
    argv = [
        nvcc,
        f"-arch={arch}",
        *shape,
        # baseline.o and harness.o before candidate.o: of the weak definitions several objects emit (inline
        # functions, template instantiations) the linker keeps the first, theirs (objcheck relies on it).
        *[str(j.output) for j in jobs],
        "-o",
        name,
        *_link_dirs(libraries),
        *[f"-l{lib}" for lib in libraries],
    ]
    result = _run_job(_Job("link", argv, work, work / name, key, cache / "bin" / f"{key}.bin"), timeout_s)
    if result.ok:
        (work / name).chmod(0o755)
    return result, key


def check_candidate_object(
    spec: TaskSpec, precision: str, work: Path, harness_objects: list[Path], source: str, libraries: tuple[str, ...]
) -> objcheck.ObjectReport:
    """The object check on candidate.o, knowing what baseline.o and the harness's objects (harness.o, and the shared
    runtime's where the harness has one) define, and the device code's clock reads in its SASS (neither can be hidden
    from these listings by the preprocessor)."""
    baseline = objcheck.global_definitions(work / "baseline" / "baseline.o")
    harness = frozenset().union(*(objcheck.global_definitions(o) for o in harness_objects))
    entry = spec.interfaces[precision].optimized_entry
    policy = objcheck.ObjectPolicy(libraries=libraries, entry=entry, reserved=(baseline | harness) - {entry},
                                   baseline=baseline)
    obj = work / "candidate" / "candidate.o"
    report = objcheck.check_object(obj, policy, source)
    cuobjdump, nvdisasm = assembly.tools()
    if cuobjdump and nvdisasm:
        res = sandbox.run([cuobjdump, "-sass", str(obj)], obj.parent, 120.0, name="cuobjdump-check",
                          env_extra={"PATH": f"{Path(nvdisasm).parent}:{os.environ.get('PATH', '')}"})
        sass_path = Path(res.stdout_path)
        sass = sass_path.read_text(encoding="utf-8", errors="replace") if sass_path.is_file() else res.stdout
        timers = objcheck.device_timer_reads(sass)
        if timers:
            extra = objcheck.Violation("timing", 0, f"device code reads the clock ({', '.join(timers)}); timing "
                                       "belongs to the harness")
            report = replace(report, violations=(*report.violations, extra))
    return report


_LINK_SYMBOL = re.compile(r"(multiple definition of|undefined reference to) [`']([^'`]+)'")


def link_failure(log: str, checked: objcheck.ObjectReport | None, source: str) -> tuple[str, bool]:
    """(reason, candidate_at_fault) for a failed link: the candidate is at fault when a symbol in the error
    is one candidate.o defines or imports, or the error is reported in candidate.o."""
    symbols = checked.symbols if checked is not None else None
    mine: set[str] = set()
    if symbols is not None:
        mine = set(symbols.undefined) | {n for n, _k in symbols.defined}
        mine |= {symbols.demangled.get(n, n) for n in mine}
    lines = objcheck.SourceLines(source)
    for m in _LINK_SYMBOL.finditer(log):
        what, name = m.group(1), m.group(2)
        context = log[max(0, m.start() - 300) : m.start()].splitlines()[-1:] or [""]
        if name in mine or "candidate.o" in context[0]:
            line = lines.of_symbol(name)
            at = f" (candidate line {line})" if line else ""
            if what.startswith("multiple"):
                return (f"the candidate defines {name}{at}, which the harness or the baseline defines too; "
                        "rename it or make it static"), True
            return (f"the candidate uses {name}{at} but nothing defines it (declared without a definition, or "
                    "a name the harness does not export)"), True
    m = _LINK_SYMBOL.search(log)
    first = m.group(0) if m else next((ln.strip() for ln in log.splitlines() if "error" in ln.lower()), "")
    return f"the link failed outside the candidate's symbols (a task/harness problem): {first}", False
