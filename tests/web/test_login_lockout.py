"""Password guessing: after AXES_FAILURE_LIMIT wrong passwords a username is locked out from that client, on
the login form and on the token endpoint alike; the client is REMOTE_ADDR (TRUSTED_PROXY_COUNT=0), so a
made-up X-Forwarded-For neither resets the count nor escapes the token throttle. Real HTTP through Django's
test Client and DRF's APIClient (docs/security.md)."""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.cache import cache
from django.db.models import F
from django.test import Client
from django.test.utils import override_settings
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
LIMIT = settings.AXES_FAILURE_LIMIT


@pytest.fixture(autouse=True)
def _fresh_throttles():
    cache.clear()  # the token endpoint's throttle counts in the cache
    yield
    cache.clear()


def form_login(client, username, password, **headers):
    return client.post("/accounts/login/", {"username": username, "password": password}, **headers)


def token_login(client, username, password, **headers):
    return client.post("/api/auth/token/", {"username": username, "password": password}, format="json", **headers)


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def guess(login, client, username, times, **headers):
    return [login(client, username, f"guess-{i}", **headers).status_code for i in range(times)]


def test_the_login_form_refuses_the_right_password_after_too_many_wrong_ones(user):
    client = Client()
    codes = guess(form_login, client, "alice", LIMIT)
    assert codes == [200] * (LIMIT - 1) + [429]  # the failure that reaches the limit already says so

    response = form_login(client, "alice", "pw-alice-123")
    assert response.status_code == 429
    assert not logged_in(client)
    page = response.content.decode()
    assert "Too many failed login attempts" in page and "15 minutes" in page
    assert 'name="username"' in page and 'value="alice"' in page  # still the login page, not an error page


def test_the_token_endpoint_refuses_the_right_password_after_too_many_wrong_ones(user):
    api = APIClient()
    assert guess(token_login, api, "alice", LIMIT) == [400] * (LIMIT - 1) + [429]

    response = token_login(api, "alice", "pw-alice-123")
    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["locked_out"] is True and "token" not in body
    assert body["retry_after"] == 15 * 60 and response["Retry-After"] == "900"
    assert "15 minutes" in body["detail"]


def test_fewer_failures_than_the_limit_do_not_lock_and_a_success_forgets_them(user):
    client = Client()
    guess(form_login, client, "alice", LIMIT - 1)
    assert form_login(client, "alice", "pw-alice-123").status_code == 302
    client.logout()
    guess(form_login, client, "alice", LIMIT - 1)  # counted from zero again
    assert form_login(client, "alice", "pw-alice-123").status_code == 302

    api = APIClient()
    guess(token_login, api, "alice", LIMIT - 1)
    assert token_login(api, "alice", "pw-alice-123").status_code == 200
    guess(token_login, api, "alice", LIMIT - 1)
    assert token_login(api, "alice", "pw-alice-123").status_code == 200


@pytest.mark.parametrize("login, client_class", [(form_login, Client), (token_login, APIClient)],
                         ids=["login form", "token endpoint"])
