from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "apps.api"
    default_auto_field = "django.db.models.BigAutoField"
