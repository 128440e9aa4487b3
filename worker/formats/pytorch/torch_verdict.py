"""How the KernelBench check decides (docs/evaluation.md, "Who decides the verdict"): the comparison with the Model's
outputs, and the evidence stream it judges. torch_harness.py loads this file by path; like the harness it needs only
the standard library and torch, never `worker`.

The candidate's process (mode outputs) sends, per trial, its outputs and its inputs as they are after the call over
a pipe the evaluator opened; the Model's process (mode compare) never imports the candidate, runs the Model on the
same seeded inputs and decides. Per trial: one JSON line {"trial", "outputs": [...], "inputs": [...]}, each entry
{"dtype", "shape"} for a tensor (its bytes follow, in order) or {"value"} for anything else. The reader trusts
nothing: line length, nesting, dtype, shape and byte counts are checked, and tensors are rebuilt from bytes (never
unpickled).
"""

from __future__ import annotations

import json
from typing import Any

import torch

_EVIDENCE_DTYPES = {str(d): d for d in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                                         torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool,
                                         torch.complex64, torch.complex128)}
_EVIDENCE_LINE = 1 << 20
_EVIDENCE_TENSOR = 1 << 38  # 256 GiB: more than any GPU holds, so no honest output is refused


class EvidenceError(Exception):
    """What the candidate's process sent cannot be used: its fault, never the task's."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _describe(values: list[Any]) -> tuple[list[dict[str, Any]], list[torch.Tensor]]:
    meta, tensors = [], []
    for v in values:
        if isinstance(v, torch.Tensor):
            if str(v.dtype) not in _EVIDENCE_DTYPES:
                raise EvidenceError("evidence_invalid", f"a tensor of dtype {v.dtype} cannot be checked")
            meta.append({"dtype": str(v.dtype), "shape": list(v.shape)})
            tensors.append(v.detach().to("cpu").contiguous())
        else:
            meta.append({"value": v if isinstance(v, (int, float, bool, str, type(None))) else repr(v)})
    return meta, tensors


def send_evidence(stream, trial: int, got: list[Any], inputs: list[Any]) -> None:
    outs, out_tensors = _describe(got)
    ins, in_tensors = _describe(inputs)
    stream.write(json.dumps({"trial": trial, "outputs": outs, "inputs": ins}).encode() + b"\n")
    for t in out_tensors + in_tensors:
        stream.write(t.view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    stream.flush()


def receive_evidence(stream, trial: int) -> tuple[list[Any], list[Any]]:
    """(outputs, inputs) the candidate's process sent for `trial`, rebuilt on the host."""
    line = stream.readline(_EVIDENCE_LINE)
    if not line:
        raise EvidenceError("evidence_missing", f"the candidate's process sent nothing for trial {trial} (it ended, "
                                                "or stopped sending, before that trial)")
    try:
        assert line.endswith(b"\n"), "the header line is longer than the limit"
        head = json.loads(line)
        assert isinstance(head, dict) and head.get("trial") == trial
        outs, ins = head["outputs"], head["inputs"]
        assert isinstance(outs, list) and isinstance(ins, list)
    except (ValueError, AssertionError, KeyError, RecursionError) as exc:  # nesting deep enough to recurse too
        raise EvidenceError("evidence_invalid", f"the record for trial {trial} is malformed") from exc
    return [_rebuild(stream, m, trial) for m in outs], [_rebuild(stream, m, trial) for m in ins]


