"""The embedded broker (kernelweb/broker.py) under several processes at once, as a development host runs it: real
processes, real kombu, real files. kombu's own filesystem channel fails the first two tests (in a trial of 200
rounds of 8 processes binding at once: 346 errors and 123 corrupt exchange tables)."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

from django.conf import settings
from kombu import Connection, Exchange, Queue

TRANSPORT = "kernelweb.broker:Transport"


def _connection(folder: str) -> Connection:
    for sub in ("queue", "processed", "control"):  # as the settings make them
        Path(folder, sub).mkdir(parents=True, exist_ok=True)
    return Connection("filesystem://", transport=TRANSPORT, transport_options={
        "data_folder_in": f"{folder}/queue", "data_folder_out": f"{folder}/queue",
        "processed_folder": f"{folder}/processed", "control_folder": f"{folder}/control", "store_processed": False})


def _bind_in_rounds(folder: str, k: int, rounds: int, barrier, errors) -> None:
    with _connection(folder) as conn:
        channel = conn.channel()
        for r in range(rounds):
            barrier.wait()  # every process binds to the new exchange in the same moment
            try:
                Queue(f"q{k}", Exchange(f"x{r}", "direct"), routing_key=f"q{k}").declare(channel=channel)
            except Exception as exc:  # noqa: BLE001 - the error is the result
                errors.append(repr(exc))


def _produce(folder: str, k: int, n: int) -> None:
    with _connection(folder) as conn:
        queue = conn.SimpleQueue("work")
        for i in range(n):
            queue.put({"producer": k, "i": i, "body": "x" * (i % 7) * 1000})
        queue.close()


def _consume(folder: str, until: int, got) -> None:
    with _connection(folder) as conn:
        queue = conn.SimpleQueue("work")
        idle = 0
        while idle < 40 and len(got) < until:
            try:
                message = queue.get(block=True, timeout=0.05)
            except queue.Empty:
                idle += 1
                continue
            idle = 0
            got.append(json.dumps(message.payload, sort_keys=True))
            message.ack()
        queue.close()


def _run_together(*groups: tuple) -> list:
    """Start a process per (target, args) of every group, then wait for all of them; fresh interpreters (spawn),
    so nothing of this test process's state is shared."""
    ctx = mp.get_context("spawn")
    processes = [ctx.Process(target=target, args=args) for target, argsets in groups for args in argsets]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=120)
    return [p.exitcode for p in processes]


def test_processes_binding_to_one_new_exchange_at_once_all_succeed_and_leave_a_complete_table(tmp_path):
    n, rounds = 8, 40
    with mp.get_context("spawn").Manager() as manager:
        barrier, errors = manager.Barrier(n), manager.list()
        exits = _run_together((_bind_in_rounds, [(str(tmp_path), k, rounds, barrier, errors) for k in range(n)]))
        errors = list(errors)
    assert exits == [0] * n and errors == []
    tables = [json.loads(p.read_text()) for p in (tmp_path / "control").glob("x*.exchange")]
    assert len(tables) == rounds
    assert all(sorted(q for _, _, q in table) == [f"q{k}" for k in range(n)] for table in tables)


def test_messages_from_several_producers_reach_several_consumers_exactly_once_and_whole(tmp_path):
    producers, per_producer, consumers = 4, 150, 4
    with mp.get_context("spawn").Manager() as manager:
        got = manager.list()
        exits = _run_together((_consume, [(str(tmp_path), producers * per_producer, got)] * consumers),
                              (_produce, [(str(tmp_path), k, per_producer) for k in range(producers)]))
        received = list(got)
    assert exits == [0] * (consumers + producers)
    sent = {json.dumps({"producer": k, "i": i, "body": "x" * (i % 7) * 1000}, sort_keys=True)
            for k in range(producers) for i in range(per_producer)}
    assert len(received) == len(sent) and set(received) == sent  # none lost, none twice, none cut short
    assert not any(Path(tmp_path / "queue").iterdir())  # every claimed file removed


def test_a_file_under_the_name_a_message_is_written_to_is_not_taken(tmp_path):
    with _connection(str(tmp_path)) as conn:
        queue = conn.SimpleQueue("work")
        (tmp_path / "queue" / "1_partial.work.msg.partial").write_text('{"body": "half')
        try:
            queue.get(block=False)
            taken = True
        except queue.Empty:
            taken = False
        queue.close()
    assert not taken


def test_without_redis_the_app_uses_the_fixed_transport():
    assert settings.CELERY_BROKER_TRANSPORT == (None if settings.REDIS_URL else TRANSPORT)


def test_deleting_a_queue_removes_only_its_binding_from_the_exchange_table(tmp_path):
    exchange = Exchange("x", "direct")
    with _connection(str(tmp_path)) as conn:
        channel = conn.channel()
        for name in ("a", "b"):
            Queue(name, exchange, routing_key=name).declare(channel=channel)
        Queue("a", exchange, routing_key="a").bind(channel).delete()
    table = json.loads((tmp_path / "control" / "x.exchange").read_text())
    assert [q for _, _, q in table] == ["b"]
