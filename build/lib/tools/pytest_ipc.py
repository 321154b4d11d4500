"""A pytest plugin (`-p tools.pytest_ipc`, in pytest.ini): Jupyter kernels started under pytest (nbval's,
nbclient's) talk over IPC (Unix sockets) where it exists, as `make run`'s do, not over TCP on the loopback
interface: so `make test` needs no network at all (`unshare -n make test`)."""
import os

if os.name == "posix":
    from jupyter_client.connect import ConnectionFileMixin

    ConnectionFileMixin.transport.default_value = "ipc"
