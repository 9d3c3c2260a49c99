"""How the built-in BERT encoders' weights are stored (pkg/embed/internal/bert
reads them): the dense layers and the word embeddings as int8, with one
float32 scale for every 32 values of a row (named + ".scale", shaped [rows,
cols/32]), and the rest (norms, biases, positions) as float16. A scale per
32 values keeps the Go encoder's vectors within cosine 0.999 of the
original's float32 ones (the packages' reference tests); one per row does
not for all-MiniLM-L6-v2 (0.9965 on the empty text)."""
import numpy as np
from safetensors.numpy import save_file

group = 32


def quantized(name, w):
    """Whether a tensor is stored as int8."""
    if name.startswith("embeddings."):
        return name == "embeddings.word_embeddings.weight"
    return name.endswith(".weight") and w.ndim == 2


def save(weights, path, source):
    stored = {}
    for name, w in sorted(weights.items()):
        w = np.asarray(w, dtype=np.float32)
        if quantized(name, w):
            rows, cols = w.shape
            if cols % group:
                raise ValueError(f"{name}: {cols} columns are no whole groups of {group}")
            g = w.reshape(rows, cols // group, group)
            scale = np.abs(g).max(axis=2) / 127
            scale[scale == 0] = 1
            stored[name] = np.clip(np.rint(g / scale[:, :, None]), -127, 127).astype(np.int8).reshape(rows, cols)
            stored[name + ".scale"] = scale.astype(np.float32)
        else:
            stored[name] = w.astype(np.float16)
    save_file(stored, path, metadata={"source": source})
