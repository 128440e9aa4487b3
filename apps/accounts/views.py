from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render

from apps.catalog.selectors import task_count
from apps.runs.selectors import runs_visible_to


def home(request):
    recent = runs_visible_to(request.user)[:10] if request.user.is_authenticated else []
    return render(request, "home.html", {"recent_runs": recent, "task_count": task_count()})


def healthz(request):
    """Liveness plus a DB round trip, for load balancers and `make run`'s readiness wait."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
