"""The child program of a KernelBench ("pytorch") evaluation: runs a task's Model and a candidate's ModelNew.

Standalone on purpose (the standard library and torch only, never `worker`): it runs sandboxed with a
scrubbed environment, and the candidate it imports is untrusted. It writes its JSON only to --out, so
whatever the candidate prints on stdout cannot forge a result; exit code 0 means that JSON is complete.
On an exception it writes {"error": "<type>: <message>", "kind", "phase", "traceback"} and exits 1.
Before each risky step it checkpoints {"incomplete": true, "phase": ...} so a process that dies still says where.

Modes (KernelBench's protocol, as docs/evaluation.md describes it under PyTorch tasks):
  build     import the candidate: load_inline compiles (TORCH_EXTENSIONS_DIR caches the build)
  check     Model and ModelNew from the same seed; per trial fresh seeded inputs, the reference on a
            clone, the allocator poisoned (0xFF: NaN for every float type) so an unwritten output fails,
            the candidate on another clone, device synchronized, outputs compared, inputs unchanged
  time      warm-up, then timed calls, each on fresh inputs (torch_timed.py) with L2 flushed before it,
            CUDA events with a device-wide synchronize before the end event (work on any stream is
            covered); a candidate's every timed call is checked against the Model; the candidate is also timed
            without that synchronize once, to report how much work escapes the current stream; it reports
            the raw per-call times (samples_ms, host_ms): the worker computes the statistics
  profile   one candidate call inside an NVTX range, bracketed by cudaProfilerStart/Stop, for ncu
  validate  the reference alone: deterministic under a seed, finite outputs; saves trial 0's outputs
  validate_cpu  the reference in float64 on the CPU against the saved device outputs
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

_STATE: dict[str, Any] = {"out": None, "phase": "start"}


# ---------------------------------------------------------------- plumbing


def _write(data: dict[str, Any]) -> None:
    out = _STATE["out"]
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str, allow_nan=True), encoding="utf-8")
    os.replace(tmp, out)  # never a half-written file for the engine to read


def checkpoint(phase: str) -> None:
    _STATE["phase"] = phase
    _write({"incomplete": True, "phase": phase})


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()  # the whole device: every stream the candidate may have used


def env_info(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {"torch": torch.__version__, "device": str(device)}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
    return info


class Task:
    """The reference module, the precision and the device; makes seeded inputs and models."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.device = torch.device(args.device)
        if self.device.type == "cuda":
            # fp32 means IEEE fp32: TF32 in the reference would make a 1e-4 tolerance meaningless.
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        self.dtype = torch.bfloat16 if args.precision == "bf16" else None
        checkpoint("import the task's model file")
        self.ref = load_module(Path(args.task_dir) / args.model, "kw_reference_model")
        torch.manual_seed(args.seed_base)
        self.init_inputs = list(self.ref.get_init_inputs())
        try:
            params = list(inspect.signature(self.ref.Model.forward).parameters)[1:]
        except (TypeError, ValueError):
            params = []
        self.input_names = params

    def inputs(self, seed: int) -> list[Any]:
        """Fresh inputs under `seed`, on the host, cast for the precision: the pristine copy."""
        torch.manual_seed(seed)
        return [self._host(x) for x in self.ref.get_inputs()]

    def drawn_on_device(self, seed: int) -> list[Any]:
        """Fresh inputs under `seed` drawn on the device itself (get_inputs() with the device as torch's default):
        for the timed calls, whose inputs need only be new and reproducible. Drawn on the host, a KernelBench-sized
        input took the GPU idle for half a second before every timed call, so each began at a lowered clock (CV
        20-28 %, docs/benchmarks.md)."""
        torch.manual_seed(seed)
        try:
            with torch.device(self.device):
                values = self.ref.get_inputs()
        except Exception:  # noqa: BLE001 - any get_inputs() that needs host tensors (numpy on them): drawn there
            return self.on_device(self.inputs(seed))
        return [self._cast(x.detach().to(self.device)) if isinstance(x, torch.Tensor) else x for x in values]

    def _host(self, x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        return self._cast(x.detach().to("cpu", copy=True))

    def _cast(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(self.dtype) if self.dtype is not None and x.is_floating_point() else x

    def on_device(self, values: list[Any]) -> list[Any]:
        return [v.to(self.device, copy=True) if isinstance(v, torch.Tensor) else v for v in values]

    def build(self, cls: type) -> torch.nn.Module:
        torch.manual_seed(self.args.seed_base)  # the same seed for Model and ModelNew: the same weights
        model = cls(*self.init_inputs).to(self.device)
        if self.dtype is not None:
            model = model.to(self.dtype)
        return model.eval()

    def input_label(self, i: int) -> str:
        return f"input {i} ({self.input_names[i]})" if i < len(self.input_names) else f"input {i}"


def outputs_of(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def to_host(values: list[Any]) -> list[Any]:
    return [v.detach().to("cpu", copy=True) if isinstance(v, torch.Tensor) else v for v in values]


def storage_bytes(values: list[Any]) -> list[int]:
    seen, sizes = set(), []
    for v in values:
        if isinstance(v, torch.Tensor) and v.device.type != "meta":
            storage = v.untyped_storage()
            if storage.data_ptr() not in seen and storage.nbytes() > 0:
                seen.add(storage.data_ptr())
                sizes.append(storage.nbytes())
    return sizes


def poison(device: torch.device, sizes: list[int]) -> None:
    """Refill freed memory with 0xFF bytes (NaN in every float type, -1 in integers) so a candidate that
    returns memory it never wrote (a torch.empty reusing the reference's freed output) gets garbage."""
    sizes = list(sizes)
    if device.type == "cuda":
        # Every free block the caching allocator holds, not just the outputs' own.
        for segment in torch.cuda.memory_snapshot():
            sizes += [b["size"] for b in segment.get("blocks", []) if b.get("state") == "inactive"]
    held = []
    for n in sorted(sizes, reverse=True):
        block = torch.empty(n, dtype=torch.uint8, device=device)
        block.fill_(0xFF)
        held.append(block)
    sync(device)
    del held


# ---------------------------------------------------------------- modes


def mode_build(args: argparse.Namespace) -> dict[str, Any]:
    start = time.monotonic()
    checkpoint("import the candidate (load_inline compiles)")
    try:
        module = load_module(Path(args.candidate), "kw_candidate")
    except BaseException as exc:  # noqa: BLE001 - a failed import is this mode's answer, not a crash
        text = f"{type(exc).__name__}: {exc}"
        chain = [exc, *_causes(exc)]
        compile_error = any(
            "Error building extension" in str(e) or type(e).__name__ == "CalledProcessError" for e in chain
        ) or any(s in text for s in ("ninja", "CUDA_HOME", "nvcc"))
        toolchain = _toolchain_problem(chain)
        return {
            "ok": False,
            "kind": "compile_error" if compile_error else "import_error",
            "error": toolchain or text,
            "traceback": "" if toolchain else traceback.format_exc()[-20000:],  # a broken host: its sentence only
            "seconds": time.monotonic() - start,
        }
    has_model_new = isinstance(getattr(module, "ModelNew", None), type)
    return {
        "ok": has_model_new,
        "kind": "" if has_model_new else "import_error",
        "error": "" if has_model_new else "the module defines no class ModelNew",
        "seconds": time.monotonic() - start,
        "env": env_info(torch.device("cpu")),
    }


def _toolchain_problem(chain: list[BaseException]) -> str:
    """What to do when torch's extension builder cannot start here ('' for a candidate's own error): its OSError
    about CUDA_HOME comes both from a CPU-only PyTorch and from a CUDA PyTorch that finds no nvcc."""
    if not any(isinstance(e, OSError) and "CUDA_HOME" in str(e) for e in chain):
        return ""
    fix = (f"its PyTorch {torch.__version__} is a CPU-only build. Install a CUDA build of PyTorch into "
           f"{sys.executable} (the wheel for your CUDA version, from pytorch.org)" if torch.version.cuda is None else
           f"PyTorch {torch.__version__} (CUDA {torch.version.cuda}) found no CUDA toolkit. Install it, or set "
           "CUDA_HOME to its root (the folder holding bin/nvcc),")
    return f"cannot build CUDA extensions on this host: {fix} and run again; the candidate itself was not compiled"


def _causes(exc: BaseException) -> list[BaseException]:
    out, seen = [], {id(exc)}
    while (exc := exc.__cause__ or exc.__context__) is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(exc)
    return out


# The comparison and the evidence stream (torch_verdict.py, loaded by path like torch_timed.py).
verdict: Any = None  # set in main()


def _onto(value: Any, device: torch.device) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value


def mode_outputs(args: argparse.Namespace) -> dict[str, Any]:
    """The candidate on every seeded trial; what it returned and left in its inputs goes to the reference's
    process (mode compare), which decides. Nothing is judged here."""
    task = Task(args)
    checkpoint("import the candidate")
    cand_mod = load_module(Path(args.candidate), "kw_candidate")
    stream = os.fdopen(args.evidence_fd, "wb")
    try:
        with torch.no_grad():
            checkpoint("construct ModelNew")
            cand = task.build(cand_mod.ModelNew)
            for trial in range(args.trials):
                pristine = task.inputs(args.seed_base + trial)
                # Free device memory poisoned (as the check in one process leaves the Model's freed outputs), so
                # an output the candidate allocates and never writes reads back as NaN.
                poison(task.device, storage_bytes(pristine) * 2)
                checkpoint(f"candidate forward, trial {trial}")
                cand_in = task.on_device(pristine)
                got = outputs_of(cand(*cand_in))
                sync(task.device)
                checkpoint(f"send the outputs, trial {trial}")
                verdict.send_evidence(stream, trial, got, cand_in)
                del got, cand_in
        stream.close()
    except BrokenPipeError as exc:  # the reference decided (a wrong trial) or failed, and closed its end
        raise verdict.EvidenceError("evidence_closed", "the reference process stopped reading") from exc
    return {"trials": args.trials, "env": env_info(task.device)}


def mode_compare(args: argparse.Namespace) -> dict[str, Any]:
    """The check, decided where the candidate never ran: the Model on each trial's inputs against what the
    candidate's process sent (mode outputs)."""
    with os.fdopen(args.evidence_fd, "rb") as stream:
        return _check(args, lambda task, trial, _pristine: verdict.receive_evidence(stream, trial))


def mode_check(args: argparse.Namespace) -> dict[str, Any]:
    """The check in one process (a crash's location and memcheck use it; the verdict comes from mode compare)."""
    checkpoint("import the candidate")
    cand_mod = load_module(Path(args.candidate), "kw_candidate")
    state: dict[str, Any] = {}

    def run_candidate(task: Task, trial: int, pristine: list[Any]) -> tuple[list[Any], list[Any]]:
        if "model" not in state:
            state["model"] = task.build(cand_mod.ModelNew)
        checkpoint(f"candidate forward, trial {trial}")
        cand_in = task.on_device(pristine)
        got = outputs_of(state["model"](*cand_in))
        sync(task.device)
        return got, cand_in

    return _check(args, run_candidate)


def _check(args: argparse.Namespace, candidate_of) -> dict[str, Any]:
    """Every trial: the Model's outputs (kept on the host) against the candidate's, which `candidate_of(task,
    trial, pristine)` returns with the inputs as the candidate left them."""
    task = Task(args)
    result: dict[str, Any] = {
        "correct": True,
        "trials": args.trials,
        "passed": 0,
        "first_mismatch": None,
        "inputs_unchanged": True,
        "changed_input": None,
        "reference_changes_inputs": [],
        "max_abs_diff": 0.0,
    }
    with torch.no_grad():
        checkpoint("construct Model")
        model = task.build(task.ref.Model)
        for trial in range(args.trials):
            seed = args.seed_base + trial
            pristine = task.inputs(seed)

            checkpoint(f"reference forward, trial {trial}")
            ref_in = task.on_device(pristine)
            ref_out = outputs_of(model(*ref_in))
            sync(task.device)
            expected = to_host(ref_out)  # kept off the device: nothing the candidate does can reach it
            ref_changed = {
                i: x.detach().to("cpu", copy=True)
                for i, x in enumerate(ref_in)
                if isinstance(x, torch.Tensor) and not verdict.same_tensor(x, pristine[i])
            }
            freed = storage_bytes(ref_out) + storage_bytes(ref_in)
            del ref_out, ref_in
            poison(task.device, freed)

            got, cand_in = candidate_of(task, trial, pristine)
            # Received values come on the host; on the device the comparison is fast (no copy when already there).
            got, cand_in = [_onto(v, task.device) for v in got], [_onto(v, task.device) for v in cand_in]
            checkpoint(f"compare, trial {trial}")
            result["outputs"] = [
                {"shape": list(e.shape), "dtype": str(e.dtype)} if isinstance(e, torch.Tensor) else repr(e)
                for e in expected
            ]
            mismatch = verdict.compare_outputs(expected, got, args.atol, args.rtol)
            if mismatch is not None:
                result.update(correct=False, first_mismatch={"trial": trial, "seed": seed, **mismatch})
                break
            result["max_abs_diff"] = max(result["max_abs_diff"], verdict.max_abs_diff(expected, got))
            changed = _changed_input(task, pristine, ref_changed, cand_in, args, result)
            if changed is not None:
                result.update(correct=False, inputs_unchanged=False, changed_input=changed)
                result["first_mismatch"] = {"trial": trial, "seed": seed, "error": f"the candidate modified {changed}"}
                break
            result["passed"] += 1
            del got, cand_in
    result["env"] = env_info(task.device)
    return result


def _changed_input(task: Task, pristine, ref_changed, cand_in, args, result) -> str | None:
    """The first input the candidate left different from what the reference Model leaves there."""
    for i, (p, c) in enumerate(zip(pristine, cand_in, strict=True)):
        if not isinstance(p, torch.Tensor):
            continue
        label = task.input_label(i)
        if i not in ref_changed:
            if not verdict.same_tensor(c, p):
                return label
            continue
        # The Model itself changes this input (an in-place op): the candidate must change it alike.
        if label not in result["reference_changes_inputs"]:
            result["reference_changes_inputs"].append(label)
        if verdict.compare(ref_changed[i], c, args.atol, args.rtol) is not None:
            return label + " (differently from the Model, which also changes it)"
    return None


def mode_time(args: argparse.Namespace) -> dict[str, Any]:
    timing = load_module(Path(__file__).with_name("torch_timed.py"), "kw_torch_timed")
    task = Task(args)
    if args.impl == "candidate":
        checkpoint("import the candidate")
        module = task.build(load_module(Path(args.candidate), "kw_candidate").ModelNew)
    else:
        module = task.build(task.ref.Model)
        if args.impl == "compile":
            checkpoint("torch.compile(Model)")
            module = torch.compile(module)
    inputs = task.on_device(task.inputs(args.seed_base))
    flush = timing.flush_buffer(task.device)
    result: dict[str, Any] = {"impl": args.impl}
    with torch.no_grad():
        checkpoint(f"warm-up ({args.impl})")  # for torch.compile this compiles: never timed

        def call():
            return module(*inputs)

        # By time as well as by count, as the C/CUDA harness does: an idle GPU starts at its idle clock (345 MHz
        # on an H200), and three calls of a millisecond leave the first timed calls slow (CV 30 %).
        started, calls = time.perf_counter(), 0
        while calls < max(args.warmup, 1) or ((time.perf_counter() - started) * 1e3 < args.warmup_ms and calls < 1000):
            call()
            sync(task.device)
            calls += 1
        result["warmup_calls"], result["warmup_ms"] = calls, (time.perf_counter() - started) * 1e3
        checkpoint(f"timed calls ({args.impl})")
        # Every timed call on fresh inputs in the same buffers; a candidate's outputs checked after each call.
        fresh = timing.FreshInputs(task, inputs)
        after = None
        if args.impl == "candidate":
            after = timing.checker(task.build(task.ref.Model), fresh, verdict.compare_outputs, outputs_of, args.atol,
                                   args.rtol)
        events, host, failed = timing.timed(call, task.device, args.iters, flush, True, fresh, after)
        # Raw per-call times: the worker turns them into statistics (worker.engine.timing, shared by all formats).
        result["samples_ms"], result["host_ms"] = events, host
        result["checked_calls"] = len(events) if after is not None else 0
        if failed is not None:
            result.update(correct=False, failed_call=failed["timed_call"], first_mismatch=failed)
            result["env"] = env_info(task.device)
            return result
        if args.impl == "candidate" and task.device.type == "cuda":
            # The same calls timed on the current stream only; what a device-wide sync adds beyond its own
            # cost (calibrated on an empty call) is work the candidate left on other streams.
            checkpoint("timed calls without the device-wide sync")
            n = max(1, min(args.iters, 50))
            synced, loose = timing.synced_and_loose(call, task.device, n, flush)
            idle_sync, idle_loose = timing.synced_and_loose(lambda: None, task.device, 20, None)
            # Medians: one slow call in 50 (a CV of 176 % on an H100) must not read as work on another stream.
            overhead = max(0.0, statistics.median(idle_sync) - statistics.median(idle_loose))
            loose_median = statistics.median(loose)
            result["unsynced_median_ms"] = loose_median
            result["sync_overhead_ms"] = overhead
            result["stream_gap"] = max(statistics.median(synced) - overhead, 0.0) / max(loose_median, 1e-4)
    result["env"] = env_info(task.device)
    return result


def mode_profile(args: argparse.Namespace) -> dict[str, Any]:
    task = Task(args)
    module = task.build(load_module(Path(args.candidate), "kw_candidate").ModelNew)
    inputs = task.on_device(task.inputs(args.seed_base))
    with torch.no_grad():
        module(*inputs)  # warm-up: lazy initialisation stays outside the profiled range
        sync(task.device)
        checkpoint("profiled call")
        if task.device.type == "cuda":
            torch.cuda.profiler.start()
            with torch.cuda.nvtx.range("kw_candidate"):
                module(*inputs)
                torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        else:
            module(*inputs)
    return {"ok": True, "env": env_info(task.device)}


def mode_validate(args: argparse.Namespace) -> dict[str, Any]:
    task = Task(args)
    result: dict[str, Any] = {"ok": True, "problems": [], "notes": [], "bitwise_deterministic": True}
    saved = None
    with torch.no_grad():
        for trial in range(args.trials):
            seed = args.seed_base + trial
            checkpoint(f"reference forward twice, trial {trial}")
            first = to_host(outputs_of(task.build(task.ref.Model)(*task.on_device(task.inputs(seed)))))
            sync(task.device)
            second = to_host(outputs_of(task.build(task.ref.Model)(*task.on_device(task.inputs(seed)))))
            sync(task.device)
            for k, (a, b) in enumerate(zip(first, second, strict=True)):
                if not isinstance(a, torch.Tensor):
                    continue
                if not verdict.same_tensor(a, b):
                    result["bitwise_deterministic"] = False
                    if verdict.compare(a, b, args.atol, args.rtol) is not None:
                        result["problems"].append(
                            f"output {k} differs between two runs with seed {seed} beyond the tolerance"
                        )
                if (a.is_floating_point() or a.is_complex()) and not bool(a.isfinite().all()):
                    bad = int((~a.isfinite()).sum())
                    result["problems"].append(f"output {k} has {bad} non-finite values at seed {seed}")
                if a.numel() and not bool(a.ne(0).any()):
                    result["notes"].append(f"output {k} is all zeros at seed {seed}: a trivial candidate passes")
            if trial == 0:
                saved = first
    if not result["bitwise_deterministic"]:
        result["notes"].append("the reference is not bitwise deterministic (within the tolerance)")
    result["ok"] = not result["problems"]
    result["notes"] = list(dict.fromkeys(result["notes"]))
    if args.save and saved is not None:
        nbytes = sum(t.numel() * t.element_size() for t in saved if isinstance(t, torch.Tensor))
        if nbytes <= 256 * 1024 * 1024:
            torch.save(saved, args.save)
            result["saved"] = args.save
        else:
            result["notes"].append(f"outputs of {nbytes >> 20} MiB not saved for the CPU float64 comparison")
    result["env"] = env_info(task.device)
    return result


def mode_validate_cpu(args: argparse.Namespace) -> dict[str, Any]:
    """The reference in float64 on the CPU (weights and inputs rounded to the precision first) against the
    device outputs that validate saved: does the device reference agree with the exact answer?"""
    args.device = "cpu"
    task = Task(args)
    device_out = torch.load(args.load, weights_only=True)
    with torch.no_grad():
        model = task.build(task.ref.Model).to(torch.float64)
        inputs = [
            x.to(torch.float64) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
            for x in task.inputs(args.seed_base)
        ]
        checkpoint("float64 reference forward")
        exact = outputs_of(model(*inputs))
    mismatch = None
    for k, (e, g) in enumerate(zip(exact, device_out, strict=True)):
        if isinstance(e, torch.Tensor) and isinstance(g, torch.Tensor):
            # Values only: a Model that casts its result (e.g. .float()) keeps that dtype even in float64 mode.
            bad = verdict.compare(e.to(torch.float64), g.to(torch.float64), args.atol, args.rtol)
            if bad is not None:
                output = f"output[{k}]" if len(exact) > 1 else "output"
                mismatch = {"trial": 0, "seed": args.seed_base, "output": output, **bad}
                break
    return {"agrees": mismatch is None, "first_mismatch": mismatch, "env": env_info(torch.device("cpu"))}


MODES = {"build": mode_build, "check": mode_check, "outputs": mode_outputs, "compare": mode_compare,
         "time": mode_time, "profile": mode_profile, "validate": mode_validate, "validate_cpu": mode_validate_cpu}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", required=True, choices=sorted(MODES))
    p.add_argument("--task-dir", required=True)
    p.add_argument("--model", default="model.py")
    p.add_argument("--candidate")
    p.add_argument("--impl", default="candidate", choices=("model", "candidate", "compile"))
    p.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    p.add_argument("--device", default="cuda")
    p.add_argument("--seed-base", type=int, default=20251122)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--warmup-ms", type=float, default=100.0, help="time mode: warm up for at least this long")
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--atol", type=float, default=1e-4)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--save", default="")
    p.add_argument("--load", default="")
    p.add_argument("--evidence-fd", type=int, default=-1, help="outputs/compare: the pipe the evaluator opened")
    p.add_argument("--out", required=True)
    return p.parse_args(argv)


def _kind(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "CUDA error" in text or "cudaError" in text or type(exc).__name__ == "AcceleratorError":
        return "cuda_error"
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return "out_of_memory"
    return "python_exception"


def main(argv: list[str] | None = None) -> int:
    global verdict
    verdict = load_module(Path(__file__).with_name("torch_verdict.py"), "kw_torch_verdict")
    args = parse(argv)
    _STATE["out"] = Path(args.out)
    try:
        result = MODES[args.mode](args)
    except verdict.EvidenceError as exc:
        _write({"error": str(exc), "kind": exc.kind, "phase": _STATE["phase"]})
        return 1
    except BaseException as exc:  # noqa: BLE001 - every failure becomes the JSON the engine reads
        _write({
            "error": f"{type(exc).__name__}: {exc}"[:20000],
            "kind": _kind(exc),
            "phase": _STATE["phase"],
            "traceback": traceback.format_exc()[-20000:],
        })
        return 1
    _write(result)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a candidate's extension (or a broken CUDA context) can crash in
    # destructors and turn a complete result into a nonzero exit.
    os._exit(code)
