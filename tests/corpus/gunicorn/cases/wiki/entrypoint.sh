#!/bin/sh
set -e
export WIKI_HOST="$HOST" WIKI_PORT="$PORT"
exec gunicorn -c gunicorn.conf.py mysite.wsgi
