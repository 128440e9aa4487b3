"""`python -m testing.reachable URL`: exit 0 if a postgres:// or redis:// server answers."""

import socket
import sys
from urllib.parse import urlparse


def reachable(url: str, timeout: float = 2.0) -> bool:
    parsed = urlparse(url)
    default_port = {"postgres": 5432, "postgresql": 5432, "redis": 6379}.get(parsed.scheme, 0)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or default_port), timeout):
            return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(0 if reachable(sys.argv[1]) else 1)
