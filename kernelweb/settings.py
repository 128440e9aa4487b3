"""KernelWeb settings, all read from the environment (see README: Configuration).

Two modes: `KERNELWEB_ENV=development` (default: SQLite, embedded Celery broker,
in-process event relay) and `KERNELWEB_ENV=production` (refuses to start
without a secret key and allowed hosts; passes `manage.py check --deploy`).
"""

import re
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from kernelweb import secrets_check
from kernelweb.env import env_bool, env_float, env_int, env_list, env_str, env_url
from kernelweb.queues import DEFAULT_QUEUE, GPU_QUEUE

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("KERNELWEB_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)  # SQLite file, embedded broker, credentials live here

ENV = env_str("KERNELWEB_ENV", "development")
if ENV not in ("development", "production"):
    raise ImproperlyConfigured(f"KERNELWEB_ENV={ENV!r}: use 'development' or 'production'")
PRODUCTION = ENV == "production"

DEBUG = env_bool("DEBUG", not PRODUCTION)
# --- secrets (production refuses placeholders and weak values: kernelweb/secrets_check.py) ---
SECRET_KEY = env_str("SECRET_KEY")
if PRODUCTION:
    secrets_check.check_secret_key(SECRET_KEY)
elif not SECRET_KEY:
    SECRET_KEY = secrets_check.DEV_SECRET_KEY
# --- end secrets ---

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"])
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS is required in production, e.g. ALLOWED_HOSTS=kernels.example.org")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our static files, nothing from a CDN
    "apps.accounts",
    "apps.catalog",
    "apps.llm",
    "apps.runs",
    "apps.showcase",
    "apps.experiments",
    "apps.fleet",
    "apps.api",
    "axes",  # login lockout: apps/accounts/lockout.py, docs/security.md
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into apps.accounts.lockout's answer
]

# --- Content-Security-Policy (django-csp; README: Configuration, docs/security.md) ---
# Strict: scripts and styles only from our own static files (no inline <script>, on* handlers or style=
# attributes in templates; the front-end bundle keeps its CSS in static/css), plus the <style> element
# CodeMirror mounts, admitted by a per-response nonce (templates/base.html). 'self' in connect-src covers
# the same-origin ws:/wss: websockets (CSP level 3). data: images for the charts' PNG export.
# CSP_REPORT_ONLY=1 sends the same policy as Content-Security-Policy-Report-Only (to trial a change).
INSTALLED_APPS.append("csp")
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
                  "csp.middleware.CSPMiddleware")
_CSP = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, NONCE],  # the nonce only for the code editor's <style> (frontend/editor.js)
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],  # as X-Frame-Options: DENY
    },
}
if env_bool("CSP_REPORT_ONLY", False):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP
    CONTENT_SECURITY_POLICY = None
else:
    CONTENT_SECURITY_POLICY = _CSP
# --- end Content-Security-Policy ---

# --- database errors: a missing/unmigrated/corrupt database answers 503 saying what to do (kernelweb/dberrors.py) ---
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
                  "kernelweb.dberrors.DatabaseErrorMiddleware")
# --- end database errors ---

