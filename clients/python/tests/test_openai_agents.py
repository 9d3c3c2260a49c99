"""hector.openai_agents against the Agents SDK's own SQLiteSession: the
same script of calls must answer the same (clients/python/python_test.go
starts the server); then what SQLiteSession cannot show."""

import asyncio
import tempfile
import unittest
import uuid

from tests.servers import URL, ADMIN_KEY, ALICE_KEY, HectorServer

try:
    from agents.memory.session_settings import SessionSettings
    from agents.memory.sqlite_session import SQLiteSession

    from hector import Client, HectorError
    from hector.openai_agents import HectorSession
    AGENTS = None
except ImportError as e:  # the plain client's own tests run without the extras
    AGENTS = str(e)

TURN = [
    {"role": "user", "content": "I'm flying to Lisbon on May 3"},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Noted: Lisbon, May 3.", "annotations": []}]},
    {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{\"city\": \"Lisbon\"}", "id": "fc_1"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 24°C"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "they like sun"}]},
]


async def script(session) -> list:
    log: list = []
    log.append(("empty", await session.get_items(), await session.pop_item()))
    await session.add_items(TURN)
    await session.add_items([])
    for limit in (None, 0, 1, 2, 10):
        log.append((f"get {limit}", await session.get_items(limit)))
    log.append(("pop", await session.pop_item()))
    log.append(("pop", await session.pop_item()))
    log.append(("after pops", await session.get_items()))
    log.append(("last 2 after pops", await session.get_items(2)))
    await session.add_items([{"role": "user", "content": "And back on the 10th"}])
    log.append(("after add", await session.get_items()))
    log.append(("last 1", await session.get_items(1)))
    while (item := await session.pop_item()) is not None:
        log.append(("pop all", item))
    log.append(("drained", await session.get_items(), await session.pop_item()))
    await session.add_items(TURN[:2])
    await session.clear_session()
    log.append(("cleared", await session.get_items(), await session.pop_item()))
    await session.add_items(TURN[:1])
    log.append(("after clear", await session.get_items()))
    return log


@unittest.skipUnless(URL, "HECTOR_TEST_URL is not set: go test ./clients/python starts a server and sets it")
@unittest.skipIf(AGENTS, f"the openai-agents extra is not installed ({AGENTS}): pip install 'hector-client[openai-agents]'")
class AgentsSession(unittest.TestCase):
    def setUp(self):
        self.sid = "conv-" + uuid.uuid4().hex[:8]

    def hector(self, **kw):
        return HectorSession(self.sid, URL, user_id="alice", app="travel", api_key=ALICE_KEY, **kw)

    def test_answers_as_sqlite_session(self):
        want = asyncio.run(script(SQLiteSession(self.sid)))
        got = asyncio.run(script(self.hector()))
        for w, g in zip(want, got):
            self.assertEqual(w, g)
        self.assertEqual(len(want), len(got))
        print(f"openai-agents: {len(want)} calls answered alike")

    def test_settings_limit_as_sqlite_session(self):
        async def run(session):
            await session.add_items(TURN)
            await session.pop_item()
            return await session.get_items(), await session.get_items(limit=3)
        settings = SessionSettings(limit=2)
        self.assertEqual(asyncio.run(run(SQLiteSession(self.sid, session_settings=settings))),
                         asyncio.run(run(self.hector(session_settings=settings))))

    def test_the_conversation_is_searchable_memory(self):
        asyncio.run(self.hector().add_items(TURN))
        hits = Client(URL, api_key=ALICE_KEY).search_memory("travel", "alice", "Lisbon May")["results"]
        self.assertIn("I'm flying to Lisbon on May 3", [h["content"] for h in hits])
        self.assertTrue(all(h["session_id"] for h in hits))

    def test_a_pop_never_takes_an_item_appended_after_it_looked(self):
        async def run():
            a, b = self.hector(), self.hector()
            await a.add_items([{"role": "user", "content": f"turn {i}"} for i in range(6)])
            popped = await asyncio.gather(*(s.pop_item() for s in (a, b, a, b)))
            return popped, await a.get_items()
        popped, left = asyncio.run(run())
        self.assertEqual(sorted(p["content"] for p in popped), ["turn 2", "turn 3", "turn 4", "turn 5"])
        self.assertEqual([i["content"] for i in left], ["turn 0", "turn 1"])

    def test_another_users_key_is_refused(self):
        asyncio.run(HectorSession(self.sid, URL, user_id="bob", app="travel", api_key=ADMIN_KEY).add_items(TURN[:1]))
        bobs_as_alice = HectorSession(self.sid, URL, user_id="bob", app="travel", api_key=ALICE_KEY)
        with self.assertRaises(HectorError) as refused:
            asyncio.run(bobs_as_alice.get_items())
        self.assertEqual(refused.exception.status, 403)
        with self.assertRaises(HectorError):
            asyncio.run(bobs_as_alice.clear_session())
        self.assertEqual(asyncio.run(HectorSession(self.sid, URL, user_id="bob", app="travel", api_key=ADMIN_KEY).get_items()), TURN[:1])

    def test_bad_input_is_refused_with_a_reason(self):
        with self.assertRaisesRegex(ValueError, "user_id"):
            HectorSession(self.sid, URL, user_id="")
        with self.assertRaisesRegex(ValueError, "server's URL"):
            HectorSession(self.sid, "127.0.0.1:8080", user_id="alice")


@unittest.skipUnless(HectorServer.available(), "HECTOR_TEST_BIN is not set: go test ./clients/python builds hector and sets it")
@unittest.skipIf(AGENTS, f"the openai-agents extra is not installed ({AGENTS})")
class AgentsSessionAcrossARestart(unittest.TestCase):
    def test_items_outlive_the_server(self):
        with tempfile.TemporaryDirectory() as data:
            with HectorServer(data) as url:
                s = HectorSession("conv", url, user_id="ana")
                asyncio.run(s.add_items(TURN))
                asyncio.run(s.pop_item())
            with HectorServer(data) as url:
                self.assertEqual(asyncio.run(HectorSession("conv", url, user_id="ana").get_items()), TURN[:-1])
