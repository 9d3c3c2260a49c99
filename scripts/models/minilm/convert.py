"""Converts all-MiniLM-L6-v2 as sentence-transformers loads it into the
model file pkg/embed/minilm embeds (the BERT's weights, stored as
../bertstore.py says, the pooler and position IDs left out: the mean of the
last layer is pooled), and computes the reference vectors its tests check
the Go port against, with sentence-transformers itself.

    python convert.py MODEL_DIR OUT_DIR TEXTS_JSON
"""
import json
import os
import sys

from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bertstore import save  # noqa: E402

model_dir, out_dir, texts_path = sys.argv[1:4]

weights = load_file(f"{model_dir}/model.safetensors")
kept = {name: w for name, w in weights.items() if not name.startswith("pooler.") and name != "embeddings.position_ids"}
save(kept, f"{out_dir}/minilm.safetensors", "sentence-transformers/all-MiniLM-L6-v2")

from sentence_transformers import SentenceTransformer  # noqa: E402 (slow to import)

texts = json.load(open(texts_path))
model = SentenceTransformer(model_dir, device="cpu")
vectors = model.encode(texts, batch_size=8, normalize_embeddings=True)
reference = {
    "fingerprint": "all-minilm-l6-v2/v1/384",
    "texts": [
        {
            "text": text,
            "pieces": model.tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"],
            "vector": [round(float(x), 7) for x in vector],
        }
        for text, vector in zip(texts, vectors)
    ],
}
json.dump(reference, open(f"{out_dir}/testdata/reference.json", "w"), ensure_ascii=False, indent=0)