ROOT_URLCONF = "kernelweb.urls"
ASGI_APPLICATION = "kernelweb.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # each task format's package brings its own catalog templates (worker/formats/<name>/templates)
        "DIRS": [BASE_DIR / "templates", *sorted((BASE_DIR / "worker" / "formats").glob("*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Database: SQLite by default; DATABASE_URL (postgres://user:pass@host:5432/name) for PostgreSQL.
DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql", "sqlite"))
if DATABASE_URL:
    DATABASES = {"default": environ.Env.db_url_config(DATABASE_URL)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env_str("SQLITE_PATH", str(VAR_DIR / "kernelweb.sqlite3")),
            # A Celery worker process writes events while the web process reads them:
            # WAL lets readers proceed during a write; the timeout rides out short write locks.
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file, not the shared-cache in-memory DB: that one locks whole tables and
            # ignores the busy timeout, so the concurrency tests would test SQLite's quirk.
            "TEST": {"NAME": str(VAR_DIR / "test-kernelweb.sqlite3")},
        }
    }
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # A network drop without a reset leaves a connection half-open: a worker waiting on it would wait for
    # ever. TCP keepalives end it after about a minute of silence (then db_retry reconnects); a connect
    # gives up after 10 s. Options in DATABASE_URL's query string (?keepalives_idle=…) take precedence.
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    for option, value in (("connect_timeout", 10), ("keepalives", 1), ("keepalives_idle", 30),
                          ("keepalives_interval", 10), ("keepalives_count", 3)):
        _options.setdefault(option, value)
DATABASES["default"].setdefault("CONN_MAX_AGE", env_int("DB_CONN_MAX_AGE", 0, minimum=0))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
# The web server (ASGI) on PostgreSQL should use a connection pool: a new connection per query queued
# 200 websocket handshakes past daphne's 5 s limit, and persistent connections leak one per request
# thread under ASGI ("too many clients"; bench/load.py, docs/benchmarks.md). Off by default because a
# pool must not cross a fork: set it for daphne only, never for the Celery prefork workers.
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 0, minimum=0)
if DB_POOL_MAX_SIZE and DATABASES["default"]["ENGINE"].endswith("postgresql"):
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django refuses persistent connections with a pool
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": DB_POOL_MAX_SIZE,
                                                              "timeout": 30}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "apps.accounts.lockout.LockoutBackend",  # refuses locked-out clients before any password check
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = DEBUG  # development serves straight from static/; production from collectstatic
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Redis switches both the Celery broker and the Channels layer; without it,
# an embedded file broker and an in-process layer (plus the DB event tail).
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss"))
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py's default 5 s socket timeout races channels_redis's 5 s BZPOPMIN and drops
            # idle websockets with "Timeout reading"; the socket timeout must outlast the blocking pop.
            # Many sockets connecting or closing at once (a page of viewers, a redeploy) each take a pool
            # connection for group_add/discard: redis-py's default cap of 100 raised MaxConnectionsError
            # under bench/load.py. A busy run's burst must also fit a channel's queue (`capacity`); a
            # message over it is dropped and the consumer backfills the gap from the database.
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30,
                                  "max_connections": env_int("CHANNELS_REDIS_MAX_CONNECTIONS", 2000, minimum=10)}],
                       "capacity": env_int("CHANNELS_CAPACITY", 1000, minimum=100),
                       "prefix": env_str("CHANNELS_PREFIX", "kernelweb")},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The DB tail carries events across processes when no Redis layer does; with
# Redis it only backfills gaps, so it can poll far less often.
EVENT_POLL_SECONDS = env_float("EVENT_POLL_SECONDS", 5.0 if REDIS_URL else 0.5, minimum=0.05)

# Celery (JSON only, ids in messages, late acks with idempotent claims).
BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_URL = REDIS_URL or "filesystem://"
# Without Redis, kombu's filesystem transport with its races between processes fixed (kernelweb/broker.py).
CELERY_BROKER_TRANSPORT = None if REDIS_URL else "kernelweb.broker:Transport"
if not REDIS_URL:
    for folder in ("queue", "processed", "control"):
        (BROKER_DIR / folder).mkdir(parents=True, exist_ok=True)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 4 * 3600 + 600, minimum=60),
     "socket_connect_timeout": 2}  # a send to an unreachable broker fails in seconds, not minutes
    if REDIS_URL
    else {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),  # kombu's default is ./control in the cwd
        "store_processed": False,
    }
)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("RUN_SOFT_TIME_LIMIT", 4 * 3600, minimum=60)
# How long a worker retries a database step while the database is unreachable (apps/runs/execution.py).
WORKER_DB_RETRY_SECONDS = env_int("WORKER_DB_RETRY_SECONDS", 120, minimum=0)
CELERY_TASK_TIME_LIMIT = CELERY_TASK_SOFT_TIME_LIMIT + 300
CELERY_TASK_DEFAULT_QUEUE = DEFAULT_QUEUE
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
KERNELWEB_GPU_QUEUE = env_str("GPU_QUEUE", GPU_QUEUE)
# Worker registry (apps/fleet): each worker's main process stamps `last_seen` this often; a worker
# silent for WORKER_DEAD_AFTER_BEATS intervals is dead. Web and workers must agree on both.
# Per-user quotas on GPU work (apps/runs/quotas.py; admin overrides per user or group: Accounts › Quotas).
# Staff users are exempt. 0 refuses every launch of that kind.
QUOTA_ACTIVE_RUNS = env_int("QUOTA_ACTIVE_RUNS", 20, minimum=0)  # queued + running runs (an experiment's count)
QUOTA_ACTIVE_EXPERIMENTS = env_int("QUOTA_ACTIVE_EXPERIMENTS", 2, minimum=0)  # with a queued or running run
QUOTA_PENDING_MANUAL_TURNS = env_int("QUOTA_PENDING_MANUAL_TURNS", 5, minimum=0)  # not evaluated yet
# Fair share between users on a busy queue (apps/runs/fairness.py): a worker does not start a run of a user who
# already has this many running while another user's run waits on the same queue; it re-queues it after
# FAIR_SHARE_DEFER_SECONDS. 0 turns the rule off.
FAIR_SHARE_RUNNING_PER_USER = env_int("FAIR_SHARE_RUNNING_PER_USER", 2, minimum=0)
FAIR_SHARE_DEFER_SECONDS = env_int("FAIR_SHARE_DEFER_SECONDS", 15, minimum=1)

