#!/bin/sh
set -e
export MYSITE_WORKERS=3
exec gunicorn -c gunicorn.conf.py mysite.wsgi
