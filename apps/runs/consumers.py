"""The live event stream of one run.

Join the group first, then replay from the DB after the client's last seq,
then stream. Live messages only signal; the DB log decides what is sent, so a
message lost by the layer (or sent by a process the layer does not reach, as
in the embedded mode) is filled in from the table. Clients drop duplicates by seq.
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth.models import AnonymousUser

from apps.runs.events import group_name
from apps.runs.selectors import events_after, run_for_user

BATCH = 500


class RunEventsConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.poller = None
        self.group = None
        # Anonymous visitors may follow a public run; run_for_user decides (a private run is refused).
        user = self.scope.get("user") or AnonymousUser()
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if await database_sync_to_async(run_for_user)(user, self.run_id) is None:
            await self.close(code=4403)
            return
        after = parse_qs(self.scope.get("query_string", b"").decode()).get("after", ["0"])[0]
        if not after.isdigit():
            await self.close(code=4400)
            return
        self.last_seq = int(after)
        self.lock = asyncio.Lock()
        self.group = group_name(self.run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.catch_up()
        self.poller = asyncio.create_task(self.poll())

    async def disconnect(self, code):
        if self.poller:
            self.poller.cancel()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        # Clients may ping to keep proxies from closing an idle socket; nothing else is accepted.
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong", "seq": self.last_seq})

    async def run_event(self, message):
        seq = message["event"]["seq"]
        async with self.lock:
            if seq <= self.last_seq:
                return
            if seq == self.last_seq + 1:
                await self.send_json(message["event"])
                self.last_seq = seq
                return
        await self.catch_up()  # a gap: some events did not come through the layer

    async def catch_up(self):
        async with self.lock:
            while True:
                events = await database_sync_to_async(events_after)(self.run_id, self.last_seq, BATCH)
                for event in events:
                    await self.send_json(event.as_message())
                    self.last_seq = event.seq
                if len(events) < BATCH:
                    return

    async def poll(self):
        while True:
            await asyncio.sleep(settings.EVENT_POLL_SECONDS)
            await self.catch_up()