WORKER_HEARTBEAT_SECONDS = env_float("WORKER_HEARTBEAT_SECONDS", 15.0, minimum=0.1)
WORKER_DEAD_AFTER_BEATS = env_int("WORKER_DEAD_AFTER_BEATS", 3, minimum=2)
# Sending a message: give up after ~1 s of retries (the run stays in the outbox, the launch answers 503).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
# Delivery: the outbox and its reconciler (apps/runs/reconcile.py, docs/architecture.md "Delivery").
# Celery beat runs `runs.reconcile` every RECONCILE_INTERVAL_SECONDS; `manage.py reconcile_runs` does the same once.
RECONCILE_INTERVAL_SECONDS = env_float("RECONCILE_INTERVAL_SECONDS", 60.0, minimum=1.0)
# An unsent run younger than this is left to the send after its commit (a request still in flight).
RUN_DISPATCH_GRACE_SECONDS = env_float("RUN_DISPATCH_GRACE_SECONDS", 30.0, minimum=0.0)
# A sent run still queued after this, while a live worker of its queue is idle, lost its message: sent again.
RUN_REDISPATCH_AFTER_SECONDS = env_float("RUN_REDISPATCH_AFTER_SECONDS", 300.0, minimum=1.0)
# After this many messages without a worker taking the run, it fails with the reason.
RUN_MAX_DISPATCHES = env_int("RUN_MAX_DISPATCHES", 3, minimum=1)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- Verified before published (apps/runs/verification.py, docs/evaluation.md) ---
# Celery beat asks for a fresh evaluation (unseen seeds, fresh process) of every published best turn.
VERIFY_INTERVAL_SECONDS = env_float("VERIFY_INTERVAL_SECONDS", 300.0, minimum=1.0)
VERIFY_PASS_LIMIT = env_int("VERIFY_PASS_LIMIT", 20, minimum=1)  # verifications asked for per pass
VERIFY_RESEND_AFTER_SECONDS = env_float("VERIFY_RESEND_AFTER_SECONDS", 6 * 3600.0, minimum=60.0)
# A verification that could not decide (no GPU worker, a GPU that slowed itself down, a crash) is asked for again
# this long after it finished, at most VERIFY_RETRY_LIMIT times in all per turn; then only by hand (--again).
VERIFY_RETRY_AFTER_SECONDS = env_float("VERIFY_RETRY_AFTER_SECONDS", 3600.0, minimum=60.0)
VERIFY_RETRY_LIMIT = env_int("VERIFY_RETRY_LIMIT", 3, minimum=0)
# P of the fresh run may differ from the recorded P by this fraction and still confirm it (same GPU model).
VERIFY_SCORE_TOLERANCE = env_float("VERIFY_SCORE_TOLERANCE", 0.10, minimum=0.0)
# The showcase lists a task's best turn only when at least this fast, and only when verified in production;
# in development (no GPU to verify on, e.g. `make run`'s demo) unverified results show, labelled so.
SHOWCASE_MIN_SPEEDUP = env_float("SHOWCASE_MIN_SPEEDUP", 1.1, minimum=0.0)
SHOWCASE_REQUIRE_VERIFIED = env_bool("SHOWCASE_REQUIRE_VERIFIED", PRODUCTION)

# Secrets at rest (LLM endpoint API keys): Fernet keys, comma-separated, newest
# first so keys can be rotated. Derived from SECRET_KEY when unset (development).
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS")
if PRODUCTION or FIELD_ENCRYPTION_KEYS:  # required in production; when set, every entry must be a Fernet key
    secrets_check.check_field_encryption_keys(FIELD_ENCRYPTION_KEYS)

