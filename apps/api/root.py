"""GET /api/: the browsable API root. It lists the endpoints the caller may use: everything for a signed-in
user (session or token), and for an anonymous visitor the public ones (token exchange, schema, docs, share
links) with a word on how to sign in. HTML in a browser, JSON for clients (`?format=json` or Accept)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView


@dataclass(frozen=True)
class Entry:
    name: str
    url_name: str
    public: bool = False  # usable without signing in


ENTRIES = (
    Entry("tasks", "api:task-list"),
    Entry("runs", "api:run-list"),
    Entry("profiles", "api:profile-list"),
    Entry("experiments", "api:experiment-list"),
    Entry("experiments_compare", "api:experiment-compare"),
    Entry("endpoints", "api:endpoint-list"),
    Entry("workers", "api:worker-list"),
    Entry("auth_token", "api:token", public=True),
    Entry("schema", "api:schema", public=True),
    Entry("docs", "api:docs", public=True),
)
SIGN_IN = ("Sign in (a session) or send 'Authorization: Token <key>' (POST auth_token) to use tasks, runs, "
           "experiments, profiles, endpoints and workers; shares/<key>/ is public. Guide: docs/api.md.")


def api_index(request) -> dict[str, str]:
    """Name → absolute URL of every endpoint `request.user` may call."""
    signed_in = request.user.is_authenticated
    index = {e.name: request.build_absolute_uri(reverse(e.url_name)) for e in ENTRIES if e.public or signed_in}
    if not signed_in:
        index["detail"] = SIGN_IN
    return index


class ApiRoot(APIView):
    """KernelWeb's REST API: the endpoints you may use from here. Runs, turns, profiles and events follow
    their run's visibility (yours, public ones, all for staff); a private object is a 404."""

    permission_classes = [AllowAny]
    name = "KernelWeb API"
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]  # browsable even in production: it shows only links

    @extend_schema(exclude=True)
    def get(self, request, format=None):  # noqa: A002 - DRF's name for the ?format= suffix
        return Response(api_index(request))
