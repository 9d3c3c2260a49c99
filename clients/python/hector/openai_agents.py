"""Hector as an OpenAI Agents SDK session (openai-agents):
``pip install "hector-client[openai-agents]"``.

    from hector.openai_agents import HectorSession

    session = HectorSession("trip-42", "http://127.0.0.1:8080", user_id="alice", app="travel")
    result = await Runner.run(agent, "Where did I say I'd go?", session=session)

Each item is one event of Hector's session of that ID, the item whole in
its ``metadata.openai_agents``, its words in its message: so the
conversation is searchable memory, through `memory:search` and the
agents' `search_memory`. Hector's log is append-only: ``pop_item`` appends
a marker that takes the item out of what ``get_items`` returns, and the
item itself stays in the log, and in search, until ``clear_session``
deletes the session.
"""

from __future__ import annotations

import json
from typing import Any, Optional

import httpx
from agents.items import TResponseInputItem
from agents.memory.session import SessionABC
from agents.memory.session_settings import SessionSettings, resolve_session_limit

from . import HectorError
from ._aio import AsyncHector, holds_all

__all__ = ["HectorSession"]

_KEY = "openai_agents"
_AUTHOR = "openai-agents"  # of the markers pop_item appends
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("text"))
    return ""


def _message(item: dict[str, Any]) -> Optional[dict[str, Any]]:
    """What an item says in Hector's words: a message's text, a tool call or its output."""
    kind = item.get("type", "message")
    if kind == "message" and item.get("role") in _ROLES:
        text = _text(item.get("content"))
        return {"role": _ROLES[item["role"]], "parts": [{"type": "text", "text": text}]} if text else None
    if kind == "function_call" and item.get("call_id") and item.get("name"):
        try:
            args = json.loads(item.get("arguments") or "{}")
        except ValueError:
            args = None
        return {"role": "assistant", "parts": [{"type": "tool_call", "tool_call": {
            "id": item["call_id"], "name": item["name"], "arguments": args if isinstance(args, dict) else {"arguments": item.get("arguments")}}}]}
    if kind == "function_call_output" and item.get("call_id"):
        return {"role": "tool", "parts": [{"type": "tool_result", "tool_result": {"call_id": item["call_id"], "content": item.get("output")}}]}
    return None


def _event(item: TResponseInputItem) -> dict[str, Any]:
    as_dict: dict[str, Any] = dict(item)
    author = as_dict.get("role") or as_dict.get("type") or "item"
    event: dict[str, Any] = {"author": author, "metadata": {_KEY: {"item": as_dict}}}
    if (message := _message(as_dict)) is not None:
        event["message"] = message
    return event


class HectorSession(SessionABC):
    """The conversation history of one Agents SDK session, kept by a `hector
    serve` as the session ``session_id`` of (``app``, ``user_id``). Appends
    from several processes interleave in order; a pop takes out the newest
    item there is when it is made (compare-and-swap), never one appended
    after it."""

    session_settings: Optional[SessionSettings] = None

    def __init__(self, session_id: str, base_url: str, *, user_id: str, app: str = "openai-agents",
                 api_key: Optional[str] = None, session_settings: Optional[SessionSettings] = None,
                 timeout: float = 30.0, client: Optional[httpx.AsyncClient] = None):
        if not user_id:
            raise ValueError("user_id is needed: Hector keeps every conversation in one user's memory")
        self.session_id, self.app, self.user_id = session_id, app, user_id
        self.session_settings = session_settings or SessionSettings()
        self._hector = AsyncHector(base_url, api_key, timeout, client)

    async def _events(self, recent: Optional[int] = None) -> tuple[list[tuple[str, dict[str, Any]]], int, bool]:
        """The live items (event ID, item), oldest first, of the newest `recent`
        events (all when None); the session's last sequence number; whether
        those were all its events."""
        got = await self._hector.get_session(self.app, self.user_id, self.session_id, recent=recent)
        if got is None:
            return [], 0, True
        events = got.get("events") or []
        live: dict[str, dict[str, Any]] = {}
        for e in events:
            held = (e.get("metadata") or {}).get(_KEY) or {}
            if "item" in held:
                live[e["id"]] = held["item"]
            elif "pop" in held:
                live.pop(held["pop"], None)
        return list(live.items()), int(got.get("last_seq") or 0), holds_all(events, recent)

    async def get_items(self, limit: Optional[int] = None) -> list[TResponseInputItem]:
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is None or limit < 0:
            items, _, _ = await self._events()
            return [i for _, i in items]  # type: ignore[misc]
        if limit == 0:
            return []
        window = limit
        while True:  # read more only when pops hide items in the newest events
            items, _, whole = await self._events(window)
            if len(items) >= limit or whole:
                return [i for _, i in items[-limit:]]  # type: ignore[misc]
            window *= 2

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        for item in items:
            await self._hector.append_creating(self.app, self.user_id, self.session_id, _event(item))

    async def pop_item(self) -> Optional[TResponseInputItem]:
        while True:
            items, last_seq, _ = await self._events()
            if not items:
                return None
            event_id, item = items[-1]
            try:
                await self._hector.append_event(self.app, self.user_id, self.session_id,
                                                {"author": _AUTHOR, "metadata": {_KEY: {"pop": event_id}}}, expected_seq=last_seq)
            except HectorError as e:
                if e.status == 409:  # another writer moved the session: look again
                    continue
                raise
            return item  # type: ignore[return-value]

    async def clear_session(self) -> None:
        """Deletes the session: its items, its markers and its index entries."""
        await self._hector.delete_session(self.app, self.user_id, self.session_id)