TASKS_DIR = Path(env_str("TASKS_DIR", str(BASE_DIR / "tasks")))

# --- LLM endpoint addresses (apps/llm/ssrf.py; README: Configuration) ---
# Endpoints may not point at loopback, private, link-local (cloud metadata) or other non-public addresses,
# when saved and again before each run; host names, IPs or networks (CIDR) listed here are exempt,
# e.g. LLM_ENDPOINT_ALLOWED_HOSTS=localhost,10.0.5.0/24 for a model server on the local network.
LLM_ENDPOINT_ALLOWED_HOSTS = env_list("LLM_ENDPOINT_ALLOWED_HOSTS")
# --- end LLM endpoint addresses ---

# LLM calls: per-call timeout, and an optional JSON price table (USD per 1M tokens) over the defaults.
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 180.0, minimum=1.0)
LLM_PRICES_FILE = env_str("LLM_PRICES_FILE")

# Experiments: the library references' speedups (cuBLAS, cuSPARSE, CUB...) over the naive baselines, for the
# per-operator comparison and expert-relative speed; the JSON `bench/library.py --time --json PATH` writes.
LIBRARY_REFERENCES_FILE = env_str("LIBRARY_REFERENCES_FILE")

# REST API (/api/). Token first: an anonymous request then gets a 401 with `WWW-Authenticate: Token`
# (with Session first DRF answers 403). Session auth keeps CSRF checks for browser requests.
# Throttles count in the default cache, i.e. per process unless a shared cache is configured.
API_THROTTLE_RATES = {
    "anon": env_str("API_THROTTLE_ANON", "60/minute"),
    "user": env_str("API_THROTTLE_USER", "1200/minute"),  # the events poll of a few open runs fits easily
    "token": env_str("API_THROTTLE_TOKEN", "10/minute"),  # password guesses on /api/auth/token/
}
for _scope, _rate in API_THROTTLE_RATES.items():
    if not re.fullmatch(r"[1-9]\d*/(s|sec|second|m|min|minute|h|hour|d|day)", _rate):
        raise ImproperlyConfigured(f"API_THROTTLE_{_scope.upper()}={_rate!r}: use N/second|minute|hour|day")
# Who the client is, for the throttles and the login lockout alike: REMOTE_ADDR, or with N trusted reverse
# proxies in front, the address N hops from the right of X-Forwarded-For (what the outermost proxy saw).
# Never more than the proxies really there: a client can write any X-Forwarded-For it likes.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)

# Login lockout (django-axes) on /accounts/login/, /api/auth/token/ and the admin: after
# AXES_FAILURE_LIMIT failures of one username from one client address, that pair is refused (HTTP 429)
# for AXES_COOLOFF_MINUTES after its latest attempt; admins unlock in Admin > Axes > Access attempts.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [
    [part.strip() for part in key.split("+")]
    for key in env_list("AXES_LOCKOUT_PARAMETERS", ["username+ip_address"])
]
for _key in AXES_LOCKOUT_PARAMETERS:
    if not _key or not set(_key) <= {"username", "ip_address"}:
        raise ImproperlyConfigured(
            "AXES_LOCKOUT_PARAMETERS: comma-separated keys, each `username`, `ip_address` or `username+ip_address`"
        )
AXES_CLIENT_IP_CALLABLE = "apps.accounts.lockout.client_ip"
AXES_LOCKOUT_CALLABLE = "apps.accounts.lockout.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False  # no banner on every manage.py command; lockouts are still logged as warnings
AXES_RESET_ON_SUCCESS = True  # a successful login forgets that pair's earlier failures

REST_FRAMEWORK = {
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "apps.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": API_THROTTLE_RATES,
    "COERCE_DECIMAL_TO_STRING": False,  # costs and budgets as JSON numbers
}
SPECTACULAR_SETTINGS = {
    "TITLE": "KernelWeb API",
    "DESCRIPTION": "Tasks, optimization runs, turns, profiles and run events. Guide: docs/api.md.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Schema and docs are public: they describe the API's shapes, never data (every data endpoint needs
    # a session or token), and client generators can fetch them without credentials.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Two choice sets share the field name "precision": a task's, and an analysis's (which adds "all").
    "ENUM_NAME_OVERRIDES": {
        "PrecisionEnum": "apps.catalog.models.Precision",
        "AnalysisPrecisionEnum": "apps.experiments.reports.PRECISIONS",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Preloading is a one-way commitment for the whole domain: opt in explicitly.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
