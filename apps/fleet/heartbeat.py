"""The worker side of the registry: Celery signal receivers, active only in worker processes.

`worker_ready` (main process, once the consumer listens) starts a daemon thread that registers the
worker with its GPU facts and then stamps `last_seen` every WORKER_HEARTBEAT_SECONDS. It lives in
the main process, not in the pool children, so a child busy with a four-hour run, or killed and
replaced, never interrupts the heartbeat; a worker whose main process dies (OOM-killed, host down)
simply stops beating and is shown dead after WORKER_DEAD_AFTER_BEATS intervals. A clean shutdown
says so at once. `task_prerun`/`task_postrun` (where the task runs) record the current run.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

from celery import signals
from django.conf import settings
from django.db import connection

from apps.fleet.services import (
    WorkerFacts,
    worker_beat,
    worker_register,
    worker_run_finished,
    worker_run_started,
    worker_stopped,
)
from apps.runs.dispatch import EVALUATE_MANUAL_TURN, EXECUTE_RUN
from apps.runs.models import Turn
from worker.engine import toolchain

logger = logging.getLogger(__name__)


def _run_of_turn(turn_id: int) -> int | None:
    return Turn.objects.filter(pk=turn_id).values_list("run_id", flat=True).first()


# Tasks that occupy a GPU worker for a run, and how to find the run from their argument.
RUN_TASKS = {
    EXECUTE_RUN: lambda run_id: run_id,
    EVALUATE_MANUAL_TURN: _run_of_turn,
}


def _queue_names(consumer) -> tuple[str, ...]:
    task_consumer = getattr(consumer, "task_consumer", None)
    queues = task_consumer.queues if task_consumer is not None else consumer.app.amqp.queues.consumer_queues
    return tuple(sorted(q.name for q in queues))


class Heartbeat:
    def __init__(self, consumer):
        self.consumer = consumer
        self.name = consumer.hostname
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kernelweb-heartbeat", daemon=True)

    def facts(self) -> WorkerFacts:
        chain = toolchain.detect()  # cached per process; the pipeline reuses it
        gpu = chain.gpu
        controller = getattr(self.consumer, "controller", None)
        return WorkerFacts(
            name=self.name, host=socket.gethostname(), pid=os.getpid(), queues=_queue_names(self.consumer),
            concurrency=getattr(controller, "concurrency", None) or 1,
            gpu_index=gpu.index if gpu else None, gpu_name=gpu.name if gpu else "",
            gpu_uuid=gpu.uuid if gpu else "", driver=gpu.driver if gpu else "", nvcc_version=chain.nvcc_version,
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        try:
            worker_stopped(self.name)
        except Exception:  # noqa: BLE001 - shutting down regardless; the missed beats tell the same story
            logger.warning("could not record the shutdown of %s", self.name, exc_info=True)
        finally:
            connection.close()

    def _loop(self) -> None:
        registered = False
        while True:
            try:
                if not registered:
                    worker_register(self.facts())
                    registered = True
                    logger.info("worker %s registered (heartbeat every %s s)", self.name,
                                settings.WORKER_HEARTBEAT_SECONDS)
                elif not worker_beat(self.name, _queue_names(self.consumer)):
                    registered = False
                    continue
            except Exception:  # noqa: BLE001 - a database outage must not stop the worker; the next beat retries
                logger.warning("heartbeat of %s failed", self.name, exc_info=True)
            finally:
                # A fresh connection per beat: rides out database restarts, and holds nothing
                # open that the pool children would inherit when they are forked.
                connection.close()
            if self._stop.wait(settings.WORKER_HEARTBEAT_SECONDS):
                return


_heartbeat: Heartbeat | None = None


@signals.worker_ready.connect
def _start_heartbeat(sender, **kwargs) -> None:
    global _heartbeat
    if _heartbeat is None:
        _heartbeat = Heartbeat(sender)
        _heartbeat.start()


@signals.worker_shutdown.connect
def _stop_heartbeat(sender, **kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()


def _run_id(task, args) -> int | None:
    resolve = RUN_TASKS.get(getattr(task, "name", ""))
    if resolve is None or not args or getattr(task.request, "is_eager", False):
        return None
    return resolve(args[0])


@signals.task_prerun.connect
def _run_started(sender=None, task=None, args=None, **kwargs) -> None:
    try:
        run_id = _run_id(task, args)
        if run_id is not None:
            worker_run_started(task.request.hostname, run_id)
    except Exception:  # noqa: BLE001 - the registry is informational; the run goes ahead
        logger.warning("could not record the current run", exc_info=True)


@signals.task_postrun.connect
def _run_finished(sender=None, task=None, args=None, **kwargs) -> None:
    try:
        run_id = _run_id(task, args)
        if run_id is not None:
            worker_run_finished(task.request.hostname, run_id)
    except Exception:  # noqa: BLE001 - as above
        logger.warning("could not clear the current run", exc_info=True)
