#!/usr/bin/env python3
"""Agreement with MSKernelBench's own harness: the same optimized kernel, scored both ways.

For every MSKernelBench operator of tasks/mskernelbench/ and each precision, this script takes the
benchmark's published optimized kernel from a local checkout of its demo repository (never
committed or vendored here) and

  (a) writes it as a KernelWeb candidate (BF16: the section between the
      `==== OPTIMIZED KERNEL START/END ====` markers of optimized/bf16/test_<op>_bf16.cu, with the
      test file's #include lines; FP32: the whole optimized/fp32/<op>.cu) and evaluates it with
      `python -m worker eval --task <op> --precision <p> --candidate <file> --json <out>`;
  (b) builds and runs the benchmark's own harness: BF16 the test file as published; FP32 a harness
      derived from the BF16 test file at run time (the marked section replaced by the FP32
      optimized file, the BF16 baseline by the FP32 baseline renamed <op>_origin, and the test's
      types, conversions and names mapped to float; where the result does not compile although the
      FP32 kernel does on its own, the operator is recorded as "no FP32 harness");
  (c) parses the harness's "Test case size" / "Speedup ratio" lines and any mismatch line, computes
      their P with the task's complexity weights, P = sum T(N_i) S_i / sum T(N_i), and prints per
      precision: operator | their verdict | KernelWeb verdict (+ reason) | their P | KernelWeb P |
      ratio, with JSON and CSV copies in the output folder.

Compiling runs in parallel (--jobs); --compile-only builds the benchmark's binaries (and runs the
KernelWeb static checks and build with `eval --compile-only`) without a GPU, into --build-dir, so
that a GPU machine can reuse them; --skip-theirs leaves their harness out (with --compile-only: only
KernelWeb's static checks and build, the quickest check of what KernelWeb accepts).
Runs on the GPU are sequential per GPU (they are timed); --gpus spreads the items over several GPUs of
one host, --deadline and --resume split a long run over several sessions.

    python bench/agreement.py --checkout /tmp/msk --out /tmp/agreement --jobs 8 --compile-only
    python bench/agreement.py --checkout /tmp/msk --out /tmp/agreement --build-dir /tmp/agreement/build
    python bench/agreement.py --checkout /tmp/msk --ops vector_add,dot_product --precisions bf16
    python bench/agreement.py --checkout /tmp/msk --out /tmp/repeat --skip-theirs --precisions fp32 --repeat 2

--repeat N evaluates every candidate N times with KernelWeb, each `worker eval` a process of its own on the
same GPU one after another, the baseline's time cached by the first as in production, and prints per
operator the P of each evaluation, their spread max |P_k / P_1 - 1| and the sizes whose candidate call takes
10 us or more with a CV of 2 % or more: the repeatability goal of docs/benchmarks.md measured on real
candidates.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from worker.formats.cuda.spec import TaskSpec, eval_complexity  # noqa: E402
from worker.registry import discover_tasks  # noqa: E402

PRECISIONS = ("fp32", "bf16")
START = re.compile(r"^[ \t]*//\s*=+\s*OPTIMIZED KERNEL START\s*=+[ \t]*\n", re.M)
END = re.compile(r"^[ \t]*//\s*=+\s*OPTIMIZED KERNEL END\s*=+[ \t]*\n?", re.M)
INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.M)
SIZE_LINE = re.compile(r"Test case size:\s*(.*)")
PAIR = re.compile(r"([A-Za-z_]\w*)\s*:\s*(-?\d+(?:\.\d+)?)")
SPEEDUP = re.compile(r"Speedup ratio:\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)", re.I)
MISMATCH = re.compile(r"mismatch", re.I)
DEFAULT_FLAGS = "-O3 -std=c++17"


class ExtractionError(ValueError):
    """The test file lacks the markers or the origin wrapper the extraction needs."""


# ------------------------------------------------------------------------------------------------
# Extraction and the FP32 harness derivation (pure text: tested without a GPU)
# ------------------------------------------------------------------------------------------------


def split_test(text: str) -> tuple[str, str, str]:
    """(before START, the marked section, after END), markers excluded."""
    start, end = START.search(text), END.search(text)
    if not start or not end or end.start() < start.end():
        raise ExtractionError("no '==== OPTIMIZED KERNEL START/END ====' section")
    return text[: start.start()], text[start.end() : end.start()], text[end.end() :]


def includes_of(text: str) -> list[str]:
    return [m.group(0).strip() for m in INCLUDE.finditer(text)]


def bf16_candidate(test_text: str, source: str = "") -> str:
    """The marked section as a standalone candidate, after the test file's #include lines; CUB's only
    when the section uses `cub::` (the tests include it for their baselines, and KernelWeb's static
    checks refuse a candidate that includes a library the task does not allow)."""
    before, section, _ = split_test(test_text)
    keep = [i for i in includes_of(before) if "cub/" not in i or "cub::" in section]
    head = f"// Extracted by bench/agreement.py from {source} (the optimized section and the file's includes).\n"
    return head + "\n".join(keep) + "\n\n" + section.strip("\n") + "\n"


def _skip_literal(text: str, i: int) -> int:
    """Index after the string, char literal or comment starting at i (or i if none starts there)."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    if text[i] in "\"'":
        quote, j = text[i], i + 1
        while j < len(text) and text[j] != quote:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    return i


