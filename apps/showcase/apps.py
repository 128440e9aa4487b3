from django.apps import AppConfig


class ShowcaseConfig(AppConfig):
    """Public pages: the showcase of best results per operator, and share links of two turns."""

    name = "apps.showcase"
    default_auto_field = "django.db.models.BigAutoField"
