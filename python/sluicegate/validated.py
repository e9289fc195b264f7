"""`Config`: the validated options as one frozen record, the value resolution.py gives and the
rest of the front and the core's config read: one field per row of the options table
(options.py), in its order and with its type.

Generated from the table by `python -m sluicegate.options --write-config-class`
(config_class.py): do not edit; change the table's row and run that. Written out so that type
checkers and editors see every field; resolution.py fails to import, and
tests/test_options_contract.py fails, when this file and the table differ.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (tests/test_front_imports.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Optional, Tuple, Union

from . import records
from .hook_types import Hooks
from .listeners import BindAddress
from .static_mount import StaticMount


@records.record(frozen=True)
class Config:
    """The validated options, one field per entry of OPTIONS, in its order and with its type."""

    app: Union[str, Callable[..., Any]]
    bind: Tuple[BindAddress, ...]
    config: Optional[str]
    check_config: bool
    print_config: bool
    workers: Optional[int]
    worker_class: str
    preload: bool
    max_requests: int
    max_requests_jitter: int
    reload: bool
    reload_extra: Tuple[str, ...]
    warmup: str
    django_checks: bool
    max_rss: int
    attach_daemon: Tuple[str, ...]
    smart_attach_daemon: Tuple[str, ...]
    exec_pre_app: Tuple[str, ...]
    touch_reload: Tuple[str, ...]
    max_worker_lifetime: float
    max_worker_lifetime_delta: float
    on_term: str
    user: Optional[str]
    group: Optional[str]
    umask: Optional[int]
    pid: Optional[str]
    proc_name: Optional[str]
    threads: Optional[Tuple[int, int]]
    max_runnable: int
    scheduler: str
    spin: str
    pace: str
    start_gate: str
    backlog: int
    reuse_port: bool
    socket_mode: Optional[int]
    socket_owner: Optional[str]
    vacuum: bool
    header_timeout: float
    keepalive_timeout: float
    read_timeout: float
    min_body_rate: int
    body_timeout: float
    write_timeout: float
    timeout: float
    max_stuck: int
    graceful_timeout: float
    limit_request_line: int
    limit_header_bytes: int
    limit_headers: int
    limit_field_bytes: int
    limit_body: int
    limit_response_headers: int
    max_drain: int
    http2: str
    http2_max_streams: int
    http3: str
    http3_0rtt: bool
    http3_retry_above: int
    http3_congestion: str
    static: Tuple[StaticMount, ...]
    static_fallthrough: bool
    static_expires: Tuple[str, ...]
    static_expires_uri: Tuple[str, ...]
    write_high_water: int
    root_path: str
    forwarded_allow_ips: str
    forwarded_for_ips: str
    proxy_protocol: bool
    proxy_allow_ips: str
    certfile: Optional[str]
    keyfile: Optional[str]
    ca_certs: Optional[str]
    cert_reqs: str
    tls_min_version: str
    forwarded_headers: str
    health_path: str
    drain_delay: float
    access_log: Optional[str]
    access_log_format: str
    server_timing: bool
    early_hints: bool
    metrics_bind: str
    debug_requests: bool
    control_socket: str
    no_control_socket: bool
    log_level: str
    error_log: Optional[str]
    capture_output: bool
    log_config_dict: Optional[Mapping[str, Any]]
    log_config: Optional[str]
    log_config_json: Optional[str]
    log_syslog: bool
    syslog_addr: str
    syslog_prefix: Optional[str]
    syslog_facility: str
    disable_redirect_access_to_syslog: bool
    statsd_host: Optional[str]
    statsd_prefix: str
    dogstatsd_tags: str
    hooks: Optional[Hooks]
    server_header: str
    add_header: Tuple[str, ...]
    chdir: Optional[str]
    pythonpath: Optional[str]
    env: Tuple[str, ...]
    uwsgi_module: bool
    uwsgi_log_format: Optional[str]
    access_log_when: str
    access_log_forwarded_for: bool
    log_date: Optional[str]
    log_reopen: bool
    touch_logreopen: Tuple[str, ...]
    uwsgi_compat: Tuple[str, ...]
    stats: Optional[str]
    stats_http: bool


#: The fields the core's config takes under their own names (core=True in the table;
#: config.py).
CORE_FIELDS = (
    'max_runnable',
    'scheduler',
    'spin',
    'pace',
    'start_gate',
    'header_timeout',
    'keepalive_timeout',
    'read_timeout',
    'min_body_rate',
    'body_timeout',
    'write_timeout',
    'timeout',
    'graceful_timeout',
    'limit_request_line',
    'limit_header_bytes',
    'limit_headers',
    'limit_field_bytes',
    'limit_body',
    'limit_response_headers',
    'max_drain',
    'http2',
    'http2_max_streams',
    'http3',
    'http3_0rtt',
    'http3_retry_above',
    'http3_congestion',
    'static_fallthrough',
    'write_high_water',
    'root_path',
    'forwarded_allow_ips',
    'forwarded_for_ips',
    'proxy_allow_ips',
    'certfile',
    'keyfile',
    'ca_certs',
    'cert_reqs',
    'tls_min_version',
    'forwarded_headers',
    'health_path',
    'drain_delay',
    'access_log_format',
    'server_timing',
    'early_hints',
    'debug_requests',
    'no_control_socket',
    'log_level',
    'server_header',
    'access_log_when',
    'access_log_forwarded_for',
)
