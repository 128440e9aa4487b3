"""REST API views. Thin: who sees what comes from apps.runs.selectors (an invisible object is a 404,
so ids of private runs do not leak), writes go through apps.runs.services, launch validation through
the same LaunchForm as the page."""

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

from apps.accounts.lockout import forget_failures, lockout_json
from apps.api import serializers as s
from apps.api.filters import runs_filter, tasks_filter
from apps.api.permissions import IsOwner
from apps.catalog.selectors import tasks_enabled
from apps.llm.selectors import endpoints_for
from apps.runs.forms import LaunchForm
from apps.runs.models import Profile, RunStatus, Turn
from apps.runs.quotas import QuotaExceeded
from apps.runs.selectors import events_after, profiles_visible_to, runs_visible_to, turns_visible_to
from apps.runs.services import QUEUE_UNREACHABLE, run_cancel, runs_launch, runs_unsent
from apps.showcase.models import ShareLink
from apps.showcase.sharing import share_create

NOT_FOUND = OpenApiResponse(s.DetailSerializer, description="No such object, or it is not shared with you.")


def _query(serializer_class: type[serializers.Serializer], request: Request) -> dict:
    """Validated query parameters: a bad filter value is a 400, not a silently ignored filter."""
    query = serializer_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    return query.validated_data


def _with_defaults(data):
    """Fields the client leaves out take the launch page's initial values (rounds 3, temperature 0.2, ...)."""
    data = data.copy()  # a QueryDict (form-encoded body) copies mutable; a dict (JSON) copies shallow
    for name, field in LaunchForm.base_fields.items():
        if field.initial is not None:
            data.setdefault(name, field.initial)
    return data


@extend_schema_view(get=extend_schema(parameters=[s.TaskQuerySerializer]))
class TaskList(generics.ListAPIView):
    """Enabled benchmark tasks."""

    serializer_class = s.TaskSerializer

    def get_queryset(self):
        return tasks_filter(tasks_enabled(), _query(s.TaskQuerySerializer, self.request))


class TaskDetail(generics.RetrieveAPIView):
    """One task with its sizes, complexity, interface and baseline source."""

    serializer_class = s.TaskDetailSerializer

    def get_queryset(self):
        return tasks_enabled()


class RunList(generics.ListAPIView):
    serializer_class = s.RunSerializer

    def get_queryset(self):
        params = _query(s.RunQuerySerializer, self.request)
        return runs_filter(runs_visible_to(self.request.user), params, self.request.user)

    @extend_schema(parameters=[s.RunQuerySerializer], summary="Runs you may see: yours, public ones, all for staff")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Launch one run per task",
        request=s.LaunchSerializer,
        responses={201: s.LaunchedSerializer,
                   400: OpenApiResponse(OpenApiTypes.OBJECT, description="Field name → list of messages."),
                   429: OpenApiResponse(s.QuotaExceededSerializer, description=s.QUOTA_EXCEEDED),
                   503: OpenApiResponse(OpenApiTypes.OBJECT, description="The job queue is unreachable: the runs "
                                        "are saved (`runs`) and start when it is back (`detail` says so).")},
    )
    def post(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY: ["Send a JSON object."]})
        form = LaunchForm(_with_defaults(request.data), user=request.user)
        if not form.is_valid():
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY if name == "__all__" else name: list(errors)
                                   for name, errors in form.errors.items()})
        try:
            runs = runs_launch(owner=request.user, tasks=form.cleaned_data["tasks"], config=form.to_config(),
                               is_public=form.cleaned_data["is_public"])
        except QuotaExceeded as exc:
            return Response(exc.as_dict(), status=status.HTTP_429_TOO_MANY_REQUESTS)
        data = {"runs": s.RunSerializer(runs, many=True).data}
        if runs_unsent(runs):  # saved, not yet sent: the reconciler sends them when the broker is back
            return Response({"detail": QUEUE_UNREACHABLE, **data}, status=status.HTTP_503_SERVICE_UNAVAILABLE,
                            headers={"Retry-After": "60"})
        return Response(data, status=status.HTTP_201_CREATED)


@extend_schema_view(get=extend_schema(responses={200: s.RunSerializer, 404: NOT_FOUND}))
class RunDetail(generics.RetrieveAPIView):
    serializer_class = s.RunSerializer

    def get_queryset(self):
        return runs_visible_to(self.request.user)


class RunCancel(generics.GenericAPIView):
    serializer_class = s.RunSerializer
    permission_classes = [IsAuthenticated, IsOwner]

    def get_queryset(self):
        return runs_visible_to(self.request.user)

    @extend_schema(
        summary="Cancel a queued or running run (owner only)",
        request=None,
        responses={200: s.RunSerializer, 403: s.DetailSerializer, 404: NOT_FOUND,
                   409: OpenApiResponse(s.DetailSerializer, description="The run has already finished.")},
    )
    def post(self, request, pk: int):
        run = self.get_object()  # 404 if invisible, 403 if visible but someone else's
        cancelled = run_cancel(run)
        run.refresh_from_db()
        if not cancelled:
            return Response({"detail": f"Run {run.pk} is already {run.status}; nothing to cancel."},
                            status=status.HTTP_409_CONFLICT)
        return Response(s.RunSerializer(run).data)


