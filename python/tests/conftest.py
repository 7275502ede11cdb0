"""Shared fixtures: the package from this tree (python/), and paths of the build's binaries
from the environment CTest sets (AIRLOCK_LIBRARY, AIRLOCK_WORKER, AIRLOCKD)."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

SECRET = "python-tests-continuation-secret-0123456789"


@pytest.fixture
def runner():
    import airlock
    r = airlock.Runner(secret=SECRET)
    yield r
    r.close()
