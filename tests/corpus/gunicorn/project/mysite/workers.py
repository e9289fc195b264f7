"""A project's own worker class, as document managers ship one: a subclass of uvicorn's worker
(uvicorn is not installed in the test environment, which is the point: it cannot be served)."""

from uvicorn.workers import UvicornWorker


class ConfigurableWorker(UvicornWorker):
    CONFIG_KWARGS = {"root_path": "", "proxy_headers": True}
