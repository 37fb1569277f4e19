"""Who asks for an action: a Keystone user through the API, or the OS user of a local
command. It travels with a request into its job and the journal."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Actor:
    """A Keystone identity (user, project, roles, request id) or a local OS user."""

    #: keystone (through the API) or os (the local CLI or the daemon).
    kind: str
    user_id: str
    user_name: str = ""
    project_id: str = ""
    project_name: str = ""
    roles: tuple[str, ...] = ()
    request_id: str = ""

    @property
    def label(self) -> str:
        """What the journal's operator column says: name (id) in project, or user@host."""
        if self.kind != "keystone":
            return self.user_id
        who = f"{self.user_name} ({self.user_id})" if self.user_name else self.user_id
        return f"{who} in project {self.project_name or self.project_id}"

    def same_user(self, other: Actor | None) -> bool:
        """True when both name the same person: the same Keystone user id, or OS user."""
        return other is not None and (self.kind, self.user_id) == (other.kind, other.user_id)

    def to_json(self) -> dict[str, Any]:
        """The actor as a JSON document (journal params, a job's requester)."""
        document = asdict(self)
        document["roles"] = list(self.roles)
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any] | None) -> Actor | None:
        """The actor a JSON document describes, or None."""
        if not document or "kind" not in document or "user_id" not in document:
            return None
        known = {k: document[k] for k in cls.__dataclass_fields__ if k in document}
        known["roles"] = tuple(known.get("roles") or ())
        return cls(**known)
