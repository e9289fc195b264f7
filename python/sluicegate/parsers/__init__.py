"""The parsers of the options' values, all of them (the options table, options.py and its
options_*.py modules, says which option takes which). Each takes the value as written (a str
from the command line or the environment, or a Python value given to serve()) and returns the
typed value, or raises ValueError with a one-line reason that does not repeat the value
(resolution.validate adds the option and the value). The options that take one of a few names
take those of allowed_values.txt (`ALLOWED`).

By subject, one module each: plain values (values.py: numbers, sizes, seconds, switches,
paths), what runs (processes.py), addresses and trust (network.py), HTTP and its answers
(http.py), logs and metrics (log.py). This module names them all, so that a row of the table
imports its parser from one place. (The stats server's address parser, uwsgi_stats.parse_stats,
and the uWSGI request log's, in options_uwsgi.py, stay with the uWSGI front.)
"""

from __future__ import annotations

from .http import (MAX_SERVER_HEADER, StaticMount, parse_add_header, parse_expires,
                   parse_health_path, parse_http2, parse_http3, parse_http3_congestion,
                   parse_root_path, parse_server_header, parse_static)
from .log import (ACCESS_LOG_FIELDS, GUNICORN_NUMERIC_ATOMS, LOG_LEVELS, SYSLOG_FACILITIES,
                  UWSGI_FORMAT_PREFIX, parse_access_log, parse_access_log_format,
                  parse_error_log, parse_gunicorn_log_format, parse_log_config_dict,
                  parse_log_level, parse_metrics_bind, parse_statsd_host, parse_syslog_addr,
                  parse_syslog_facility)
from .network import (ALL_INTERFACES, parse_bind_value, parse_cert_reqs, parse_control_socket,
                      parse_forwarded_allow_ips, parse_forwarded_headers,
                      parse_proxy_protocol, parse_socket_mode, parse_socket_owner,
                      parse_tls_min_version)
from .processes import (parse_app, parse_command, parse_hooks, parse_on_term,
                        parse_pythonpath, parse_scheduler, parse_smart_command, parse_spin, parse_pace, parse_start_gate,
                        parse_threads, parse_warmup, parse_worker_class, parse_workers)
from .values import (parse_bool, parse_chdir, parse_count, parse_count_or_zero,
                     parse_env_item, parse_path, parse_path_or_off, parse_positive_size,
                     parse_proc_name, parse_seconds, parse_seconds_or_off, parse_size,
                     parse_str, parse_umask)

__all__ = [
    "MAX_SERVER_HEADER", "StaticMount", "parse_add_header", "parse_expires",
    "parse_health_path", "parse_http2", "parse_http3", "parse_http3_congestion",
    "parse_root_path", "parse_server_header", "parse_static",
    "ACCESS_LOG_FIELDS", "GUNICORN_NUMERIC_ATOMS", "LOG_LEVELS", "SYSLOG_FACILITIES",
    "UWSGI_FORMAT_PREFIX", "parse_access_log", "parse_access_log_format", "parse_error_log",
    "parse_gunicorn_log_format", "parse_log_config_dict", "parse_log_level",
    "parse_statsd_host", "parse_syslog_addr", "parse_syslog_facility",
    "ALL_INTERFACES", "parse_bind_value", "parse_cert_reqs", "parse_control_socket",
    "parse_forwarded_allow_ips", "parse_forwarded_headers", "parse_metrics_bind",
    "parse_proxy_protocol", "parse_socket_mode", "parse_socket_owner", "parse_tls_min_version",
    "parse_app", "parse_command", "parse_hooks", "parse_on_term", "parse_pythonpath",
    "parse_scheduler", "parse_smart_command", "parse_spin", "parse_pace", "parse_start_gate", "parse_threads", "parse_warmup",
    "parse_worker_class", "parse_workers",
    "parse_bool", "parse_chdir", "parse_count", "parse_count_or_zero", "parse_env_item",
    "parse_path", "parse_path_or_off", "parse_positive_size", "parse_proc_name",
    "parse_seconds", "parse_seconds_or_off", "parse_size", "parse_str", "parse_umask",
]
