"""Run events: stored first, then published on the channel layer after commit.

The DB log is the source of truth (channel layers deliver at most once); the
websocket consumer replays from it and uses the layer only to learn early.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from apps.runs.models import Run, RunEvent

logger = logging.getLogger(__name__)



def group_name(run_id: int) -> str:
    return f"run-{run_id}"


def event_append(run_id: int, type: str, payload: dict | None = None) -> RunEvent:
    """Store the run's next event and publish it once the transaction commits."""
    payload = payload or {}
    with transaction.atomic():
        # The UPDATE takes the run's row lock (PostgreSQL) or the write lock (SQLite),
        # so concurrent appenders get consecutive, unique seqs.
        updated = Run.objects.filter(pk=run_id).update(last_event_seq=F("last_event_seq") + 1)
        if not updated:
            raise Run.DoesNotExist(f"run {run_id} does not exist")
        seq = Run.objects.filter(pk=run_id).values_list("last_event_seq", flat=True).get()
        event = RunEvent.objects.create(run_id=run_id, seq=seq, type=type, payload=payload)
        transaction.on_commit(lambda: publish(event))
    return event


def publish(event: RunEvent) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(event.run_id), {"type": "run.event", "event": event.as_message()}
        )
    except Exception:  # noqa: BLE001 - a broken layer must not fail the run; the DB log still has it
        logger.exception("could not publish event %s of run %s", event.seq, event.run_id)
