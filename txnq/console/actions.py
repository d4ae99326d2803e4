"""What an administrator may do from the console: create and delete a topic,
set its policies, seek or skip a subscription, abort a hanging transaction,
produce a test message. Each goes through the library (``client.admin``, a
producer) and is recorded, done or failed, in ``txnq.console_actions``
(``txnq.console_record_action_v1``, which refuses a role that may not
administer: the server refuses such a role before anything runs, the
function refuses it again).

Arguments come from the page as JSON; each is checked here (type, range)
and by the library (names, durations, sizes) before anything changes: bad
input is a :class:`txnq.errors.InvalidArgumentError` and is not recorded,
as nothing was tried."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import Any

from txnq import errors
from txnq.client import Client
from txnq.console.reads import ConsoleDatabase, jsonable
from txnq.names import validate_name

#: The largest test message the console sends (it is typed into a text box).
MAX_TEST_MESSAGE_BYTES = 64 * 1024
#: The most partitions a topic created from the page may have.
MAX_PARTITIONS = 1024

Arguments = dict[str, Any]


def _text(args: Arguments, name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        if required:
            raise errors.InvalidArgumentError(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise errors.InvalidArgumentError(f"{name} must be a string, not {type(value).__name__}")
    return value


def _name(args: Arguments, name: str, kind: str) -> str:
    return validate_name(_text(args, name), kind)


def _int(args: Arguments, name: str, low: int, high: int, default: int | None = None) -> int:
    value = args.get(name, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise errors.InvalidArgumentError(f"{name} must be a whole number from {low} to {high}")
    return value


def _flag(args: Arguments, name: str) -> bool:
    value = args.get(name, False)
    if not isinstance(value, bool):
        raise errors.InvalidArgumentError(f"{name} must be true or false")
    return value


def _seek_target(args: Arguments) -> str | int | datetime:
    """``to``: earliest, latest, an offset, or an ISO 8601 time with its zone."""
    to = _text(args, "to")
    assert to is not None
    if to in ("earliest", "latest"):
        return to
    if to.isdigit():
        return int(to)
    try:
        when = datetime.fromisoformat(to)
    except ValueError:
        raise errors.InvalidArgumentError(
            f"to must be earliest, latest, an offset or an ISO 8601 time, not {to!r}"
        ) from None
    if when.tzinfo is None:
        raise errors.InvalidArgumentError("a seek time needs its time zone, e.g. 2026-01-31T12:00Z")
    return when


#: The policies the console's policy form changes (txnq.Admin.set_topic_policy).
POLICY_FIELDS = (
    "retention",
    "retention_size",
    "ttl",
    "backlog_quota_size",
    "backlog_quota_age",
    "backlog_quota_policy",
)


class ConsoleActions:
    """Runs the console's actions with one :class:`txnq.Client`, made at the
    first action (a read-only console never makes one)."""

    def __init__(self, database: ConsoleDatabase) -> None:
        self._db = database
        self._client: Client | None = None
        self._lock = threading.Lock()
        self._actions: dict[str, Callable[[Client, Arguments], tuple[str, Any]]] = {
            "create_topic": self._create_topic,
            "delete_topic": self._delete_topic,
            "set_policy": self._set_policy,
            "seek_subscription": self._seek_subscription,
            "skip_subscription": self._skip_subscription,
            "abort_transaction": self._abort_transaction,
            "produce": self._produce,
        }

    @property
    def names(self) -> list[str]:
        return list(self._actions)

    def may_administer(self) -> bool:
        return bool(self._db.query("console_role", {})[0]["may_administer"])

    def _admin_client(self) -> Client:
        with self._lock:
            if self._client is None:
                self._client = Client(self._db.dsn, settings=self._db.settings)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def run(self, action: str, args: object) -> dict[str, Any]:
        """Run ``action`` with ``args`` (a JSON object) and record it. Raises
        PermissionDeniedError for a role that may not administer, the
        library's error when the action fails (after recording it)."""
        perform = self._actions.get(action)
        if perform is None:
            raise errors.InvalidArgumentError(
                f"unknown action {action!r}: one of {', '.join(self._actions)}"
            )
        if not isinstance(args, dict):
            raise errors.InvalidArgumentError("an action's arguments are a JSON object")
        if not self.may_administer():
            role = self._db.query("console_role", {})[0]["role"]
            raise errors.PermissionDeniedError(
                f"permission denied: role {role} may only read the console; run it as a "
                "member of txnq_admin to act"
            )
        client = self._admin_client()
        target, call = perform(client, args)
        try:
            result = jsonable(call())
        except errors.TxnqError as exc:
            self._record(action, target, args, str(exc))
            raise
        self._record(action, target, args, None)
        return {"action": action, "target": target, "result": result}

    def _record(self, action: str, target: str, args: Arguments, error: str | None) -> None:
        details = json.dumps({k: v for k, v in args.items() if k != "payload"})
        self._db.query(
            "console_record_action",
            {"action": action, "target": target, "details": details, "error": error},
        )

    # -- the actions: each checks its arguments and returns (target, the call) --

    @staticmethod
    def _create_topic(client: Client, args: Arguments) -> tuple[str, Any]:
        topic = _name(args, "topic", "topic")
        partitions = _int(args, "partitions", 1, MAX_PARTITIONS, default=1)
        retention = _text(args, "retention", required=False)
        ttl = _text(args, "ttl", required=False)

        def call() -> Any:
            info = client.admin.create_topic(
                topic, partitions, retention=retention or 0, ttl=ttl or None
            )
            return info.to_dict()

        return topic, call

    @staticmethod
    def _delete_topic(client: Client, args: Arguments) -> tuple[str, Any]:
        topic = _name(args, "topic", "topic")
        force = _flag(args, "force")
        return topic, lambda: client.admin.delete_topic(topic, force=force)

    @staticmethod
    def _set_policy(client: Client, args: Arguments) -> tuple[str, Any]:
        topic = _name(args, "topic", "topic")
        changes: dict[str, Any] = {}
        # What txnq.Admin.set_topic_policy takes; "none" removes a TTL,
        # "default" puts a backlog quota value back to the server's default.
        for name in POLICY_FIELDS:
            value = _text(args, name, required=False)
            if value is not None:
                cleared = (name == "ttl" and value == "none") or (
                    name.startswith("backlog_quota_") and value == "default"
                )
                changes[name] = None if cleared else value
        if not changes:
            raise errors.InvalidArgumentError(f"give one of {', '.join(POLICY_FIELDS)} to change")
        return topic, lambda: client.admin.set_topic_policy(topic, **changes).to_dict()

    @staticmethod
    def _seek_subscription(client: Client, args: Arguments) -> tuple[str, Any]:
        topic = _name(args, "topic", "topic")
        subscription = _name(args, "subscription", "subscription")
        to = _seek_target(args)

        def call() -> Any:
            cursors = client.admin.reset_subscription(topic, subscription, to)
            return [asdict(c) for c in cursors]

        return f"{topic}/{subscription}", call

    @staticmethod
    def _skip_subscription(client: Client, args: Arguments) -> tuple[str, Any]:
        """Skip the whole backlog (Pulsar's skip-all / clear-backlog)."""
        topic = _name(args, "topic", "topic")
        subscription = _name(args, "subscription", "subscription")

        def call() -> Any:
            cursors = client.admin.reset_subscription(topic, subscription, "latest")
            return [asdict(c) for c in cursors]

        return f"{topic}/{subscription}", call

    @staticmethod
    def _abort_transaction(client: Client, args: Arguments) -> tuple[str, Any]:
        txn_id = _text(args, "txn_id")
        assert txn_id is not None
        if len(txn_id) > 40:
            raise errors.InvalidArgumentError("txn_id is a transaction id such as 3:17")
        return txn_id, lambda: client.admin.abort_transaction(txn_id).to_dict()

    @staticmethod
    def _produce(client: Client, args: Arguments) -> tuple[str, Any]:
        topic = _name(args, "topic", "topic")
        payload = (_text(args, "payload", required=False) or "").encode("utf-8")
        if len(payload) > MAX_TEST_MESSAGE_BYTES:
            raise errors.InvalidArgumentError(
                f"a test message from the console is at most {MAX_TEST_MESSAGE_BYTES} bytes"
            )
        key = _text(args, "key", required=False)

        def call() -> Any:
            with client.producer(topic, name=None) as producer:
                message_id = producer.send(payload, key=key)
            return {"partition": message_id.partition, "offset": message_id.offset}

        return topic, call
