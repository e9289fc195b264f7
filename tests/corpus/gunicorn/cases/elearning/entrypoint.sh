#!/bin/sh
exec gunicorn -c gunicorn_conf.py lms.wsgi:application