def function_end(text: str, at: int) -> int:
    """Index just after the closing brace of the function whose declaration starts at `at`."""
    i, depth, opened = at, 0, False
    while i < len(text):
        j = _skip_literal(text, i)
        if j != i:
            i = j
            continue
        ch = text[i]
        if ch == ";" and not opened:
            raise ExtractionError("a declaration, not a definition")
        if ch == "{":
            depth, opened = depth + 1, True
        elif ch == "}":
            depth -= 1
            if opened and depth == 0:
                return i + 1
        i += 1
    raise ExtractionError("unbalanced braces")


def wrapper_start(text: str, name: str) -> int:
    m = re.search(r'extern\s+"C"\s+(?:__host__\s+)?void\s+' + re.escape(name) + r"\s*\(", text)
    if not m:
        raise ExtractionError(f'no extern "C" {name}(...)')
    return m.start()


def to_fp32(text: str, op: str) -> str:
    """The test harness's BF16 types, conversions and entry names mapped to FP32."""
    text = re.sub(rf"\b{re.escape(op)}_bf16_(optimized|origin)\b", rf"{op}_\1", text)
    text = re.sub(rf"\b{re.escape(op)}_bf16\b", f"{op}_origin", text)  # the baseline under its own name
    text = re.sub(r"\b__float2bfloat16(?:_r[nzdu])?\s*\(", "(float)(", text)
    text = re.sub(r"\b__bfloat162float\s*\(", "(float)(", text)
    return re.sub(r"\b__nv_bfloat16\b", "float", text)


def derive_fp32_harness(test_text: str, op: str, fp32_baseline: str, fp32_optimized: str) -> str:
    """An FP32 test program in the image of the BF16 one: their FP32 optimized kernel in the marked
    section, their FP32 baseline (wrapper renamed <op>_origin) in place of the BF16 one, the rest
    mapped to float."""
    before, _, after = split_test(test_text)
    try:
        origin = wrapper_start(after, f"{op}_bf16_origin")
    except ExtractionError:  # a few tests call the baseline under its own name
        origin = wrapper_start(after, f"{op}_bf16")
    origin_end = function_end(after, origin)
    harness = after[origin_end:]
    at = wrapper_start(fp32_baseline, op)
    renamed = re.sub(r"\bvoid\s+" + re.escape(op) + r"\s*\(", f"void {op}_origin(", fp32_baseline[at:], count=1)
    baseline = fp32_baseline[:at] + renamed
    return (
        f"// Derived by bench/agreement.py from test_{op}_bf16.cu with the FP32 kernels (not published).\n"
        + to_fp32(before, op)
        + "// ==== OPTIMIZED KERNEL START ====\n"
        + fp32_optimized.strip("\n")
        + "\n// ==== OPTIMIZED KERNEL END ====\n\n"
        + baseline.strip("\n")
        + "\n"
        + to_fp32(harness, op)
    )


