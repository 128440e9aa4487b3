from django.http import JsonResponse
from django.shortcuts import render

from apps.accounts.health import health
from apps.catalog.selectors import task_count
from apps.runs.selectors import runs_visible_to


def home(request):
    recent = runs_visible_to(request.user)[:10] if request.user.is_authenticated else []
    return render(request, "home.html", {"recent_runs": recent, "task_count": task_count()})


def healthz(request):
    """Database, broker, channel layer and live workers, each with its status (apps/accounts/health.py):
    200 "ok" or "degraded", 503 "down" when the database or the broker is unreachable."""
    report, code = health()
    return JsonResponse(report, status=code, headers={"Cache-Control": "no-store"})
