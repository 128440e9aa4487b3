"""Login lockout (django-axes): who the client is, and what a locked-out client is told.

Failures are counted per username *and* client address (settings.AXES_LOCKOUT_PARAMETERS). The address
is the one DRF's throttles use: REMOTE_ADDR, unless TRUSTED_PROXY_COUNT proxies are declared, in which
case the address that many hops from the right of X-Forwarded-For (what the outermost trusted proxy
saw). A client-supplied X-Forwarded-For therefore never changes who it is counted as.
"""

from axes.backends import AxesStandaloneBackend
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username, get_cool_off
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.throttling import BaseThrottle


def client_ip(request) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: the throttles' notion of the client (REST_FRAMEWORK["NUM_PROXIES"])."""
    return BaseThrottle().get_ident(request) or None


def retry_after_seconds(request=None) -> int:
    """How long a locked-out client must wait. Every attempt during the lockout restarts the wait
    (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT), so from the latest attempt it is the whole cool-off."""
    cool_off = get_cool_off(request)
    return int(cool_off.total_seconds()) if cool_off else 0


def lockout_message(seconds: int) -> str:
    if not seconds:
        return "Too many failed login attempts: this account is locked. Ask an administrator to unlock it."
    minutes = -(-seconds // 60)
    wait = f"{minutes} minute{'s' if minutes != 1 else ''}" if seconds >= 60 else f"{seconds} seconds"
    return (f"Too many failed login attempts: login is locked for {wait}. Every attempt before then "
            f"restarts the wait; an administrator can unlock it sooner.")


def lockout_json(request, credentials=None) -> JsonResponse:
    seconds = retry_after_seconds(request)
    response = JsonResponse(
        {"detail": lockout_message(seconds), "locked_out": True, "retry_after": seconds or None},
        status=settings.AXES_HTTP_RESPONSE_CODE,
    )
    if seconds:
        response["Retry-After"] = str(seconds)
    return response


def lockout_response(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: JSON for the API, the login page with the reason for a browser."""
    if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
        return lockout_json(request, credentials)
    username = get_client_username(request, credentials) or ""
    form = AuthenticationForm(request, initial={"username": username})
    context = {
        "form": form,
        "next": request.POST.get("next", "") or request.GET.get("next", ""),
        "lockout_message": lockout_message(retry_after_seconds(request)),
    }
    return render(request, "registration/login.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)


class LockoutBackend(AxesStandaloneBackend):
    """axes' gate in front of ModelBackend. A call to authenticate() without a request (the test client's
    login(), a management command) is not a login from the network: it has no client to lock out, so it
    is passed through instead of raising. Every web login path passes its request."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def forget_failures(request, user) -> None:
    """A successful password check outside django.contrib.auth.login() (the token exchange) clears that
    username and address's failures, as AXES_RESET_ON_SUCCESS does for a login."""
    if not (settings.AXES_ENABLED and settings.AXES_RESET_ON_SUCCESS):
        return
    handler = AxesProxyHandler.get_implementation()
    if hasattr(handler, "reset_user_attempts"):
        AxesProxyHandler.update_request(request)
        handler.reset_user_attempts(request, {get_user_model().USERNAME_FIELD: user.get_username()})