# ------------------------------------------------------------------------------------------------
# Their output, their P
# ------------------------------------------------------------------------------------------------


@dataclass
class TheirSize:
    text: str
    params: dict[str, float]
    printed_complexity: float | None
    speedup: float | None = None
    weight: float | None = None
    weight_from: str = ""  # spec size | spec formula | printed | none
    spec_index: int | None = None


def parse_size(text: str) -> tuple[dict[str, float], float | None]:
    head, _, tail = text.partition("Complexity")
    params = {name: float(value) for name, value in PAIR.findall(head)}
    m = re.search(r"-?\d+(?:\.\d+)?", tail)
    return params, float(m.group(0)) if m else None


def parse_output(stdout: str) -> tuple[list[TheirSize], str | None]:
    """Sizes in order with their speedups, and the first mismatch line (None if there is none)."""
    sizes: list[TheirSize] = []
    mismatch = None
    for line in stdout.splitlines():
        if m := SIZE_LINE.search(line):
            params, complexity = parse_size(m.group(1))
            sizes.append(TheirSize(m.group(1).strip(), params, complexity))
        elif m := SPEEDUP.search(line):
            if sizes and sizes[-1].speedup is None:
                sizes[-1].speedup = float(m.group(1))
        elif MISMATCH.search(line) and mismatch is None:
            mismatch = line.strip()
    return sizes, mismatch


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def match_spec_size(spec: TaskSpec, params: dict[str, float]) -> int | None:
    lower = {k.lower(): v for k, v in params.items()}
    for i, size in enumerate(spec.sizes):
        if all(k.lower() in lower and _same(lower[k.lower()], float(v)) for k, v in size.items()):
            return i
    return None


def weigh(spec: TaskSpec, sizes: list[TheirSize]) -> None:
    """T(N_i) for each of their sizes: our spec's size when it is one of ours, else our complexity
    formula over their parameters, else their printed complexity (it can overflow an int there)."""
    for s in sizes:
        s.spec_index = match_spec_size(spec, s.params)
        if s.spec_index is not None:
            s.weight, s.weight_from = spec.complexity_of(spec.sizes[s.spec_index]), "spec size"
            continue
        try:
            s.weight, s.weight_from = eval_complexity(spec.complexity, s.params), "spec formula"
        except (ValueError, ZeroDivisionError):
            if s.printed_complexity and s.printed_complexity > 0:
                s.weight, s.weight_from = s.printed_complexity, "printed"
            else:
                s.weight, s.weight_from = 1.0, "none"


def weighted_p(pairs: list[tuple[float, float]]) -> float | None:
    """P = sum T_i S_i / sum T_i over (T, S) pairs with a finite S."""
    pairs = [(t, s) for t, s in pairs if t is not None and s is not None and math.isfinite(s)]
    total = sum(t for t, _ in pairs)
    return sum(t * s for t, s in pairs) / total if pairs and total > 0 else None


# ------------------------------------------------------------------------------------------------
# Building and running
# ------------------------------------------------------------------------------------------------


