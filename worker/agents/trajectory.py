"""Headless runs: the pipeline without Django, writing the whole trajectory to one JSON file.

`python -m worker optimize --task vector_add --llm demo/scripts/vector_add_demo.json --out t.json`
runs the pipeline on this machine's GPU with an LLM endpoint (a base URL) or a script (served by the
in-process scripted server). `manage.py import_trajectory t.json` loads the file into the database:
this is how runs made on GPU hosts without the web app, and demo data, get in.

Format (version 1): {"format": "kernelweb-trajectory", "version": 1, "task", "suite", "precision",
"config", "gpu", "toolchain", "created", "result", "turns": [turn...], "events": [{type, payload}...]}
where a turn is TurnRecord's fields with "evaluation" as Evaluation.to_dict() and "agent_calls".
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import sys
from pathlib import Path
from typing import Any

FORMAT, VERSION = "kernelweb-trajectory", 1


class TrajectorySink:
    """Collects what the pipeline reports, in order; optionally echoes a progress line per event."""

    def __init__(self, echo=None):
        self.turns: dict[tuple[int, int], dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.echo = echo

    def event(self, type: str, payload: dict[str, Any]) -> None:
        self.events.append({"type": type, "payload": payload})
        if self.echo:
            self.echo(_progress_line(type, payload))

    def turn(self, record) -> None:
        calls = self.turns.get(record.key, {}).get("agent_calls", [])
        data = dataclasses.asdict(dataclasses.replace(record, evaluation=None))
        data["evaluation"] = record.evaluation.to_dict() if record.evaluation is not None else None
        data["agent_calls"] = calls
        self.turns[record.key] = data

    def agent_call(self, turn: tuple[int, int], record) -> None:
        self.turns[turn]["agent_calls"].append(dataclasses.asdict(record))

    def cancelled(self) -> bool:
        return False

    def document(self, *, spec, precision, config, result, chain) -> dict[str, Any]:
        config_dict = dataclasses.asdict(config)
        config_dict.pop("eval_options", None)
        return {
            "format": FORMAT,
            "version": VERSION,
            "task": spec.name,
            "suite": spec.suite,
            "precision": precision,
            "config": config_dict,
            "gpu": chain.gpu.name if chain.gpu else "",
            "toolchain": chain.describe(),
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "result": {k: v for k, v in dataclasses.asdict(result).items() if k != "baseline"},
            "turns": [self.turns[k] for k in sorted(self.turns)],
            "events": self.events,
        }


def _progress_line(type: str, payload: dict[str, Any]) -> str:
    where = f"[{payload['round']}.{payload['debug']}]" if "round" in payload else "     "
    if type == "agent.finished":
        return f"{where} {payload['role']:<8} {payload['tokens_in']}+{payload['tokens_out']} tokens"
    if type == "turn.finished":
        score = f"P={payload['score']:.3f}" if payload.get("score") is not None else ""
        return f"{where} turn {payload['kind']}: {payload['verdict']} {score} {payload.get('reason', '')[:100]}"
    if type == "compile.finished":
        return f"{where} compile {'ok' if payload['ok'] else 'FAILED'}: {payload['command']}"
    return f"{where} {type}"


def load(path: str | Path) -> dict[str, Any]:
    """Read and check a trajectory file; ValueError says what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read a trajectory: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a KernelWeb trajectory (format field missing or wrong)")
    if data.get("version") != VERSION:
        raise ValueError(f"{path}: trajectory version {data.get('version')!r}; this KernelWeb reads {VERSION}")
    for key in ("task", "suite", "precision", "config", "result", "turns", "events"):
        if key not in data:
            raise ValueError(f"{path}: trajectory lacks '{key}'")
    return data


def run_optimize(args) -> int:
    """The `optimize` command (argument parsing lives in worker/cli.py)."""
    from testing.scripted_llm import ScriptedLLM
    from worker.agents.llm import OpenAIChatClient, PriceTable
    from worker.agents.pipeline import Pipeline, PipelineConfig
    from worker.agents.prompts import HardwareInfo
    from worker.engine import toolchain as tc
    from worker.engine.context import EvalOptions
    from worker.registry import discover_tasks

    found = discover_tasks(Path(args.tasks_root))
    spec = next((s for s in found.specs if args.task in (s.name, f"{s.suite}/{s.name}")), None)
    if spec is None or args.precision not in spec.precisions:
        print(f"error: no task {args.task!r} with precision {args.precision} under {args.tasks_root}", file=sys.stderr)
        return 2
    chain = tc.detect()
    if chain.gpu is None:
        print(f"error: the pipeline needs a GPU to evaluate kernels, and there is none here ({chain.gpu_reason})",
              file=sys.stderr)
        return 3
    config = PipelineConfig(
        model=args.model, rounds=args.rounds, debug_rounds=args.debug_rounds, profile_mode=args.profile,
        timing_protocol="queued" if args.queued_timing else "synchronized",
        temperature=args.temperature, use_compiler_agent=not args.no_compiler_agent,
        eval_options=EvalOptions(iters=args.iters, seeds=args.seeds),
    )
    server = None
    base_url = args.llm
    if args.llm.endswith(".json"):
        server = ScriptedLLM(args.llm).start()
        base_url = server.base_url
    try:
        client = OpenAIChatClient(base_url, args.api_key or "none", args.model,
                                  prices=PriceTable.load(args.prices) if args.prices else None)
        sink = TrajectorySink(echo=lambda line: print(line, file=sys.stderr, flush=True))
        result = Pipeline(spec, args.precision, config, client, sink,
                          hardware=HardwareInfo.from_gpu(chain.gpu), arch=chain.arch).run()
    finally:
        if server:
            server.stop()
    document = sink.document(spec=spec, precision=args.precision, config=config, result=result, chain=chain)
    Path(args.out).write_text(json.dumps(document, indent=1), encoding="utf-8")
    best = f"best turn {result.best_turn} P={result.best_score:.3f}" if result.best_score else "no valid turn"
    print(f"{result.status}: {best}; {result.turns} turns, {result.tokens_in + result.tokens_out} tokens, "
          f"${result.cost_usd:.4f}, {result.wall_seconds:.1f} s wall ({result.gpu_seconds:.1f} s GPU, "
          f"{result.llm_seconds:.1f} s LLM) -> {args.out}" + (f"\n{result.reason}" if result.reason else ""))
    return 0 if result.status == "succeeded" else 1
