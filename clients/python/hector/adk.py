"""Hector as the session, memory and artifact services of an ADK agent
(google-adk): ``pip install "hector-client[adk]"``.

    from hector.adk import HectorSessionService, HectorMemoryService, HectorArtifactService

    runner = Runner(app_name="travel", agent=agent,
                    session_service=HectorSessionService("http://127.0.0.1:8080", api_key=None),
                    memory_service=HectorMemoryService("http://127.0.0.1:8080"),
                    artifact_service=HectorArtifactService("http://127.0.0.1:8080"))

An ADK event is a Hector event: its ID, author, invocation, branch, time
and state and artifact deltas are Hector's own fields, its words Hector's
message (what search finds), and the rest of it, as ADK writes it, is kept
whole in the event's ``metadata.adk``, so it reads back as it was written,
here and in ADK for Go.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Optional, Union

import httpx
from google.adk.artifacts.base_artifact_service import ArtifactVersion, BaseArtifactService
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from google.adk.sessions.state import State
from google.genai import types

from . import HectorError
from ._aio import AsyncHector

__all__ = ["HectorSessionService", "HectorMemoryService", "HectorArtifactService"]

_NATIVE = ("id", "timestamp", "invocationId", "author", "branch")


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _seconds(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def _message(author: str, content: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """What an event says in Hector's words: text (not thoughts), tool calls
    and results; from the event as JSON, as ADK writes it."""
    if not content or not content.get("parts"):
        return None
    parts: list[dict[str, Any]] = []
    for p in content["parts"]:
        call, result = p.get("functionCall") or {}, p.get("functionResponse") or {}
        if p.get("text") and not p.get("thought"):
            parts.append({"type": "text", "text": p["text"]})
        elif call.get("id") and call.get("name"):
            parts.append({"type": "tool_call", "tool_call": {"id": call["id"], "name": call["name"], "arguments": call.get("args") or {}}})
        elif result.get("id"):
            parts.append({"type": "tool_result", "tool_result": {"call_id": result["id"], "name": result.get("name"),
                                                                 "content": result.get("response")}})
    if not parts:
        return None
    return {"role": content.get("role") or ("user" if author == "user" else "model"), "parts": parts}


def to_hector(event: Event) -> dict[str, Any]:
    """The Hector event that holds an ADK event (its temp: keys already gone)."""
    rest = json.loads(event.model_dump_json(by_alias=True, exclude_none=True))
    for key in _NATIVE:
        rest.pop(key, None)
    actions = rest.get("actions", {})
    state_delta, artifact_delta = event.actions.state_delta, event.actions.artifact_delta
    if state_delta:
        actions.pop("stateDelta", None)
    if artifact_delta:
        actions.pop("artifactDelta", None)
    out: dict[str, Any] = {"author": event.author, "timestamp": _rfc3339(event.timestamp), "metadata": {"adk": rest},
                           "actions": {"state_delta": dict(state_delta), "artifact_delta": dict(artifact_delta)}}
    if event.id:
        out["id"] = event.id
    if event.invocation_id:
        out["invocation_id"] = event.invocation_id
    if event.branch:
        out["branch"] = event.branch
    if (message := _message(event.author, rest.get("content"))) is not None:
        out["message"] = message
    return out


def from_hector(h: dict[str, Any]) -> Event:
    """The ADK event a Hector event holds: as ADK wrote it, or, for an event
    another client of Hector wrote, made from its message."""
    data = dict((h.get("metadata") or {}).get("adk") or {})
    if "adk" not in (h.get("metadata") or {}) and h.get("message"):
        data["content"] = _content(h["message"])
    data.update(id=h["id"], author=h.get("author", ""), invocationId=h.get("invocation_id", ""),
                timestamp=_seconds(h["timestamp"]))
    if h.get("branch"):
        data["branch"] = h["branch"]
    actions = dict(data.get("actions") or {})
    hector_actions = h.get("actions") or {}
    if hector_actions.get("state_delta"):
        actions["stateDelta"] = hector_actions["state_delta"]
    if hector_actions.get("artifact_delta"):
        actions["artifactDelta"] = hector_actions["artifact_delta"]
    data["actions"] = actions
    return Event.model_validate_json(json.dumps(data))


def _content(message: dict[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for p in message.get("parts", []):
        if p.get("type") == "text":
            parts.append({"text": p.get("text", "")})
        elif p.get("type") == "tool_call":
            call = p["tool_call"]
            parts.append({"functionCall": {"id": call["id"], "name": call["name"], "args": call.get("arguments") or {}}})
        elif p.get("type") == "tool_result":
            result = p["tool_result"]
            response = result.get("content")
            parts.append({"functionResponse": {"id": result["call_id"], "name": result.get("name"),
                                               "response": response if isinstance(response, dict) else {"output": response}}})
    return {"role": "user" if message.get("role") == "user" else "model", "parts": parts}


def _session(s: dict[str, Any]) -> Session:
    return Session(id=s["id"], app_name=s["app_name"], user_id=s["user_id"], state=s.get("state") or {},
                   events=[from_hector(e) for e in s.get("events") or []],
                   last_update_time=_seconds(s["last_update_time"]))


class HectorSessionService(BaseSessionService):
    """ADK's sessions on a `hector serve`: the source of truth, on SQLite,
    PostgreSQL or MySQL, every event searchable. Two writers to one session
    both succeed, in order."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, *, timeout: float = 30.0,
                 client: Optional[httpx.AsyncClient] = None):
        self._hector = AsyncHector(base_url, api_key, timeout, client)

    async def create_session(self, *, app_name: str, user_id: str, state: Optional[dict[str, Any]] = None,
                             session_id: Optional[str] = None) -> Session:
        session_id = session_id.strip() if session_id else None
        try:
            return _session(await self._hector.create_session(app_name, user_id, session_id, state))
        except HectorError as e:
            if e.status == 409:
                raise AlreadyExistsError(f"Session with id {session_id} already exists.") from e
            raise

    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: Optional[GetSessionConfig] = None) -> Optional[Session]:
        after = config.after_timestamp if config else None
        after_arg = None
        if after is not None:
            # Hector keeps events later than `after`; ADK those at or after it.
            after_arg = _rfc3339(after - 1e-6)
        recent = config.num_recent_events if config and config.num_recent_events else None
        got = await self._hector.get_session(app_name, user_id, session_id, recent=recent, after=after_arg)
        if got is None:
            return None
        session = _session(got)
        events = session.events
        if after is not None:
            events = [e for e in events if e.timestamp >= after]
        if config and config.num_recent_events is not None:
            events = events[-config.num_recent_events:] if config.num_recent_events else []
        session.events = events
        return session

    async def list_sessions(self, *, app_name: str, user_id: Optional[str] = None) -> ListSessionsResponse:
        """A user's sessions, or with no user every user's of the app (which
        takes an app or admin key), without events, least recently updated first."""
        users = [user_id] if user_id is not None else [u async for u in self._hector.users(app_name)]
        sessions = [_session(s) for u in users async for s in self._hector.sessions(app_name, u)]
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._hector.delete_session(app_name, user_id, session_id)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        state = await self._hector.user_state(app_name, user_id)
        return {k.removeprefix(State.USER_PREFIX): v for k, v in state.items()}

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        event.timestamp = _seconds(_rfc3339(event.timestamp))  # to the microsecond every database keeps
        try:
            stored = await self._hector.append_event(session.app_name, session.user_id, session.id, to_hector(event))
        except HectorError as e:
            if e.status == 404:
                raise SessionNotFoundError(f"Session {session.id} not found.") from e
            raise
        event.id = stored["id"]
        self._commit_event_to_session(session, event)
        session.last_update_time = event.timestamp
        return event


