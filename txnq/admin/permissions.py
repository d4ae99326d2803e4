"""Permissions per topic (docs/security.md): a role may produce, consume or
administer a topic, or every topic whose name starts with a prefix, as
Pulsar's grant-permission. ``client.admin.grant`` / ``revoke`` /
``permissions`` call the SQL functions of revision 0015, which check again
whoever calls them; this module validates the arguments first so a bad one
fails before any round trip.

Role and topic names are only ever bound as parameters: no SQL identifier is
built from them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from txnq.admin.base import AdminBase
from txnq.admin.info import TopicPermission
from txnq.errors import InvalidArgumentError, InvalidNameError
from txnq.names import validate_name

ACTIONS = ("produce", "consume", "admin")

#: Role names txnq grants to: what PostgreSQL accepts unquoted, plus . $ -
#: (the SQL functions check the same pattern and that the role exists).
ROLE_PATTERN = re.compile(r"^[A-Za-z0-9_.$-]{1,63}$")


def validate_role(value: object) -> str:
    """``value`` if it can be a role txnq grants to, else InvalidNameError."""
    if not isinstance(value, str):
        raise InvalidNameError(f"role name must be a str, not {type(value).__name__}")
    if not ROLE_PATTERN.fullmatch(value):
        raise InvalidNameError(
            f"role name {value[:80]!r} is not valid: use 1 to 63 characters of "
            "A-Z a-z 0-9 _ . $ - (the name of a PostgreSQL role)"
        )
    return value


def target(topic: str | None, prefix: str | None) -> tuple[str, bool]:
    """(resource, is_prefix) from exactly one of ``topic`` and ``prefix``."""
    if (topic is None) == (prefix is None):
        raise InvalidArgumentError(
            "give exactly one of topic= (one topic) and prefix= (every topic whose name "
            "starts with it)"
        )
    if topic is not None:
        return validate_name(topic, "topic"), False
    return validate_name(prefix, "topic prefix"), True


def parse_actions(
    actions: str | Iterable[str] | None, *, allow_none: bool = False
) -> list[str] | None:
    """A sorted list of distinct actions (produce, consume, admin); None when
    ``allow_none`` and none is given (revoke: every action)."""
    if actions is None:
        if allow_none:
            return None
        raise InvalidArgumentError("actions are required: one or more of produce, consume, admin")
    items = [actions] if isinstance(actions, str) else actions
    try:
        values = list(items)
    except TypeError:
        raise InvalidArgumentError(
            f"actions must be a str or a list of str, not {type(actions).__name__}"
        ) from None
    if not values:
        raise InvalidArgumentError("actions must not be empty: give produce, consume and/or admin")
    out: set[str] = set()
    for value in values:
        if not isinstance(value, str) or value.strip().lower() not in ACTIONS:
            raise InvalidArgumentError(
                f"unknown action {value!r}: use produce, consume or admin "
                "(admin includes produce and consume)"
            )
        out.add(value.strip().lower())
    return sorted(out)


class PermissionAdmin(AdminBase):
    """Grants of produce, consume and admin on topics and topic prefixes."""

    def grant(
        self,
        role: str,
        *,
        topic: str | None = None,
        prefix: str | None = None,
        actions: str | Iterable[str],
    ) -> int:
        """Allow ``role`` to ``actions`` (produce, consume, admin; admin
        includes the other two) the topic ``topic``, or every topic whose name
        starts with ``prefix`` (topics created later included). The topic need
        not exist yet. Returns how many grants were added."""
        resource, is_prefix = target(topic, prefix)
        params = {
            "role": validate_role(role),
            "resource": resource,
            "is_prefix": is_prefix,
            "actions": parse_actions(actions),
        }
        return int(self._client.query("grant_topic_permission", params)[0]["added"])

    def revoke(
        self,
        role: str,
        *,
        topic: str | None = None,
        prefix: str | None = None,
        actions: str | Iterable[str] | None = None,
    ) -> int:
        """Take back grants of :meth:`grant`: those of ``role`` on exactly
        that topic or prefix, for ``actions`` (None: all). Returns how many
        were removed."""
        resource, is_prefix = target(topic, prefix)
        params = {
            "role": validate_role(role),
            "resource": resource,
            "is_prefix": is_prefix,
            "actions": parse_actions(actions, allow_none=True),
        }
        return int(self._client.query("revoke_topic_permission", params)[0]["removed"])

    def permissions(
        self, *, role: str | None = None, topic: str | None = None
    ) -> list[TopicPermission]:
        """The grants the caller may see (admins: all; a role: its own and
        those on topics it administers); only ``role``'s, and only those that
        apply to ``topic`` (its own and every prefix it falls under), when given."""
        params = {
            "role": None if role is None else validate_role(role),
            "topic": None if topic is None else validate_name(topic, "topic"),
        }
        return [TopicPermission(**row) for row in self._client.query("topic_permissions", params)]
