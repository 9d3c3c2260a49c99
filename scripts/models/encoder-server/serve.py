"""Serves a BERT-style encoder's ONNX export over OpenAI's embeddings API
(POST /v1/embeddings), so that `hector eval` and bench/fusion can measure
a candidate encoder through Hector's own openai embedder before anyone
converts it into the binary. Each text is read up to --max-pieces pieces
(pkg/embed/e5 reads 256) and pooled as the model was trained: its [CLS]
vector (bge) or the mean of its pieces (e5, MiniLM); vectors are unit
length. Prefixes (e5's "query: ", bge's instruction) are the client's:
Hector's query_prefix and document_prefix.

    python serve.py ONNX TOKENIZER_JSON --pooling cls|mean [--port 8099]

A development tool: it listens on loopback and trusts its one client.
"""
import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

parser = argparse.ArgumentParser()
parser.add_argument("onnx")
parser.add_argument("tokenizer")
parser.add_argument("--pooling", choices=["cls", "mean"], required=True)
parser.add_argument("--max-pieces", type=int, default=256)
parser.add_argument("--port", type=int, default=8099)
args = parser.parse_args()

tokenizer = Tokenizer.from_file(args.tokenizer)
tokenizer.enable_truncation(max_length=args.max_pieces)
session = onnxruntime.InferenceSession(args.onnx, providers=["CPUExecutionProvider"])
inputs = {i.name for i in session.get_inputs()}
lock = threading.Lock()  # one batch at a time: onnxruntime already uses every core


def embed(texts):
    """Vectors of texts, run in batches of similar length so that padding
    costs little."""
    encoded = tokenizer.encode_batch(texts)
    out = [None] * len(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
    for start in range(0, len(order), 16):
        batch = order[start:start + 16]
        width = max(len(encoded[i].ids) for i in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, i in enumerate(batch):
            n = len(encoded[i].ids)
            ids[row, :n] = encoded[i].ids
            mask[row, :n] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        with lock:
            hidden = session.run(None, feed)[0]
        if args.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        for row, i in enumerate(batch):
            out[i] = pooled[row].tolist()
    return out


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if self.path.rstrip("/") != "/v1/embeddings":
            return self.answer(404, {"error": {"message": f"no route {self.path}: POST /v1/embeddings"}})
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            texts = body["input"]
            texts = [texts] if isinstance(texts, str) else texts
            if not all(isinstance(t, str) for t in texts):
                raise ValueError("input must be a string or a list of strings")
        except (ValueError, KeyError, TypeError) as e:
            return self.answer(400, {"error": {"message": f"bad request: {e}"}})
        vectors = embed(texts)
        self.answer(200, {"object": "list", "model": body.get("model", ""),
                          "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]})

    def answer(self, status, doc):
        raw = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *_):
        pass


print(f"serving {args.onnx} ({args.pooling} pooling, {args.max_pieces} pieces) at http://127.0.0.1:{args.port}/v1", flush=True)
ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
