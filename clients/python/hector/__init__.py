"""A client for Hector's HTTP API, on the standard library alone.

    from hector import Client, HectorError

    hector = Client("http://127.0.0.1:8080", api_key=None)
    hector.create_session("travel", "alice", session_id="trip")
    hector.append_event("travel", "alice", "trip", author="alice", text="Book a flight to Lisbon")
    hits = hector.search_memory("travel", "alice", "Lisbon flight")["results"]

Every method is one operation of the API (clients/openapi.json names them;
a test keeps the two in step) and returns its JSON answer. A refusal raises
HectorError with the API's status, code and message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import IO, Any, Iterable, Iterator, Mapping, Optional, TypedDict, Union, cast

__all__ = ["Client", "HectorError", "Session", "Event", "Fact", "SearchResult", "text_message"]


class HectorError(Exception):
    """The API refused a request: status is the HTTP status, code the API's
    stable error code (such as "not_found" or "category_reserved"), message
    what was wrong."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class Event(TypedDict, total=False):
    id: str
    author: str
    invocation_id: str
    message: dict[str, Any]
    actions: dict[str, Any]
    timestamp: str
    seq: int
    metadata: dict[str, Any]


class Session(TypedDict, total=False):
    id: str
    title: str
    app_name: str
    user_id: str
    state: dict[str, Any]
    events: list[Event]
    last_seq: int
    last_update_time: str


class Fact(TypedDict, total=False):
    id: str
    key: str
    value: str
    category: str
    tags: list[str]
    created_at: str
    updated_at: str
    expires_at: str
    valid_from: str
    valid_to: str
    supersedes: str
    superseded_by: str
    source: dict[str, Any]
    decision: str


class SearchResult(TypedDict, total=False):
    session_id: str
    event_id: str
    content: str
    author: str
    role: str
    seq: int
    timestamp: str
    score: float
    truncated: bool


JSON = dict[str, Any]


def text_message(role: str, text: str) -> JSON:
    """A message of one text part, as the API takes it."""
    return {"role": role, "parts": [{"type": "text", "text": text}]}


def _object(raw: bytes) -> JSON:
    """The JSON object a successful answer holds."""
    value = json.loads(raw) if raw else {}
    if not isinstance(value, dict):
        raise ValueError(f"the server answered {type(value).__name__}, not a JSON object")
    return value


def _refusal(err: urllib.error.HTTPError) -> HectorError:
    raw = err.read()
    try:
        e = json.loads(raw)["error"]
        return HectorError(err.code, e.get("code", ""), e.get("message", ""))
    except (ValueError, KeyError, TypeError):
        return HectorError(err.code, "http_error", raw.decode("utf-8", "replace")[:500])


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