@dataclass
class Item:
    op: str
    precision: str
    candidate: str = ""  # path of the extracted candidate
    harness: str = ""  # path of their test program (as published or derived)
    binary: str = ""
    their_verdict: str = ""  # ok | incorrect | runtime_error | timeout | compile_error | no FP32 harness | ...
    their_reason: str = ""
    their_sizes: list[dict] = field(default_factory=list)
    their_p: float | None = None
    kw_verdict: str = ""
    kw_reason: str = ""
    kw_p: float | None = None
    kw_p_common: float | None = None  # KernelWeb's P over the sizes their harness also ran
    their_p_common: float | None = None
    ratio: float | None = None  # kw_p / their_p
    kw_sizes: list[dict] = field(default_factory=list)  # index, params, complexity, speedup, correct
    notes: list[str] = field(default_factory=list)
    gpu: str = ""  # the CUDA_VISIBLE_DEVICES both harnesses ran under (--gpus)
    kw_seconds: float | None = None
    their_seconds: float | None = None
    # --repeat: every KernelWeb evaluation of the candidate, each in its own process (verdict, P, per size
    # the candidate's median time and CV), and the spread of P between them, max |P_k / P_1 - 1|
    kw_runs: list[dict] = field(default_factory=list)
    kw_repeat: float | None = None

    def done(self, theirs: bool = True, repeat: int = 1) -> bool:
        """Both sides (or only KernelWeb's, `theirs` False) have a final verdict, and KernelWeb ran `repeat`
        times (a later --resume run keeps it)."""
        return (not theirs or self.their_verdict not in ("", "built")) and self.kw_verdict not in (
            "", "compile_ok", "not run", "gpu_needed", "eval_failed", "no_gpu") and (
            repeat <= 1 or len(self.kw_runs) >= repeat)


def run(argv: list[str], cwd: Path | None = None, timeout: float | None = None, env=None) -> tuple[int, str, str]:
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return 124, out, "timeout"


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


