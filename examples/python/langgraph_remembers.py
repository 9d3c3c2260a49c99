"""A LangGraph graph whose checkpoints are Hector's, and whose past threads
are searchable memory: in one thread the user says something; in another,
new thread the graph is asked about it and answers from Hector's search of
the user's past threads. The model is a scripted node, so it runs offline.

    hector serve &                                   # in another terminal
    pip install "./clients/python[langgraph]"
    python examples/python/langgraph_remembers.py [http://127.0.0.1:8080]   # HECTOR_API_KEY if the server takes keys
"""

import os
import sys
import uuid

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from hector import Client
from hector.langgraph import HectorSaver


def main(url: str) -> None:
    key = os.environ.get("HECTOR_API_KEY")
    user = "rosa-" + uuid.uuid4().hex[:6]
    hector = Client(url, api_key=key)

    def assistant(state: MessagesState) -> dict:
        said = state["messages"][-1].content
        if not said.strip().endswith("?"):
            return {"messages": [AIMessage(content="Noted.")]}
        # Recall from every past thread of the user's: what no other checkpointer gives.
        hits = [h for h in hector.search_memory("langgraph-example", user, said, limit=5)["results"] if h["role"] == "user"
                and h["content"] != said]
        answer = f'You told me: "{hits[0]["content"]}"' if hits else "I don't remember you telling me."
        return {"messages": [AIMessage(content=answer)]}

    builder = StateGraph(MessagesState)
    builder.add_node("assistant", assistant)
    builder.add_edge(START, "assistant")
    graph = builder.compile(checkpointer=HectorSaver(url, app="langgraph-example", user_id=user, api_key=key))
    for said in ["My sister Inês moved to Porto last spring.", "Where does my sister live now?"]:
        thread = {"configurable": {"thread_id": "thread-" + uuid.uuid4().hex[:6]}}  # a new one each time
        result = graph.invoke({"messages": [("user", said)]}, thread)
        print(f"thread {thread['configurable']['thread_id']}\n  {user}: {said}\n  assistant: {result['messages'][-1].content}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080")
