"""PTX and SASS for turns stored without them (trajectories recorded before listings were kept, such as the
demo runs): compile the turn's code again on this machine with its recorded nvcc flags, compile only, and
read the object back with cuobjdump/nvdisasm (worker/engine/assembly.py; `make .cuda-libs/.ready` fetches
them where the toolkit lacks them). C/CUDA turns only: the other formats' builds have no single object.

Used by `manage.py import_trajectory --assembly`; nothing here runs a kernel, so no GPU is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from apps.runs.models import Run, Turn, TurnAssembly
from worker.engine import toolchain
from worker.engine.context import EvalOptions
from worker.registry import evaluate, load_task


@dataclass(frozen=True)
class BackfillReport:
    listed: int = 0  # turns that now have PTX or SASS
    skipped: tuple[str, ...] = ()  # why the others have none ("turn 1.0: ...")


def _command_flags(command: str) -> str:
    """The recorded nvcc command without what the build adds itself (files, -c, -o)."""
    return command.split(" -c ", 1)[0] if " -c " in command else command


def turns_without_assembly(run: Run) -> list[Turn]:
    return list(run.turns.filter(assembly__isnull=True).exclude(code="").order_by("round_index", "debug_index"))


def assembly_backfill(run: Run) -> BackfillReport:
    """Compile each of the run's C/CUDA turns that has code but no listing, and store its PTX/SASS."""
    if run.task.format.compile_flags is None:  # the format builds its own way (no nvcc command of a turn)
        return BackfillReport(skipped=(f"{run.task.backend} tasks have no single object to list",))
    chain = toolchain.detect()
    if not chain.nvcc:
        return BackfillReport(skipped=("nvcc is not installed here",))
    spec = load_task(Path(settings.TASKS_DIR) / run.task.spec_path)
    listed, skipped = 0, []
    for turn in turns_without_assembly(run):
        label = f"turn {turn.round_index}.{turn.debug_index}"
        if turn.kind == "baseline":
            continue  # the baseline's listing is the task's, not a turn's
        evaluation = evaluate(spec, run.task.precision, turn.code, _command_flags(turn.compile_command) or None,
                              EvalOptions(profile="none"), compile_only=True, chain=chain)
        listing = evaluation.compile
        if listing is None or not (listing.ptx or listing.sass):
            why = (listing.assembly_note if listing else "") or evaluation.reason or "nothing was compiled"
            skipped.append(f"{label}: {why}")
            continue
        TurnAssembly.objects.update_or_create(turn=turn, defaults={
            "ptx": listing.ptx, "sass": listing.sass, "note": listing.assembly_note[:500]})
        listed += 1
    return BackfillReport(listed, tuple(skipped))
