# SPDX-License-Identifier: BSD-2-Clause
"""A throwaway PostgreSQL server for the history's tests: Debian's ``postgresql``
package, a cluster made by ``initdb`` in a temporary folder and started by
``pg_ctl`` as the ``postgres`` user (``runuser``), listening on a Unix socket only;
stopped and removed at the end of the session. Each test gets a database of its
own. Skipped, with the reason, where the package or root is missing."""

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest


def _bindir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1]) if found else None


def _as_postgres(*cmd, **kw):
    return subprocess.run(["runuser", "-u", "postgres", "--", *cmd], capture_output=True,
                          text=True, timeout=120, **kw)


@pytest.fixture(scope="session")
def pg_server():
    """``(socket folder, port)`` of a running throwaway PostgreSQL cluster."""
    pytest.importorskip("psycopg", reason="psycopg 3 not installed")
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server not installed (Debian: postgresql)")
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("starting a PostgreSQL cluster needs root (runuser -u postgres)")
    root = tempfile.mkdtemp(prefix="rtrig-pg-")
    os.chmod(root, 0o755)
    shutil.chown(root, "postgres")
    data = os.path.join(root, "data")
    port = 15432 + os.getpid() % 1000
    r = _as_postgres(f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres",
                     "--no-sync")
    assert r.returncode == 0, r.stderr
    r = _as_postgres(f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(root, "log"), "-w",
                     "-o", f"-k {root} -p {port} -c listen_addresses='' -c fsync=off", "start")
    assert r.returncode == 0, r.stderr + Path(root, "log").read_text()
    yield root, port
    _as_postgres(f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server):
    """The URL of a new, empty database on the session's server."""
    import psycopg
    root, port = pg_server
    name = f"h_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"postgresql://postgres@/postgres?host={root}&port={port}",
                         autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")
    return f"postgresql://postgres@/{name}?host={root}&port={port}"
