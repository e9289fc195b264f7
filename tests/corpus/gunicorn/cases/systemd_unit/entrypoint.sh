#!/bin/sh
# ExecStart= of a systemd unit, as deployment guides write it (paths made relative).
mkdir -p src/run src/log
exec gunicorn \
          --access-logfile log/access.log \
          --error-logfile - \
          --workers 2 \
          --timeout 60 \
          --graceful-timeout 10 \
          --pid run/app.pid \
          --chdir src \
          --bind "$HOST:$PORT" \
          -e MYSITE_LOG_LEVEL=warning \
          mysite.wsgi:application
