#include "model/synth_tokenizer.h"

#include <fmt/format.h>

#include <set>

namespace moetune {
namespace {

// SentencePiece marks a word start with U+2581.
constexpr const char* kSpace = "\xe2\x96\x81";

constexpr const char* kWords[] = {
    "the",   "of",    "and",  "to",   "in",    "a",     "is",     "that",   "for",
    "it",    "as",    "was",  "with", "be",    "by",    "on",     "not",    "he",
    "I",     "this",  "are",  "or",   "his",   "from",  "at",     "which",  "but",
    "have",  "an",    "had",  "they", "you",   "were",  "their",  "one",    "all",
    "we",    "can",   "her",  "has",  "there", "been",  "if",     "more",   "when",
    "will",  "would", "who",  "so",   "no",    "model", "memory", "expert", "layer",
    "token", "speed", "GPU",  "CPU",  "Hello", "world", "The",    "What",   "is",
    "time",  "there", "once", "upon", "story", "about", "write",  "number",
};

}  // namespace

Result<SynthVocab> MakeSynthVocab(int64_t n_vocab) {
  if (n_vocab < 259) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("vocab of {} tokens is too small: 3 special and 256 byte tokens are "
                             "needed; use at least 300",
                             n_vocab));
  }
  SynthVocab v;
  std::set<std::string> seen;
  auto add = [&](std::string text, float score, int32_t type) {
    if (static_cast<int64_t>(v.tokens.size()) >= n_vocab || !seen.insert(text).second) return;
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.0f, kTokenTypeUnknown);
  add("<s>", 0.0f, kTokenTypeControl);
  add("</s>", 0.0f, kTokenTypeControl);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0.0f, kTokenTypeByte);
  // Pieces: scores decrease with the index (SentencePiece prefers higher scores
  // when merging), whole words rank above single characters.
  float score = -1.0f;
  add(kSpace, score, kTokenTypeNormal);
  for (const char* w : kWords) add(std::string(kSpace) + w, score -= 1.0f, kTokenTypeNormal);
  for (const char* w : kWords) add(w, score -= 1.0f, kTokenTypeNormal);
  for (char c = 'a'; c <= 'z'; ++c) add(std::string(kSpace) + c, score -= 1.0f, kTokenTypeNormal);
  for (int c = 33; c < 127; ++c)
    add(std::string(1, static_cast<char>(c)), score -= 1.0f, kTokenTypeNormal);
  for (int64_t i = 0; static_cast<int64_t>(v.tokens.size()) < n_vocab; ++i) {
    add(fmt::format("{}w{}", kSpace, i), score -= 1.0f, kTokenTypeNormal);
  }
  return v;
}

void AddSynthVocab(const SynthVocab& v, GgufWriter& w) {
  w.SetString("tokenizer.ggml.model", "llama");
  w.SetStringArray("tokenizer.ggml.tokens", v.tokens);
  std::vector<GgufScalar> scores;
  scores.reserve(v.scores.size());
  for (float s : v.scores) scores.emplace_back(static_cast<double>(s));
  w.Set("tokenizer.ggml.scores", GgufValue::Array(GgufValueType::kFloat32, std::move(scores)));
  std::vector<int64_t> types(v.types.begin(), v.types.end());
  w.SetIntArray("tokenizer.ggml.token_type", GgufValueType::kInt32, types);
  w.SetU32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk_id));
  w.SetU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  w.SetU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  w.SetBool("tokenizer.ggml.add_bos_token", true);
  w.SetBool("tokenizer.ggml.add_eos_token", false);
}

}  // namespace moetune
