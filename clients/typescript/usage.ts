// Compiled with tsc --strict by clients/typescript's test: the generated
// types describe what the server takes and returns.
import type { components, operations } from "./hector";

type AppendEvent = components["schemas"]["AppendEvent"];
type SearchResponse = components["schemas"]["SearchResponse"];
type CreateSessionBody = NonNullable<operations["createSession"]["requestBody"]>["content"]["application/json"];

const event: AppendEvent = {
  author: "user",
  message: { role: "user", parts: [{ type: "text", text: "I am planning a trip to Lisbon" }] },
};
const created: CreateSessionBody = { session_id: "trip" };

export function firstHit(r: SearchResponse): string | undefined {
  return r.results?.[0]?.content;
}

export const examples = { event, created };
