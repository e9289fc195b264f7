"""Fixture WSGI apps, one small module per behaviour, each exposing ``app``.

Served as ``tests.apps.NAME:app`` (see tests/conftest.py). Apps that must tell the test what
happened inside them record it with ``tests.apps._state`` (files in $SGTEST_STATE_DIR) or print
a line to stderr, which is the server's error log the tests read."""
