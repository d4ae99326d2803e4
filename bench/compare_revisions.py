"""Before and after in one run: a benchmark of this tree next to the same
benchmark of an older commit, alternating, on the same PostgreSQL.

    python bench/compare_revisions.py --base c09e4da [--dsn DSN] [--rounds 3]
        [--bench bench/produce_consume.py] [-- bench arguments ...]

The older commit is checked out as a git worktree under ``.bench-base/<rev>``
with a venv of its own (made once, reused), so each side runs its own
library, SQL and migrations, each in a database of its own on the server of
``--dsn`` (``<name>_base`` and ``<name>_head``, created and migrated if
missing). Rounds alternate base, head, head, base, base, head ... so a
machine that slows down during the run, or a side that pays for the other's
writes (a checkpoint, autovacuum), weighs on both sides alike; the table shows each
measurement's median per side and head / base.

With ``--role NAME`` the benchmark runs as an application role: a LOGIN
role NAME (created if missing) in txnq_client with CREATE on schema public
(for the raw reference table); on a side whose schema has per-topic grants
(revision 0015 on) it gets 'admin' on the topic prefix ``bench-``, which
implies produce and consume. So the permission checks are measured on the
path an application takes, not the owner's shortcut.

The benchmark must accept ``--dsn`` and ``--json`` and print
``{"results": [{"name": ..., "msgs_per_s": ...}, ...]}`` (as
bench/produce_consume.py does).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], cwd: Path, **kwargs: Any) -> str:
    done = subprocess.run(cmd, cwd=cwd, check=True, text=True, capture_output=True, **kwargs)
    return done.stdout


def base_tree(rev: str) -> Path:
    """A worktree of ``rev`` with its own venv (made once)."""
    sha = _run(["git", "rev-parse", "--short", rev], ROOT).strip()
    tree = ROOT / ".bench-base" / sha
    if not tree.exists():
        print(f"checking out {sha} into {tree} ...", file=sys.stderr)
        _run(["git", "worktree", "add", "--detach", str(tree), sha], ROOT)
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        print(f"installing {sha} into {tree / '.venv'} ...", file=sys.stderr)
        _run([sys.executable, "-m", "venv", str(tree / ".venv")], tree)
        _run([str(python), "-m", "pip", "install", "--quiet", "-e", "."], tree)
    return tree


def database(dsn: str, name: str) -> str:
    """``name`` on the server of ``dsn``, created if missing; its DSN."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return psycopg.conninfo.make_conninfo(dsn, dbname=name)


HAS_GRANTS = "SELECT to_regprocedure('txnq.grant_topic_permission_v1(text, text, boolean, text[])')"
GRANT_PREFIX = (
    "SELECT txnq.grant_topic_permission_v1(%(role)s::text, 'bench-', true, ARRAY['admin'])"
)


def as_role(dsn: str, role: str) -> str:
    """``dsn``'s database as the application role ``role``, set up for the benchmark."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT txnq_client TO {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        has_grants = conn.execute(HAS_GRANTS).fetchone()
        if has_grants is not None and has_grants[0] is not None:
            conn.execute(GRANT_PREFIX, {"role": role})
    return psycopg.conninfo.make_conninfo(dsn, user=role)


def bench_once(
    tree: Path, dsn: str, bench: str, extra: list[str], role: str | None
) -> dict[str, float]:
    python = tree / ".venv" / "bin" / "python"
    _run([str(tree / ".venv" / "bin" / "txnq"), "migrate", "--dsn", dsn], tree)
    if role is not None:
        dsn = as_role(dsn, role)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = _run([str(python), bench, "--dsn", dsn, "--json", *extra], tree, env=env)
    return {r["name"]: float(r["msgs_per_s"]) for r in json.loads(out)["results"]}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the older commit (a git revision)")
    parser.add_argument(
        "--dsn",
        default=os.environ.get("TXNQ_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="a role that may CREATE DATABASE on the server to use",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bench", default="bench/produce_consume.py")
    parser.add_argument("--name", default="txnq_compare")
    parser.add_argument("--role", help="run the benchmark as this application role")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("extra", nargs="*", help="arguments for the benchmark (after --)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    sides = {"base": base_tree(args.base), "head": ROOT}
    dsns = {side: database(args.dsn, f"{args.name}_{side}") for side in sides}
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for round_ in range(args.rounds):
        # ABBA: the side that runs second in a round may pay for the first's
        # writes (a checkpoint, autovacuum), so the order turns every round.
        order = list(sides.items()) if round_ % 2 == 0 else list(sides.items())[::-1]
        for side, tree in order:
            print(f"round {round_ + 1}/{args.rounds}: {side}", file=sys.stderr)
            runs[side].append(bench_once(tree, dsns[side], args.bench, args.extra, args.role))

    names = list(runs["head"][0])
    table = []
    for name in names:
        base = statistics.median(r[name] for r in runs["base"] if name in r)
        head = statistics.median(r[name] for r in runs["head"])
        table.append({"name": name, "base": base, "head": head, "ratio": head / base})
    if args.json:
        print(json.dumps({"base": args.base, "rounds": args.rounds, "results": table}, indent=2))
        return 0
    who = f"as role {args.role}" if args.role else "as the DSN's role"
    print(
        f"{args.bench}: medians of {args.rounds} alternating rounds, "
        f"base {args.base} vs head, {who}"
    )
    print(f"{'measurement':40} {'base':>12} {'head':>12} {'head/base':>10}")
    for row in table:
        print(f"{row['name']:40} {row['base']:12,.0f} {row['head']:12,.0f} {row['ratio']:10.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
