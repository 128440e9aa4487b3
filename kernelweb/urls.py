from django.contrib import admin
from django.urls import include, path

from apps.accounts import views as account_views

urlpatterns = [
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
