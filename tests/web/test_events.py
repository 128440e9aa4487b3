import threading

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import close_old_connections, transaction

from apps.runs.events import event_append, group_name
from apps.runs.models import RunEvent
from apps.runs.selectors import events_after


@pytest.fixture
def in_memory_layer(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield get_channel_layer()
    channel_layers.backends.clear()


def _subscribe(layer, run_id):
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group_name(run_id), channel)
    return channel


@pytest.mark.django_db
def test_events_get_consecutive_seqs_and_replay_in_order(make_run, user):
    run = make_run(user)  # seq 1: run.queued
    for i in range(5):
        event_append(run.pk, "turn.started", {"i": i})
    assert [e.seq for e in events_after(run.pk, 0)] == [1, 2, 3, 4, 5, 6]
    assert [e.payload["i"] for e in events_after(run.pk, 3)] == [2, 3, 4]
    assert events_after(run.pk, 6) == []


@pytest.mark.django_db
def test_replay_honours_the_batch_limit(make_run, user):
    run = make_run(user)
    for _ in range(9):
        event_append(run.pk, "x")
    assert [e.seq for e in events_after(run.pk, 2, limit=3)] == [3, 4, 5]


@pytest.mark.django_db
def test_event_for_a_missing_run_is_refused():
    from apps.runs.models import Run

    with pytest.raises(Run.DoesNotExist):
        event_append(987654, "x")


@pytest.mark.django_db
def test_event_is_published_only_after_commit(make_run, user, in_memory_layer, django_capture_on_commit_callbacks):
    run = make_run(user)
    channel = _subscribe(in_memory_layer, run.pk)
    with django_capture_on_commit_callbacks(execute=True):
        event = event_append(run.pk, "compile.finished", {"ok": True})
    message = async_to_sync(in_memory_layer.receive)(channel)
    assert message["event"] == event.as_message()


@pytest.mark.django_db
def test_rolled_back_event_is_neither_stored_nor_published(make_run, user, in_memory_layer):
    run = make_run(user)
    channel = _subscribe(in_memory_layer, run.pk)
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            event_append(run.pk, "doomed")
            raise RuntimeError("boom")
    assert not RunEvent.objects.filter(run=run, type="doomed").exists()
    assert in_memory_layer.channels.get(channel) is None or in_memory_layer.channels[channel].qsize() == 0


@pytest.mark.django_db(transaction=True)
def test_concurrent_appenders_get_unique_gapless_seqs(make_run, user):
    run = make_run(user)
    barrier = threading.Barrier(4)

    def append_many():
        try:
            barrier.wait()
            for _ in range(10):
                event_append(run.pk, "tick")
        finally:
            close_old_connections()

    threads = [threading.Thread(target=append_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, 42))
