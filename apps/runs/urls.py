from django.urls import path

from apps.runs import views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("launch/", views.run_launch, name="launch"),
    path("showcase/", views.showcase, name="showcase"),
    path("<int:pk>/", views.run_detail, name="detail"),
    path("<int:pk>/cancel/", views.run_cancel_view, name="cancel"),
    path("<int:pk>/manual/", views.run_manual_turn, name="manual"),
    path("evaluate/<int:task_pk>/", views.task_evaluate, name="task_evaluate"),
]
