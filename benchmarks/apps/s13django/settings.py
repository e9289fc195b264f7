"""Django settings for S13: PostgreSQL through psycopg 3 on a unix socket, no debug, the
stock middleware that needs no database tables, templates from this package."""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG = HERE.parents[1] / ".work" / "s13" / "db.json"
_db = json.loads(CONFIG.read_text()) if CONFIG.exists() else {}

SECRET_KEY = "s13-benchmark-only"
DEBUG = False
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "s13django.urls"
INSTALLED_APPS = ["s13django"]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [str(HERE / "templates")],
    "OPTIONS": {},
}]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _db.get("name", "s13"),
        "USER": _db.get("user", "postgres"),
        "HOST": _db.get("host", "/tmp"),
        "PORT": str(_db.get("port", 5432)),
        # 0: a connection per request; null: one per thread, kept (Django's "persistent").
        "CONN_MAX_AGE": _db.get("conn_max_age", 0),
    }
}
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING_CONFIG = None