class Agreement:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.checkout = Path(args.checkout).resolve()
        self.out = Path(args.out).resolve()
        self.build_dir = Path(args.build_dir).resolve() if args.build_dir else self.out / "build"
        found = discover_tasks(REPO / "tasks", backends=("cuda",)).specs
        specs = {s.name: s for s in found if getattr(s, "suite", "") == "mskernelbench"}
        wanted = [o.strip() for o in args.ops.split(",")] if args.ops else sorted(specs)
        unknown = [o for o in wanted if o not in specs]
        if unknown:
            raise SystemExit(f"unknown operators: {', '.join(unknown)}")
        self.specs = specs
        self.items = [
            Item(op, p)
            for p in [x.strip() for x in args.precisions.split(",")]
            for op in wanted
            if p in specs[op].interfaces
        ]
        self.flags = shlex.split(args.nvcc_flags)

    # -- paths in their checkout
    def test_file(self, op: str) -> Path:
        return self.checkout / "optimized" / "bf16" / f"test_{op}_bf16.cu"

    def fp32_optimized(self, op: str) -> Path:
        return self.checkout / "optimized" / "fp32" / f"{op}.cu"

    def fp32_baseline(self, op: str) -> Path:
        return self.checkout / "origin" / "fp32" / f"{op}.cu"

    # -- (a) candidates, (b) harness sources
    def prepare(self, item: Item) -> None:
        cand_dir, src_dir = self.out / "candidates", self.build_dir / "src"
        cand_dir.mkdir(parents=True, exist_ok=True)
        src_dir.mkdir(parents=True, exist_ok=True)
        op = item.op
        entry = self.specs[op].interfaces[item.precision].entry
        try:  # (a) the candidate
            test = self.test_file(op).read_text(encoding="utf-8", errors="replace")
            if item.precision == "bf16":
                cand = bf16_candidate(test, f"optimized/bf16/{self.test_file(op).name}")
            else:
                cand = self.fp32_optimized(op).read_text(encoding="utf-8", errors="replace")
        except (OSError, ExtractionError) as exc:
            item.their_verdict, item.their_reason = "missing", str(exc)
            item.kw_verdict, item.kw_reason = "not run", f"no candidate: {exc}"
            return
        cpath = cand_dir / f"{entry}_optimized.cu"
        cpath.write_text(cand, encoding="utf-8")
        item.candidate = str(cpath)
        try:  # (b) their harness: published (BF16) or derived (FP32)
            if item.precision == "bf16":
                harness = test
            else:
                baseline = self.fp32_baseline(op).read_text(encoding="utf-8", errors="replace")
                harness = derive_fp32_harness(test, op, baseline, cand)
        except (OSError, ExtractionError) as exc:
            item.their_verdict = "no FP32 harness" if item.precision == "fp32" else "missing"
            item.their_reason = str(exc)
            return
        hpath = src_dir / f"test_{entry}.cu"
        hpath.write_text(harness, encoding="utf-8")
        item.harness = str(hpath)

    def compile_theirs(self, item: Item) -> None:
        if not item.harness:
            return
        src = Path(item.harness)
        binary = self.build_dir / "bin" / src.stem
        stamp = binary.with_suffix(".stamp")
        key = _digest(src.read_text(encoding="utf-8"), self.args.nvcc, self.args.arch, *self.flags)
        binary.parent.mkdir(parents=True, exist_ok=True)
        if binary.exists() and stamp.exists() and stamp.read_text().strip() == key:
            item.binary = str(binary)
            return
        argv = [self.args.nvcc, *self.flags, f"-arch={self.args.arch}", str(src), "-o", str(binary)]
        rc, out, err = run(argv, timeout=self.args.compile_timeout)
        (self.build_dir / "bin" / f"{src.stem}.log").write_text(shlex.join(argv) + "\n" + out + err)
        if rc == 0:
            stamp.write_text(key)
            item.binary = str(binary)
            return
        if item.precision == "fp32" and self._compiles_alone(item):
            item.their_verdict = "no FP32 harness"
            item.their_reason = (
                "the derived FP32 harness does not compile (the FP32 kernel alone does): " + _first_error(err)
            )
        else:
            item.their_verdict, item.their_reason = "compile_error", _first_error(out + err)

    def _compiles_alone(self, item: Item) -> bool:
        obj = self.build_dir / "bin" / f"{item.op}_fp32_alone.o"
        argv = [self.args.nvcc, *self.flags, f"-arch={self.args.arch}", "-c", item.candidate, "-o", str(obj)]
        return run(argv, timeout=self.args.compile_timeout)[0] == 0

    # -- KernelWeb
    def kernelweb(self, item: Item, compile_only: bool, env: dict | None = None) -> None:
        if not item.candidate:
            return
        self._kernelweb_once(item, compile_only, env, self.out / "kernelweb" / f"{item.op}_{item.precision}.json")
        if compile_only or self.args.repeat <= 1:
            return
        item.kw_runs = [_run_record(item)]
        for k in range(2, self.args.repeat + 1):  # the same candidate again, a new process on the same GPU
            again = Item(item.op, item.precision, candidate=item.candidate)
            self._kernelweb_once(again, False, env, self.out / "kernelweb" / f"{item.op}_{item.precision}.{k}.json")
            item.kw_runs.append(_run_record(again))
        ps = [r["p"] for r in item.kw_runs]
        if all(r["verdict"] == "ok" and r["p"] for r in item.kw_runs):
            item.kw_repeat = max(abs(p / ps[0] - 1) for p in ps[1:])

    def _kernelweb_once(self, item: Item, compile_only: bool, env: dict | None, out: Path) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "worker", "eval", "--task", item.op, "--precision", item.precision,
                "--candidate", item.candidate, "--json", str(out), "--profile", "none"]
        if compile_only:
            argv.append("--compile-only")
        if self.args.seeds:
            argv += ["--seeds", str(self.args.seeds)]
        if self.args.queued_timing:
            argv.append("--queued-timing")
        t0 = time.time()
        rc, stdout, stderr = run(argv, cwd=REPO, timeout=self.args.kw_timeout, env=env)
        item.kw_seconds = round(time.time() - t0, 1)
        if not out.exists():
            item.kw_verdict = "gpu_needed" if rc == 3 else "eval_failed"
            item.kw_reason = _first_error(stderr or stdout) or f"worker eval exited {rc}"
            return
        ev = json.loads(out.read_text())
        compiled = ev.get("kind") == "compile_only" and ev.get("verdict") == "ok"
        item.kw_verdict = "compile_ok" if compiled else ev.get("verdict", "?")
        item.kw_reason = ev.get("reason") or ""
        item.kw_p = ev.get("score")
        keep = ("index", "params", "complexity", "speedup", "correct")
        item.kw_sizes = [{**{k: s.get(k) for k in keep}, "candidate_ms": (s.get("candidate") or {}).get("median_ms"),
                          "candidate_cv": (s.get("candidate") or {}).get("cv")} for s in ev.get("sizes") or []]
        item.notes += [f"kw: {n}" for n in ev.get("static_violations") or []]

    # -- their harness on the GPU
    def run_theirs(self, item: Item, env: dict | None = None) -> None:
        if not item.binary:
            return
        env = {k: v for k, v in (env or os.environ).items() if k != "PROFILING_MODE"}
        t0 = time.time()
        rc, stdout, stderr = run([item.binary], cwd=self.build_dir, timeout=self.args.run_timeout, env=env)
        item.their_seconds = round(time.time() - t0, 1)
        log = self.out / "theirs" / f"{item.op}_{item.precision}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"# exit {rc} after {time.time() - t0:.1f} s\n{stdout}\n# stderr\n{stderr}")
        sizes, mismatch = parse_output(stdout)
        weigh(self.specs[item.op], sizes)
        item.their_sizes = [asdict(s) for s in sizes]
        item.their_p = weighted_p([(s.weight, s.speedup) for s in sizes])
        if rc == 124:
            item.their_verdict, item.their_reason = "timeout", f"killed after {self.args.run_timeout} s"
        elif mismatch:
            item.their_verdict, item.their_reason = "incorrect", mismatch
        elif rc != 0:
            item.their_verdict, item.their_reason = "runtime_error", _first_error(stderr or stdout) or f"exit {rc}"
        elif not sizes or any(s.speedup is None for s in sizes):
            item.their_verdict, item.their_reason = "no_result", "no speedup printed for some size"
        else:
            item.their_verdict = "ok"

    def combine(self, item: Item) -> None:
        if item.their_p and item.kw_p:
            item.ratio = item.kw_p / item.their_p
        common = [s for s in item.their_sizes if s.get("spec_index") is not None and s.get("speedup") is not None]
        by_index = {s.get("index"): s for s in item.kw_sizes}
        pairs_kw, pairs_theirs = [], []
        for s in common:
            k = by_index.get(s["spec_index"])
            if k and k.get("speedup") is not None:
                pairs_kw.append((k.get("complexity"), k.get("speedup")))
                pairs_theirs.append((s["weight"], s["speedup"]))
        item.kw_p_common = weighted_p(pairs_kw)
        item.their_p_common = weighted_p(pairs_theirs)

    # -- the whole run
    def main(self) -> int:
        args = self.args
        self.out.mkdir(parents=True, exist_ok=True)
        kept = self.resumed() if args.resume else {}
        todo = [i for i in self.items if (i.op, i.precision) not in kept]
        self.items = [kept.get((i.op, i.precision), i) for i in self.items]
        for item in todo:
            self.prepare(item)
        if not args.skip_theirs:
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                list(pool.map(self.compile_theirs, todo))
        if args.compile_only:  # builds only, in parallel
            if not args.skip_kernelweb:
                with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                    list(pool.map(lambda item: self.kernelweb(item, True), todo))
            for item in todo:
                self.combine(item)
                if item.binary and not item.their_verdict:
                    item.their_verdict = "built"
        else:
            self.run_on_gpus(todo)
        self.write()
        for p in PRECISIONS:
            rows = [i for i in self.items if i.precision == p]
            if rows:
                print(format_table(rows, p))
                if args.repeat > 1:
                    print(format_repeat(rows, p))
        return 0

    def resumed(self) -> dict[tuple[str, str], Item]:
        """Items of an earlier run in --out that have both verdicts: kept as they are, not run again."""
        path = self.out / "agreement.json"
        if not path.is_file():
            return {}
        items = [Item(**row) for row in json.loads(path.read_text())]
        return {(i.op, i.precision): i for i in items if i.done(not self.args.skip_theirs, self.args.repeat)}

    def run_on_gpus(self, todo: list[Item]) -> None:
        """Timed runs, one at a time per GPU: --gpus gives one worker per GPU, each taking the next item
        (KernelWeb's evaluation, then their harness, on the same GPU). After --deadline seconds no item
        is started; results are written after every item, so a run cut short keeps what it finished."""
        gpus = [g.strip() for g in (self.args.gpus or "").split(",") if g.strip()] or [None]
        queue, lock, started = list(todo), threading.Lock(), time.monotonic()

        def worker(gpu: str | None) -> None:
            env = dict(os.environ, **({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {}))
            while True:
                with lock:
                    late = self.args.deadline and time.monotonic() - started > self.args.deadline
                    if not queue or late:
                        return
                    item = queue.pop(0)
                item.gpu = gpu or ""
                if not self.args.skip_kernelweb:
                    self.kernelweb(item, False, env)
                if not self.args.skip_theirs:
                    self.run_theirs(item, env)
                self.combine(item)
                print(f"[{time.monotonic() - started:6.0f} s] gpu {gpu or '-'} {item.op} {item.precision}: "
                      f"theirs {item.their_verdict} ({item.their_seconds} s), KernelWeb {item.kw_verdict} "
                      f"({item.kw_seconds} s)", flush=True)
                with lock:
                    self.write()

        threads = [threading.Thread(target=worker, args=(g,)) for g in gpus]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for item in queue:
            item.notes.append("not run: --deadline reached")

    def write(self) -> None:
        data = [asdict(i) for i in self.items]
        (self.out / "agreement.json").write_text(json.dumps(data, indent=1, default=str))
        with open(self.out / "agreement.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["operator", "precision", "their_verdict", "their_reason", "kernelweb_verdict",
                        "kernelweb_reason", "their_P", "kernelweb_P", "ratio", "their_P_common", "kernelweb_P_common"])
            for i in self.items:
                w.writerow([i.op, i.precision, i.their_verdict, i.their_reason, i.kw_verdict, i.kw_reason,
                            _num(i.their_p), _num(i.kw_p), _num(i.ratio), _num(i.their_p_common),
                            _num(i.kw_p_common)])


