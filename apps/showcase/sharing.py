"""Share links: an immutable snapshot of two turns of a run (Compiler Explorer style).

The snapshot holds only what the public page shows (task, GPU, the two codes and their per-size
results); the page never reads the run again: deleting the run or editing a turn later changes nothing.
Its key is random (`secrets.token_urlsafe`, 120 bits), so nobody can compute a link from content they
know or guess; the same user sharing the same content again gets their earlier link back. Links made
before keys were random keep their content-derived keys and keep working.
"""

from __future__ import annotations

import hashlib
import json
import math
import secrets

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


def new_key() -> str:
    """A random key: 15 bytes, 20 URL-safe characters (the column's length)."""
    return secrets.token_urlsafe(15)


def snapshot_key(snapshot: dict) -> str:
    """How keys were made before they were random: the first 20 hex digits of sha256 over the canonical JSON
    (sorted keys, no spaces, no NaN). Kept to recognise such links; no longer used for new ones."""
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:KEY_LENGTH]


def share_create(user, run: Run, turn_a: Turn, turn_b: Turn) -> ShareLink:
    """A new link for this pair under a random key, or this user's earlier link to the same content.

    Raises PermissionDenied if `user` cannot see the run, ValueError if a turn is not the run's.
    """
    visible = run_for_user(user, run.pk)
    if visible is None:
        raise PermissionDenied("no such run, or it is not shared with you")
    if turn_a.run_id != visible.pk or turn_b.run_id != visible.pk:
        raise ValueError("both turns must belong to the shared run")
    snapshot = share_snapshot(visible, turn_a, turn_b)
    canonical = _canonical(snapshot)
    for earlier in ShareLink.objects.filter(run=visible, created_by=user):
        if _canonical(earlier.snapshot) == canonical:
            return earlier
    return ShareLink.objects.create(key=new_key(), snapshot=snapshot, run=visible, created_by=user)


def _canonical(snapshot: dict) -> str:
    return json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
