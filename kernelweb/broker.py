"""The embedded broker used without Redis: kombu's filesystem transport, made safe for several processes at once
(the web server, a housekeeping worker and one worker per GPU all use it on a development host).

kombu's own channel has three races, each fixed here (docs/architecture.md, "Runtime modes"):
- `_queue_bind` creates a missing exchange table by opening it for writing and only then locking it, so a second
  process binding to the same exchange in that moment locks it first and reads an empty table: `JSONDecodeError`,
  and the worker stops with "Unrecoverable error" (two GPU workers of `manage.py gpu_workers` starting together
  did, 2026-11-29), or both write and the table is left corrupt. Here a table is created without truncation and
  read and written only under the lock; an empty one (just created by another process) reads as no bindings.
- `_put` writes a message under its final name, so a consumer listing the folder meanwhile can take a file not
  yet written. Here it is written under a name no consumer matches and renamed into place, complete.
- `_get` claims a message by moving it to the system's temporary folder; across file systems that is a copy and a
  delete, and two consumers can both deliver it. Here the claim is a rename inside the message's own folder,
  which exactly one consumer wins.
Redis, the production broker, is not affected.
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.transport.virtual import Empty
from kombu.utils.json import dumps, loads


def _bindings(text: bytes) -> list[filesystem.exchange_queue_t]:
    return [filesystem.exchange_queue_t(*q) for q in loads(text.decode())] if text.strip() else []


@contextmanager
def _locked(f, how: int):
    """kombu's advisory file lock (shared or exclusive) held for the block."""
    filesystem.lock(f, how)
    try:
        yield
    finally:
        filesystem.unlock(f)


class Channel(filesystem.Channel):
    def get_table(self, exchange):
        file = self._exchange_file(exchange)
        try:
            with file.open("rb") as f, _locked(f, filesystem.LOCK_SH):
                return _bindings(f.read())
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        self.control_folder.mkdir(exist_ok=True)
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._update_table(exchange, lambda queues: queues if entry in queues else [entry, *queues], create=True)

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs):
        # The virtual channel's own bookkeeping; kombu's filesystem step after it would read the table before
        # knowing it is complete, so the table is rewritten here instead.
        super(filesystem.Channel, self)._delete(queue, exchange, routing_key, pattern, *args, **kwargs)
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        self._update_table(exchange, lambda queues: [q for q in queues if q != entry], create=False)

    def _update_table(self, exchange, change, *, create: bool) -> None:
        """Read, change and rewrite an exchange table, all under its lock. `create`: a missing table is made
        (without truncation, so a process that opens it meanwhile finds it empty, never half-written)."""
        file = self._exchange_file(exchange)
        try:
            with file.open("ab+" if create else "rb+", buffering=0) as f, _locked(f, filesystem.LOCK_EX):
                f.seek(0)
                queues = _bindings(f.read())
                changed = change(queues)
                if changed != queues:
                    f.truncate(0)
                    f.seek(0)  # append mode ("ab+") writes at the end anyway, which is now the start
                    f.write(dumps(changed).encode())
        except FileNotFoundError:
            return  # only without `create`: the table was removed meanwhile, nothing bound to change
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc

    def _put(self, queue, payload, **kwargs):
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"  # kombu's naming: consumers match it
        folder = Path(self.data_folder_out)
        partial = folder / f"{name}.partial"  # ends in neither `.<queue>.msg`: no consumer takes it
        try:
            partial.write_bytes(dumps(payload).encode())
            os.replace(partial, folder / name)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise ChannelError(f"Cannot add file {name!r} to {folder}") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        inbox = Path(self.data_folder_in)
        for name in sorted(os.listdir(inbox)):
            if name.partition(".")[2] != wanted:
                continue
            mine = inbox / f"{name}.{os.getpid()}.claimed"  # the same folder: a rename, never a copy
            try:
                os.rename(inbox / name, mine)  # one consumer wins; the others find it gone and move on
            except OSError:
                continue
            try:
                payload = mine.read_bytes()
                if self.store_processed:
                    Path(self.processed_folder).mkdir(parents=True, exist_ok=True)
                    shutil.move(mine, Path(self.processed_folder) / name)  # a backup copy: may cross file systems
                else:
                    mine.unlink()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {mine} from queue {queue!r}") from exc
            return loads(payload.decode())
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel
