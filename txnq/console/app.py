"""The console's HTTP face (Starlette): the page (static files shipped in the
package: no template, no script or font from the internet) and the JSON
endpoints it polls.

- ``GET /api/whoami``, ``/api/topics``, ``/api/subscriptions``,
  ``/api/transactions``, ``/api/storage``, ``/api/actions``: what each part
  of the page shows (``?window=SECONDS`` for the charts);
- ``GET /api/messages?topic=T&partition=P&offset=N|time=ISO&limit=N``: the
  message browser;
- ``POST /api/actions/{action}`` with a JSON object: an administrator's
  action. Only with the header ``X-Txnq-Console: 1``: a page of another
  origin cannot send it without a CORS preflight, which this server never
  answers, so a site the operator visits cannot act through the console.

Errors are JSON ``{"error": ..., "type": ...}``: 400 for bad input, 403 for
a role that may not, 404 for what does not exist, 503 when PostgreSQL is
unreachable.
"""

from __future__ import annotations

from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from txnq import errors
from txnq.console.actions import ConsoleActions
from txnq.console.reads import ConsoleReads
from txnq.database.connections import is_outage

#: The header every action must carry (see the module's docstring).
ACTION_HEADER = "x-txnq-console"

STATIC = Path(str(resources.files("txnq.console").joinpath("static")))

_STATUS: tuple[tuple[type[errors.TxnqError], int], ...] = (
    (errors.PermissionDeniedError, 403),
    (errors.TopicNotFoundError, 404),
    (errors.SubscriptionNotFoundError, 404),
    (errors.TransactionNotFoundError, 404),
    (errors.ServerUnavailableError, 503),
)


def _error(message: str, kind: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message, "type": kind}, status_code=status)


async def _txnq_error(request: Request, exc: Exception) -> Response:
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 400)
    return _error(str(exc), type(exc).__name__, status)


async def _database_error(request: Request, exc: Exception) -> Response:
    if is_outage(exc):
        return _error(f"PostgreSQL is unavailable: {exc}", "ServerUnavailableError", 503)
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return _error(
            "permission denied: this console's role may not read that "
            f"({str(exc).splitlines()[0]})",
            "PermissionDeniedError",
            403,
        )
    return _error(str(exc).splitlines()[0], "DatabaseError", 500)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(str(exc.detail), "HTTPError", exc.status_code)


def _number(request: Request, name: str) -> float | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except ValueError:
        raise errors.InvalidArgumentError(f"{name} must be a number, not {raw!r}") from None


def _whole(request: Request, name: str, default: int | None = None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise errors.InvalidArgumentError(f"{name} must be a whole number, not {raw!r}") from None


def create_app(reads: ConsoleReads, actions: ConsoleActions) -> Starlette:
    """The console's ASGI app over ``reads`` and ``actions``."""

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    def read(method: str, *, windowed: bool = False) -> Any:
        async def endpoint(request: Request) -> Response:
            call = getattr(reads, method)
            args = [_number(request, "window")] if windowed else []
            return JSONResponse(await run_in_threadpool(call, *args))

        return endpoint

    async def messages(request: Request) -> Response:
        topic = request.query_params.get("topic", "")
        partition = _whole(request, "partition", 0)
        offset = _whole(request, "offset")
        limit = _whole(request, "limit", 50)
        raw_time = request.query_params.get("time") or None
        since = None
        if raw_time is not None:
            try:
                since = datetime.fromisoformat(raw_time)
            except ValueError:
                raise errors.InvalidArgumentError(
                    f"time must be an ISO 8601 time such as 2026-01-31T12:00Z, not {raw_time!r}"
                ) from None
        assert partition is not None and limit is not None
        result = await run_in_threadpool(
            reads.messages, topic, partition, offset=offset, since=since, limit=limit
        )
        return JSONResponse(result)

    async def act(request: Request) -> Response:
        if request.headers.get(ACTION_HEADER) != "1":
            raise errors.PermissionDeniedError(
                f"an action needs the header {ACTION_HEADER}: 1 (the console's page sends it)"
            )
        try:
            body = await request.json()
        except ValueError:
            raise errors.InvalidArgumentError("an action's body is a JSON object") from None
        action = request.path_params["action"]
        return JSONResponse(await run_in_threadpool(actions.run, action, body))

    routes = [
        Route("/", page),
        Route("/api/whoami", read("whoami")),
        Route("/api/topics", read("topics", windowed=True)),
        Route("/api/subscriptions", read("subscriptions")),
        Route("/api/transactions", read("transactions")),
        Route("/api/storage", read("storage", windowed=True)),
        Route("/api/actions", read("actions")),
        Route("/api/messages", messages),
        Route("/api/actions/{action}", act, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    handlers: dict[Any, Any] = {
        errors.TxnqError: _txnq_error,
        psycopg.Error: _database_error,
        HTTPException: _http_error,
    }
    return Starlette(routes=routes, exception_handlers=handlers)
