#!/bin/sh
set -e
rm -rf prometheus_tmp && mkdir prometheus_tmp
exec gunicorn --config gunicorn.conf.py mysite.wsgi
