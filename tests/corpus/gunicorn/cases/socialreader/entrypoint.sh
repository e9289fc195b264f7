#!/bin/sh
mkdir -p run logs
exec gunicorn mysite.wsgi:application -c gunicorn_conf.py
