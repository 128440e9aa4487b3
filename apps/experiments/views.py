"""Experiment pages: list, launch, detail (live progress, analyses per precision), compare, downloads.

Thin: who sees what comes from selectors.experiments_visible_to (an invisible experiment is a 404), writes
go through services (which refuse anyone but the owner or staff: a 403), numbers through reports.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from apps.experiments import export, reports
from apps.experiments.forms import ExperimentLaunchForm
from apps.experiments.models import Experiment
from apps.experiments.selectors import (
    experiment_for_user,
    experiment_progress,
    experiments_visible_to,
    experiments_with_counts,
)
from apps.experiments.services import ExperimentError, experiment_cancel, experiment_rerun_failed
from apps.runs.models import Run
from apps.runs.quotas import QuotaExceeded, quota_summary
from apps.runs.services import QUEUE_UNREACHABLE, runs_unsent
from apps.runs.verification import verification_summary

PROGRESS_POLL_SECONDS = 3
# A standalone SVG may not run scripts or load anything, whatever it contains.
SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _visible(request, pk: int) -> Experiment:
    experiment = experiment_for_user(request.user, pk)
    if experiment is None:
        raise Http404("No such experiment, or it is not shared with you.")
    return experiment


def _may_change(user, experiment: Experiment) -> bool:
    return user.is_staff or experiment.owner_id == user.pk


def _precision(request) -> str:
    precision = reports.parse_precision(request.GET.get("precision"))
    if precision is None:
        raise Http404("Unknown precision; use all, " + ", ".join(reports.PRECISIONS[1:]) + ".")
    return precision


def _chart_context(charts: dict, svg_url, filename) -> list[dict]:
    """Per chart: its data for kw-charts, and the server-drawn SVG shown until (or without) JavaScript."""
    boxes = []
    for name, data in charts.items():
        spec = reports.CHARTS[name]
        boxes.append({"name": name, "title": spec.title, "kind": spec.kind, "data": data, "svg_url": svg_url(name),
                      "source_id": f"chart-data-{name}", "filename": filename(name),
                      # svg.py escapes every text it writes, so its markup is safe to inline
                      "svg": mark_safe(spec.render(data, spec.title))})  # noqa: S308
    return boxes


def _export_urls(tables: dict, url) -> dict[str, dict[str, str]]:
    return {name: {fmt: url(name, fmt) for fmt in reports.FORMATS} for name in tables}


def _download(table: export.Table, fmt: str, stem: str) -> HttpResponse:
    if fmt == "csv":
        response = HttpResponse(export.to_csv(table), content_type="text/csv; charset=utf-8")
    else:
        response = JsonResponse(export.to_json(table), json_dumps_params={"indent": 1})
    response["Content-Disposition"] = f'attachment; filename="{stem}.{fmt}"'
    return response


def _svg(markup: str, stem: str) -> HttpResponse:
    response = HttpResponse(markup, content_type="image/svg+xml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{stem}.svg"'
    response["Content-Security-Policy"] = SVG_CSP
    return response


def _precision_query(precision: str) -> str:
    return "" if precision == reports.ALL else f"?precision={precision}"


def _stem(base: str, name: str, precision: str) -> str:
    return f"{base}-{name}" + ("" if precision == reports.ALL else f"-{precision}")


# ------------------------------------------------------------------------------------------------ list


def experiment_list(request):
    experiments = experiments_with_counts(experiments_visible_to(request.user))
    if request.GET.get("owner") == "me":
        experiments = experiments.filter(owner=request.user)
    return render(request, "experiments/experiment_list.html",
                  {"experiments": experiments[:500], "mine": request.GET.get("owner") == "me"})


# ---------------------------------------------------------------------------------------------- launch


def _initial_from(request) -> dict:
    """`?from=<id>`: the configuration and tasks of a visible experiment, to launch a variant of it (an
    ablation compares the same tasks under another setting)."""
    source = experiment_for_user(request.user, int(request.GET["from"])) if request.GET.get("from", "").isdigit() \
        else None
    if source is None:
        return {"tasks": request.GET.getlist("task")}
    agent_models = source.agent_models or {}
    return {
        "name": f"{source.name} (variant)"[:200], "tasks": sorted({str(m.task_id) for m in source.members.all()}),
        "endpoint": source.endpoint_id, "model": source.model, "rounds": source.rounds,
        "debug_rounds": source.debug_rounds, "profile_mode": source.profile_mode,
        "timing_protocol": source.timing_protocol,
        "temperature": source.temperature, "seed": source.seed, "seeds": source.seeds,
        "time_budget_s": source.time_budget_s, "token_budget": source.token_budget,
        "cost_budget_usd": source.cost_budget_usd,
        **{f"{role}_model": model for role, model in agent_models.items()},
    }


@login_required
def experiment_launch_view(request):
    form = ExperimentLaunchForm(request.POST or None, user=request.user, initial=_initial_from(request))
    if request.method == "POST" and form.is_valid():
        try:
            experiment = form.launch(request.user)
        except ExperimentError as exc:
            form.add_error(None, str(exc))
        except QuotaExceeded as exc:
            form.add_error(None, f"Not launched: {exc}.")
        else:
            runs = [m.run for m in experiment.members.select_related("run", "run__task") if m.run]
            if runs_unsent(runs):  # saved but not sent: say so with a 503, not a 500 page
                response = render(request, "runs/launch_unsent.html", {"runs": runs, "message": QUEUE_UNREACHABLE},
                                  status=503)
                response["Retry-After"] = "60"
                return response
            messages.success(request, f"Experiment {experiment.pk}: {experiment.members.count()} runs queued.")
            return redirect("experiments:detail", pk=experiment.pk)
    groups = form.task_groups()
    open_groups = {category for category, tasks in groups if any(checked for _, checked in tasks)}
    return render(request, "experiments/launch.html", {"form": form, "task_groups": groups,
                                                       "open_groups": open_groups,
                                                       "quota_note": quota_summary(request.user)})


# ---------------------------------------------------------------------------------------------- detail


def experiment_detail(request, pk: int):
    experiment = _visible(request, pk)
    precision = _precision(request)
    report = reports.experiment_report(experiment, precision)
    progress = experiment_progress(experiment)
    context = {
        "experiment": experiment, "progress": progress, "report": report, "precision": precision,
        "precisions": [(p, reports.precision_label(p)) for p in reports.PRECISIONS],
        "can_change": _may_change(request.user, experiment), "poll_seconds": PROGRESS_POLL_SECONDS,
        "tables": report.tables(), "fast_1": report.fast.at(1),
        "export_urls": _export_urls(report.tables(), lambda name, fmt: reverse("experiments:export",
                                                                               args=[pk, name, fmt])
                                    + _precision_query(precision)),
        "charts": _chart_context(report.charts(), lambda name: reverse("experiments:chart", args=[pk, name])
                                 + _precision_query(precision),
                                 lambda name: _stem(f"experiment-{pk}", name, precision)),
        "precision_query": _precision_query(precision),
        "verification": verification_summary(Run.objects.filter(experiment_link__experiment=experiment)),
    }
    return render(request, "experiments/experiment_detail.html", context)


def experiment_progress_view(request, pk: int):
    """The progress fragment, polled by htmx every few seconds while runs are queued or running.

    Polling, not the runs' websockets: an experiment has up to MAX_RUNS runs, and one socket (or one group)
    per run is far more than a page should hold; the fragment is one query, works the same with the
    embedded broker and with Redis, and stops being polled once nothing is active. When the last run ends,
    the page reloads (HX-Refresh) so the analyses show the final numbers.
    """
    experiment = _visible(request, pk)
    progress = experiment_progress(experiment)
    response = render(request, "experiments/_progress.html", {
        "experiment": experiment, "progress": progress, "poll_seconds": PROGRESS_POLL_SECONDS,
        "can_change": _may_change(request.user, experiment)})
    if request.headers.get("HX-Request") == "true" and not progress.is_active:
        response["HX-Refresh"] = "true"
    patch_vary_headers(response, ("HX-Request",))
    return response


@login_required
@require_POST
def experiment_cancel_view(request, pk: int):
    experiment = _visible(request, pk)
    cancelled = experiment_cancel(experiment, by=request.user)  # PermissionDenied (403) unless owner or staff
    if cancelled:
        messages.info(request, f"{cancelled} queued or running run(s) cancelled.")
    else:
        messages.warning(request, "Nothing to cancel: every run has already finished.")
    return redirect("experiments:detail", pk=pk)


@login_required
@require_POST
def experiment_rerun_view(request, pk: int):
    experiment = _visible(request, pk)
    try:
        runs = experiment_rerun_failed(experiment, by=request.user)
    except QuotaExceeded as exc:
        messages.error(request, f"Not re-run: {exc}.")
        return redirect("experiments:detail", pk=pk)
    if runs:
        messages.success(request, f"{len(runs)} failed, cancelled or deleted run(s) queued again.")
    else:
        messages.warning(request, "Nothing to re-run: no run failed, was cancelled or was deleted.")
    return redirect("experiments:detail", pk=pk)


def experiment_export(request, pk: int, name: str, fmt: str):
    experiment = _visible(request, pk)
    precision = _precision(request)
    table = reports.experiment_report(experiment, precision).tables().get(name)
    if table is None:
        raise Http404("No such table.")
    return _download(table, fmt, _stem(f"experiment-{pk}", name, precision))


def experiment_chart(request, pk: int, name: str):
    experiment = _visible(request, pk)
    precision = _precision(request)
    spec = reports.CHARTS.get(name)
    if spec is None:
        raise Http404("No such chart.")
    data = reports.experiment_report(experiment, precision).charts()[name]
    return _svg(spec.render(data, f"{spec.title} · {experiment.name} · {reports.precision_label(precision)}"),
                _stem(f"experiment-{pk}", name, precision))


# --------------------------------------------------------------------------------------------- compare


def _compared(request) -> list[Experiment]:
    """The experiments named by `ids` (repeated, or comma-separated), in that order; any that is not
    visible is a 404 (a comparison never silently leaves one out)."""
    ids: list[int] = []
    for value in request.GET.getlist("ids"):
        for part in value.split(","):
            if part.strip():
                if not part.strip().isdigit():
                    raise Http404("ids are experiment numbers")
                ids.append(int(part))
    ids = list(dict.fromkeys(ids))
    found = {e.pk: e for e in experiments_visible_to(request.user).filter(pk__in=ids)}
    if len(found) != len(ids):
        raise Http404("No such experiment, or it is not shared with you.")
    return [found[i] for i in ids]


def _ids_query(experiments) -> str:
    return "ids=" + ",".join(str(e.pk) for e in experiments)


def experiment_compare(request):
    experiments = _compared(request)
    precision = _precision(request)
    context = {"experiments": experiments, "precision": precision, "ids_query": _ids_query(experiments),
               "precisions": [(p, reports.precision_label(p)) for p in reports.PRECISIONS]}
    if len(experiments) >= 2:
        report = reports.comparison_report(experiments, precision)
        query = _ids_query(experiments) + ("" if precision == reports.ALL else f"&precision={precision}")
        stem = "experiments-" + "-".join(str(e.pk) for e in experiments)
        context.update(report=report, table=report.tables()["ablation"], query=query, charts=_chart_context(
            report.charts(), lambda name: f"{reverse('experiments:compare_chart', args=[name])}?{query}",
            lambda name: _stem(stem, name, precision)))
    else:
        context["choices"] = experiments_with_counts(experiments_visible_to(request.user))[:200]
    return render(request, "experiments/compare.html", context)


def _comparison(request):
    experiments = _compared(request)
    if len(experiments) < 2:
        raise Http404("Compare needs two experiments or more (ids=1,2).")
    precision = _precision(request)
    return experiments, precision, reports.comparison_report(experiments, precision)


def experiment_compare_export(request, name: str, fmt: str):
    experiments, precision, report = _comparison(request)
    table = report.tables().get(name)
    if table is None:
        raise Http404("No such table.")
    return _download(table, fmt, _stem("experiments-" + "-".join(str(e.pk) for e in experiments), name, precision))


def experiment_compare_chart(request, name: str):
    experiments, precision, report = _comparison(request)
    charts = report.charts()
    if name not in charts:
        raise Http404("No such chart.")
    spec = reports.CHARTS[name]
    return _svg(spec.render(charts[name], f"{spec.title} · {reports.precision_label(precision)}"),
                _stem("experiments-" + "-".join(str(e.pk) for e in experiments), name, precision))
