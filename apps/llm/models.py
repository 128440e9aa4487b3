from django.conf import settings
from django.db import models

from apps.llm.crypto import decrypt, encrypt


class LLMEndpoint(models.Model):
    """An OpenAI-compatible endpoint. The API key is stored encrypted and never shown again."""

    name = models.CharField(max_length=100)
    base_url = models.URLField(max_length=500, help_text="e.g. https://api.openai.com/v1")
    model_names = models.JSONField(default=list, blank=True, help_text="Model ids offered on this endpoint.")
    api_key_encrypted = models.TextField(blank=True, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="llm_endpoints",
        help_text="Empty: shared with every user.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM endpoint"
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="endpoint_unique_name_per_owner")]

    def __str__(self) -> str:
        return self.name

    def set_api_key(self, key: str) -> None:
        self.api_key_encrypted = encrypt(key) if key else ""

    def get_api_key(self) -> str:
        return decrypt(self.api_key_encrypted) if self.api_key_encrypted else ""

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_encrypted)
