"""The client keeps in step with the API: every operation of
clients/openapi.json is a method named after its operationId, taking its
path and query parameters and its body's required fields."""

import inspect
import json
import pathlib
import re
import unittest

from hector import Client

OPENAPI = pathlib.Path(__file__).resolve().parents[2] / "openapi.json"

# A body field the method takes under another name.
ALIASES = {"state": "delta"}


def snake(operation_id: str) -> str:
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", operation_id)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


class InStep(unittest.TestCase):
    def test_every_operation_is_a_method(self):
        doc = json.loads(OPENAPI.read_text())
        schemas = doc["components"]["schemas"]
        operations = 0
        for path, methods in doc["paths"].items():
            for method, op in methods.items():
                operations += 1
                name = snake(op["operationId"])
                with self.subTest(operation=op["operationId"], method=method.upper(), path=path):
                    self.assertTrue(hasattr(Client, name), f"Client has no {name} for {method.upper()} {path}")
                    params = inspect.signature(getattr(Client, name)).parameters
                    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
                    for p in op.get("parameters", []):
                        if p["in"] in ("path", "query"):
                            self.assertIn(p["name"], params, f"{name} does not take {p['in']} parameter {p['name']}")
                    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
                    if body and "$ref" in body:
                        body = schemas[body["$ref"].rsplit("/", 1)[1]]
                    for field in (body or {}).get("required", []):
                        if not takes_any:
                            self.assertIn(ALIASES.get(field, field), params, f"{name} does not take the body's {field}")
        self.assertGreater(operations, 40)

    def test_snake(self):
        self.assertEqual(snake("getOpenAPI"), "get_open_api")
        self.assertEqual(snake("getMCPProtectedResource"), "get_mcp_protected_resource")
        self.assertEqual(snake("listAllUsers"), "list_all_users")


if __name__ == "__main__":
    unittest.main()
