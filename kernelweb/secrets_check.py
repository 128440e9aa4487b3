"""Refuse placeholder or weak secrets in production (kernelweb/settings.py calls these).

Pure functions over strings: each returns None when the value is acceptable and raises
ImproperlyConfigured naming the variable, what is wrong, and the one-liner that makes a real one.
"""

from __future__ import annotations

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

SECRET_KEY_COMMAND = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
FERNET_KEY_COMMAND = (
    "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"
)

# The development fallback in settings.py: never acceptable in production.
DEV_SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production-0123456789abcdef"
# The values deploy/kernelweb.env.example ships with (also caught by the marker words below).
EXAMPLE_SECRET_KEY = "change-me-to-the-output-of-secrets-token-urlsafe-50-shown-above"
EXAMPLE_FIELD_ENCRYPTION_KEY = "change-me-to-a-fernet-key"

PLACEHOLDER_MARKERS = ("change-me", "changeme", "change_me", "placeholder", "insecure")
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_MIN_DISTINCT = 5  # Django's own check (security.W009) uses the same thresholds


def _placeholder_marker(value: str) -> str | None:
    lowered = value.lower()
    return next((m for m in PLACEHOLDER_MARKERS if m in lowered), None)


def check_secret_key(value: str) -> None:
    how = f"generate one with `{SECRET_KEY_COMMAND}`"
    if not value:
        raise ImproperlyConfigured(f"SECRET_KEY is required when KERNELWEB_ENV=production; {how}")
    if value in (DEV_SECRET_KEY, EXAMPLE_SECRET_KEY):
        raise ImproperlyConfigured(f"SECRET_KEY is the shipped example/development value; {how}")
    marker = _placeholder_marker(value)
    if marker:
        raise ImproperlyConfigured(f"SECRET_KEY looks like a placeholder (contains {marker!r}); {how}")
    if len(value) < SECRET_KEY_MIN_LENGTH:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be at least {SECRET_KEY_MIN_LENGTH} characters in production "
            f"(it has {len(value)}); {how}"
        )
    distinct = len(set(value))
    if distinct < SECRET_KEY_MIN_DISTINCT:
        raise ImproperlyConfigured(
            f"SECRET_KEY is too weak: only {distinct} distinct characters (at least {SECRET_KEY_MIN_DISTINCT}); {how}"
        )


def check_field_encryption_keys(keys: list[str]) -> None:
    how = f"generate one with `{FERNET_KEY_COMMAND}`"
    if not keys:
        raise ImproperlyConfigured(f"FIELD_ENCRYPTION_KEYS is required in production; {how}")
    for position, key in enumerate(keys, start=1):
        label = f"FIELD_ENCRYPTION_KEYS entry {position} of {len(keys)}"
        if key == EXAMPLE_FIELD_ENCRYPTION_KEY or _placeholder_marker(key):
            raise ImproperlyConfigured(f"{label} is a placeholder; {how}")
        try:
            Fernet(key)
        except (ValueError, TypeError):
            # The key itself is never echoed: it may be a real secret with a typo.
            raise ImproperlyConfigured(
                f"{label} is not a valid Fernet key (32 url-safe base64-encoded bytes); {how}"
            ) from None


def check_production_secrets(secret_key: str, field_encryption_keys: list[str]) -> None:
    check_secret_key(secret_key)
    check_field_encryption_keys(field_encryption_keys)
