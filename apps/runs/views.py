from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.runs.forms import LaunchForm
from apps.runs.models import Run, RunStatus
from apps.runs.selectors import events_after, run_for_user, runs_visible_to
from apps.runs.services import run_cancel, run_create


@login_required
def run_list(request):
    runs = runs_visible_to(request.user)
    status = request.GET.get("status", "")
    if status in RunStatus.values:
        runs = runs.filter(status=status)
    page = Paginator(runs, 25).get_page(request.GET.get("page"))
    return render(request, "runs/run_list.html", {"page": page, "status": status, "statuses": RunStatus.choices})


@login_required
def run_detail(request, pk: int):
    run = run_for_user(request.user, pk)
    if run is None:
        raise Http404("No such run, or it is not shared with you.")
    events = events_after(run.pk, 0)
    return render(
        request,
        "runs/run_detail.html",
        {"run": run, "events": events, "last_seq": events[-1].seq if events else 0},
    )


@login_required
def run_launch(request):
    form = LaunchForm(request.POST or None, user=request.user, initial={"task": request.GET.get("task")})
    if request.method == "POST" and form.is_valid():
        run = run_create(
            owner=request.user,
            task=form.cleaned_data["task"],
            config=form.to_config(),
            is_public=form.cleaned_data["is_public"],
        )
        messages.success(request, f"Run {run.pk} queued.")
        return redirect("runs:detail", pk=run.pk)
    return render(request, "runs/launch.html", {"form": form})


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


def showcase(request):
    runs = Run.objects.filter(is_public=True, status=RunStatus.SUCCEEDED).select_related("task")[:50]
    return render(request, "runs/showcase.html", {"runs": runs})
