#!/bin/sh
exec gunicorn mysite.wsgi -c gunicorn.conf.py
