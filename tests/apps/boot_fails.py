"""An app whose module fails to import (a missing dependency): a worker cannot boot."""

import sluicegate_test_no_such_dependency  # noqa: F401

app = None
