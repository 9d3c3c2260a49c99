"""Hector's REST API for the framework integrations, asynchronous (httpx):
the operations they need, each returning the API's JSON. A refusal raises
hector.HectorError, as the plain client does."""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from typing import Any, AsyncIterator, Mapping, Optional, cast

import httpx

from . import HectorError

JSON = dict[str, Any]


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


# A request refused for now (429 rate limited, 503 unavailable) is sent
# again after the Retry-After the server gave, this many times at most.
_RETRIES = 3


def _retry_after(resp: httpx.Response) -> Optional[float]:
    """How long the server asked to wait before sending again; None when it did not."""
    if resp.status_code not in (429, 503):
        return None
    try:
        return min(float(resp.headers.get("Retry-After", "")), 30.0)
    except ValueError:
        return None


def holds_all(events: list[JSON], recent: Optional[int]) -> bool:
    """Whether events, the newest `recent` of a session's (all when None), are all of them."""
    return recent is None or len(events) < recent or not events or events[0].get("seq") == 1


class AsyncHector:
    """One connection pool to one server; safe to share between tasks."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, timeout: float = 30.0,
                 client: Optional[httpx.AsyncClient] = None):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"{base_url!r} is not a server's URL such as http://127.0.0.1:8080")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._base = base_url.rstrip("/")
        self._timeout = timeout
        self._given = client
        self._pool: Optional[tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = None

    def _http(self) -> httpx.AsyncClient:
        """The client given, or a pool of this event loop's: a pool cannot
        outlive its loop, and a script may run one loop after another
        (asyncio.run twice) with the same service."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool[0] is not loop:
            self._pool = (loop, httpx.AsyncClient(timeout=self._timeout))
        return self._pool[1]

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool[1].aclose()
            self._pool = None

    async def _send(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                    body: Any = None, content: Optional[bytes] = None,
                    headers: Optional[Mapping[str, str]] = None) -> httpx.Response:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        h = dict(self._headers)
        h.update(headers or {})
        if body is not None:
            content, h["Content-Type"] = json.dumps(body).encode(), "application/json"
        for attempt in range(_RETRIES + 1):
            resp = await self._http().request(method, self._base + path, params=params, content=content, headers=h)
            wait = _retry_after(resp)
            if wait is None or attempt == _RETRIES:
                break
            await asyncio.sleep(wait)  # the server said when to come back
        if resp.status_code >= 300:
            try:
                err = resp.json()["error"]
                raise HectorError(resp.status_code, err["code"], err["message"])
            except (ValueError, KeyError, TypeError):
                raise HectorError(resp.status_code, "unexpected", resp.text[:500]) from None
        return resp

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        resp = await self._send(method, path, **kw)
        return resp.json() if resp.content else None

    @staticmethod
    def _user(app: str, user: str) -> str:
        return f"/v1/apps/{_q(app)}/users/{_q(user)}"

    async def create_session(self, app: str, user: str, session_id: Optional[str] = None,
                             state: Optional[Mapping[str, Any]] = None) -> JSON:
        body: JSON = {"state": dict(state or {})}
        if session_id:
            body["session_id"] = session_id
        return cast(JSON, await self._json("POST", self._user(app, user) + "/sessions", body=body))

    async def get_session(self, app: str, user: str, session_id: str, recent: Optional[int] = None,
                          after: Optional[str] = None) -> Optional[JSON]:
        """The session, or None when it does not exist (or is another user's)."""
        try:
            return cast(JSON, await self._json("GET", self._user(app, user) + f"/sessions/{_q(session_id)}",
                                               query={"recent": recent, "after": after}))
        except HectorError as e:
            if e.status == 404:
                return None
            raise

    async def sessions(self, app: str, user: str) -> AsyncIterator[JSON]:
        """Every session of the user, page after page, without events."""
        token = None
        while True:
            page = await self._json("GET", self._user(app, user) + "/sessions",
                                    query={"page_size": 1000, "page_token": token})
            for s in page["sessions"]:
                yield s
            token = page.get("next_page_token")
            if not token:
                return

    async def users(self, app: str) -> AsyncIterator[str]:
        """Every user of the app with sessions or facts (an app or admin key)."""
        token = None
        while True:
            page = await self._json("GET", f"/v1/apps/{_q(app)}/users", query={"page_size": 1000, "page_token": token})
            for u in page["users"]:
                yield u["user"]
            token = page.get("next_page_token")
            if not token:
                return

    async def delete_session(self, app: str, user: str, session_id: str) -> None:
        """Deletes the session; one that does not exist is left alone."""
        try:
            await self._send("DELETE", self._user(app, user) + f"/sessions/{_q(session_id)}")
        except HectorError as e:
            if e.status != 404:
                raise

    async def append_event(self, app: str, user: str, session_id: str, event: Mapping[str, Any],
                           expected_seq: Optional[int] = None) -> JSON:
        body = dict(event)
        if expected_seq is not None:
            body["expected_seq"] = expected_seq
        return cast(JSON, await self._json("POST", self._user(app, user) + f"/sessions/{_q(session_id)}/events", body=body))

    async def append_creating(self, app: str, user: str, session_id: str, event: Mapping[str, Any]) -> JSON:
        """Appends event, creating the session first if it does not exist yet."""
        try:
            return await self.append_event(app, user, session_id, event)
        except HectorError as e:
            if e.status != 404:
                raise
        try:
            await self.create_session(app, user, session_id)
        except HectorError as e:
            if e.status != 409:  # another writer made it meanwhile
                raise
        return await self.append_event(app, user, session_id, event)

    async def user_state(self, app: str, user: str) -> JSON:
        return cast(JSON, (await self._json("GET", self._user(app, user) + "/state"))["state"])

    async def search(self, app: str, user: str, query: str, limit: Optional[int] = None) -> list[JSON]:
        body: JSON = {"query": query, "full_content": True}
        if limit:
            body["limit"] = limit
        return cast(list[JSON], (await self._json("POST", self._user(app, user) + "/memory:search", body=body))["results"])

    async def search_in(self, app: str, user: str, query: str, session_id: str, limit: int) -> list[JSON]:
        """A search of one session of the user's."""
        body = {"query": query, "full_content": True, "session_id": session_id, "limit": limit}
        return cast(list[JSON], (await self._json("POST", self._user(app, user) + "/memory:search", body=body))["results"])

    def _artifact(self, app: str, user: str, session_id: str, name: str) -> str:
        return self._user(app, user) + f"/sessions/{_q(session_id)}/artifacts/{_q(name)}"

    def artifact_url(self, app: str, user: str, session_id: str, name: str) -> str:
        return self._base + self._artifact(app, user, session_id, name)

    async def save_artifact(self, app: str, user: str, session_id: str, name: str, content: bytes, mime_type: str,
                            metadata: Optional[Mapping[str, Any]] = None) -> JSON:
        headers = {"Content-Type": mime_type}
        if metadata:
            headers["X-Hector-Metadata"] = json.dumps(metadata)
        resp = await self._send("PUT", self._artifact(app, user, session_id, name), content=content, headers=headers)
        return cast(JSON, resp.json())

    async def load_artifact(self, app: str, user: str, session_id: str, name: str,
                            version: Optional[int] = None) -> Optional[tuple[bytes, str, JSON]]:
        """The content, its MIME type and its metadata; None when there is no such version."""
        try:
            resp = await self._send("GET", self._artifact(app, user, session_id, name), query={"version": version})
        except HectorError as e:
            if e.status == 404:
                return None
            raise
        meta = resp.headers.get("X-Hector-Metadata")
        return resp.content, resp.headers.get("Content-Type", ""), json.loads(meta) if meta else {}

    async def artifacts(self, app: str, user: str, session_id: str) -> list[JSON]:
        return cast(list[JSON], (await self._json("GET", self._user(app, user) + f"/sessions/{_q(session_id)}/artifacts"))["artifacts"])

    async def artifact_versions(self, app: str, user: str, session_id: str, name: str) -> list[JSON]:
        """Every version, oldest first; none when the name has none."""
        try:
            return cast(list[JSON], (await self._json("GET", self._artifact(app, user, session_id, name) + "/versions"))["artifacts"])
        except HectorError as e:
            if e.status == 404:
                return []
            raise

    async def delete_artifact(self, app: str, user: str, session_id: str, name: str) -> None:
        try:
            await self._send("DELETE", self._artifact(app, user, session_id, name))
        except HectorError as e:
            if e.status != 404:
                raise
