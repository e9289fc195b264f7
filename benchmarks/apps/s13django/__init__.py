"""S13's Django project: one model, one view, one template, configured from a JSON file.

Owns the app that S13 (benchmarks/bench/s13.py) serves on every server: what most WSGI servers
run in production, a Django view that waits on PostgreSQL twice per request. Settings come
from `benchmarks/.work/s13/db.json`, written by the benchmark before each server starts (the
socket directory, the database, `CONN_MAX_AGE`), so that every server, whatever environment it
passes to its workers, serves the same app against the same database.
"""
