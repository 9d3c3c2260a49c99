"""hector.langgraph against LangGraph's own conformance suite
(langgraph-checkpoint-conformance), then what it cannot show: a graph run
whose conversation becomes searchable memory, and a thread outliving the
server (clients/python/python_test.go starts the server)."""

import asyncio
import tempfile
import unittest
import uuid

from tests.servers import URL, ADMIN_KEY, ALICE_KEY, HectorServer

try:
    from langgraph.checkpoint.conformance import checkpointer_test, validate
    from langgraph.checkpoint.conformance.report import ProgressCallbacks

    from hector import Client, HectorError
    from hector.langgraph import HectorSaver
    LANGGRAPH = None
except ImportError as e:  # the plain client's own tests run without the extras
    LANGGRAPH = str(e)


def echo_graph(saver):
    """A graph with one node that answers each user message by repeating it
    back: a model stand-in that needs no network."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    def reply(state):
        return {"messages": [AIMessage(content="You said: " + state["messages"][-1].content)]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


@unittest.skipUnless(URL, "HECTOR_TEST_URL is not set: go test ./clients/python starts a server and sets it")
@unittest.skipIf(LANGGRAPH, f"the langgraph extra is not installed ({LANGGRAPH}): pip install 'hector-client[langgraph]'")
class LangGraphSaver(unittest.TestCase):
    def test_conformance(self):
        app = "lg-" + uuid.uuid4().hex[:8]

        @checkpointer_test(name="HectorSaver")
        async def hector_saver():
            yield HectorSaver(URL, app=app, user_id="conformance", api_key=ADMIN_KEY)

        report = asyncio.run(validate(hector_saver, progress=ProgressCallbacks.verbose()))
        report.print_report()
        self.assertTrue(report.passed_all_base(), "a base capability failed")
        for name, result in report.results.items():
            if result.detected:
                self.assertTrue(result.passed, f"the claimed capability {name} failed: {result.failures}")
                print(f"langgraph conformance: {name} {result.tests_passed}/{result.tests_passed + result.tests_failed}")
        self.assertEqual({n for n, r in report.results.items() if r.detected},
                         {"put", "put_writes", "get_tuple", "list", "delete_thread", "copy_thread"})

    def test_a_threads_conversation_is_searchable_memory(self):
        saver = HectorSaver(URL, app="travel", user_id="alice", api_key=ALICE_KEY)
        graph = echo_graph(saver)
        thread = {"configurable": {"thread_id": "lg-" + uuid.uuid4().hex[:8]}}
        graph.invoke({"messages": [("user", "My passport expires in October")]}, thread)
        graph.invoke({"messages": [("user", "Book the window seat")]}, thread)
        state = graph.get_state(thread)
        self.assertEqual([m.content for m in state.values["messages"]],
                         ["My passport expires in October", "You said: My passport expires in October",
                          "Book the window seat", "You said: Book the window seat"])
        hits = Client(URL, api_key=ALICE_KEY).search_memory("travel", "alice", "passport October")["results"]
        mine = [h for h in hits if h["session_id"] == thread["configurable"]["thread_id"]]
        self.assertEqual(sorted((h["author"], h["content"]) for h in mine),
                         [("assistant", "You said: My passport expires in October"), ("user", "My passport expires in October")])

    def test_another_users_key_is_refused(self):
        thread = {"configurable": {"thread_id": "lg-" + uuid.uuid4().hex[:8]}}
        echo_graph(HectorSaver(URL, app="travel", user_id="bob", api_key=ADMIN_KEY)).invoke({"messages": [("user", "secret")]}, thread)
        with self.assertRaises(HectorError) as refused:
            HectorSaver(URL, app="travel", user_id="bob", api_key=ALICE_KEY).get_tuple(thread)
        self.assertEqual(refused.exception.status, 403)


@unittest.skipUnless(HectorServer.available(), "HECTOR_TEST_BIN is not set: go test ./clients/python builds hector and sets it")
@unittest.skipIf(LANGGRAPH, f"the langgraph extra is not installed ({LANGGRAPH})")
class LangGraphAcrossARestart(unittest.TestCase):
    def test_a_thread_outlives_the_server(self):
        thread = {"configurable": {"thread_id": "trip"}}
        with tempfile.TemporaryDirectory() as data:
            with HectorServer(data) as url:
                echo_graph(HectorSaver(url, user_id="ana")).invoke({"messages": [("user", "Remember the blue door")]}, thread)
            with HectorServer(data) as url:
                graph = echo_graph(HectorSaver(url, user_id="ana"))
                graph.invoke({"messages": [("user", "What colour was the door?")]}, thread)
                got = [m.content for m in graph.get_state(thread).values["messages"]]
        self.assertEqual(got, ["Remember the blue door", "You said: Remember the blue door",
                               "What colour was the door?", "You said: What colour was the door?"])
