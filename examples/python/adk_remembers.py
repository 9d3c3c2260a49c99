"""An ADK (Python) agent whose sessions and memory are Hector's: in a first
session the user says something; in a second, new session the agent is
asked about it, calls ADK's load_memory tool, and answers from what Hector
found. The model is scripted, so it runs offline; give the agent a real one
and nothing else changes.

    hector serve &                                   # in another terminal
    pip install "./clients/python[adk]"
    python examples/python/adk_remembers.py [http://127.0.0.1:8080]   # HECTOR_API_KEY if the server takes keys
"""

import asyncio
import os
import sys
import uuid
from typing import AsyncGenerator

from google.adk.agents import Agent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.tools import load_memory
from google.adk.tools.load_memory_tool import LoadMemoryResponse
from google.genai import types

from hector.adk import HectorMemoryService, HectorSessionService


def memories(response: dict) -> list[MemoryEntry]:
    """The memories in load_memory's answer: ADK hands the tool's result over
    as it returned it (under "result"), or as JSON once read back."""
    found = response.get("result", response)
    if isinstance(found, LoadMemoryResponse):
        return found.memories
    return LoadMemoryResponse.model_validate(found).memories


class ScriptedModel(BaseLlm):
    """Asks memory about every question and answers with the best thing the
    user said; acknowledges a statement."""

    model: str = "scripted"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1]
        asked = llm_request.contents[-3].parts[0].text if len(llm_request.contents) >= 3 else None
        for part in last.parts or []:
            if part.function_response and part.function_response.name == "load_memory":
                said = [m for m in memories(part.function_response.response)
                        if m.author == "user" and m.content.parts[0].text != asked]  # not the question itself
                text = f'You told me: "{said[0].content.parts[0].text}"' if said else "I don't remember you telling me."
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
                return
            if part.text and part.text.strip().endswith("?"):
                call = types.FunctionCall(name="load_memory", args={"query": part.text})
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
                return
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="Noted.")]))


async def main(url: str) -> None:
    key = os.environ.get("HECTOR_API_KEY")
    sessions = HectorSessionService(url, api_key=key)
    agent = Agent(name="assistant", model=ScriptedModel(), instruction="Answer from memory.", tools=[load_memory])
    runner = Runner(app_name="adk-example", agent=agent, session_service=sessions,
                    memory_service=HectorMemoryService(url, api_key=key))
    user = "rosa-" + uuid.uuid4().hex[:6]
    for said in ["My sister Inês moved to Porto last spring.", "Where does my sister live now?"]:
        session = await sessions.create_session(app_name="adk-example", user_id=user)  # a new one each time
        print(f"session {session.id}\n  {user}: {said}")
        message = types.Content(role="user", parts=[types.Part(text=said)])
        async for event in runner.run_async(user_id=user, session_id=session.id, new_message=message):
            for part in event.content.parts if event.content else []:
                if part.text:
                    print(f"  {event.author}: {part.text}")
                elif part.function_call:
                    print(f"  {event.author} calls {part.function_call.name}({part.function_call.args})")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"))
