"""Per call, side by side: an integration on a `hector serve` (over loopback
HTTP) against the framework's own store on a local SQLite file.

    python bench/calls.py http://127.0.0.1:8080 [rounds]

needs the extras, google-adk[db] (ADK's DatabaseSessionService on SQLite) and
langgraph-checkpoint-sqlite.
Each round is one append (or add) and one read of the whole session, as
an agent's turn makes; it prints the median and p90 per round, and the ratio.
"""

import asyncio
import statistics
import sys
import tempfile
import time
import uuid


def report(name, ours, theirs):
    def fmt(xs):
        xs = sorted(xs)
        return f"p50 {statistics.median(xs) * 1e3:6.2f} ms  p90 {xs[int(len(xs) * 0.9)] * 1e3:6.2f} ms"
    print(f"{name}\n  hector: {fmt(ours)}\n  theirs: {fmt(theirs)}\n  ratio (p50): {statistics.median(ours) / statistics.median(theirs):.2f}")


async def adk(url, rounds, tmp):
    from google.adk.events.event import Event
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.genai import types

    from hector.adk import HectorSessionService

    async def run(svc):
        s = await svc.create_session(app_name="bench", user_id="u" + uuid.uuid4().hex[:6])
        times = []
        for i in range(rounds):
            ev = Event(author="user", invocation_id=f"i{i}",
                       content=types.Content(role="user", parts=[types.Part(text=f"turn {i}: I walked the dog by the river")]))
            start = time.perf_counter()
            await svc.append_event(s, ev)
            await svc.get_session(app_name="bench", user_id=s.user_id, session_id=s.id)
            times.append(time.perf_counter() - start)
        return times

    theirs = await run(DatabaseSessionService(db_url=f"sqlite+aiosqlite:///{tmp}/adk.db"))
    ours = await run(HectorSessionService(url))
    report(f"ADK: append_event + get_session ({rounds} rounds; theirs: DatabaseSessionService on SQLite)", ours, theirs)


async def agents(url, rounds, tmp):
    from agents.memory.sqlite_session import SQLiteSession

    from hector.openai_agents import HectorSession

    async def run(session):
        times = []
        for i in range(rounds):
            start = time.perf_counter()
            await session.add_items([{"role": "user", "content": f"turn {i}: I walked the dog by the river"}])
            await session.get_items()
            times.append(time.perf_counter() - start)
        return times

    theirs = await run(SQLiteSession("bench", f"{tmp}/agents.db"))
    ours = await run(HectorSession("bench-" + uuid.uuid4().hex[:6], url, user_id="bench"))
    report(f"Agents SDK: add_items + get_items ({rounds} rounds; theirs: SQLiteSession on a file)", ours, theirs)


async def langgraph(url, rounds, tmp):
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from hector.langgraph import HectorSaver

    async def run(saver):
        config = {"configurable": {"thread_id": "t-" + uuid.uuid4().hex[:6], "checkpoint_ns": ""}}
        messages, times = [], []
        for i in range(rounds):
            messages.append(HumanMessage(content=f"turn {i}: I walked the dog by the river", id=f"m{i}"))
            cp = empty_checkpoint()
            cp["channel_values"] = {"messages": list(messages)}
            cp["channel_versions"] = {"messages": i + 1}
            start = time.perf_counter()
            config = await saver.aput(config, cp, {"source": "loop", "step": i}, {"messages": i + 1})
            await saver.aget_tuple({"configurable": {"thread_id": config["configurable"]["thread_id"], "checkpoint_ns": ""}})
            times.append(time.perf_counter() - start)
        return times

    async with AsyncSqliteSaver.from_conn_string(f"{tmp}/lg.db") as sqlite_saver:
        theirs = await run(sqlite_saver)
    ours = await run(HectorSaver(url, user_id="bench"))
    report(f"LangGraph: put + get_tuple ({rounds} rounds, the messages channel growing; theirs: AsyncSqliteSaver)", ours, theirs)


async def main(url, rounds):
    with tempfile.TemporaryDirectory() as tmp:
        await adk(url, rounds, tmp)
        await agents(url, rounds, tmp)
        await langgraph(url, rounds, tmp)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200))
