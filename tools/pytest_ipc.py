"""A pytest plugin (`-p tools.pytest_ipc`, in pytest.ini): Jupyter kernels started under pytest (nbval's,
nbclient's) talk over IPC (Unix sockets) where it exists, as `make run`'s do, not over TCP on the loopback
interface: so `make test` needs no network at all (`unshare -n make test`).

nbval makes its KernelManager with no configuration (no config file or option reaches it), so the one way
in is the default of `ConnectionFileMixin.transport`: "ipc" from `pytest_configure` to `pytest_unconfigure`,
which puts jupyter_client's own default back. (A fixture would come too late: nbval starts a notebook's
kernel as it sets up the file, before the fixtures of its cells.)"""

import os
from unittest import mock

import pytest

PATCH = pytest.StashKey[object]()


def pytest_configure(config):
    if os.name == "posix":
        from jupyter_client.connect import ConnectionFileMixin

        config.stash[PATCH] = mock.patch.object(ConnectionFileMixin.transport, "default_value", "ipc")
        config.stash[PATCH].start()


def pytest_unconfigure(config):
    if PATCH in config.stash:
        config.stash[PATCH].stop()
        del config.stash[PATCH]
