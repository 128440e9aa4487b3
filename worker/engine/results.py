"""Typed, frozen results of the evaluation engine.

Everything the pipeline and the web app consume is one of these dataclasses.
They serialize to plain JSON (`to_dict`/`to_json`) and read back with
`from_dict`, so a result can cross the Celery boundary or sit in the database
and still be the same object on the other side.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


def first_of(items: list[str] | tuple[str, ...], shown: int = 1) -> str:
    """The first `shown` of several messages or names, and how many more there are: "a, b (+3 more)"."""
    rest = len(items) - shown
    return ", ".join(items[:shown]) + (f" (+{rest} more)" if rest > 0 else "")


class Verdict(StrEnum):
    OK = "ok"
    REJECTED = "rejected"  # static checks refused the source before any build
    COMPILE_ERROR = "compile_error"
    INCORRECT = "incorrect"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    NO_GPU = "no_gpu"


class Bottleneck(StrEnum):
    COMPUTE = "compute_bound"
    MEMORY_LATENCY = "memory_latency_bound"
    MEMORY_BANDWIDTH = "memory_bandwidth_bound"
    UNKNOWN = "unknown"


class _Serializable:
    def to_dict(self) -> dict[str, Any]:
        return _plain(asdict(self))  # type: ignore[call-overload]

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)


def _plain(value: Any) -> Any:
    # asdict keeps tuples and StrEnums; JSON wants lists and plain strings.
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, StrEnum):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        # NaN/Infinity are not JSON (PostgreSQL jsonb and browsers reject them); a mismatch
        # report with `got: nan` must still store and render.
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@dataclass(frozen=True)
class KernelResources(_Serializable):
    """What `ptxas -v` reports for one kernel (or device function)."""

    kernel: str  # readable name (demangled base name where possible)
    mangled: str
    arch: str = ""
    registers: int = 0
    shared_bytes: int = 0
    const_bytes: int = 0
    barriers: int = 0
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KernelResources:
        return cls(**d)


@dataclass(frozen=True)
class CompileResult(_Serializable):
    role: str  # baseline | harness | candidate | link
    ok: bool
    command: str  # the exact argv, shell-quoted for display only (never run through a shell)
    log: str  # nvcc's stdout+stderr, verbatim
    resources: tuple[KernelResources, ...] = ()
    cached: bool = False
    seconds: float = 0.0
    ptx: str = ""  # the object's PTX and SASS (worker/engine/assembly.py), candidate and baseline only
    sass: str = ""
    assembly_note: str = ""  # why a listing is missing or cut

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CompileResult:
        d = dict(d)
        d["resources"] = tuple(KernelResources.from_dict(r) for r in d.get("resources", ()))
        return cls(**d)


@dataclass(frozen=True)
class TimingStats(_Serializable):
    samples: int
    mean_ms: float
    median_ms: float
    min_ms: float
    max_ms: float
    std_ms: float
    cv: float  # std / mean
    host_mean_ms: float | None = None
    batch: int = 1  # launches per sample (C/CUDA batched timing); each sample is one call's share
    spaced: bool = False  # C/CUDA queued timing: each launch of the batch behind its own L2 flush and spacer
    closed_syncs: int = 0  # C/CUDA queued timing: the calls' synchronizes that closed a segment (kw_sync.h)
    kept_allocs: int = 0  # C/CUDA queued timing: the calls' cudaMalloc served from blocks they freed (kw_sync.h)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TimingStats:
        keys = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in keys})


@dataclass(frozen=True)
class SizeResult(_Serializable):
    index: int
    params: dict[str, float]
    complexity: float  # T(N_i), the weight of this size in P
    correct: bool | None = None
    inputs_unchanged: bool | None = None
    first_mismatch: dict[str, Any] | None = None
    changed_input: str | None = None  # the first input the call modified
    out_of_bounds: str | None = None  # a write into a guard zone around a buffer
    baseline: TimingStats | None = None
    candidate: TimingStats | None = None
    speedup: float | None = None  # mean-based, the paper's convention; used for P
    speedup_median: float | None = None
    flags: tuple[str, ...] = ()
    # An expert reference timed beside the candidate where the backend has one (torch.compile for a
    # KernelBench task, the harness's "Ref time" for a task.yaml task): expert-relative speed t_ref / t_cand.
    reference: TimingStats | None = None
    reference_speedup: float | None = None

    @property
    def label(self) -> str:
        return ",".join(f"{k}={_num(v)}" for k, v in self.params.items())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SizeResult:
        d = dict(d)
        for key in ("baseline", "candidate", "reference"):
            if d.get(key) is not None:
                d[key] = TimingStats.from_dict(d[key])
        d["flags"] = tuple(d.get("flags", ()))
        return cls(**d)


@dataclass(frozen=True)
class CrashInfo(_Serializable):
    """Why a harness run died, as far as exit status, JSON and stderr tell."""

    kind: str  # illegal_address | launch_failure | misaligned_address | out_of_resources | ...
    message: str
    size_index: int | None = None
    returncode: int | None = None
    signal: int | None = None
    stderr_tail: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CrashInfo:
        return cls(**d)


@dataclass(frozen=True)
class Profile(_Serializable):
    size_index: int
    params: dict[str, float]
    kernel: str
    bottleneck: Bottleneck
    metrics: dict[str, dict[str, Any]]  # the class's metrics (paper Table 2), for the Planner
    full_metrics: dict[str, dict[str, dict[str, Any]]]  # section -> metric -> {value, unit}
    duration_ns: float | None = None
    mode: str = "filtered"
    tool_version: str = ""
    gpu: str = ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        d = dict(d)
        d["bottleneck"] = Bottleneck(d["bottleneck"])
        return cls(**d)


@dataclass(frozen=True)
class Evaluation(_Serializable):
    task: str
    precision: str
    verdict: Verdict
    reason: str = ""
    kind: str = "candidate"  # candidate | baseline
    sizes: tuple[SizeResult, ...] = ()
    score: float | None = None  # P, paper eq. 2 (mean-based speedups)
    geomean_speedup: float | None = None
    expert_speedup: float | None = None  # geometric mean of t_ref / t_cand over sizes, where a reference was timed
    flags: tuple[str, ...] = ()  # review flags: 'speedup>10x at N=..', 'CV>5% at ..'
    notes: tuple[str, ...] = ()  # e.g. why the Compiler agent's flags were replaced
    static_violations: tuple[str, ...] = ()
    compile: CompileResult | None = None  # the candidate's compile (or the baseline's, kind=baseline)
    crash: CrashInfo | None = None
    memcheck_log: str = ""
    profiles: tuple[Profile, ...] = ()
    gpu: str = ""
    toolchain: dict[str, str] = field(default_factory=dict)
    seeds: int = 3
    iters: int = 50
    baseline_cached: bool = False
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase (compile, check, ...)

    @property
    def ok(self) -> bool:
        return self.verdict == Verdict.OK

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evaluation:
        # Keys this version does not know (e.g. a bench's "run" counter) are ignored, not fatal.
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        d["verdict"] = Verdict(d["verdict"])
        d["sizes"] = tuple(SizeResult.from_dict(s) for s in d.get("sizes", ()))
        d["profiles"] = tuple(Profile.from_dict(p) for p in d.get("profiles", ()))
        for key in ("flags", "notes", "static_violations"):
            d[key] = _strings(d.get(key, ()), f"evaluation.{key}")
        if d.get("compile") is not None:
            d["compile"] = CompileResult.from_dict(d["compile"])
        if d.get("crash") is not None:
            d["crash"] = CrashInfo.from_dict(d["crash"])
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> Evaluation:
        return cls.from_dict(json.loads(text))


class MalformedEvaluation(ValueError):
    """A recorded evaluation with a field of the wrong kind; the message names the field."""


def _strings(value: Any, name: str) -> tuple[str, ...]:
    """A list of strings as a tuple; anything else (a bare string would split into characters) is refused."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise MalformedEvaluation(f"{name} must be a list of strings, not {value!r:.80}")
    return tuple(value)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
