from django.urls import path

from apps.llm import views

app_name = "llm"
urlpatterns = [
    path("", views.endpoint_list, name="list"),
    path("new/", views.endpoint_create, name="create"),
    path("<int:pk>/", views.endpoint_edit, name="edit"),
    path("<int:pk>/delete/", views.endpoint_delete, name="delete"),
    path("<int:pk>/test/", views.endpoint_test, name="test"),
]
