from django.urls import path
from django.views.generic import RedirectView

from apps.runs import views
from apps.showcase import views as showcase

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("launch/", views.run_launch, name="launch"),
    # The showcase moved to /showcase/ (apps/showcase/urls.py); the old name still leads there.
    path("showcase/", RedirectView.as_view(pattern_name="showcase:index", permanent=True), name="showcase"),
    path("<int:pk>/", views.run_detail, name="detail"),
    path("<int:pk>/panel/", views.run_panel, name="panel"),
    path("<int:pk>/live/", views.run_live, name="live"),
    path("<int:pk>/cancel/", views.run_cancel_view, name="cancel"),
    path("<int:pk>/share/", showcase.share_create_view, name="share"),
    path("<int:pk>/manual/", views.run_manual_turn, name="manual"),
    path("evaluate/<int:task_pk>/", views.task_evaluate, name="task_evaluate"),
]
