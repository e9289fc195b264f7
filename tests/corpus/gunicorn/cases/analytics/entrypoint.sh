#!/bin/bash
set -e

exec gunicorn mysite.wsgi \
    --config gunicorn.config.py \
    --log-file - \
    --log-level info \
    --access-logfile - \
    --workers=2 \
    --threads=4 \
    --worker-class=gthread
