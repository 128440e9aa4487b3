from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_POST

from apps.catalog.models import Task
from apps.fleet.selectors import attach_wait_status, run_wait_status
from apps.runs import viewer
from apps.runs.filters import run_listing
from apps.runs.forms import LaunchForm, ManualTurnForm
from apps.runs.manual import ManualTurnError, run_create_manual, turn_submit_manual, turn_unsent
from apps.runs.models import Run, RunEvent
from apps.runs.quotas import QuotaExceeded, quota_summary
from apps.runs.selectors import run_for_user
from apps.runs.services import QUEUE_UNREACHABLE, run_cancel, runs_launch, runs_unsent
from apps.runs.sizes import param_order

EVENTS_SHOWN = 200  # the rest is in the API (events since seq); the live stream resumes after the last


def run_list(request):
    listing = run_listing(request.user, request.GET)
    attach_wait_status(listing.page.object_list)
    # htmx swaps only the results; a history restore (HX-History-Restore-Request) needs the whole page.
    partial = request.headers.get("HX-Request") == "true" and "HX-History-Restore-Request" not in request.headers
    response = render(request, "runs/_run_results.html" if partial else "runs/run_list.html", {"listing": listing})
    if partial:  # the address bar gets the canonical URL (no empty fields), which reloads to the same page
        query = listing.filters.querystring()
        response["HX-Push-Url"] = f"{request.path}?{query}" if query else request.path
    patch_vary_headers(response, ("HX-Request",))
    return response


def _visible_run(request, pk: int) -> Run:
    run = run_for_user(request.user, pk)
    if run is None:
        raise Http404("No such run, or it is not shared with you.")
    return run


def _viewer_context(request, run: Run) -> dict:
    items = viewer.timeline(run)
    results = viewer.results_by_turn(run)
    charts = viewer.chart_data(items, results, param_order(run.task))
    return {"run": run, "summary": viewer.run_summary(run, items, results), "items": items, "charts": charts,
            "is_owner": run.owner_id == request.user.pk, "wait_status": run_wait_status(run)}


def _panel_context(request, run: Run) -> dict:
    turn = viewer.select_turn(run, request.GET.get("turn"))
    if turn is None:
        return {"panel": None}
    panel = viewer.turn_panel(run, turn, against=request.GET.get("against", "baseline"),
                              pin=viewer.parse_label(request.GET.get("pin")))
    form = (ManualTurnForm(initial={"code": turn.code}, backend=run.task.backend)
            if run.owner_id == request.user.pk else None)
    return {"panel": panel, "manual_form": form}


def run_detail(request, pk: int):
    """The trajectory viewer: header, timeline, code panes and tabs of the selected turn, charts, events."""
    run = _visible_run(request, pk)
    events = list(reversed(RunEvent.objects.filter(run=run).order_by("-seq")[:EVENTS_SHOWN]))
    context = {**_viewer_context(request, run), **_panel_context(request, run), "events": events,
               "last_seq": run.last_event_seq}
    # A finished run still streams while a manual turn of it is being evaluated.
    context["live"] = run.is_active or any(item.status == "pending" for item in context["items"])
    return render(request, "runs/run_detail.html", context)


def run_panel(request, pk: int):
    """The selected turn's panes and tabs alone, swapped in by htmx when another turn is picked."""
    run = _visible_run(request, pk)
    return render(request, "runs/_turn_panel.html", {"run": run, **_panel_context(request, run)})


def run_live(request, pk: int):
    """Header, timeline and charts as out-of-band fragments, fetched when live events arrive."""
    run = _visible_run(request, pk)
    return render(request, "runs/_live.html", _viewer_context(request, run))


def _unsent_response(request, runs):
    """Saved but not sent (the broker refused): a 503 page that says so, never a 500."""
    response = render(request, "runs/launch_unsent.html", {"runs": runs, "message": QUEUE_UNREACHABLE}, status=503)
    response["Retry-After"] = "60"
    return response


@login_required
def run_launch(request):
    initial = {"tasks": request.GET.getlist("task")}
    form = LaunchForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            runs = runs_launch(owner=request.user, tasks=form.cleaned_data["tasks"], config=form.to_config(),
                               is_public=form.cleaned_data["is_public"])
        except QuotaExceeded as exc:
            form.add_error(None, f"Not launched: {exc}.")
        else:
            if runs_unsent(runs):  # saved but not sent: say so with a 503, not a 500 page
                return _unsent_response(request, runs)
            if len(runs) == 1:
                messages.success(request, f"Run {runs[0].pk} queued.")
                return redirect("runs:detail", pk=runs[0].pk)
            messages.success(request, f"{len(runs)} runs queued: {', '.join(str(r.pk) for r in runs)}.")
            return redirect(f"{reverse('runs:list')}?owner=me")
    groups = form.task_groups()
    open_groups = {category for category, tasks in groups if any(checked for _, checked in tasks)}
    return render(request, "runs/launch.html", {"form": form, "task_groups": groups, "open_groups": open_groups,
                                                "quota_note": quota_summary(request.user)})


@login_required
@require_POST
def run_cancel_view(request, pk: int):
    run = run_for_user(request.user, pk)
    if run is None or run.owner_id != request.user.pk:
        raise Http404("No such run of yours.")
    if run_cancel(run):
        messages.info(request, f"Run {run.pk} cancelled.")
    else:
        messages.warning(request, f"Run {run.pk} is already {run.status}; nothing to cancel.")
    return redirect("runs:detail", pk=run.pk)


@login_required
@require_POST
def run_manual_turn(request, pk: int):
    run = run_for_user(request.user, pk)
    if run is None or run.owner_id != request.user.pk:
        raise Http404("No such run of yours.")
    form = ManualTurnForm(request.POST, backend=run.task.backend)
    if form.is_valid():
        try:
            turn = turn_submit_manual(run=run, code=form.cleaned_data["code"], flags=form.cleaned_data.get("flags", ""))
        except (ManualTurnError, QuotaExceeded) as exc:
            messages.error(request, f"Not submitted: {exc}.")
        else:
            if turn_unsent(turn):
                return _unsent_response(request, [run])
            messages.success(request, f"Manual turn {turn.round_index} queued for evaluation.")
            # open the new turn: its panel follows the evaluation live to the verdict
            return redirect(f"{reverse('runs:detail', args=[run.pk])}?turn={turn.round_index}.{turn.debug_index}")
    else:
        messages.error(request, "Not submitted: " + "; ".join(e for errs in form.errors.values() for e in errs))
    return redirect("runs:detail", pk=run.pk)


@login_required
def task_evaluate(request, task_pk: int):
    task = get_object_or_404(Task, pk=task_pk, enabled=True)
    form = ManualTurnForm(request.POST or None, backend=task.backend, new_run=True)
    if request.method == "POST" and form.is_valid():
        try:
            run = run_create_manual(owner=request.user, task=task, code=form.cleaned_data["code"],
                                   flags=form.cleaned_data.get("flags", ""),
                                   timing_protocol=form.cleaned_data["timing_protocol"])
        except ManualTurnError as exc:
            form.add_error("code", str(exc))
        except QuotaExceeded as exc:
            form.add_error(None, f"Not submitted: {exc}.")
        else:
            if turn_unsent(run.turns.get()):
                return _unsent_response(request, [run])
            messages.success(request, f"Your kernel is queued for evaluation as run {run.pk}.")
            return redirect("runs:detail", pk=run.pk)
    return render(request, "runs/task_evaluate.html", {"task": task, "form": form})
