"""An app that reconfigures logging at import the way many Django projects do: `dictConfig`
with `disable_existing_loggers` left at its default (True), naming only its own loggers.
``/fail`` raises, so the server's error log line for it can be checked."""

import logging.config

logging.config.dictConfig({
    "version": 1,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"myapp": {"handlers": ["console"], "level": "INFO"}},
})


def app(environ, start_response):
    if environ["PATH_INFO"] == "/fail":
        raise RuntimeError("app failure for the log test")
    start_response("200 OK", [("Content-Length", "2")])
    return [b"ok"]
