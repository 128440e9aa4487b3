import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from kernelweb.env import env_bool, env_float, env_int, env_list, env_url

ROOT = Path(__file__).resolve().parents[2]


def test_env_bool_reads_common_spellings():
    assert env_bool("X", environ={"X": "yes"}) is True
    assert env_bool("X", environ={"X": "0"}) is False
    assert env_bool("X", default=True, environ={}) is True


def test_env_bool_rejects_a_typo_naming_the_variable():
    with pytest.raises(ImproperlyConfigured, match="DEBUG='ture' is not a boolean"):
        env_bool("DEBUG", environ={"DEBUG": "ture"})


def test_env_int_rejects_text_and_out_of_range_values():
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("N", 1, environ={"N": "ten"})
    with pytest.raises(ImproperlyConfigured, match="below the minimum 60"):
        env_int("N", 100, minimum=60, environ={"N": "5"})
    assert env_int("N", 7, environ={"N": ""}) == 7


def test_env_float_rejects_nan_and_too_small():
    with pytest.raises(ImproperlyConfigured):
        env_float("F", 1.0, minimum=0.0, environ={"F": "nan"})
    with pytest.raises(ImproperlyConfigured):
        env_float("F", 1.0, minimum=0.05, environ={"F": "0.01"})


def test_env_list_splits_and_strips():
    assert env_list("H", environ={"H": " a.org, b.org ,,"}) == ["a.org", "b.org"]


def test_env_url_rejects_wrong_scheme_and_empty_host():
    with pytest.raises(ImproperlyConfigured, match="must start with one of redis://"):
        env_url("REDIS_URL", ("redis", "rediss"), environ={"REDIS_URL": "http://localhost:6379"})
    with pytest.raises(ImproperlyConfigured, match="names neither a host nor a path"):
        env_url("DATABASE_URL", ("postgres",), environ={"DATABASE_URL": "postgres://"})
    assert env_url("REDIS_URL", ("redis",), environ={"REDIS_URL": "redis://127.0.0.1:6379/0"})


def _django(env_overrides: dict, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL")}
    env.update(env_overrides)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = _django({"KERNELWEB_ENV": "production", "KERNELWEB_VAR_DIR": str(tmp_path)}, "check")
    assert result.returncode != 0
    assert "SECRET_KEY is required when KERNELWEB_ENV=production" in result.stderr


def test_unknown_mode_is_rejected(tmp_path):
    result = _django({"KERNELWEB_ENV": "staging", "KERNELWEB_VAR_DIR": str(tmp_path)}, "check")
    assert result.returncode != 0
    assert "use 'development' or 'production'" in result.stderr


def test_production_settings_pass_check_deploy(tmp_path):
    result = _django(
        {
            "KERNELWEB_ENV": "production",
            "KERNELWEB_VAR_DIR": str(tmp_path),
            "SECRET_KEY": "k" * 20 + "-production-secret-for-the-deploy-check-0123456789",
            "ALLOWED_HOSTS": "kernels.example.org",
            "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        },
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_web_servers_pool_is_set_only_for_postgresql_and_without_persistent_connections(tmp_path):
    show = ("shell", "-c", "from django.conf import settings; d = settings.DATABASES['default']; "
            "print(d['CONN_MAX_AGE'], d.get('OPTIONS', {}).get('pool'))")
    pooled = _django({"KERNELWEB_VAR_DIR": str(tmp_path), "DB_POOL_MAX_SIZE": "20", "DB_CONN_MAX_AGE": "60",
                      "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/x"}, *show)
    assert pooled.returncode == 0, pooled.stderr
    assert pooled.stdout.strip().splitlines()[-1] == "0 {'min_size': 1, 'max_size': 20, 'timeout': 30}"
    sqlite = _django({"KERNELWEB_VAR_DIR": str(tmp_path), "DB_POOL_MAX_SIZE": "20"}, *show)
    assert sqlite.stdout.strip().splitlines()[-1] == "0 None"


def test_postgresql_connections_give_up_on_a_silent_peer_unless_the_url_says_otherwise(tmp_path):
    show = ("shell", "-c", "from django.conf import settings; o = settings.DATABASES['default'].get('OPTIONS', {}); "
            "print(o.get('keepalives'), o.get('keepalives_idle'), o.get('connect_timeout'))")
    default = _django({"KERNELWEB_VAR_DIR": str(tmp_path), "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/x"}, *show)
    assert default.stdout.strip().splitlines()[-1] == "1 30 10", default.stderr
    chosen = _django({"KERNELWEB_VAR_DIR": str(tmp_path),
                      "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/x?keepalives_idle=5"}, *show)
    assert chosen.stdout.strip().splitlines()[-1] == "1 5 10", chosen.stderr
