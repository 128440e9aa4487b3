"""Production refuses placeholder and weak secrets (kernelweb/secrets_check.py)."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from kernelweb import secrets_check as sc

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_ENV = ROOT / "deploy" / "kernelweb.env.example"


def _real_key() -> str:
    return secrets.token_urlsafe(50)


def test_a_generated_secret_key_and_fernet_keys_pass():
    sc.check_production_secrets(_real_key(), [Fernet.generate_key().decode(), Fernet.generate_key().decode()])


@pytest.mark.parametrize("value", [
    "", sc.DEV_SECRET_KEY, sc.EXAMPLE_SECRET_KEY,
    "x" * 40 + "CHANGEME" + "abcdefghij", "placeholder-" + "q1w2e3r4t5" * 5, "insecure" + "a1b2c3d4e5" * 5,
])
def test_placeholder_secret_keys_are_refused_with_the_generation_command(value):
    with pytest.raises(ImproperlyConfigured) as err:
        sc.check_secret_key(value)
    assert sc.SECRET_KEY_COMMAND in str(err.value)


def test_short_and_low_entropy_secret_keys_are_refused():
    with pytest.raises(ImproperlyConfigured, match="at least 50 characters"):
        sc.check_secret_key(_real_key()[:30])
    with pytest.raises(ImproperlyConfigured, match="only 2 distinct characters"):
        sc.check_secret_key("ab" * 40)


@pytest.mark.parametrize("keys", [
    [], [sc.EXAMPLE_FIELD_ENCRYPTION_KEY], ["not-a-fernet-key"], ["A" * 43],
    [Fernet.generate_key().decode(), "change-me"], [Fernet.generate_key().decode()[:-2]],
])
def test_invalid_fernet_keys_are_refused_with_the_generation_command(keys):
    with pytest.raises(ImproperlyConfigured) as err:
        sc.check_field_encryption_keys(keys)
    assert sc.FERNET_KEY_COMMAND in str(err.value)


def test_an_invalid_fernet_key_is_not_echoed():
    almost = Fernet.generate_key().decode()[:-3] + "!!="
    with pytest.raises(ImproperlyConfigured, match="entry 2 of 2 is not a valid Fernet key") as err:
        sc.check_field_encryption_keys([Fernet.generate_key().decode(), almost])
    assert almost not in str(err.value)


def _example_values() -> dict[str, str]:
    values = {}
    for line in EXAMPLE_ENV.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def _check(env_overrides: dict, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SECRET_KEY", "FIELD_ENCRYPTION_KEYS", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(env_overrides)
    env["KERNELWEB_VAR_DIR"] = str(tmp_path)  # the example's /var/lib/kernelweb is not writable here
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_settings_refuse_the_example_env_files_secret_key(tmp_path):
    result = _check(_example_values(), tmp_path)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY" in result.stderr
    assert sc.SECRET_KEY_COMMAND in result.stderr


def test_settings_refuse_the_example_env_files_encryption_key(tmp_path):
    result = _check({**_example_values(), "SECRET_KEY": _real_key()}, tmp_path)
    assert result.returncode != 0
    assert "FIELD_ENCRYPTION_KEYS entry 1 of 1 is a placeholder" in result.stderr
    assert sc.FERNET_KEY_COMMAND in result.stderr


def test_settings_accept_real_secrets_with_the_example_env_file(tmp_path):
    values = {**_example_values(), "SECRET_KEY": _real_key(), "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode()}
    result = _check(values, tmp_path)
    assert result.returncode == 0, result.stderr


def test_an_invalid_encryption_key_stops_development_start_up_too(tmp_path):
    result = _check({"KERNELWEB_ENV": "development", "FIELD_ENCRYPTION_KEYS": "not-a-key"}, tmp_path)
    assert result.returncode != 0 and "FIELD_ENCRYPTION_KEYS entry 1 of 1 is not a valid Fernet key" in result.stderr
