"""Encryption at rest for secrets (LLM API keys), with Fernet and key rotation.

FIELD_ENCRYPTION_KEYS lists Fernet keys, newest first: new values are written
with the first, old values stay readable with any. In development, without
keys, one is derived from SECRET_KEY so the app works out of the box.
"""

import base64
import functools
import hashlib

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class DecryptionError(Exception):
    pass


@functools.cache
def _fernet() -> MultiFernet:
    keys = list(settings.FIELD_ENCRYPTION_KEYS)
    if not keys:
        digest = hashlib.sha256(b"kernelweb-field-encryption:" + settings.SECRET_KEY.encode()).digest()
        keys = [base64.urlsafe_b64encode(digest).decode()]
    try:
        return MultiFernet([Fernet(k) for k in keys])
    except ValueError as exc:
        raise ImproperlyConfigured(f"FIELD_ENCRYPTION_KEYS holds an invalid Fernet key: {exc}") from None


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise DecryptionError(
            "stored API key cannot be decrypted with FIELD_ENCRYPTION_KEYS; re-enter the key in the admin"
        ) from None
