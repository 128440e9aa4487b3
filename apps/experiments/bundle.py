"""An experiment as a folder, for another installation: `experiment.json` (its configuration and members)
beside one trajectory file per run (apps/runs/trajectory_export.py, the format `import_trajectory` reads).

`manage.py export_experiment` writes the folder; `manage.py import_experiment` loads it: every run through
apps.runs.trajectory_import.trajectory_import, then the experiment and its members (every attempt, with its task and
seed), all in one transaction. The imported experiment's pages, analyses and downloads (success curves,
fast_p, per-operator, cost, bottleneck migration) are those of the original, so an experiment run on a GPU
host can be shipped as demo data.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from django.db import transaction

from apps.catalog.models import Task
from apps.experiments.models import Experiment, ExperimentRun
from apps.runs.trajectory_export import trajectory_export
from apps.runs.trajectory_import import TrajectoryImportError, timing_protocol_of, trajectory_import
from worker.agents.trajectory import load as load_trajectory

FORMAT, VERSION = "kernelweb-experiment", 1
MANIFEST = "experiment.json"
CONFIG_FIELDS = ("model", "agent_models", "rounds", "debug_rounds", "profile_mode", "timing_protocol", "temperature",
                 "seed", "time_budget_s", "token_budget", "cost_budget_usd")


class ExperimentBundleError(ValueError):
    """The experiment cannot be exported or imported as asked; the message says why."""


def _trajectory_name(member: ExperimentRun) -> str:
    task = member.task
    return f"{task.operator}_{task.precision}_seed{member.seed_index}_attempt{member.attempt}.json"


def experiment_export(experiment: Experiment, folder: str | Path) -> Path:
    """Write the experiment's manifest and one trajectory per member run into `folder`; returns the manifest.
    Refuses while a run is still queued or running (its trajectory would be incomplete)."""
    folder = Path(folder)
    members = list(experiment.members.select_related("task", "run").order_by(
        "task__suite", "task__category", "task__operator", "task__precision", "seed_index", "attempt"))
    active = [str(m.run.pk) for m in members if m.run is not None and m.run.is_active]
    if active:
        raise ExperimentBundleError(f"runs {', '.join(active)} have not finished; export once they have "
                                    "(or cancel them)")
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for member in members:
        name = None
        if member.run is not None:
            name = _trajectory_name(member)
            (folder / name).write_text(json.dumps(trajectory_export(member.run), indent=1) + "\n", encoding="utf-8")
        entries.append({"suite": member.task.suite, "task": member.task.operator, "precision": member.task.precision,
                        "seed_index": member.seed_index, "attempt": member.attempt, "trajectory": name})
    config = {name: getattr(experiment, name) for name in CONFIG_FIELDS}
    if config["cost_budget_usd"] is not None:
        config["cost_budget_usd"] = float(config["cost_budget_usd"])
    manifest = {
        "format": FORMAT, "version": VERSION, "name": experiment.name, "description": experiment.description,
        "selection": experiment.selection, "is_public": experiment.is_public, "seeds": experiment.seeds,
        "created": experiment.created_at.isoformat(timespec="seconds"), "config": config, "members": entries,
    }
    path = folder / MANIFEST
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return path


def load_manifest(path: str | Path) -> tuple[dict, Path]:
    """(manifest, its folder) from the folder or the experiment.json in it; ExperimentBundleError says what is wrong."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ExperimentBundleError(f"{path}: cannot read an experiment: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ExperimentBundleError(f"{path}: not a KernelWeb experiment (format field missing or wrong)")
    if data.get("version") != VERSION:
        raise ExperimentBundleError(f"{path}: experiment version {data.get('version')!r}; "
                                    f"this KernelWeb reads {VERSION}")
    for key in ("name", "config", "members", "seeds"):
        if key not in data:
            raise ExperimentBundleError(f"{path}: the experiment lacks '{key}'")
    return data, path.parent


def experiment_import(path: str | Path, *, owner, public: bool | None = None, force: bool = False) -> Experiment:
    """Load an exported experiment: its runs (owned by `owner`), the experiment and its members, all or none.
    `public` None keeps the exported flag. A run already imported is refused unless `force`
    (trajectory_import's rule), so importing the same folder twice needs it too."""
    data, folder = load_manifest(path)
    config = data["config"]
    is_public = bool(data.get("is_public")) if public is None else public
    try:
        timing = timing_protocol_of(config)
    except TrajectoryImportError as exc:
        raise ExperimentBundleError(f"{folder / MANIFEST}: {exc}") from None
    with transaction.atomic():
        cost = config.get("cost_budget_usd")
        experiment = Experiment.objects.create(
            name=data["name"], owner=owner, description=data.get("description", ""),
            selection=data.get("selection", "")[:500], is_public=is_public, seeds=data["seeds"],
            model=config.get("model", ""), agent_models=config.get("agent_models") or {},
            rounds=config.get("rounds", 0), debug_rounds=config.get("debug_rounds", 0),
            profile_mode=config.get("profile_mode", "filtered"), timing_protocol=timing,
            temperature=config.get("temperature", 0.0),
            seed=config.get("seed"), time_budget_s=config.get("time_budget_s"),
            token_budget=config.get("token_budget"),
            cost_budget_usd=Decimal(str(cost)) if cost is not None else None,
        )
        for member in data["members"]:
            task = Task.objects.filter(suite=member["suite"], operator=member["task"],
                                       precision=member["precision"]).first()
            if task is None:
                raise ExperimentBundleError(f"no task {member['suite']}/{member['task']}/{member['precision']} in "
                                            "the database; run `manage.py sync_tasks`")
            run = None
            if member.get("trajectory"):
                run = trajectory_import(load_trajectory(folder / member["trajectory"]), owner=owner,
                                        public=is_public, force=force)
            ExperimentRun.objects.create(experiment=experiment, task=task, seed_index=member.get("seed_index", 0),
                                         attempt=member.get("attempt", 0), run=run)
    return experiment
