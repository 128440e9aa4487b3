"""Small typed readers for environment variables.

Each helper rejects a malformed value with an ImproperlyConfigured that names
the variable and what was expected, so a typo fails at start-up, not at 3 a.m.
"""

from __future__ import annotations

import os
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str, environ=None) -> str | None:
    value = (environ if environ is not None else os.environ).get(name)
    return value.strip() if value is not None else None


def env_str(name: str, default: str = "", environ=None) -> str:
    value = _raw(name, environ)
    return default if value is None or value == "" else value


def env_bool(name: str, default: bool = False, environ=None) -> bool:
    value = _raw(name, environ)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None,
            environ=None) -> int:
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={number} is below the minimum {minimum}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name}={number} is above the maximum {maximum}")
    return number


def env_float(name: str, default: float, *, minimum: float | None = None, environ=None) -> float:
    value = _raw(name, environ)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number") from None
    if number != number or (minimum is not None and number < minimum):
        raise ImproperlyConfigured(f"{name}={value!r} must be a number >= {minimum}")
    return number


def env_list(name: str, default: list[str] | None = None, environ=None) -> list[str]:
    value = _raw(name, environ)
    if value is None or value == "":
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def env_url(name: str, schemes: tuple[str, ...], default: str = "", environ=None) -> str:
    """A URL whose scheme is one of `schemes` and which names a host (or a path for sqlite)."""
    value = env_str(name, default, environ)
    if not value:
        return ""
    parsed = urlparse(value)
    if parsed.scheme not in schemes:
        raise ImproperlyConfigured(
            f"{name} must start with one of {', '.join(s + '://' for s in schemes)}; got {parsed.scheme or 'no'} scheme"
        )
    if not parsed.hostname and not parsed.path.strip("/"):
        raise ImproperlyConfigured(f"{name}={value!r} names neither a host nor a path")
    return value