class HectorMemoryService(BaseMemoryService):
    """ADK's memory on Hector's index: every session of a user, found by
    meaning and words, never another user's."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, *, timeout: float = 30.0,
                 client: Optional[httpx.AsyncClient] = None):
        self._hector = AsyncHector(base_url, api_key, timeout, client)

    async def add_session_to_memory(self, session: Session) -> None:
        """Makes a session's events searchable. A session Hector holds is
        searchable already: nothing is written. A session kept elsewhere
        (ADK's in-memory service, say) is copied into Hector's session of
        the same app, user and ID, each event once, by its ID; its state and
        artifact deltas are left out, so that another store's state never
        changes Hector's."""
        app, user = session.app_name, session.user_id
        held = await self._hector.get_session(app, user, session.id)
        if held is None:
            try:
                held = await self._hector.create_session(app, user, session.id)
            except HectorError as e:
                if e.status != 409:  # another add made it meanwhile
                    raise
                held = await self._hector.get_session(app, user, session.id) or {}
        have = {e["id"] for e in held.get("events") or []}
        for event in session.events:
            if event.partial or (event.id and event.id in have):
                continue
            copy = event.model_copy(deep=True)
            copy.actions.state_delta, copy.actions.artifact_delta = {}, {}
            try:
                stored = await self._hector.append_event(app, user, session.id, to_hector(copy))
            except HectorError as e:
                if e.status != 409:  # another add stored it meanwhile
                    raise
                continue
            have.add(stored["id"])

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        found = await self._hector.search(app_name, user_id, query)
        memories = [MemoryEntry(
            id=r["event_id"], author=r.get("author"), timestamp=r.get("timestamp"),
            content=types.Content(role="user" if r.get("role") == "user" else "model", parts=[types.Part(text=r["content"])]),
            custom_metadata={"session_id": r["session_id"], "score": r.get("score")}) for r in found]
        return SearchMemoryResponse(memories=memories)


_TEXT_PART = "adk_text_part"


class HectorArtifactService(BaseArtifactService):
    """ADK's artifacts on Hector's versioned artifacts. Versions count from
    0, as ADK's do. A "user:" name is the user's, seen from every session of
    theirs; Hector reaches it through one of those sessions, so a session ID
    is always needed. A text part is stored as UTF-8 text and loads back as
    text."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, *, timeout: float = 30.0,
                 client: Optional[httpx.AsyncClient] = None):
        self._hector = AsyncHector(base_url, api_key, timeout, client)

    @staticmethod
    def _session(session_id: Optional[str], filename: str) -> str:
        if not session_id:
            raise InputValidationError(
                f"artifact {filename!r}: give the session ID (Hector reaches even a user's artifacts through one of their sessions)")
        return session_id

    async def save_artifact(self, *, app_name: str, user_id: str, filename: str,
                            artifact: Union[types.Part, dict[str, Any]], session_id: Optional[str] = None,
                            custom_metadata: Optional[dict[str, Any]] = None) -> int:
        part = artifact if isinstance(artifact, types.Part) else types.Part.model_validate(artifact)
        metadata = dict(custom_metadata or {})
        if part.inline_data is not None:
            content, mime = part.inline_data.data or b"", part.inline_data.mime_type or "application/octet-stream"
        elif part.text is not None:
            content, mime, metadata[_TEXT_PART] = part.text.encode(), "text/plain; charset=utf-8", True
        else:
            raise InputValidationError("Hector stores inline data and text parts; file references are not supported")
        info = await self._hector.save_artifact(app_name, user_id, self._session(session_id, filename), filename,
                                                content, mime, metadata)
        return int(info["version"]) - 1

    async def load_artifact(self, *, app_name: str, user_id: str, filename: str, session_id: Optional[str] = None,
                            version: Optional[int] = None) -> Optional[types.Part]:
        if version is not None and version < 0:
            return None
        got = await self._hector.load_artifact(app_name, user_id, self._session(session_id, filename), filename,
                                               None if version is None else version + 1)
        if got is None:
            return None
        content, mime, metadata = got
        if metadata.get(_TEXT_PART):
            return types.Part(text=content.decode())
        return types.Part(inline_data=types.Blob(data=content, mime_type=mime))

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: Optional[str] = None) -> list[str]:
        found = await self._hector.artifacts(app_name, user_id, self._session(session_id, "*"))
        return sorted(a["name"] for a in found)

    async def delete_artifact(self, *, app_name: str, user_id: str, filename: str,
                              session_id: Optional[str] = None) -> None:
        await self._hector.delete_artifact(app_name, user_id, self._session(session_id, filename), filename)

    async def list_versions(self, *, app_name: str, user_id: str, filename: str,
                            session_id: Optional[str] = None) -> list[int]:
        return [v.version for v in await self.list_artifact_versions(
            app_name=app_name, user_id=user_id, filename=filename, session_id=session_id)]

    async def list_artifact_versions(self, *, app_name: str, user_id: str, filename: str,
                                     session_id: Optional[str] = None) -> list[ArtifactVersion]:
        session_id = self._session(session_id, filename)
        found = await self._hector.artifact_versions(app_name, user_id, session_id, filename)
        return [self._version(a, self._hector.artifact_url(app_name, user_id, session_id, filename)) for a in found]

    async def get_artifact_version(self, *, app_name: str, user_id: str, filename: str,
                                   session_id: Optional[str] = None,
                                   version: Optional[int] = None) -> Optional[ArtifactVersion]:
        versions = await self.list_artifact_versions(app_name=app_name, user_id=user_id, filename=filename,
                                                      session_id=session_id)
        if version is None:
            return versions[-1] if versions else None
        return next((v for v in versions if v.version == version), None)

    @staticmethod
    def _version(a: dict[str, Any], url: str) -> ArtifactVersion:
        """A Hector version (counted from 1) as ADK's (from 0); its URI is where the API serves it."""
        metadata = dict(a.get("metadata") or {})
        text = metadata.pop(_TEXT_PART, False)
        return ArtifactVersion(version=int(a["version"]) - 1, custom_metadata=metadata,
                               canonical_uri=f"{url}?version={a['version']}",
                               create_time=_seconds(a["created_at"]),
                               mime_type="text/plain" if text else a.get("mime_type"))
