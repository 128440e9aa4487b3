"""A missing, unmigrated or corrupt database explained in one sentence instead of a traceback.

`explain(exc)` turns the driver's message into what to do; DatabaseErrorMiddleware answers a request that
hit such an error with a 503 page saying it, and manage.py prints it instead of the traceback.
Errors it does not recognise (a lock timeout, a lost connection...) are left to the usual handling.
"""

from __future__ import annotations

import json
import logging
import re
from html import escape

from django.db import DatabaseError, connections
from django.http import HttpResponse

logger = logging.getLogger(__name__)

MIGRATE = "run `python manage.py migrate`"


def _sqlite_path(alias: str = "default") -> str | None:
    try:
        database = connections.settings[alias]
    except Exception:  # noqa: BLE001 - no such alias, settings not configured: no path to name
        return None
    return str(database["NAME"]) if database.get("ENGINE", "").endswith("sqlite3") else None


def explain(exc: BaseException, alias: str = "default") -> str | None:
    """What to do about `exc`, or None when it is not a database-setup problem this module knows."""
    if not isinstance(exc, DatabaseError):
        return None
    text = str(exc)
    lowered = text.lower()
    path = _sqlite_path(alias)
    if "file is not a database" in lowered or "file is encrypted or is not a database" in lowered:
        return (f"the database file {path or '(unknown)'} is not a SQLite database: point SQLITE_PATH (or "
                "DATABASE_URL) at the right file, restore it from a backup, or move it away and "
                f"{MIGRATE} to create a new one")
    if "database disk image is malformed" in lowered:
        return (f"the database file {path or '(unknown)'} is corrupt (SQLite: database disk image is malformed): "
                "restore it from a backup")
    if "unable to open database file" in lowered:
        return (f"the database file {path or '(unknown)'} cannot be opened: check that its folder exists and "
                "that this user may write there (KERNELWEB_VAR_DIR, SQLITE_PATH)")
    table = re.search(r"no such table: (\S+)", text) or re.search(r'relation "([^"]+)" does not exist', text)
    if table:
        return f"the database has no tables (missing: {table.group(1)}): {MIGRATE}"
    column = re.search(r"no such column: (\S+)", text) or re.search(r'column "?([^" ]+)"? does not exist', text)
    if column:
        return f"the database is older than the code (missing column {column.group(1)}): {MIGRATE}"
    return None


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Database not ready · KernelWeb</title></head>
<body><h1>The database is not ready</h1><p>{message}.</p>
<p>An administrator has to fix this on the server; the page works again once that is done.</p></body></html>
"""


class DatabaseErrorMiddleware:
    """A view that hit a missing/unmigrated/corrupt database answers 503 with the explanation, not a traceback."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        message = explain(exception)
        if message is None:
            return None
        logger.error("database not ready (%s): %s", request.path, message)
        wants_json = request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", "")
        if wants_json:
            return HttpResponse(json.dumps({"detail": f"database not ready: {message}"}), status=503,
                                content_type="application/json")
        message_html = escape(message)
        message_html = re.sub(r"`([^`]+)`", r"<code>\1</code>", message_html)
        return HttpResponse(PAGE.format(message=message_html), status=503, content_type="text/html; charset=utf-8")
