"""Answers a JSON object of the process's environment variables named in the query string
(`/?A&B` -> `{"A": "...", "B": null}`): what `-e`/`raw_env` set in the serving process."""

import json
import os


def app(environ, start_response):
    names = [n for n in environ.get("QUERY_STRING", "").split("&") if n]
    body = json.dumps({n: os.environ.get(n) for n in names}).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]
