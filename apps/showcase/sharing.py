"""Share links: an immutable, content-addressed snapshot of two turns of a run (Compiler Explorer style).

The snapshot holds only what the public page shows (task, GPU, the two codes and their per-size
results). Its key is derived from its content, so the same pair shared twice is one link, and the
page never reads the run again: deleting the run or editing a turn later changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import math

from django.core.exceptions import PermissionDenied

from apps.runs.models import Run, Turn
from apps.runs.selectors import run_for_user
from apps.showcase.models import ShareLink
from apps.showcase.selectors import param_order, turn_label, turn_measurements

KEY_LENGTH = 20
SNAPSHOT_VERSION = 1


def _turn_snapshot(turn: Turn) -> dict:
    return {
        "label": turn_label(turn), "kind": turn.kind, "round": turn.round_index, "debug": turn.debug_index,
        "score": turn.score if turn.score is not None and math.isfinite(turn.score) else None,
        "valid": turn.valid, "verdict": turn.verdict, "code": turn.code, "sizes": turn_measurements(turn),
    }


def share_snapshot(run: Run, turn_a: Turn, turn_b: Turn) -> dict:
    task = run.task
    return {
        "version": SNAPSHOT_VERSION,
        "task": {"slug": task.slug, "suite": task.suite, "operator": task.operator, "precision": task.precision,
                 "title": task.title, "category": task.category, "params": param_order(task),
                 "backend": task.backend},
        "run": run.pk,
        "gpu": run.gpu_name,
        "a": _turn_snapshot(turn_a),
        "b": _turn_snapshot(turn_b),
    }


def snapshot_key(snapshot: dict) -> str:
    """First 20 hex digits of sha256 over the canonical JSON (sorted keys, no spaces, no NaN)."""
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:KEY_LENGTH]


def share_create(user, run: Run, turn_a: Turn, turn_b: Turn) -> ShareLink:
    """The link for this pair: the existing one if the same content was shared before.

    Raises PermissionDenied if `user` cannot see the run, ValueError if a turn is not the run's.
    """
    visible = run_for_user(user, run.pk)
    if visible is None:
        raise PermissionDenied("no such run, or it is not shared with you")
    if turn_a.run_id != visible.pk or turn_b.run_id != visible.pk:
        raise ValueError("both turns must belong to the shared run")
    snapshot = share_snapshot(visible, turn_a, turn_b)
    key = snapshot_key(snapshot)
    # get_or_create retries the read after a concurrent insert of the same key (unique constraint).
    link, _ = ShareLink.objects.get_or_create(
        key=key, defaults={"snapshot": snapshot, "run": visible, "created_by": user}
    )
    return link
