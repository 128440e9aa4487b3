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
    # The latest connection test (apps/llm/connection.py): when, whether every chosen model answered, the report.
    last_test_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_test_ok = models.BooleanField(null=True, editable=False)
    last_passed_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_test = models.JSONField(default=dict, blank=True, editable=False)

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


PRICE_FIELDS = ("input_per_m", "cached_input_per_m", "output_per_m", "reasoning_per_m")


def _price_field(label: str):
    return models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True, verbose_name=label,
                               help_text="USD per 1M tokens")


class EndpointModel(models.Model):
    """One model on one endpoint: what its owner sets (context window, prices; empty = the shipped defaults)
    and what the server taught (its window from /models, the parameters it refuses)."""

    endpoint = models.ForeignKey(LLMEndpoint, on_delete=models.CASCADE, related_name="model_settings")
    model = models.CharField(max_length=200)
    context_window = models.PositiveIntegerField(null=True, blank=True, help_text="Tokens; empty: as the server "
                                                 "or the shipped defaults say.")
    input_per_m = _price_field("input")
    cached_input_per_m = _price_field("cached input")
    output_per_m = _price_field("output")
    reasoning_per_m = _price_field("reasoning")
    server_context_window = models.PositiveIntegerField(null=True, blank=True, editable=False)
    refused_params = models.JSONField(default=list, blank=True, editable=False)
    token_limit_field = models.CharField(max_length=40, blank=True, editable=False)
    learned_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["endpoint", "model"]
        constraints = [models.UniqueConstraint(fields=["endpoint", "model"], name="endpointmodel_unique")]

    def __str__(self) -> str:
        return f"{self.model} on {self.endpoint}"

    @property
    def has_price(self) -> bool:
        return self.input_per_m is not None and self.output_per_m is not None
