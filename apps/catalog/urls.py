from django.urls import path

from apps.catalog import views

app_name = "catalog"
urlpatterns = [
    path("", views.task_list, name="list"),
    path("<int:pk>/", views.task_detail, name="detail"),
]
