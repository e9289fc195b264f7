#!/bin/sh
exec gunicorn --config gunicorn.conf.py mysite.wsgi:application
