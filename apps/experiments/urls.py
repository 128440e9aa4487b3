from django.urls import path, re_path

from apps.experiments import views

app_name = "experiments"
urlpatterns = [
    path("", views.experiment_list, name="list"),
    path("launch/", views.experiment_launch_view, name="launch"),
    path("compare/", views.experiment_compare, name="compare"),
    re_path(r"^compare/export/(?P<name>[a-z_]+)\.(?P<fmt>csv|json)$", views.experiment_compare_export,
            name="compare_export"),
    re_path(r"^compare/charts/(?P<name>[a-z_]+)\.svg$", views.experiment_compare_chart, name="compare_chart"),
    path("<int:pk>/", views.experiment_detail, name="detail"),
    path("<int:pk>/progress/", views.experiment_progress_view, name="progress"),
    path("<int:pk>/cancel/", views.experiment_cancel_view, name="cancel"),
    path("<int:pk>/rerun-failed/", views.experiment_rerun_view, name="rerun"),
    re_path(r"^(?P<pk>[0-9]+)/export/(?P<name>[a-z_]+)\.(?P<fmt>csv|json)$", views.experiment_export, name="export"),
    re_path(r"^(?P<pk>[0-9]+)/charts/(?P<name>[a-z_]+)\.svg$", views.experiment_chart, name="chart"),
]