def test_a_different_x_forwarded_for_on_every_guess_does_not_reset_the_count(user, login, client_class):
    assert settings.TRUSTED_PROXY_COUNT == 0
    client = client_class()
    for i in range(LIMIT):
        login(client, "alice", f"guess-{i}", HTTP_X_FORWARDED_FOR=f"203.0.113.{i + 1}")
    response = login(client, "alice", "pw-alice-123", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert response.status_code == 429
    assert not AccessAttempt.objects.exclude(ip_address="127.0.0.1").exists()  # counted as REMOTE_ADDR


def test_a_different_x_forwarded_for_on_every_guess_does_not_escape_the_token_throttle(django_user_model):
    """The token throttle (10/minute) keys on the same client address: a spread of usernames, each below
    the lockout limit, with a fresh X-Forwarded-For each time, is still one client."""
    api = APIClient()
    codes = [token_login(api, f"user{i}", "guess", HTTP_X_FORWARDED_FOR=f"203.0.113.{i + 1}").status_code
             for i in range(11)]
    assert codes == [400] * 10 + [429]


def test_another_user_on_the_same_client_is_unaffected_by_a_lockout(user, other_user):
    client = Client()
    guess(form_login, client, "alice", LIMIT)
    assert form_login(client, "bob", "pw-bob-123").status_code == 302
    assert logged_in(client)

    api = APIClient()
    assert token_login(api, "alice", "pw-alice-123").status_code == 429  # the lock is shared by both doors
    assert token_login(api, "bob", "pw-bob-123").status_code == 200


def test_the_locked_username_still_logs_in_from_another_client_address(user):
    guess(form_login, Client(), "alice", LIMIT)
    elsewhere = Client(REMOTE_ADDR="192.0.2.44")
    assert form_login(elsewhere, "alice", "pw-alice-123").status_code == 302


def test_after_the_cool_off_the_right_password_works_again(user):
    client, api = Client(), APIClient()
    guess(form_login, client, "alice", LIMIT)
    assert form_login(client, "alice", "pw-alice-123").status_code == 429
    assert token_login(api, "alice", "pw-alice-123").status_code == 429

    # The cool-off passes: the latest attempt is now longer ago than AXES_COOLOFF_TIME.
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert token_login(api, "alice", "pw-alice-123").status_code == 200
    assert form_login(client, "alice", "pw-alice-123").status_code == 302


@override_settings(AXES_COOLOFF_TIME=timedelta(seconds=30))
def test_the_lockout_answer_says_how_long_the_configured_cool_off_is(user):
    api = APIClient()
    guess(token_login, api, "alice", LIMIT)
    response = token_login(api, "alice", "pw-alice-123")
    assert response.status_code == 429 and response.json()["retry_after"] == 30
    assert "30 seconds" in response.json()["detail"]


def test_an_admin_unlocks_a_locked_out_user_in_the_axes_admin(user, django_user_model):
    guess(form_login, Client(), "alice", LIMIT)
    attempt = AccessAttempt.objects.get(username="alice")

    admin = Client()
    django_user_model.objects.create_superuser(username="root", password="pw-root-123456")
    assert form_login(admin, "root", "pw-root-123456").status_code == 302
    assert "alice" in admin.get("/admin/axes/accessattempt/").content.decode()
    response = admin.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not AccessAttempt.objects.exists()

    assert form_login(Client(), "alice", "pw-alice-123").status_code == 302


def test_behind_one_trusted_proxy_the_client_is_what_that_proxy_saw_not_the_spoofed_left_part():
    """TRUSTED_PROXY_COUNT sets both DRF's NUM_PROXIES and the lockout's client address."""
    script = (
        "import django; django.setup()\n"
        "from django.conf import settings; from django.test import RequestFactory\n"
        "from apps.accounts.lockout import client_ip\n"
        "print(settings.REST_FRAMEWORK['NUM_PROXIES'])\n"
        "rf = RequestFactory()\n"
        "print(client_ip(rf.post('/', HTTP_X_FORWARDED_FOR='1.1.1.1, 198.51.100.9', REMOTE_ADDR='10.0.0.2')))\n"
        "print(client_ip(rf.post('/', REMOTE_ADDR='10.0.0.2')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="kernelweb.settings", TRUSTED_PROXY_COUNT="1")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "198.51.100.9", "10.0.0.2"]

    env["TRUSTED_PROXY_COUNT"] = "-1"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode != 0 and "TRUSTED_PROXY_COUNT" in result.stderr


def test_under_asgi_the_locked_out_login_page_is_the_same_429(user):
    """daphne serves through Django's async handler, where axes' middleware takes its async path."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    client = AsyncClient()
    post = async_to_sync(client.post)
    codes = [post("/accounts/login/", {"username": "alice", "password": f"guess-{i}"}).status_code
             for i in range(LIMIT)]
    assert codes == [200] * (LIMIT - 1) + [429]
    response = post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 429
    assert "Too many failed login attempts" in response.content.decode()
    assert 'value="alice"' in response.content.decode()
