"""Public pages, mounted at the site root: /showcase/... and /s/<key>/ (no login)."""

from django.urls import path

from apps.showcase import views as showcase

app_name = "showcase"
urlpatterns = [
    path("showcase/", showcase.showcase_index, name="index"),
    path("showcase/<int:task_id>/", showcase.showcase_operator_by_id, name="operator_by_id"),
    path("showcase/<str:suite>/<str:operator>/<str:precision>/", showcase.showcase_operator_view, name="operator"),
    path("s/<str:key>/", showcase.share_view, name="share"),
]
