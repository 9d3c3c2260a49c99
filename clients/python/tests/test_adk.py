"""hector.adk against ADK's own in-memory services: the same script of
calls must answer the same (clients/python/python_test.go starts the
server); then what ADK's in-memory services cannot show."""

import asyncio
import tempfile
import unittest
import uuid

from tests.servers import URL, ADMIN_KEY, ALICE_KEY, HectorServer

try:
    from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
    from google.adk.sessions.base_session_service import GetSessionConfig
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.genai import types

    from hector import HectorError
    from hector.adk import HectorArtifactService, HectorMemoryService, HectorSessionService
    ADK = None
except ImportError as e:  # the plain client's own tests run without the extras
    ADK = str(e)

T0 = 1_780_000_000.0  # event times the script gives, to the microsecond


def said(n: int, author: str, text: str, delta=None, **kw) -> "Event":
    role = "user" if author == "user" else "model"
    return Event(id=f"ev{n}", invocation_id=f"inv{n}", author=author, timestamp=T0 + n + 0.123456,
                 content=types.Content(role=role, parts=[types.Part(text=text)]),
                 actions=EventActions(state_delta=delta or {}), **kw)


def dump(e: "Event") -> dict:
    return e.model_dump(mode="json", exclude_none=True)


async def session_script(svc, app: str) -> list:
    """A run of an agent's session calls; what each answered, written down."""
    log: list = []

    def shown(s):
        return None if s is None else {"id": s.id, "app": s.app_name, "user": s.user_id, "state": dict(s.state),
                                       "events": [dump(e) for e in s.events]}

    async def note(what, call):
        try:
            got = await call
            log.append((what, shown(got) if hasattr(got, "events") else dump(got) if hasattr(got, "author") else got))
        except Exception as e:  # the kind of refusal is part of the answer
            log.append((what, type(e).__name__))

    s = await svc.create_session(app_name=app, user_id="ana", session_id="trip",
                                 state={"topic": "Lisbon", "user:home": "Porto", "app:tone": "brief"})
    log.append(("create", shown(s)))
    await note("create again", svc.create_session(app_name=app, user_id="ana", session_id="trip"))
    for ev in [said(1, "user", "Book a flight to Lisbon", {"user:seat": "aisle", "temp:draft": 1}),
               said(2, "planner", "Found one on May 3", {"count": 2, "app:tone": "warm"}),
               said(3, "planner", "…", partial=True),
               said(4, "user", "Thanks!", branch="root.planner")]:
        appended = await svc.append_event(s, ev)
        log.append(("append", dump(appended), dict(s.state), len(s.events)))
    other = await svc.create_session(app_name=app, user_id="ana", session_id="work")
    log.append(("second session sees", other.state))
    await note("create for ben", svc.create_session(app_name=app, user_id="ben", session_id="trip"))
    got = await svc.get_session(app_name=app, user_id="ana", session_id="trip")
    log.append(("get", shown(got)))
    for cfg in [GetSessionConfig(num_recent_events=2), GetSessionConfig(num_recent_events=0),
                GetSessionConfig(after_timestamp=T0 + 2.123456), GetSessionConfig(after_timestamp=T0 + 2.2),
                GetSessionConfig(num_recent_events=1, after_timestamp=T0)]:
        got = await svc.get_session(app_name=app, user_id="ana", session_id="trip", config=cfg)
        log.append(("get with", cfg.model_dump(), [e.id for e in got.events]))
    log.append(("get another's", shown(await svc.get_session(app_name=app, user_id="ben", session_id="work"))))
    log.append(("get missing", shown(await svc.get_session(app_name=app, user_id="ana", session_id="nope"))))
    listed = await svc.list_sessions(app_name=app, user_id="ana")
    log.append(("list ana", sorted((x.id, len(x.events), sorted(x.state.items())) for x in listed.sessions)))
    everyone = await svc.list_sessions(app_name=app)
    log.append(("list all", sorted((x.user_id, x.id) for x in everyone.sessions)))
    log.append(("user state", await svc.get_user_state(app_name=app, user_id="ana")))
    await svc.delete_session(app_name=app, user_id="ben", session_id="work")  # not ben's: nothing happens
    await svc.delete_session(app_name=app, user_id="ana", session_id="work")
    await svc.delete_session(app_name=app, user_id="ana", session_id="never")
    log.append(("after delete", sorted(x.id for x in (await svc.list_sessions(app_name=app, user_id="ana")).sessions)))
    await note("append to deleted", svc.append_event(other, said(9, "user", "late")))
    return log


