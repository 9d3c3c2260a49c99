"""The client against a real `hector serve` (clients/python/python_test.go
starts one and gives its URL and keys in the environment)."""

import io
import os
import tarfile
import unittest

from hector import Client, HectorError

URL = os.environ.get("HECTOR_TEST_URL")


@unittest.skipUnless(URL, "HECTOR_TEST_URL is not set: go test ./clients/python starts a server and sets it")
class AgainstAServer(unittest.TestCase):
    def setUp(self):
        self.alice = Client(URL, api_key=os.environ["HECTOR_TEST_ALICE_KEY"])
        self.admin = Client(URL, api_key=os.environ["HECTOR_TEST_ADMIN_KEY"])
        self.admin.erase_user("travel", "alice")  # each test starts from nothing

    def test_sessions_events_and_state(self):
        s = self.alice.create_session("travel", "alice", session_id="trip", state={"topic": "Lisbon"}, title="Lisbon")
        self.assertEqual((s["id"], s["title"]), ("trip", "Lisbon"))
        self.assertEqual(self.alice.update_session("travel", "alice", "trip", "Lisbon in May")["title"], "Lisbon in May")
        ev = self.alice.append_event("travel", "alice", "trip", author="alice", text="Book a flight to Lisbon",
                                     state_delta={"user:home": "Porto"})
        self.assertEqual(ev["seq"], 1)
        self.alice.append_event("travel", "alice", "trip", author="planner", text="Found one in May", role="assistant")
        got = self.alice.get_session("travel", "alice", "trip")
        self.assertEqual([e["message"]["parts"][0]["text"] for e in got["events"]], ["Book a flight to Lisbon", "Found one in May"])
        self.assertEqual(got["state"]["topic"], "Lisbon")
        self.assertEqual(self.alice.get_user_state("travel", "alice"), {"user:home": "Porto"})
        self.assertEqual(self.alice.update_user_state("travel", "alice", {"user:home": None, "user:lang": "pt"}), {"user:lang": "pt"})
        with self.assertRaises(HectorError) as refused:
            self.alice.append_event("travel", "alice", "trip", author="alice", text="late", expected_seq=1)
        self.assertEqual((refused.exception.status, refused.exception.code), (409, "conflict"))
        listed = self.alice.list_sessions("travel", "alice")
        self.assertEqual([x["id"] for x in listed["sessions"]], ["trip"])

    def test_search_and_facts(self):
        self.alice.create_session("travel", "alice", session_id="trip")
        self.alice.append_event("travel", "alice", "trip", author="alice", text="My dog Rex loves the beach")
        hits = self.alice.search_memory("travel", "alice", "dog Rex")["results"]
        self.assertEqual(hits[0]["session_id"], "trip")
        self.assertIn("Rex", hits[0]["content"])
        stored = self.alice.store_fact("travel", "alice", "home", "Lives in Lisbon", category="places")
        self.assertEqual(stored["decision"], "added")
        self.alice.store_fact("travel", "alice", "home", "Lives in Porto", category="places")
        self.assertEqual(self.alice.recall_fact("travel", "alice", "home")["value"], "Lives in Porto")
        self.assertEqual([f["value"] for f in self.alice.fact_history("travel", "alice", "home")], ["Lives in Lisbon", "Lives in Porto"])
        self.assertEqual([f["key"] for f in self.alice.list_facts("travel", "alice", category="places")], ["home"])
        self.assertEqual(self.alice.forget_facts("travel", "alice", "key:home")["removed"], 1)
        with self.assertRaises(HectorError) as refused:
            self.alice.store_fact("travel", "alice", "k", "v", category="system")
        self.assertEqual((refused.exception.status, refused.exception.code), (400, "category_reserved"))

    def test_artifacts_and_export(self):
        self.alice.create_session("travel", "alice", session_id="trip")
        png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
        info = self.alice.save_artifact("travel", "alice", "trip", "dot.png", png, metadata={"draft": True})
        self.assertEqual((info["version"], info["mime_type"]), (1, "image/png"))
        content, kind = self.alice.load_artifact("travel", "alice", "trip", "dot.png")
        self.assertEqual((content, kind), (png, "image/png"))
        archive = tarfile.open(fileobj=io.BytesIO(self.alice.export_user("travel", "alice")))
        self.assertEqual(archive.getnames()[0], "user.jsonl")
        self.assertIn("artifacts/1/1", archive.getnames())

    def test_errors_carry_the_apis_code(self):
        with self.assertRaises(HectorError) as missing:
            self.alice.get_session("travel", "alice", "nothing")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "not_found"))
        with self.assertRaises(HectorError) as other:
            self.alice.list_sessions("travel", "bob")
        self.assertEqual(other.exception.status, 403)
        with self.assertRaises(HectorError) as no_agent:  # streamed: the refusal comes with the first event
            list(self.alice.run_agent("nothing", "alice", "hello", stream=True))
        self.assertEqual((no_agent.exception.status, no_agent.exception.code), (404, "not_found"))
        with self.assertRaises(HectorError) as nobody:
            Client(URL, api_key="not-a-key-0123456789").whoami()
        self.assertEqual(nobody.exception.status, 401)


if __name__ == "__main__":
    unittest.main()