class Client:
    """A Hector server at base_url. api_key (an API key or a JWT) goes in
    the Authorization header; none is needed with auth off on loopback."""

    def __init__(self, base_url: str, api_key: Optional[str] = None, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    # -- transport -----------------------------------------------------------

    def _open(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None, body: Any = None,
              data: Union[bytes, IO[bytes], None] = None, content_type: Optional[str] = None,
              headers: Optional[Mapping[str, str]] = None, accept: str = "application/json") -> Any:
        """Sends a request and returns the open response of a success."""
        url = self.base_url + path
        params = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urllib.parse.urlencode(params)
        send_headers = {"Accept": accept}
        if self.api_key:
            send_headers["Authorization"] = "Bearer " + self.api_key
        if body is not None:
            data, content_type = json.dumps(body).encode(), "application/json"
        if content_type:
            send_headers["Content-Type"] = content_type
        send_headers.update(headers or {})
        req = urllib.request.Request(url, data=data, method=method, headers=send_headers)
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            raise _refusal(err) from None

    def _send(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None, body: Any = None,
              data: Union[bytes, IO[bytes], None] = None, content_type: Optional[str] = None,
              headers: Optional[Mapping[str, str]] = None) -> tuple[bytes, Any]:
        with self._open(method, path, query, body, data, content_type, headers) as resp:
            return resp.read(), resp.headers

    def _json(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None, body: Any = None) -> JSON:
        raw, _ = self._send(method, path, query, body)
        return _object(raw)

    @staticmethod
    def _user(app: str, user: str) -> str:
        return f"/v1/apps/{_q(app)}/users/{_q(user)}"

    # -- the server ----------------------------------------------------------

    def health(self) -> JSON:
        return self._json("GET", "/healthz")

    def ready(self) -> JSON:
        return self._json("GET", "/readyz")

    def whoami(self) -> JSON:
        return self._json("GET", "/v1/whoami")

    def get_open_api(self) -> JSON:
        return self._json("GET", "/openapi.json")

    def metrics(self) -> str:
        return self._send("GET", "/metrics")[0].decode()

    def get_protected_resource(self) -> JSON:
        return self._json("GET", "/.well-known/oauth-protected-resource")

    def get_mcp_protected_resource(self) -> JSON:
        return self._json("GET", "/.well-known/oauth-protected-resource/mcp")

    def list_all_users(self, page_size: Optional[int] = None, page_token: Optional[str] = None) -> JSON:
        return self._json("GET", "/v1/users", {"page_size": page_size, "page_token": page_token})

    def list_app_users(self, app: str, page_size: Optional[int] = None, page_token: Optional[str] = None) -> JSON:
        return self._json("GET", f"/v1/apps/{_q(app)}/users", {"page_size": page_size, "page_token": page_token})

    def get_index_status(self) -> JSON:
        return self._json("GET", "/v1/index")

    def start_rebuild(self, app: Optional[str] = None, user: Optional[str] = None) -> JSON:
        return self._json("POST", "/v1/index:rebuild", body={k: v for k, v in {"app": app, "user": user}.items() if v})

    def get_rebuild_status(self) -> JSON:
        return self._json("GET", "/v1/index:rebuild")

    def get_extraction_status(self) -> JSON:
        return self._json("GET", "/v1/extraction")

    # -- sessions and events -------------------------------------------------

    def create_session(self, app: str, user: str, session_id: Optional[str] = None,
                       state: Optional[Mapping[str, Any]] = None, title: Optional[str] = None) -> Session:
        body: JSON = {}
        if session_id:
            body["session_id"] = session_id
        if title:
            body["title"] = title
        if state:
            body["state"] = dict(state)
        return cast("Session", self._json("POST", self._user(app, user) + "/sessions", body=body))

    def list_sessions(self, app: str, user: str, page_size: Optional[int] = None, page_token: Optional[str] = None,
                      order: Optional[str] = None) -> JSON:
        """Lists sessions, newest created first, or with order="updated" last updated first."""
        return self._json("GET", self._user(app, user) + "/sessions", {"page_size": page_size, "page_token": page_token, "order": order})

    def update_session(self, app: str, user: str, id: str, title: str) -> Session:
        """Names a session ("" removes its title)."""
        return cast("Session", self._json("PATCH", f"{self._user(app, user)}/sessions/{_q(id)}", body={"title": title}))

    def get_session(self, app: str, user: str, id: str, recent: Optional[int] = None, after: Optional[str] = None,
                    before_seq: Optional[int] = None) -> Session:
        """Reads a session: recent keeps the newest events, after those after
        an RFC 3339 time, before_seq those before a sequence number (to page
        back, pass the first seq of the page before)."""
        return cast("Session", self._json("GET", f"{self._user(app, user)}/sessions/{_q(id)}", {"recent": recent, "after": after, "before_seq": before_seq}))

    def delete_session(self, app: str, user: str, id: str) -> None:
        self._send("DELETE", f"{self._user(app, user)}/sessions/{_q(id)}")

    def append_event(self, app: str, user: str, id: str, author: str, text: Optional[str] = None, role: str = "user",
                     message: Optional[Mapping[str, Any]] = None, state_delta: Optional[Mapping[str, Any]] = None,
                     expected_seq: Optional[int] = None, **fields: Any) -> Event:
        """Appends an event: text (a message of one text part in role) or a
        whole message; state_delta changes state with it; expected_seq makes
        it compare-and-swap (a HectorError with code "conflict" if the
        session moved). Other event fields (id, invocation_id, metadata,
        timestamp, actions) pass as they are."""
        body: JSON = {"author": author, **fields}
        if text is not None:
            body["message"] = text_message(role, text)
        elif message is not None:
            body["message"] = dict(message)
        if state_delta is not None:
            body.setdefault("actions", {})["state_delta"] = dict(state_delta)
        if expected_seq is not None:
            body["expected_seq"] = expected_seq
        return cast("Event", self._json("POST", f"{self._user(app, user)}/sessions/{_q(id)}/events", body=body))

    def get_context(self, app: str, user: str, id: str, working_memory: Optional[Mapping[str, Any]] = None,
                    agent: Optional[str] = None) -> JSON:
        body: JSON = {}
        if working_memory is not None:
            body["working_memory"] = dict(working_memory)
        if agent:
            body["agent"] = agent
        return self._json("POST", f"{self._user(app, user)}/sessions/{_q(id)}/context", body=body)

    def extract_memories(self, app: str, user: str, id: str, after_seq: Optional[int] = None,
                         to_seq: Optional[int] = None) -> JSON:
        """Learns facts from the session's messages with the configured model."""
        body = {k: v for k, v in {"after_seq": after_seq, "to_seq": to_seq}.items() if v is not None}
        return self._json("POST", f"{self._user(app, user)}/sessions/{_q(id)}/memories:extract", body=body)

    # -- state ---------------------------------------------------------------

    def get_app_state(self, app: str) -> JSON:
        return cast("JSON", self._json("GET", f"/v1/apps/{_q(app)}/state")["state"])

    def update_app_state(self, app: str, delta: Mapping[str, Any]) -> JSON:
        """Sets app: keys (None deletes one) and returns the app's state."""
        return cast("JSON", self._json("PATCH", f"/v1/apps/{_q(app)}/state", body={"state": dict(delta)})["state"])

    def get_user_state(self, app: str, user: str) -> JSON:
        return cast("JSON", self._json("GET", self._user(app, user) + "/state")["state"])

    def update_user_state(self, app: str, user: str, delta: Mapping[str, Any]) -> JSON:
        """Sets user: keys (None deletes one) and returns the user's state."""
        return cast("JSON", self._json("PATCH", self._user(app, user) + "/state", body={"state": dict(delta)})["state"])

    # -- artifacts -----------------------------------------------------------

    def _artifact(self, app: str, user: str, id: str, name: str) -> str:
        return f"{self._user(app, user)}/sessions/{_q(id)}/artifacts/{_q(name)}"

    def save_artifact(self, app: str, user: str, id: str, name: str, content: Union[bytes, IO[bytes]],
                      content_type: Optional[str] = None, metadata: Optional[Mapping[str, Any]] = None) -> JSON:
        """Saves content as the next version of name (a "user:" name belongs
        to the user, not the session); without content_type it is detected."""
        headers = {"X-Hector-Metadata": json.dumps(dict(metadata))} if metadata else None
        raw, _ = self._send("PUT", self._artifact(app, user, id, name), data=content,
                            content_type=content_type or "application/octet-stream", headers=headers)
        return _object(raw)

    def load_artifact(self, app: str, user: str, id: str, name: str, version: Optional[int] = None) -> tuple[bytes, str]:
        """Returns a version's content (the latest without version) and its type."""
        raw, headers = self._send("GET", self._artifact(app, user, id, name), {"version": version})
        return raw, headers.get("Content-Type", "")

    def list_artifacts(self, app: str, user: str, id: str) -> JSON:
        return self._json("GET", f"{self._user(app, user)}/sessions/{_q(id)}/artifacts")

    def list_artifact_versions(self, app: str, user: str, id: str, name: str) -> JSON:
        return self._json("GET", self._artifact(app, user, id, name) + "/versions")

    def delete_artifact(self, app: str, user: str, id: str, name: str) -> None:
        self._send("DELETE", self._artifact(app, user, id, name))

    # -- memory --------------------------------------------------------------

    def search_memory(self, app: str, user: str, query: str, limit: Optional[int] = None, **filters: Any) -> JSON:
        """Searches the user's past conversations: results best first, and
        the curated facts that match. filters: session_id, author, role,
        after, before, recency_half_life, as_of, full_content."""
        body: JSON = {"query": query, **filters}
        if limit is not None:
            body["limit"] = limit
        return self._json("POST", self._user(app, user) + "/memory:search", body=body)

    def store_fact(self, app: str, user: str, key: str, value: str, category: Optional[str] = None,
                   tags: Optional[Iterable[str]] = None, ttl_seconds: Optional[int] = None) -> Fact:
        body: JSON = {"key": key, "value": value}
        if category:
            body["category"] = category
        if tags is not None:
            body["tags"] = list(tags)
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        return cast("Fact", self._json("POST", self._user(app, user) + "/facts", body=body))

    def list_facts(self, app: str, user: str, prefix: Optional[str] = None, category: Optional[str] = None,
                   as_of: Optional[str] = None) -> list[Fact]:
        return cast("list[Fact]", self._json("GET", self._user(app, user) + "/facts", {"prefix": prefix, "category": category, "as_of": as_of})["facts"])

    def recall_fact(self, app: str, user: str, key: str, as_of: Optional[str] = None) -> Fact:
        return cast("Fact", self._json("GET", f"{self._user(app, user)}/facts/{urllib.parse.quote(key, safe='/')}", {"as_of": as_of}))

    def fact_history(self, app: str, user: str, key: str) -> list[Fact]:
        return cast("list[Fact]", self._json("GET", self._user(app, user) + "/facts:history", {"key": key})["versions"])

    def invalidate_fact(self, app: str, user: str, key: str) -> Fact:
        return cast("Fact", self._json("POST", self._user(app, user) + "/facts:invalidate", body={"key": key}))

    def delete_fact(self, app: str, user: str, key: str) -> None:
        self._send("DELETE", f"{self._user(app, user)}/facts/{urllib.parse.quote(key, safe='/')}")

    def forget_facts(self, app: str, user: str, selector: str) -> JSON:
        """Forgets facts: selector "all", "key:<key>" or "category:<category>"."""
        return self._json("POST", self._user(app, user) + "/facts:forget", body={"selector": selector})

    def summarize_facts(self, app: str, user: str) -> JSON:
        return self._json("GET", self._user(app, user) + "/facts:summary")

    # -- a person ------------------------------------------------------------

    def erase_user(self, app: str, user: str) -> JSON:
        """Erases the user everywhere; returns the receipt."""
        return self._json("DELETE", self._user(app, user))

    def get_erasure_receipt(self, app: str, user: str) -> JSON:
        return self._json("GET", self._user(app, user) + "/erasure")

    def export_user(self, app: str, user: str) -> bytes:
        """Everything held about the user, as a tar archive."""
        return self._send("GET", self._user(app, user) + "/export")[0]

    def import_user(self, app: str, user: str, archive: Union[bytes, IO[bytes]]) -> JSON:
        """Restores a user from an archive export_user made."""
        raw, _ = self._send("POST", self._user(app, user) + "/import", data=archive, content_type="application/x-tar")
        return _object(raw)

    # -- agents and the Memory Gateway ---------------------------------------

    def list_agents(self) -> JSON:
        """The configured agents this credential may run."""
        return self._json("GET", "/v1/agents")

    def run_agent(self, agent: str, user_id: str, message: str, app: Optional[str] = None,
                  session_id: Optional[str] = None, stream: bool = False) -> Any:
        """Runs one turn of a hosted agent for user_id; without session_id a
        new session is made. With stream, returns an iterator of the turn's
        server-sent events as (event, data) pairs as they come."""
        body: JSON = {"user_id": user_id, "message": message}
        if app:
            body["app"] = app
        if session_id:
            body["session_id"] = session_id
        path = f"/v1/agents/{_q(agent)}/run"
        if not stream:
            return self._json("POST", path, body=body)
        return self._events(path, body)

    def _events(self, path: str, body: JSON) -> Iterator[tuple[str, Any]]:
        with self._open("POST", path, {"stream": True}, body, accept="text/event-stream") as resp:
            event, data = "message", []
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    yield event, json.loads("\n".join(data))
                    event, data = "message", []

    def gateway_add(self, **body: Any) -> JSON:
        """Memory Gateway: add messages (user_id, user_key, session_id, messages, ...)."""
        return self._json("POST", "/memories/add", body=body)

    def gateway_search(self, **body: Any) -> JSON:
        """Memory Gateway: search (user_id, user_key, query, scope, ...)."""
        return self._json("POST", "/memories/search", body=body)

    def gateway_flush(self, **body: Any) -> JSON:
        """Memory Gateway: flush a session (user_id, user_key, session_id, ...)."""
        return self._json("POST", "/memories/flush", body=body)
