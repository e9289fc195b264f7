"""End-to-end tests of sluicegate over real sockets (see conftest.py for how servers start).

A regular package so that the fixture apps import as ``tests.apps.NAME`` in the server process."""