async def artifact_script(svc, app: str) -> list:
    log: list = []
    part = types.Part

    async def note(what, call):
        try:
            got = await call
        except Exception as e:
            got = type(e).__name__
        if isinstance(got, types.Part):
            got = got.model_dump(mode="json", exclude_none=True)
        if isinstance(got, list) and got and hasattr(got[0], "version"):
            got = [(v.version, v.mime_type, v.custom_metadata) for v in got]
        if hasattr(got, "version"):
            got = (got.version, got.mime_type, got.custom_metadata)
        log.append((what, got))

    kw = {"app_name": app, "user_id": "ana"}
    await note("keys empty", svc.list_artifact_keys(**kw, session_id="s1"))
    await note("load missing", svc.load_artifact(**kw, session_id="s1", filename="plan.txt"))
    await note("save text", svc.save_artifact(**kw, session_id="s1", filename="plan.txt", artifact=part(text="draft one")))
    await note("save text 2", svc.save_artifact(**kw, session_id="s1", filename="plan.txt", artifact=part(text="draft two, café"),
                                                custom_metadata={"by": "planner"}))
    await note("save bytes", svc.save_artifact(**kw, session_id="s1", filename="chart.png",
                                               artifact=part(inline_data=types.Blob(data=b"\x89PNG fake", mime_type="image/png"))))
    await note("save user's", svc.save_artifact(**kw, session_id="s1", filename="user:profile.json",
                                                artifact=part(inline_data=types.Blob(data=b'{"a":1}', mime_type="application/json"))))
    for v in (None, 0, 1, 5, -1):
        await note(f"load plan@{v}", svc.load_artifact(**kw, session_id="s1", filename="plan.txt", version=v))
    await note("load chart", svc.load_artifact(**kw, session_id="s1", filename="chart.png"))
    await note("keys s1", svc.list_artifact_keys(**kw, session_id="s1"))
    await note("keys s2", svc.list_artifact_keys(**kw, session_id="s2"))
    await note("user's from s2", svc.load_artifact(**kw, session_id="s2", filename="user:profile.json"))
    await note("s1's from s2", svc.load_artifact(**kw, session_id="s2", filename="plan.txt"))
    await note("versions", svc.list_versions(**kw, session_id="s1", filename="plan.txt"))
    await note("versions missing", svc.list_versions(**kw, session_id="s1", filename="nope"))
    await note("version list", svc.list_artifact_versions(**kw, session_id="s1", filename="plan.txt"))
    await note("version latest", svc.get_artifact_version(**kw, session_id="s1", filename="plan.txt"))
    await note("version 0", svc.get_artifact_version(**kw, session_id="s1", filename="plan.txt", version=0))
    await note("version 7", svc.get_artifact_version(**kw, session_id="s1", filename="plan.txt", version=7))
    await note("delete", svc.delete_artifact(**kw, session_id="s1", filename="plan.txt"))
    await note("load deleted", svc.load_artifact(**kw, session_id="s1", filename="plan.txt"))
    await note("delete missing", svc.delete_artifact(**kw, session_id="s1", filename="never"))
    await note("delete user's from s2", svc.delete_artifact(**kw, session_id="s2", filename="user:profile.json"))
    await note("keys at end", svc.list_artifact_keys(**kw, session_id="s1"))
    return log


