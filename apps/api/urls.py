from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from apps.api import experiment_views, fleet_views, views
from apps.api.root import ApiRoot
from apps.llm.api import EndpointTest

app_name = "api"
urlpatterns = [
    path("", ApiRoot.as_view(), name="root"),
    path("tasks/", views.TaskList.as_view(), name="task-list"),
    path("tasks/<int:pk>/", views.TaskDetail.as_view(), name="task-detail"),
    path("runs/", views.RunList.as_view(), name="run-list"),
    path("runs/<int:pk>/", views.RunDetail.as_view(), name="run-detail"),
    path("runs/<int:pk>/cancel/", views.RunCancel.as_view(), name="run-cancel"),
    path("runs/<int:pk>/turns/", views.RunTurns.as_view(), name="run-turns"),
    path("runs/<int:pk>/events/", views.RunEvents.as_view(), name="run-events"),
    path("runs/<int:pk>/share/", views.RunShare.as_view(), name="run-share"),
    path("shares/<str:key>/", views.ShareDetail.as_view(), name="share-detail"),
    path("turns/<int:pk>/", views.TurnDetail.as_view(), name="turn-detail"),
    path("profiles/", views.ProfileList.as_view(), name="profile-list"),
    path("endpoints/", views.EndpointList.as_view(), name="endpoint-list"),
    path("endpoints/<int:pk>/test/", EndpointTest.as_view(), name="endpoint-test"),
    path("experiments/", experiment_views.ExperimentList.as_view(), name="experiment-list"),
    path("experiments/compare/", experiment_views.ExperimentCompare.as_view(), name="experiment-compare"),
    path("experiments/<int:pk>/", experiment_views.ExperimentDetail.as_view(), name="experiment-detail"),
    path("experiments/<int:pk>/cancel/", experiment_views.ExperimentCancel.as_view(), name="experiment-cancel"),
    path("experiments/<int:pk>/rerun-failed/", experiment_views.ExperimentRerunFailed.as_view(),
         name="experiment-rerun-failed"),
    path("experiments/<int:pk>/analyses/", experiment_views.ExperimentAnalyses.as_view(),
         name="experiment-analyses"),
    path("workers/", fleet_views.WorkerList.as_view(), name="worker-list"),
    path("auth/token/", views.ObtainToken.as_view(), name="token"),
    # Public (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"]): the schema describes shapes, never data.
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),  # CSP: no inline script
]