REPEAT_GOAL = 0.02  # issue 17: P within 2 % between two evaluations; CV under 2 % where a call takes >= 10 us
LONG_CALL_MS = 0.010


def _run_record(item: Item) -> dict:
    """The KernelWeb evaluation `item` holds, as one run of --repeat: verdict, P, seconds and per size the
    candidate's median time and CV."""
    return {"verdict": item.kw_verdict, "reason": item.kw_reason[:200], "p": item.kw_p, "seconds": item.kw_seconds,
            "sizes": [{"index": s["index"], "ms": s.get("candidate_ms"), "cv": s.get("candidate_cv")}
                      for s in item.kw_sizes]}


def noisy_sizes(item: Item) -> tuple[int, int]:
    """(sizes whose candidate call takes >= 10 us with a CV of 2 % or more in any run, sizes >= 10 us)."""
    worst: dict[int, tuple[float, float]] = {}
    for run in item.kw_runs:
        for s in run["sizes"]:
            if s["ms"] is None or s["cv"] is None:
                continue
            ms, cv = worst.get(s["index"], (0.0, 0.0))
            worst[s["index"]] = (max(ms, s["ms"]), max(cv, s["cv"]))
    long = [cv for ms, cv in worst.values() if ms >= LONG_CALL_MS]
    return sum(cv >= REPEAT_GOAL for cv in long), len(long)


