"""Gunicorn configuration: metrics to the Datadog agent, JSON-ish access lines."""
import os

bind = f"{os.environ['HOST']}:{os.environ['PORT']}"
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
worker_class = "gthread"

statsd_host = os.environ.get("DD_AGENT_HOST", "localhost") + ":8125"
statsd_prefix = "shop"
dogstatsd_tags = "env:test,service:shop"

accesslog = "-"
access_log_format = (
    '{"remote_ip":"%(h)s","request_id":"%({x-request-id}i)s","response_code":"%(s)s",'
    '"request_method":"%(m)s","request_path":"%(U)s","request_querystring":"%(q)s",'
    '"request_timetaken":"%(D)s","response_length":"%(B)s"}'
)
