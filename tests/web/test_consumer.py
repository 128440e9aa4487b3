"""The run event websocket, through the real ASGI stack (origin check, session auth, router)."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.test import Client

from apps.runs.events import event_append
from apps.runs.models import Run, RunEvent
from kernelweb.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def layer(request, settings):
    if request.param == "memory":
        settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    else:
        url = request.getfixturevalue("redis_url")
        settings.CHANNEL_LAYERS = {
            "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [url]}}
        }
    channel_layers.backends.clear()
    yield request.param
    channel_layers.backends.clear()


@pytest.fixture
def slow_poll(settings):
    settings.EVENT_POLL_SECONDS = 60  # live delivery must come through the layer, not the DB tail


def _headers(user=None, origin="http://testserver"):
    headers = [(b"origin", origin.encode())]
    if user is not None:
        client = Client()
        client.force_login(user)
        headers.append((b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()))
    return headers


async def _connect(run_id, user=None, after=None, origin="http://testserver"):
    path = f"/ws/runs/{run_id}/events/" + (f"?after={after}" if after is not None else "")
    headers = await database_sync_to_async(_headers)(user, origin)
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    return communicator, connected


async def _receive_seqs(communicator, count):
    return [(await communicator.receive_json_from(timeout=5))["seq"] for _ in range(count)]


async def test_anonymous_is_refused_a_private_run(layer, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    communicator, connected = await _connect(run.pk)
    assert not connected
    await communicator.disconnect()


async def test_anonymous_may_follow_a_public_run(layer, make_run, user):
    run = await database_sync_to_async(make_run)(user, is_public=True)
    communicator, connected = await _connect(run.pk)
    assert connected
    message = await communicator.receive_json_from(timeout=5)
    assert message["type"] == "run.queued" and message["text"].startswith("Run queued")
    await communicator.disconnect()


async def test_a_user_who_is_not_the_owner_is_refused(layer, make_run, user, other_user):
    run = await database_sync_to_async(make_run)(user)
    communicator, connected = await _connect(run.pk, other_user)
    assert not connected
    await communicator.disconnect()


async def test_public_runs_stream_to_other_signed_in_users(layer, make_run, user, other_user):
    run = await database_sync_to_async(make_run)(user, is_public=True)
    communicator, connected = await _connect(run.pk, other_user)
    assert connected
    assert await _receive_seqs(communicator, 1) == [1]
    await communicator.disconnect()


async def test_foreign_origin_is_refused(layer, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    communicator, connected = await _connect(run.pk, user, origin="http://evil.example")
    assert not connected
    await communicator.disconnect()


async def test_malformed_after_is_refused(layer, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    communicator, connected = await _connect(run.pk, user, after="-1")
    assert not connected
    await communicator.disconnect()


async def test_replays_events_after_the_given_seq_in_order(layer, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    for i in range(4):
        await database_sync_to_async(event_append)(run.pk, "step", {"i": i})
    communicator, connected = await _connect(run.pk, user, after=2)
    assert connected
    assert await _receive_seqs(communicator, 3) == [3, 4, 5]
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_streams_live_events_through_the_layer(layer, slow_poll, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    communicator, connected = await _connect(run.pk, user)
    assert await _receive_seqs(communicator, 1) == [1]
    for i in range(3):
        await database_sync_to_async(event_append)(run.pk, "live", {"i": i})
    events = [await communicator.receive_json_from(timeout=5) for _ in range(3)]
    assert [(e["seq"], e["type"], e["payload"]["i"]) for e in events] == [
        (2, "live", 0), (3, "live", 1), (4, "live", 2)
    ]
    await communicator.disconnect()


def _append_without_publishing(run_id, type):
    """What an event written by another process looks like here: a row, and no layer message."""
    run = Run.objects.get(pk=run_id)
    run.last_event_seq += 1
    run.save(update_fields=["last_event_seq"])
    return RunEvent.objects.create(run=run, seq=run.last_event_seq, type=type)


async def test_db_tail_delivers_events_that_never_reach_the_layer(settings, make_run, user):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.EVENT_POLL_SECONDS = 0.1
    channel_layers.backends.clear()
    run = await database_sync_to_async(make_run)(user)
    communicator, _ = await _connect(run.pk, user)
    assert await _receive_seqs(communicator, 1) == [1]
    await database_sync_to_async(_append_without_publishing)(run.pk, "from-worker")
    event = await communicator.receive_json_from(timeout=5)
    assert (event["seq"], event["type"]) == (2, "from-worker")
    await communicator.disconnect()


async def test_a_gap_in_live_messages_is_filled_from_the_db(layer, slow_poll, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    communicator, _ = await _connect(run.pk, user)
    assert await _receive_seqs(communicator, 1) == [1]
    await database_sync_to_async(_append_without_publishing)(run.pk, "lost")  # seq 2, its message lost
    await database_sync_to_async(event_append)(run.pk, "arrives")  # seq 3 arrives live and reveals the gap
    events = [await communicator.receive_json_from(timeout=5) for _ in range(2)]
    assert [(e["seq"], e["type"]) for e in events] == [(2, "lost"), (3, "arrives")]
    await communicator.disconnect()


async def test_a_reconnecting_client_loses_nothing(layer, slow_poll, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    first, _ = await _connect(run.pk, user)
    assert await _receive_seqs(first, 1) == [1]
    await first.disconnect()
    for _ in range(3):  # appended while the client is away
        await database_sync_to_async(event_append)(run.pk, "while-away")
    second, _ = await _connect(run.pk, user, after=1)
    assert await _receive_seqs(second, 3) == [2, 3, 4]
    await database_sync_to_async(event_append)(run.pk, "after-reconnect")
    assert await _receive_seqs(second, 1) == [5]
    await second.disconnect()


async def test_ping_is_answered_with_the_last_seq(layer, make_run, user):
    run = await database_sync_to_async(make_run)(user)
    communicator, _ = await _connect(run.pk, user)
    await _receive_seqs(communicator, 1)
    await communicator.send_json_to({"type": "ping"})
    assert await communicator.receive_json_from(timeout=5) == {"type": "pong", "seq": 1}
    await communicator.disconnect()
    await asyncio.sleep(0)
