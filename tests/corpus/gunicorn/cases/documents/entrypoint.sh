#!/usr/bin/env bash
set -e
export DOCS_BIND_ADDR="$HOST" DOCS_PORT="$PORT" DOCS_WEBSERVER_WORKERS=2
exec gunicorn -c gunicorn.conf.py mysite.wsgi
