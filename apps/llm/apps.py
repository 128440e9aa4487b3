from django.apps import AppConfig


class LlmConfig(AppConfig):
    name = "apps.llm"
    default_auto_field = "django.db.models.BigAutoField"
