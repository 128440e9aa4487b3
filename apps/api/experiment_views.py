"""Experiment endpoints. Same rules as the pages: who sees what comes from
apps.experiments.selectors.experiments_visible_to (an invisible experiment is a 404), writes go through
apps.experiments.services (owner or staff, else a 403), launch validation through ExperimentLaunchForm."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from apps.api import experiment_serializers as s
from apps.api.serializers import QUOTA_EXCEEDED, DetailSerializer, QuotaExceededSerializer
from apps.api.views import NOT_FOUND, _query
from apps.experiments import reports
from apps.experiments.forms import ExperimentLaunchForm
from apps.experiments.selectors import experiment_progress, experiments_visible_to, experiments_with_counts
from apps.experiments.services import ExperimentError, experiment_cancel, experiment_rerun_failed
from apps.runs.quotas import QuotaExceeded
from apps.runs.services import QUEUE_UNREACHABLE, runs_unsent

FORBIDDEN = OpenApiResponse(DetailSerializer, description="Only the owner (or staff) may do that.")


def _visible(request: Request):
    return experiments_with_counts(experiments_visible_to(request.user))


def _with_defaults(data):
    """Fields the client leaves out take the launch page's initial values (rounds 3, seeds 1, ...)."""
    data = data.copy()
    for name, field in ExperimentLaunchForm.base_fields.items():
        if field.initial is not None:
            data.setdefault(name, field.initial)
    return data


def _detail(experiment) -> dict:
    experiment.progress = experiment_progress(experiment)
    return s.ExperimentDetailSerializer(experiment).data


class ExperimentList(generics.ListAPIView):
    serializer_class = s.ExperimentSerializer

    def get_queryset(self):
        query = _query(s.ExperimentQuerySerializer, self.request)
        experiments = _visible(self.request)
        if query.get("owner") == "me":
            experiments = experiments.filter(owner=self.request.user)
        return experiments.order_by("-created_at", "-id")

    @extend_schema(parameters=[s.ExperimentQuerySerializer],
                   summary="Experiments you may see: yours, public ones, all for staff")
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Launch an experiment: one run per selected task and seed",
        request=s.ExperimentLaunchSerializer,
        responses={201: s.ExperimentDetailSerializer,
                   400: OpenApiResponse(OpenApiTypes.OBJECT, description="Field name → list of messages."),
                   429: OpenApiResponse(QuotaExceededSerializer, description=QUOTA_EXCEEDED),
                   503: OpenApiResponse(OpenApiTypes.OBJECT, description="The job queue is unreachable: the "
                                        "experiment and its runs are saved and start when it is back.")},
    )
    def post(self, request, *args, **kwargs):
        if not isinstance(request.data, dict):
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY: ["Send a JSON object."]})
        form = ExperimentLaunchForm(_with_defaults(request.data), user=request.user)
        if not form.is_valid():
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY if name == "__all__" else name: list(errors)
                                   for name, errors in form.errors.items()})
        try:
            experiment = form.launch(request.user)
        except ExperimentError as exc:
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [str(exc)]}) from exc
        except QuotaExceeded as exc:
            return Response(exc.as_dict(), status=status.HTTP_429_TOO_MANY_REQUESTS)
        body = _detail(_visible(request).get(pk=experiment.pk))
        if runs_unsent([m.run for m in experiment.members.select_related("run") if m.run]):
            return Response({"detail": QUEUE_UNREACHABLE, **body}, status=status.HTTP_503_SERVICE_UNAVAILABLE,
                            headers={"Retry-After": "60"})
        return Response(body, status=status.HTTP_201_CREATED)


class ExperimentDetail(generics.GenericAPIView):
    serializer_class = s.ExperimentDetailSerializer

    def get_queryset(self):
        return _visible(self.request)

    @extend_schema(summary="An experiment with its progress per (task, seed)",
                   responses={200: s.ExperimentDetailSerializer, 404: NOT_FOUND})
    def get(self, request, pk: int):
        return Response(_detail(self.get_object()))


class ExperimentCancel(generics.GenericAPIView):
    serializer_class = s.CancelSerializer

    def get_queryset(self):
        return _visible(self.request)

    @extend_schema(summary="Cancel the queued and running runs (owner or staff)", request=None,
                   responses={200: s.CancelSerializer, 403: FORBIDDEN, 404: NOT_FOUND})
    def post(self, request, pk: int):
        experiment = self.get_object()
        try:
            cancelled = experiment_cancel(experiment, by=request.user)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc
        return Response({"cancelled": cancelled})


class ExperimentRerunFailed(generics.GenericAPIView):
    serializer_class = s.RerunSerializer

    def get_queryset(self):
        return _visible(self.request)

    @extend_schema(summary="Launch again every trial whose run failed, was cancelled or deleted (owner or staff)",
                   request=None, responses={200: s.RerunSerializer, 403: FORBIDDEN, 404: NOT_FOUND,
                                            429: OpenApiResponse(QuotaExceededSerializer, description=QUOTA_EXCEEDED)})
    def post(self, request, pk: int):
        experiment = self.get_object()
        try:
            runs = experiment_rerun_failed(experiment, by=request.user)
        except DjangoPermissionDenied as exc:
            raise PermissionDenied(str(exc)) from exc
        except QuotaExceeded as exc:
            return Response(exc.as_dict(), status=status.HTTP_429_TOO_MANY_REQUESTS)
        return Response({"runs": [run.pk for run in runs]})


class ExperimentAnalyses(generics.GenericAPIView):
    serializer_class = s.AnalysesSerializer

    def get_queryset(self):
        return experiments_visible_to(self.request.user)

    @extend_schema(summary="Every analysis of an experiment, as the tables the page shows and exports",
                   parameters=[s.PrecisionQuerySerializer], responses={200: s.AnalysesSerializer, 404: NOT_FOUND})
    def get(self, request, pk: int):
        experiment = self.get_object()
        precision = _query(s.PrecisionQuerySerializer, request)["precision"]
        report = reports.experiment_report(experiment, precision)
        return Response({"experiment": experiment.pk, "precision": precision, "trials": report.trials,
                         "correct": report.correct, **reports.report_json(report.tables(), report.charts())})


class ExperimentCompare(generics.GenericAPIView):
    serializer_class = s.ComparisonSerializer

    @extend_schema(summary="Two experiments or more side by side over the tasks they share (ablation table)",
                   parameters=[s.CompareQuerySerializer], responses={200: s.ComparisonSerializer, 404: NOT_FOUND})
    def get(self, request):
        query = _query(s.CompareQuerySerializer, request)
        found = {e.pk: e for e in experiments_visible_to(request.user).filter(pk__in=query["ids"])}
        missing = [i for i in query["ids"] if i not in found]
        if missing:  # never compare silently fewer than asked; the same 404 as an unknown id
            raise NotFound(f"No such experiment, or it is not shared with you: {', '.join(map(str, missing))}.")
        experiments = [found[i] for i in query["ids"]]
        report = reports.comparison_report(experiments, query["precision"])
        return Response({"experiments": query["ids"], "precision": query["precision"],
                         "tasks": report.ablation.tasks, **reports.report_json(report.tables(), report.charts())})