def format_repeat(items: list[Item], precision: str) -> str:
    """The --repeat table: each candidate's P in every evaluation, their spread, and the noisy sizes."""
    lines = [f"== {precision.upper()}: the same candidate evaluated {max(len(i.kw_runs) for i in items)} times, "
             "each in its own process ==", "| operator | verdicts | P per evaluation | P repeat | "
             "sizes >= 10 us with CV >= 2 % |", "|---|---|---|---|---|"]
    for i in items:
        noisy, long = noisy_sizes(i)
        lines.append(f"| {i.op} | {', '.join(r['verdict'] for r in i.kw_runs) or '-'} | "
                     f"{' / '.join(_num(r['p'], 3) for r in i.kw_runs)} | "
                     f"{'-' if i.kw_repeat is None else f'{i.kw_repeat * 100:.2f}%'} | {noisy} of {long} |")
    both = [i for i in items if i.kw_repeat is not None]
    within = sum(i.kw_repeat <= REPEAT_GOAL for i in both)
    noisy = [noisy_sizes(i) for i in both]
    lines.append(f"P within 2 % for {within} of {len(both)} candidates accepted every time"
                 f" ({100 * within / len(both) if both else 0:.0f} %); CV of 2 % or more at"
                 f" {sum(n for n, _ in noisy)} of {sum(t for _, t in noisy)} sizes whose call takes 10 us or more")
    return "\n".join(lines) + "\n"


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln[:300]
    return lines[-1][:300] if lines else ""


