#!/bin/sh
set -eu
echo "Starting gunicorn on ${HOST}:${PORT}"
exec gunicorn --workers 3 --bind "${HOST}:${PORT}" "app:create_app('gallery')" --timeout 120 \
    --access-logfile - --error-logfile -
