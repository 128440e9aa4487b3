from django.apps import AppConfig


class ExperimentsConfig(AppConfig):
    name = "apps.experiments"
    default_auto_field = "django.db.models.BigAutoField"