class RunTurns(generics.ListAPIView):
    """A run's turns in order, without code: fetch /api/turns/<id>/ for the full turn."""

    serializer_class = s.TurnSummarySerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no run id
            return Turn.objects.none()
        run = get_object_or_404(runs_visible_to(self.request.user), pk=self.kwargs["pk"])
        return run.turns.order_by("round_index", "debug_index")


@extend_schema_view(get=extend_schema(responses={200: s.TurnSerializer, 404: NOT_FOUND}))
class TurnDetail(generics.RetrieveAPIView):
    """One turn in full: code, build, results, profiles and every LLM call with its messages."""

    serializer_class = s.TurnSerializer

    def get_queryset(self):
        return turns_visible_to(self.request.user).prefetch_related("profiles", "agent_calls")


class RunEvents(generics.GenericAPIView):
    serializer_class = s.EventPageSerializer

    def get_queryset(self):
        return runs_visible_to(self.request.user)

    @extend_schema(
        summary="Events after a seq: the polling fallback for the websocket",
        parameters=[s.EventQuerySerializer],
        responses={200: s.EventPageSerializer, 404: NOT_FOUND},
    )
    def get(self, request, pk: int):
        run = self.get_object()  # read before the events, so `finished` never skips a late event
        query = _query(s.EventQuerySerializer, request)
        events = events_after(run.pk, query["after"], query["limit"])
        last_seq = events[-1].seq if events else query["after"]
        return Response({
            "events": [event.as_message() for event in events],
            "last_seq": last_seq,
            "finished": run.status in RunStatus.terminal() and last_seq >= run.last_event_seq,
            "status": run.status,
        })


class ProfileList(generics.ListAPIView):
    """Nsight Compute profiles (with the full metric set) of the turns you may see."""

    serializer_class = s.ProfileSerializer

    @extend_schema(parameters=[s.ProfileQuerySerializer], responses={200: s.ProfileSerializer(many=True),
                                                                      404: NOT_FOUND})
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Profile.objects.none()
        user, query = self.request.user, _query(s.ProfileQuerySerializer, self.request)
        profiles = profiles_visible_to(user)
        if "turn" in query:  # a turn or run you may not see is a 404, not an empty list
            profiles = profiles.filter(turn=get_object_or_404(turns_visible_to(user), pk=query["turn"]))
        if "run" in query:
            profiles = profiles.filter(turn__run=get_object_or_404(runs_visible_to(user), pk=query["run"]))
        return profiles.order_by("turn_id", "size_index", "kernel", "id")


class EndpointList(generics.ListAPIView):
    """Your LLM endpoints and the shared ones; whether a key is set, never the key."""

    serializer_class = s.EndpointSerializer

    def get_queryset(self):
        return endpoints_for(self.request.user).order_by("name", "id")


def _share_data(link: ShareLink) -> dict:
    return {"key": link.key, "url": reverse("showcase:share", args=[link.key]), "snapshot": link.snapshot,
            "created_at": link.created_at}


class RunShare(generics.GenericAPIView):
    """Freeze two turns of a visible run as an immutable public link (same pair, same key)."""

    serializer_class = s.ShareCreateSerializer

    @extend_schema(summary="Share two turns of a run", request=s.ShareCreateSerializer,
                   responses={201: s.ShareLinkSerializer, 400: s.DetailSerializer, 404: NOT_FOUND})
    def post(self, request, pk: int):
        run = get_object_or_404(runs_visible_to(request.user), pk=pk)
        body = s.ShareCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        turns = {t.pk: t for t in run.turns.filter(pk__in=[body.validated_data["a"], body.validated_data["b"]])}
        missing = [k for k in ("a", "b") if body.validated_data[k] not in turns]
        if missing:
            return Response({"detail": f"turn {', '.join(missing)} is not a turn of run {run.pk}"},
                            status=status.HTTP_400_BAD_REQUEST)
        link = share_create(request.user, run, turns[body.validated_data["a"]], turns[body.validated_data["b"]])
        return Response(s.ShareLinkSerializer(_share_data(link)).data, status=status.HTTP_201_CREATED)


@extend_schema_view(get=extend_schema(auth=[], responses={200: s.ShareLinkSerializer, 404: NOT_FOUND}))
class ShareDetail(generics.GenericAPIView):
    """A share link's snapshot; public like its page."""

    serializer_class = s.ShareLinkSerializer
    permission_classes = [AllowAny]

    def get(self, request, key: str):
        link = get_object_or_404(ShareLink, key=key)
        return Response(s.ShareLinkSerializer(_share_data(link)).data)


@extend_schema_view(post=extend_schema(auth=[], summary="Exchange username and password for an API token"))
class ObtainToken(ObtainAuthToken):
    """DRF's username/password → token exchange, throttled per client address (TRUSTED_PROXY_COUNT) and
    behind the login lockout: the password check is `django.contrib.auth.authenticate(request=...)` (in
    DRF's AuthTokenSerializer), so axes counts its failures and refuses a locked-out username and address
    with a 429 saying for how long (apps/accounts/lockout.py)."""

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "token"

    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            # axes flags the request it was handed, here DRF's wrapper, which its middleware never sees.
            if getattr(request, "axes_locked_out", False):
                return lockout_json(request)
            raise ValidationError(serializer.errors)
        user = serializer.validated_data["user"]
        forget_failures(request, user)
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})
