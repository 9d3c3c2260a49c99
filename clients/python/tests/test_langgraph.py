"""hector.langgraph against LangGraph's own conformance suite
(langgraph-checkpoint-conformance), then what it cannot show: a graph run
whose conversation becomes searchable memory, and a thread outliving the
server (clients/python/python_test.go starts the server)."""

import asyncio
import tempfile
import unittest
import uuid

from tests.servers import URL, ADMIN_KEY, ALICE_KEY, HectorServer, wait_for_vectors

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


async def store_script(store) -> list:
    """A run of store calls; what each answered, written down (times aside)."""
    log: list = []

    def shown(items):
        if items is None:
            return None
        if not isinstance(items, list):
            return (items.namespace, items.key, items.value)
        return [(i.namespace, i.key, i.value) for i in items]

    await store.aput(("users", "ana", "food"), "likes", {"text": "Loves grilled sardines", "n": 3})
    await store.aput(("users", "ana", "food"), "dislikes", {"text": "Cannot stand coriander", "n": 1})
    await store.aput(("users", "ana", "trips"), "next", {"text": "Lisbon in May", "n": 7, "tags": {"season": "spring"}})
    await store.aput(("users", "ben", "food"), "likes", {"text": "Eats only pasta", "n": 2})
    log.append(("get", shown(await store.aget(("users", "ana", "food"), "likes"))))
    log.append(("get missing", shown(await store.aget(("users", "ana", "food"), "nope"))))
    await store.aput(("users", "ana", "food"), "likes", {"text": "Loves grilled sardines and figs", "n": 4})
    log.append(("get updated", shown(await store.aget(("users", "ana", "food"), "likes"))))
    log.append(("search ana", shown(await store.asearch(("users", "ana")))))
    log.append(("search all", shown(await store.asearch(("users",), limit=3))))
    log.append(("search offset", shown(await store.asearch(("users",), limit=2, offset=2))))
    log.append(("search filter", shown(await store.asearch(("users",), filter={"n": {"$gte": 3}}))))
    log.append(("search nested", shown(await store.asearch(("users",), filter={"tags": {"season": "spring"}}))))
    log.append(("namespaces", await store.alist_namespaces()))
    log.append(("namespaces prefix", await store.alist_namespaces(prefix=("users", "ana"))))
    log.append(("namespaces suffix", await store.alist_namespaces(suffix=("food",))))
    log.append(("namespaces depth", await store.alist_namespaces(max_depth=2)))
    await store.adelete(("users", "ana", "food"), "dislikes")
    log.append(("after delete", shown(await store.asearch(("users", "ana")))))
    log.append(("get deleted", shown(await store.aget(("users", "ana", "food"), "dislikes"))))
    await store.aput(("users", "ana", "food"), "dislikes", {"text": "Now likes coriander", "n": 5})
    log.append(("put again", shown(await store.asearch(("users", "ana", "food")))))
    return log


@unittest.skipUnless(URL, "HECTOR_TEST_URL is not set: go test ./clients/python starts a server and sets it")
@unittest.skipIf(LANGGRAPH, f"the langgraph extra is not installed ({LANGGRAPH})")
class LangGraphStore(unittest.TestCase):
    def test_answers_as_langgraphs_in_memory_store(self):
        from langgraph.store.memory import InMemoryStore
        from hector.langgraph import HectorStore

        want = asyncio.run(store_script(InMemoryStore()))
        got = asyncio.run(store_script(HectorStore(URL, app="lg-" + uuid.uuid4().hex[:8], user_id="ana", api_key=ADMIN_KEY)))
        for w, g in zip(want, got):
            self.assertEqual(w, g)
        self.assertEqual(len(want), len(got))
        print(f"langgraph store: {len(want)} calls answered alike")


@unittest.skipUnless(HectorServer.available(), "HECTOR_TEST_BIN is not set: go test ./clients/python builds hector and sets it")
@unittest.skipIf(LANGGRAPH, f"the langgraph extra is not installed ({LANGGRAPH})")
class LangGraphStoreSearchesByMeaning(unittest.TestCase):
    def test_a_query_finds_the_item_that_means_it(self):
        from hector.langgraph import HectorStore

        async def run(url):
            store = HectorStore(url, user_id="ana")
            await store.aput(("memories",), "diet", {"text": "She is vegetarian and never eats meat"})
            await store.aput(("memories",), "pet", {"text": "Her cat Mittens sleeps on the sofa"})
            await store.aput(("memories",), "car", {"text": "The car needs new tyres before winter"})
            await store.aput(("memories",), "secret", {"text": "Her cat is called Mittens"}, index=False)
            await store.aput(("memories",), "diet", {"text": "She eats fish now, no red meat"})  # the old words must not find it
            wait_for_vectors(url)
            first = await store.asearch(("memories",), query="which pet lives with her?", limit=1)
            food = await store.asearch(("memories",), query="vegetarian", limit=5)
            return [(i.key, i.value["text"]) for i in first], [i.key for i in food], first[0].score
        with tempfile.TemporaryDirectory() as data:
            with HectorServer(data, config="server: {}\n") as url:  # the default: hybrid, the encoder in the binary
                first, food, score = asyncio.run(run(url))
        self.assertEqual(first, [("pet", "Her cat Mittens sleeps on the sofa")])
        self.assertNotIn("secret", food)
        self.assertTrue(score is not None and score > 0)
        self.assertLessEqual(food.count("diet"), 1)  # at most once, as its latest version
