#!/usr/bin/env bash
set -e
export DOCS_BIND_ADDR="$HOST" DOCS_PORT="$PORT"
exec gunicorn -c gunicorn.conf.py mysite.asgi:application
