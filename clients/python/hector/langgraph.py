"""Hector as a LangGraph checkpointer (langgraph-checkpoint):
``pip install "hector-client[langgraph]"``.

    from hector.langgraph import HectorSaver

    graph = builder.compile(checkpointer=HectorSaver("http://127.0.0.1:8080", app="travel", user_id="alice"))
    graph.invoke({"messages": [("user", "I'm flying to Lisbon")]}, {"configurable": {"thread_id": "trip"}})

How LangGraph lives in Hector's model: a thread is a session of one user
(the saver's: one saver per user, as the scope of every read). A
checkpoint is an event holding it, its metadata and the channel values new
in it (serialized by the saver's serde); a task's pending writes are an
event too. Both keep their data in ``metadata.langgraph`` and say nothing
a search would find. What does is the conversation: each message of the
``messages`` channel, the first time a checkpoint holds it, is appended as
an event of its own (the user's words as the user's, the model's as the
assistant's), so past threads are searchable memory, through
``memory:search`` and every surface of Hector.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import AsyncIterator, Coroutine, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, Optional, TypeVar

import httpx
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from . import HectorError
from ._aio import AsyncHector, holds_all

__all__ = ["HectorSaver", "HectorStore"]

T = TypeVar("T")

_KEY = "langgraph"
_AUTHOR = "langgraph"
_ROLES = {"human": "user", "ai": "assistant"}


def _pack(typed: tuple[str, bytes]) -> list[str]:
    return [typed[0], base64.b64encode(typed[1]).decode()]


def _unpack(packed: list[str]) -> tuple[str, bytes]:
    return packed[0], base64.b64decode(packed[1])


class _Thread:
    """A thread as its session's events say: checkpoints by namespace and ID,
    channel values by (namespace, channel, version), pending writes."""

    def __init__(self, events: list[dict[str, Any]]):
        self.versions: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, checkpoint) -> channel versions
        self.checkpoints: dict[str, dict[str, tuple[list[str], list[str], Optional[str]]]] = {}
        self.blobs: dict[tuple[str, str, Any], list[str]] = {}
        self.writes: dict[tuple[str, str], dict[tuple[str, int], tuple[str, str, list[str], str]]] = {}
        self.said: set[str] = set()
        for e in events:
            held = (e.get("metadata") or {}).get(_KEY) or {}
            if "checkpoint" in held:
                ns = held["ns"]
                self.checkpoints.setdefault(ns, {})[held["id"]] = (held["checkpoint"], held["metadata"], held.get("parent"))
                self.versions[(ns, held["id"])] = held.get("versions") or {}
                for channel, (version, *typed) in held["blobs"].items():
                    self.blobs[(ns, channel, version)] = typed
            elif "writes" in held:
                stored = self.writes.setdefault((held["ns"], held["checkpoint_id"]), {})
                for idx, channel, *typed in held["writes"]:
                    key = (held["task_id"], idx)
                    if idx >= 0 and key in stored:  # a task's write is kept once; a special one replaced
                        continue
                    stored[key] = (held["task_id"], channel, typed, held.get("task_path", ""))
            elif "message" in held:
                self.said.add(held["message"])

    def holds(self, ns: str, checkpoint_id: Optional[str]) -> bool:
        """Whether these events hold the checkpoint (None: the namespace's
        latest) with every channel value it needs."""
        checkpoints = self.checkpoints.get(ns)
        if not checkpoints:
            return False
        if checkpoint_id is None:
            checkpoint_id = max(checkpoints)
        elif checkpoint_id not in checkpoints:
            return False
        return all((ns, channel, version) in self.blobs
                   for channel, version in self.versions[(ns, checkpoint_id)].items())


class HectorSaver(BaseCheckpointSaver[int]):
    """A LangGraph checkpointer on a `hector serve`, for one user of one app.

    Base capabilities (put, put_writes, get_tuple, list, delete_thread) and
    copy_thread pass LangGraph's conformance suite. Hector's log is
    append-only, so pruning and deleting a run's checkpoints are not offered;
    delete_thread deletes the whole thread (its session, checkpoints,
    messages and index entries)."""

    def __init__(self, base_url: str, *, app: str = "langgraph", user_id: str = "langgraph",
                 api_key: Optional[str] = None, serde: Optional[SerializerProtocol] = None,
                 timeout: float = 30.0, client: Optional[httpx.AsyncClient] = None):
        super().__init__(serde=serde)
        if not app or not user_id:
            raise ValueError("app and user_id are needed: a thread is a session of one user of one app")
        self.app, self.user_id = app, user_id
        self._hector = AsyncHector(base_url, api_key, timeout, client)
        self._said: dict[str, set[str]] = {}  # thread -> the message IDs appended as events, this process knows

    async def _thread(self, thread_id: str) -> Optional[_Thread]:
        got = await self._hector.get_session(self.app, self.user_id, thread_id)
        return None if got is None else _Thread(got.get("events") or [])

    async def _newest(self, thread_id: str, ns: str, checkpoint_id: Optional[str]) -> Optional[_Thread]:
        """The thread's newest events, as many as hold the checkpoint asked
        for (None: the namespace's latest) and its channel values: a turn
        reads what it needs, not every checkpoint the thread ever took."""
        recent = 4  # a step's checkpoint and its writes
        while True:
            got = await self._hector.get_session(self.app, self.user_id, thread_id, recent=recent)
            if got is None:
                return None
            events = got.get("events") or []
            thread = _Thread(events)
            if holds_all(events, recent) or thread.holds(ns, checkpoint_id):
                return thread
            recent *= 4

    async def _append(self, thread_id: str, event: dict[str, Any]) -> None:
        await self._hector.append_creating(self.app, self.user_id, thread_id, event)

    def _tuple(self, thread: _Thread, thread_id: str, ns: str, checkpoint_id: str) -> CheckpointTuple:
        packed, metadata, parent = thread.checkpoints[ns][checkpoint_id]
        checkpoint: Checkpoint = self.serde.loads_typed(_unpack(packed))
        values = {}
        for channel, version in checkpoint["channel_versions"].items():
            typed = thread.blobs.get((ns, channel, version))
            if typed is not None and typed[0] != "empty":
                values[channel] = self.serde.loads_typed(_unpack(typed))
        stored = thread.writes.get((ns, checkpoint_id), {})
        ordered = sorted(stored.items(), key=lambda kv: writes_sort_key(kv[1][3], *kv[0]))
        return CheckpointTuple(
            config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=self.serde.loads_typed(_unpack(metadata)),
            parent_config={"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent}}
            if parent else None,
            pending_writes=[(task, channel, self.serde.loads_typed(_unpack(typed))) for task, channel, typed, _ in
                            (w for _, w in ordered)],
        )

    async def aget_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        thread = await self._newest(thread_id, ns, checkpoint_id)
        if thread is None or not thread.checkpoints.get(ns):
            return None
        if checkpoint_id is None:
            checkpoint_id = max(thread.checkpoints[ns])
        elif checkpoint_id not in thread.checkpoints[ns]:
            return None
        return self._tuple(thread, thread_id, ns, checkpoint_id)

    async def alist(self, config: Optional[RunnableConfig], *, filter: Optional[dict[str, Any]] = None,
                    before: Optional[RunnableConfig] = None, limit: Optional[int] = None) -> AsyncIterator[CheckpointTuple]:
        if config is not None:
            thread_ids = [config["configurable"]["thread_id"]]
        else:
            thread_ids = [s["id"] async for s in self._hector.sessions(self.app, self.user_id)]
        want_ns = config["configurable"].get("checkpoint_ns") if config else None
        want_id = get_checkpoint_id(config) if config else None
        before_id = get_checkpoint_id(before) if before else None
        for thread_id in thread_ids:
            thread = await self._thread(thread_id)
            if thread is None:
                continue
            for ns, checkpoints in thread.checkpoints.items():
                if want_ns is not None and ns != want_ns:
                    continue
                for checkpoint_id in sorted(checkpoints, reverse=True):
                    if (want_id and checkpoint_id != want_id) or (before_id and checkpoint_id >= before_id):
                        continue
                    if filter:
                        metadata = self.serde.loads_typed(_unpack(checkpoints[checkpoint_id][1]))
                        if not all(metadata.get(k) == v for k, v in filter.items()):
                            continue
                    if limit is not None:
                        if limit <= 0:
                            return
                        limit -= 1
                    yield self._tuple(thread, thread_id, ns, checkpoint_id)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        thread_id = config["configurable"]["thread_id"]
        ns = config["configurable"].get("checkpoint_ns", "")
        c = checkpoint.copy()
        values: dict[str, Any] = c.pop("channel_values")  # type: ignore[misc]
        blobs = {k: [v, *(_pack(self.serde.dumps_typed(values[k])) if k in values else ["empty", ""])]
                 for k, v in new_versions.items()}
        await self._append(thread_id, {"author": _AUTHOR, "metadata": {_KEY: {
            "ns": ns, "id": checkpoint["id"], "parent": config["configurable"].get("checkpoint_id"),
            "checkpoint": _pack(self.serde.dumps_typed(c)), "versions": c["channel_versions"],
            "metadata": _pack(self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))),
            "blobs": blobs}}})
        if "messages" in new_versions and isinstance(values.get("messages"), list):
            await self._remember(thread_id, values["messages"])
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    async def _remember(self, thread_id: str, messages: list[Any]) -> None:
        """Appends the messages not appended yet as events that say them."""
        said = self._said.get(thread_id)
        if said is None:
            thread = await self._thread(thread_id)
            said = self._said[thread_id] = thread.said if thread else set()
        for m in messages:
            message_id, role = getattr(m, "id", None), _ROLES.get(getattr(m, "type", ""))
            text = _text(getattr(m, "content", None))
            if not message_id or not role or not text or message_id in said:
                continue
            event = {"id": "m-" + hashlib.sha256(message_id.encode()).hexdigest()[:32],
                     "author": getattr(m, "name", None) or role,
                     "message": {"role": role, "parts": [{"type": "text", "text": text}]},
                     "metadata": {_KEY: {"message": message_id}}}
            try:
                await self._append(thread_id, event)
            except HectorError as e:
                if e.status != 409:  # another process appended it
                    raise
            said.add(message_id)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        thread_id = config["configurable"]["thread_id"]
        packed = [[WRITES_IDX_MAP.get(channel, idx), channel, *_pack(self.serde.dumps_typed(value))]
                  for idx, (channel, value) in enumerate(writes)]
        await self._append(thread_id, {"author": _AUTHOR, "metadata": {_KEY: {
            "ns": config["configurable"].get("checkpoint_ns", ""), "checkpoint_id": config["configurable"]["checkpoint_id"],
            "task_id": task_id, "task_path": task_path, "writes": packed}}})

    async def adelete_thread(self, thread_id: str) -> None:
        self._said.pop(thread_id, None)
        await self._hector.delete_session(self.app, self.user_id, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copies every checkpoint, pending write and message of a thread, in order."""
        got = await self._hector.get_session(self.app, self.user_id, source_thread_id)
        for e in (got or {}).get("events") or []:
            copy = {k: e[k] for k in ("author", "message", "metadata") if k in e}
            await self._append(target_thread_id, copy)
        self._said.pop(target_thread_id, None)

    # The synchronous API, for graph.invoke: each call runs the asynchronous
    # one on an event loop of its own.

    def get_tuple(self, config: RunnableConfig) -> Optional[CheckpointTuple]:
        return _run(self.aget_tuple(config))

    def list(self, config: Optional[RunnableConfig], *, filter: Optional[dict[str, Any]] = None,
             before: Optional[RunnableConfig] = None, limit: Optional[int] = None) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]
        return iter(_run(collect()))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        return _run(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        _run(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        _run(self.adelete_thread(thread_id))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        _run(self.acopy_thread(source_thread_id, target_thread_id))


class HectorStore(BaseStore):
    """LangGraph's long-term memory store on a `hector serve`, for one user of
    one app: ``store.search(("memories",), query="what does she eat?")`` goes
    through Hector's index (hybrid by default: meaning and words), not a scan.

    Every put is an event of one session of the user's, ``langgraph-store``
    (a delete one that says so), so an item's history is kept and the
    latest version is what reads see. An item is searchable through the
    fields ``index`` names (all its text by default; ``index=False`` keeps it
    out of search). A search with a query answers what Hector's index finds,
    best first, its score Hector's; without a query, the items in the order
    they were first put. TTLs are not supported."""

    supports_ttl = False
    _SESSION = "langgraph-store"
    _AUTHOR = "langgraph-store"

    def __init__(self, base_url: str, *, app: str = "langgraph", user_id: str = "langgraph",
                 api_key: Optional[str] = None, fields: Optional[list[str]] = None,
                 timeout: float = 30.0, client: Optional[httpx.AsyncClient] = None):
        if not app or not user_id:
            raise ValueError("app and user_id are needed: a store is one user's memory in one app")
        self.app, self.user_id = app, user_id
        self.fields = fields or ["$"]
        self._hector = AsyncHector(base_url, api_key, timeout, client)

    async def _items(self) -> dict[tuple[tuple[str, ...], str], tuple[str, Item]]:
        """The live items, in the order first put, each with its latest event's ID."""
        got = await self._hector.get_session(self.app, self.user_id, self._SESSION)
        items: dict[tuple[tuple[str, ...], str], tuple[str, Item]] = {}
        for e in (got or {}).get("events") or []:
            held = (e.get("metadata") or {}).get("langgraph_store") or {}
            if "key" not in held:
                continue
            ns, key = tuple(held["namespace"]), held["key"]
            if held.get("value") is None:
                items.pop((ns, key), None)
                continue
            at = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00"))
            created = items[(ns, key)][1].created_at if (ns, key) in items else at
            items[(ns, key)] = (e["id"], Item(value=held["value"], key=key, namespace=ns, created_at=created, updated_at=at))
        return items

    def _text(self, op: PutOp) -> str:
        """What of a value search reads: the fields the put names, else the store's."""
        if op.index is False or op.value is None:
            return ""
        texts: list[str] = []
        for path in op.index or self.fields:
            # The whole value is read as its words, not as JSON: what the index's words and encoder read best.
            texts.extend(_strings(op.value) if path == "$" else get_text_at_path(op.value, tokenize_path(path)))
        return "\n".join(t for t in texts if t)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        items = await self._items() if any(not isinstance(op, PutOp) for op in ops) else {}
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:  # reads see the store as it was before the batch's puts, as LangGraph's stores do
            if isinstance(op, GetOp):
                found = items.get((op.namespace, op.key))
                results.append(found[1] if found else None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op, items))
            elif isinstance(op, ListNamespacesOp):
                results.append(_namespaces(op, [ns for ns, _ in items]))
            elif isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op
                results.append(None)
            else:
                raise ValueError(f"unknown store operation {type(op).__name__}")
        for op in puts.values():
            event: dict[str, Any] = {"author": self._AUTHOR, "metadata": {"langgraph_store": {
                "namespace": list(op.namespace), "key": op.key, "value": None if op.value is None else dict(op.value)}}}
            if text := self._text(op):
                event["message"] = {"role": "assistant", "parts": [{"type": "text", "text": text}]}
            await self._append(event)
        return results

    async def _append(self, event: dict[str, Any]) -> None:
        await self._hector.append_creating(self.app, self.user_id, self._SESSION, event)

    async def _search(self, op: SearchOp, items: dict[tuple[tuple[str, ...], str], tuple[str, Item]]) -> list[SearchItem]:
        n = len(op.namespace_prefix)

        def wanted(item: Item) -> bool:
            return item.namespace[:n] == op.namespace_prefix and all(
                _matches(item.value.get(k), v) for k, v in (op.filter or {}).items())

        if not op.query:
            kept = [item for _, item in items.values() if wanted(item)]
            return [_found(item, None) for item in kept[op.offset:op.offset + op.limit]]
        current = {event_id: item for event_id, item in items.values()}
        hits = await self._hector.search_in(self.app, self.user_id, op.query, self._SESSION,
                                            min(1000, 4 * (op.offset + op.limit) + 20))
        ranked: list[SearchItem] = []
        seen: set[str] = set()
        for hit in hits:  # an older version's or a deleted item's words are not the item's
            item = current.get(hit["event_id"])
            if item is None or hit["event_id"] in seen or not wanted(item):
                continue
            seen.add(hit["event_id"])
            ranked.append(_found(item, hit.get("score")))
        return ranked[op.offset:op.offset + op.limit]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return _run(self.abatch(ops))


def _strings(value: Any) -> list[str]:
    """Every string in a value, in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _strings(v)]
    return []


def _found(item: Item, score: Optional[float]) -> SearchItem:
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                      updated_at=item.updated_at, score=score)


def _namespaces(op: ListNamespacesOp, namespaces: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    def match(cond: MatchCondition, ns: tuple[str, ...]) -> bool:
        path = tuple(cond.path)
        if len(ns) < len(path):
            return False
        pairs = zip(ns, path) if cond.match_type == "prefix" else zip(reversed(ns), reversed(path))
        return all(p == "*" or k == p for k, p in pairs)

    kept = {ns for ns in namespaces if all(match(c, ns) for c in op.match_conditions or ())}
    if op.max_depth is not None:
        kept = {ns[:op.max_depth] for ns in kept}
    return sorted(kept)[op.offset:op.offset + op.limit]


def _matches(value: Any, want: Any) -> bool:
    """A filter's test of one value, as LangGraph's stores make it: equality,
    nested objects, and the operators $eq, $ne, $gt, $gte, $lt, $lte."""
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_operator(value, k, v) for k, v in want.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return isinstance(value, (list, tuple)) and len(value) == len(want) and all(
            _matches(a, b) for a, b in zip(value, want))
    return bool(value == want)


def _operator(value: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(value == want)
    if op == "$ne":
        return bool(value != want)
    compare = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}.get(op)
    if compare is None:
        raise ValueError(f"unsupported filter operator {op}: use $eq, $ne, $gt, $gte, $lt or $lte")
    return bool(compare(float(value), float(want)))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p if isinstance(p, str) else p.get("text", "") for p in content
                         if isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text")).strip()
    return ""


def _run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError("HectorSaver's synchronous methods were called inside an event loop: use the a-methods "
                       "(graph.ainvoke, astream) there")
