"""The fault tests' TCP proxy (tests/support/tcp_proxy.py): a cut must end the connection for the client,
even while the proxy's own pump thread is blocked reading from it (close() alone would not wake that thread,
and the client would wait for a reply for ever: the database-outage test once hung that way in CI)."""

import socket
import time

import pytest

from tests.support.tcp_proxy import OutageProxy


@pytest.fixture
def upstream():
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def _ended(client: socket.socket) -> bool:
    """Whether the proxy ended the client's connection within 3 s: end of stream or a reset (a timeout: no)."""
    client.settimeout(3)
    try:
        return client.recv(16) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_a_cut_ends_an_idle_connection_for_the_client(upstream):
    proxy = OutageProxy(upstream.getsockname())
    try:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        accepted, _ = upstream.accept()  # the proxy's upstream leg is up: both pumps are waiting in recv()
        client.sendall(b"ping")
        assert accepted.recv(4) == b"ping"
        time.sleep(0.3)  # both pump threads back in recv(), where close() alone leaves them
        proxy.outage(0.5)
        assert _ended(client), "the client still had a live connection after the cut"
        assert proxy.cuts >= 2
        accepted.close()
        client.close()
    finally:
        proxy.close()


def test_the_upstream_closing_ends_the_connection_for_the_client(upstream):
    # The upstream pump ends first and tears down both legs while the client pump is still blocked in recv() on
    # the client's leg: without a shutdown there the client never saw the end (and a cut that came next found
    # the socket already closed and could not end it either: the CI failure this test reproduces).
    proxy = OutageProxy(upstream.getsockname())
    try:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        accepted, _ = upstream.accept()
        client.sendall(b"ping")
        assert accepted.recv(4) == b"ping"
        accepted.close()
        assert _ended(client), "the client still had a live connection after the upstream closed"
        client.close()
    finally:
        proxy.close()


def test_new_connections_are_refused_during_an_outage_and_pass_after_it(upstream):
    proxy = OutageProxy(upstream.getsockname())
    try:
        proxy.outage(60)
        try:  # the proxy's reset may reach the client while it connects (EPIPE/ECONNRESET) or after (EOF)
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as refused:
                refused.settimeout(3)
                assert refused.recv(1) == b""
        except ConnectionError:
            pass
        proxy.outage(0)
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        accepted, _ = upstream.accept()
        accepted.sendall(b"pong")
        assert client.recv(4) == b"pong"
        accepted.close()
        client.close()
    finally:
        proxy.close()
