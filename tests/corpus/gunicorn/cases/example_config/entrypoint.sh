#!/bin/sh
exec gunicorn -c gunicorn.conf.py mysite.wsgi:application
