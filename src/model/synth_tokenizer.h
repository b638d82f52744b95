#pragma once
/// A minimal but real SentencePiece-style ("llama") vocabulary for synthetic
/// models, so that llama.cpp loads them and llama-server tokenizes text.
///
/// Requirements from llama.cpp's src/llama-vocab.cpp (llama_vocab::impl::load):
/// tokenizer.ggml.model = "llama" needs tokenizer.ggml.tokens, .scores and
/// .token_type arrays of n_vocab entries; the byte-fallback tokens <0x00>..<0xFF>
/// (type BYTE) let any text tokenize and provide the newline token; bos/eos/unk
/// ids must be valid token ids. token_embd/output must have n_vocab rows.

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "util/result.h"

namespace moetune {

/// llama_token_type values (include/llama.h upstream).
inline constexpr int32_t kTokenTypeNormal = 1, kTokenTypeUnknown = 2, kTokenTypeControl = 3,
                         kTokenTypeByte = 6;

struct SynthVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  int64_t unk_id = 0, bos_id = 1, eos_id = 2;
};

/// Builds a vocabulary of exactly n_vocab tokens: <unk>, <s>, </s>, 256 byte
/// tokens, single characters and common English word pieces, then unique filler
/// pieces. kInvalidArgument when n_vocab < 259.
Result<SynthVocab> MakeSynthVocab(int64_t n_vocab);

/// Writes the tokenizer.ggml.* keys of `vocab` into `writer`.
void AddSynthVocab(const SynthVocab& vocab, GgufWriter& writer);

}  // namespace moetune
