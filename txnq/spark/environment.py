"""What Spark needs around it: Java 17+, the PostgreSQL JDBC driver, a JDBC URL
for the txnq DSN, and a SparkSession configured with all three.

The JDBC driver comes without Maven: ``make install-spark`` (part of ``make
test``) installs Debian's ``libpostgresql-jdbc-java``, whose jar is
``/usr/share/java/postgresql.jar``. :func:`find_jdbc_jar` looks, in order, at
the setting ``SPARK_JDBC_JAR`` (env ``TXNQ_SPARK_JDBC_JAR``), then the usual
places of distribution packages; when none has it, the session falls back to
``spark.jars.packages`` with the setting ``SPARK_JDBC_PACKAGE`` (Maven
coordinates, fetched by Spark on machines that reach Maven Central).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from psycopg.conninfo import conninfo_to_dict

from txnq.errors import SparkUnavailableError
from txnq.settings import load_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_JAVA = 17
JDBC_DRIVER_CLASS = "org.postgresql.Driver"
# Where distribution packages put the driver: Debian/Ubuntu
# (libpostgresql-jdbc-java), Fedora/RHEL (postgresql-jdbc), Alpine.
JDBC_JAR_PLACES = (
    "/usr/share/java/postgresql.jar",
    "/usr/share/java/postgresql-jdbc.jar",
    "/usr/share/java/postgresql-jdbc4.jar",
)
INSTALL_HINT = (
    "install the PostgreSQL JDBC driver: `apt-get install libpostgresql-jdbc-java` "
    "(Debian/Ubuntu; `make install-spark` does it), `dnf install postgresql-jdbc` "
    "(Fedora/RHEL), or download the jar and set TXNQ_SPARK_JDBC_JAR to its path"
)
_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


def java_version() -> int | None:
    """The major version of the ``java`` Spark would start (JAVA_HOME's, else
    the one on PATH), or None when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if java is None or not Path(java).exists():
        return None
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _JAVA_VERSION.search(done.stderr + done.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    # Java 8 and older call themselves 1.x.
    return int(match.group(2) or 0) if major == 1 else major


def check_java() -> int:
    """The Java major version; raises :class:`SparkUnavailableError` below 17."""
    version = java_version()
    if version is None:
        raise SparkUnavailableError(
            f"Spark needs Java {MIN_JAVA} or newer and no `java` was found (JAVA_HOME or PATH): "
            "install one, e.g. `apt-get install openjdk-17-jre-headless`"
        )
    if version < MIN_JAVA:
        raise SparkUnavailableError(
            f"Spark 4 needs Java {MIN_JAVA} or newer, found Java {version}: install "
            "openjdk-17-jre-headless (or newer) and point JAVA_HOME at it"
        )
    return version


def find_jdbc_jar() -> str | None:
    """The PostgreSQL JDBC jar: setting SPARK_JDBC_JAR, else a distribution's."""
    configured = load_settings().spark_jdbc_jar
    if configured:
        if not Path(configured).is_file():
            raise SparkUnavailableError(
                f"TXNQ_SPARK_JDBC_JAR names {configured}, which is not a file: fix the path "
                f"or unset it; or {INSTALL_HINT}"
            )
        return str(Path(configured).resolve())
    for place in JDBC_JAR_PLACES:
        if Path(place).is_file():
            return str(Path(place).resolve())
    return None


def jdbc_jar_config() -> dict[str, str]:
    """The Spark configuration that puts the driver on the classpath: the local
    jar, or the Maven package as a fallback."""
    jar = find_jdbc_jar()
    if jar is not None:
        return {"spark.jars": jar}
    return {"spark.jars.packages": load_settings().spark_jdbc_package}


class JdbcTarget(NamedTuple):
    """A JDBC URL and the connection properties Spark passes to the driver."""

    url: str
    properties: dict[str, str]


def jdbc_target(dsn: str) -> JdbcTarget:
    """The JDBC URL and properties for a libpq DSN (URL or key=value form).

    JDBC speaks TCP only: a DSN with a Unix-socket host is refused with a hint.
    """
    try:
        params = conninfo_to_dict(dsn)
    except Exception as exc:  # psycopg.ProgrammingError: a malformed DSN
        raise SparkUnavailableError(f"the DSN cannot be parsed ({exc})") from None
    host = str(params.get("host") or params.get("hostaddr") or "127.0.0.1")
    if "," in host:
        host = host.split(",")[0]
    if host.startswith("/") or host.startswith("@"):
        raise SparkUnavailableError(
            f"the DSN connects through a Unix socket ({host}); JDBC and Spark need TCP: give a "
            "DSN with host=127.0.0.1 (or another address) and port"
        )
    port = str(params.get("port") or "5432").split(",")[0]
    dbname = str(params.get("dbname") or params.get("user") or "postgres")
    url = f"jdbc:postgresql://{host}:{port}/{dbname}"
    properties = {"driver": JDBC_DRIVER_CLASS}
    for libpq, jdbc in (
        ("user", "user"),
        ("password", "password"),
        ("sslmode", "sslmode"),
        ("application_name", "ApplicationName"),
    ):
        if params.get(libpq):
            properties[jdbc] = str(params[libpq])
    if "user" not in properties:
        properties["user"] = os.environ.get("PGUSER") or _login_name()
    if "password" not in properties and os.environ.get("PGPASSWORD"):
        properties["password"] = os.environ["PGPASSWORD"]
    return JdbcTarget(url, properties)


def _login_name() -> str:
    import getpass

    return getpass.getuser()


def spark_session(
    app_name: str = "txnq",
    master: str = "local[2]",
    config: dict[str, str] | None = None,
) -> SparkSession:
    """A SparkSession ready for txnq: Java checked, the JDBC driver on the
    classpath, Python workers on this interpreter, the txnq data source
    registered (``spark.read.format("txnq")``). Returns the active session if
    there is one (its classpath cannot change then: create it with this).

    Local masters bind to ``SPARK_LOCAL_IP`` (127.0.0.1 unless set).
    """
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailableError("PySpark is not installed: pip install 'txnq[spark]'") from None
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.host": os.environ["SPARK_LOCAL_IP"],
        "spark.sql.session.timeZone": "UTC",
        **jdbc_jar_config(),
        **(config or {}),
    }
    builder: Any = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session: SparkSession = builder.getOrCreate()
    from txnq.spark.datasource import register

    register(session)
    return session


def require_jdbc_driver(spark: SparkSession) -> None:
    """Fail early and clearly when the session has no PostgreSQL JDBC driver."""
    jvm: Any = spark.sparkContext._jvm
    try:
        loader = jvm.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(JDBC_DRIVER_CLASS, True, loader)
    except Exception:
        raise SparkUnavailableError(
            f"this SparkSession has no PostgreSQL JDBC driver ({JDBC_DRIVER_CLASS}): create it "
            "with txnq.spark.spark_session(), or add the jar to spark.jars yourself; to get the "
            f"jar, {INSTALL_HINT}"
        ) from None