def _rebuild(stream, meta: Any, trial: int) -> Any:
    if not isinstance(meta, dict):
        raise EvidenceError("evidence_invalid", f"trial {trial}: an entry is not an object")
    if "value" in meta:
        return meta["value"]
    dtype, shape = _EVIDENCE_DTYPES.get(str(meta.get("dtype"))), meta.get("shape")
    if dtype is None or not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise EvidenceError("evidence_invalid", f"trial {trial}: a tensor entry has no valid dtype and shape")
    count = 1
    for n in shape:
        count *= n
    size = count * torch.empty((), dtype=dtype).element_size()
    if size > _EVIDENCE_TENSOR:
        raise EvidenceError("evidence_invalid", f"trial {trial}: a tensor of {size} bytes is beyond any output")
    try:
        data = bytearray(size)
    except MemoryError as exc:
        raise EvidenceError("evidence_invalid", f"trial {trial}: a tensor of {size} bytes does not fit") from exc
    view, got = memoryview(data), 0
    while got < size:
        n = stream.readinto(view[got:])
        if not n:
            raise EvidenceError("evidence_invalid", f"trial {trial}: the stream ended inside a tensor")
        got += n
    if not size:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(shape)


# ---------------------------------------------------------------- comparison


def compare(expected: Any, got: Any, atol: float, rtol: float) -> dict[str, Any] | None:
    """None if got matches expected within |a-b| <= atol + rtol*|b| everywhere (NaN never passes)."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return {"error": f"is a {type(got).__name__}, the Model returns a tensor"}
        if tuple(got.shape) != tuple(expected.shape):
            return {"error": f"has shape {tuple(got.shape)}, the Model returns {tuple(expected.shape)}"}
        if got.dtype != expected.dtype:
            return {"error": f"has dtype {got.dtype}, the Model returns {expected.dtype}"}
        try:  # on the device the candidate ran on: fast, and it has finished (the device was synchronized)
            return _mismatch(expected, got, atol, rtol, got.device)
        except torch.cuda.OutOfMemoryError:
            return _mismatch(expected, got, atol, rtol, torch.device("cpu"))
    if isinstance(got, torch.Tensor):
        return {"error": f"is a tensor, the Model returns a {type(expected).__name__}"}
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        if abs(got - expected) <= atol + rtol * abs(expected):
            return None
        return {"index": 0, "expected": float(expected), "got": float(got), "mismatches": 1, "total": 1}
    return None if got == expected else {"error": f"is {got!r}, the Model returns {expected!r}"}


def _mismatch(expected: torch.Tensor, got: torch.Tensor, atol: float, rtol: float, work: torch.device):
    g = got.detach().to(work, torch.float64)
    e = expected.detach().to(work, torch.float64)
    diff = (g - e).abs()
    bad = ~((diff <= atol + rtol * e.abs()) | ((g == e) & ~g.isnan()))
    count = int(bad.sum())
    if count == 0:
        return None
    flat = int(bad.flatten().nonzero()[0])
    finite = diff[~diff.isnan()]
    return {
        "index": flat,
        "position": _unravel(flat, tuple(expected.shape)),
        "expected": float(e.flatten()[flat]),
        "got": float(g.flatten()[flat]),
        "mismatches": count,
        "total": int(expected.numel()),
        "max_abs_diff": float(finite.max()) if finite.numel() else float("nan"),
        "nan_count": int(g.isnan().sum()),
    }


def max_abs_diff(expected: list[Any], got: list[Any]) -> float:
    worst = 0.0
    for e, g in zip(expected, got, strict=True):
        if isinstance(e, torch.Tensor) and isinstance(g, torch.Tensor) and e.numel():
            worst = max(worst, float((g.to(torch.float64) - e.to(g.device, torch.float64)).abs().max()))
    return worst


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for dim in reversed(shape):
        out.append(int(flat % dim) if dim else 0)
        flat = flat // dim if dim else 0
    return list(reversed(out))


def same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equal values (NaN equals NaN), same shape and dtype; compared on a's device."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    b = b.to(a.device)
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool((a == b).all())


def compare_outputs(expected: list[Any], got: list[Any], atol: float, rtol: float) -> dict[str, Any] | None:
    if len(got) != len(expected):
        return {"output": "output", "error": f"returns {len(got)} outputs, the Model returns {len(expected)}"}
    for k, (e, g) in enumerate(zip(expected, got, strict=True)):
        bad = compare(e, g, atol, rtol)
        if bad is not None:
            return {"output": "output" if len(expected) == 1 else f"output[{k}]", **bad}
    return None
