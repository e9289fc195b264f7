#!/bin/sh
set -e
export INVENTORY_LOG_LEVEL="${INVENTORY_LOG_LEVEL:-INFO}" INVENTORY_GUNICORN_WORKERS=3
exec gunicorn -c ./gunicorn.conf.py mysite.wsgi:application --bind "$HOST:$PORT"