def _num(v: float | None, digits: int = 3) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def format_table(items: list[Item], precision: str) -> str:
    """A plain-text table: operator | their verdict | KernelWeb verdict (+ reason) | P's | ratio."""
    head = ["operator", "their verdict", "KernelWeb verdict", "their P", "KernelWeb P", "ratio"]
    rows = []
    for i in items:
        kw = i.kw_verdict or "-"
        if i.kw_reason and kw not in ("ok", "compile_ok"):
            kw += f" ({i.kw_reason[:70]})"
        theirs = i.their_verdict or "-"
        if i.their_reason and theirs not in ("ok", "built"):
            theirs += f" ({i.their_reason[:50]})"
        rows.append([i.op, theirs, kw, _num(i.their_p, 2), _num(i.kw_p, 2), _num(i.ratio, 2)])
    widths = [max(len(str(r[c])) for r in [head, *rows]) for c in range(len(head))]
    line = lambda r: " | ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True))  # noqa: E731
    sep = "-+-".join("-" * w for w in widths)
    return "\n".join([f"== {precision.upper()} ==", line(head), sep, *[line(r) for r in rows], ""])


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", required=True, help="a local checkout of the benchmark's demo repository")
    ap.add_argument("--out", default="agreement-out", help="output folder (candidates, logs, JSON, CSV)")
    ap.add_argument("--build-dir", help="where their binaries are built or reused (default: OUT/build)")
    ap.add_argument("--ops", help="comma-separated operators (default: every mskernelbench task)")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles")
    ap.add_argument("--compile-only", action="store_true",
                    help="build only (no GPU): their binaries, and KernelWeb's eval --compile-only")
    ap.add_argument("--skip-kernelweb", action="store_true", help="only their harness")
    ap.add_argument("--skip-theirs", action="store_true",
                    help="only KernelWeb (static checks, build; with --compile-only no GPU is needed)")
    ap.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"))
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--nvcc-flags", default=DEFAULT_FLAGS, help=f"flags for their harness (default {DEFAULT_FLAGS!r})")
    ap.add_argument("--seeds", type=int, default=0, help="KernelWeb seeds (default: the worker's)")
    ap.add_argument("--queued-timing", action="store_true",
                    help="KernelWeb times with queued samples (worker eval --queued-timing; docs/evaluation.md)")
    ap.add_argument("--compile-timeout", type=float, default=600)
    ap.add_argument("--run-timeout", type=float, default=1800, help="seconds per run of their harness")
    ap.add_argument("--kw-timeout", type=float, default=3600, help="seconds per KernelWeb evaluation")
    ap.add_argument("--gpus", help="comma-separated CUDA device numbers: one serial worker per GPU (default: one)")
    ap.add_argument("--deadline", type=float, default=0, help="start no item after this many seconds")
    ap.add_argument("--repeat", type=int, default=1,
                    help="evaluate each candidate this many times with KernelWeb, each in its own process on the "
                         "same GPU, and print the spread of P (the repeatability goal of docs/benchmarks.md)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the items of OUT/agreement.json that have both verdicts; run the rest")
    return ap.parse_args(argv)


if __name__ == "__main__":
    sys.exit(Agreement(parse_args()).main())
