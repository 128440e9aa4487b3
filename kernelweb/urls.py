from pathlib import Path

from django.conf import settings
from django.contrib import admin
from django.http import HttpResponse
from django.urls import include, path
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from apps.accounts import views as account_views

FAVICON = Path(settings.BASE_DIR) / "static" / "favicon.svg"


@require_safe
@cache_control(max_age=86400, public=True)
def favicon(request):
    """/favicon.ico for clients that ask for it without reading the page's <link rel="icon">: the same SVG."""
    return HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("", account_views.home, name="home"),
    path("accounts/", include("apps.accounts.urls")),
    path("tasks/", include("apps.catalog.urls")),
    path("runs/", include("apps.runs.urls")),
    path("experiments/", include("apps.experiments.urls")),
    path("llm/endpoints/", include("apps.llm.urls")),
    path("workers/", include("apps.fleet.urls")),
    path("", include("apps.showcase.urls")),  # /showcase/... and /s/<key>/, public
    path("api/", include("apps.api.urls")),
    path("healthz", account_views.healthz, name="healthz"),
    path("admin/", admin.site.urls),
]