@unittest.skipUnless(URL, "HECTOR_TEST_URL is not set: go test ./clients/python starts a server and sets it")
@unittest.skipIf(ADK, f"the adk extra is not installed ({ADK}): pip install 'hector-client[adk]'")
class ADKServices(unittest.TestCase):
    def setUp(self):
        self.app = "adk-" + uuid.uuid4().hex[:8]  # each test its own app: nothing left from another

    def test_sessions_answer_as_adks_own(self):
        want = asyncio.run(session_script(InMemorySessionService(), self.app))
        got = asyncio.run(session_script(HectorSessionService(URL, api_key=ADMIN_KEY), self.app))
        self.assertEqual(len(want), len(got))
        for w, g in zip(want, got):
            self.assertEqual(w, g)
        print(f"sessions: {len(want)} calls answered alike")

    def test_artifacts_answer_as_adks_own(self):
        async def hector():
            for sid in ("s1", "s2"):  # Hector keeps artifacts beside a session
                await HectorSessionService(URL, api_key=ADMIN_KEY).create_session(app_name=self.app, user_id="ana", session_id=sid)
            return await artifact_script(HectorArtifactService(URL, api_key=ADMIN_KEY), self.app)
        want = asyncio.run(artifact_script(InMemoryArtifactService(), self.app))
        got = asyncio.run(hector())
        for w, g in zip(want, got):
            self.assertEqual(w, g)
        self.assertEqual(len(want), len(got))
        print(f"artifacts: {len(want)} calls answered alike")

    def test_memory_answers_as_adks_own(self):
        async def script(sessions, memory):
            s = await sessions.create_session(app_name=self.app, user_id="ana", session_id="pets")
            for ev in [said(1, "user", "I adopted a puppy named Rex"), said(2, "helper", "Congratulations on Rex")]:
                await sessions.append_event(s, ev)
            await memory.add_session_to_memory(s)
            await memory.add_session_to_memory(s)  # twice: found once
            out = []
            for user, query in [("ana", "puppy"), ("ana", "Rex"), ("ben", "puppy")]:
                found = await memory.search_memory(app_name=self.app, user_id=user, query=query)
                out.append((user, query, sorted((m.id, m.author, m.content.parts[0].text) for m in found.memories)))
            return out
        want = asyncio.run(script(InMemorySessionService(), InMemoryMemoryService()))
        # A session kept by ADK's own service, remembered by Hector:
        got = asyncio.run(script(InMemorySessionService(), HectorMemoryService(URL, api_key=ADMIN_KEY)))
        self.assertEqual(want, got)

    def test_a_hector_session_is_remembered_without_copying(self):
        async def run():
            sessions, memory = HectorSessionService(URL, api_key=ADMIN_KEY), HectorMemoryService(URL, api_key=ADMIN_KEY)
            s = await sessions.create_session(app_name=self.app, user_id="ana")
            await sessions.append_event(s, said(1, "user", "My sister lives in Lisbon"))
            await memory.add_session_to_memory(s)
            again = await sessions.get_session(app_name=self.app, user_id="ana", session_id=s.id)
            found = await memory.search_memory(app_name=self.app, user_id="ana", query="Lisbon")
            return len(again.events), [(m.id, m.timestamp) for m in found.memories]
        n, found = asyncio.run(run())
        self.assertEqual(n, 1)
        self.assertEqual([i for i, _ in found], ["ev1"])
        self.assertTrue(found[0][1].startswith("2026-"), found)

    def test_another_users_key_is_refused(self):
        async def run():
            admin = HectorSessionService(URL, api_key=ADMIN_KEY)
            await admin.create_session(app_name="travel", user_id="bob", session_id="bob-" + self.app)
            alice = HectorSessionService(URL, api_key=ALICE_KEY)
            with self.assertRaises(HectorError) as refused:
                await alice.get_session(app_name="travel", user_id="bob", session_id="bob-" + self.app)
            self.assertEqual(refused.exception.status, 403)
            self.assertNotIn(ALICE_KEY, str(refused.exception))
            with self.assertRaises(HectorError):
                await HectorMemoryService(URL, api_key=ALICE_KEY).search_memory(app_name="travel", user_id="bob", query="x")
        asyncio.run(run())


@unittest.skipUnless(HectorServer.available(), "HECTOR_TEST_BIN is not set: go test ./clients/python builds hector and sets it")
@unittest.skipIf(ADK, f"the adk extra is not installed ({ADK})")
class ADKAcrossARestart(unittest.TestCase):
    def test_a_session_outlives_the_server(self):
        with tempfile.TemporaryDirectory() as data:
            async def write(url):
                svc = HectorSessionService(url)
                s = await svc.create_session(app_name="notes", user_id="ana", session_id="diary", state={"user:lang": "pt"})
                await svc.append_event(s, said(1, "user", "Remember the blue door", {"mood": "calm"}))
                return [dump(e) for e in s.events], s.state

            async def read(url):
                s = await HectorSessionService(url).get_session(app_name="notes", user_id="ana", session_id="diary")
                found = await HectorMemoryService(url).search_memory(app_name="notes", user_id="ana", query="blue door")
                return [dump(e) for e in s.events], s.state, [m.id for m in found.memories]

            with HectorServer(data) as url:
                events, state = asyncio.run(write(url))
            with HectorServer(data) as url:
                events2, state2, found = asyncio.run(read(url))
            self.assertEqual(events, events2)
            self.assertEqual(state, state2)
            self.assertEqual(found, ["ev1"])
