#include "store/reference.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>

#include "store/catalog.h"
#include "store/model_files.h"
#include "store/scan.h"

namespace moetune {
namespace {

constexpr size_t kMaxShown = 12;

bool IEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool IStartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && IEqual(s.substr(0, prefix.size()), prefix);
}

// llama.cpp's repository id check (arg.cpp validate_repo_name):
// ^[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+$.
bool RepoChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
}
bool ValidRepo(std::string_view repo) {
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == repo.size()) return false;
  return std::all_of(repo.begin(), repo.end(), [](char c) { return c == '/' || RepoChar(c); }) &&
         repo.find('/', slash + 1) == std::string_view::npos;
}

Result<ModelReference> ParseRepoReference(StoreKind kind, std::string_view text,
                                          std::string_view rest, std::string_view form) {
  ModelReference r;
  r.store = kind;
  r.text = std::string(text);
  const size_t colon = rest.find(':');
  r.repo = std::string(rest.substr(0, colon));
  if (colon != std::string_view::npos) r.quant = std::string(rest.substr(colon + 1));
  const bool quant_ok = colon == std::string_view::npos ||
                        (!r.quant.empty() && std::all_of(r.quant.begin(), r.quant.end(), RepoChar));
  if (!ValidRepo(r.repo) || !quant_ok) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' is not a model reference of the form {}", text, form));
  }
  return r;
}

// The name part of a stored model matches the reference's (any case).
bool NameMatches(const ModelReference& ref, const StoredModel& m) {
  switch (ref.store) {
    case StoreKind::kOllama:
      return m.store == StoreKind::kOllama &&
             IEqual(m.ollama_path, ref.ollama.host + "/" + ref.ollama.ns + "/" + ref.ollama.model);
    case StoreKind::kHuggingFace: {
      if (m.store != StoreKind::kHuggingFace && m.store != StoreKind::kLlamaCache) return false;
      if (!m.name.empty()) return IEqual(m.name, ref.repo);
      // An old llama.cpp cache file without its manifest: "<org>_<repo>_<file>".
      std::string prefix = ref.repo + "_";
      std::replace(prefix.begin(), prefix.end(), '/', '_');
      return IStartsWith(m.file, prefix);
    }
    case StoreKind::kLmStudio:
      return m.store == StoreKind::kLmStudio && IEqual(m.name, ref.repo);
    default:
      return false;
  }
}

std::vector<const StoredModel*> Dedupe(const std::vector<const StoredModel*>& in) {
  std::vector<const StoredModel*> out;
  for (const StoredModel* m : in) {
    auto same = std::find_if(out.begin(), out.end(), [m](const StoredModel* o) {
      return !m->digest.empty() && o->digest == m->digest;
    });
    if (same == out.end()) {
      out.push_back(m);
    } else if (!(*same)->usable() && m->usable()) {
      *same = m;  // the copy this user can read stands for both
    }
  }
  return out;
}

std::string StoreWords(StoreKind kind) {
  switch (kind) {
    case StoreKind::kOllama:
      return "Ollama's stores";
    case StoreKind::kHuggingFace:
      return "the Hugging Face cache or llama.cpp's download cache";
    case StoreKind::kLmStudio:
      return "LM Studio's models folder";
    default:
      return "the stores";
  }
}

std::string HowToGet(const ModelReference& ref) {
  switch (ref.store) {
    case StoreKind::kOllama:
      return fmt::format("`ollama pull {}`", ref.ollama.Display());
    case StoreKind::kHuggingFace:
      return fmt::format("`llama-server -hf {}{}{}` or `hf download {}`", ref.repo,
                         ref.quant.empty() ? "" : ":", ref.quant, ref.repo);
    default:
      return "LM Studio's download";
  }
}

std::string Line(const StoredModel& m, const std::vector<const StoredModel*>& all) {
  std::string ref = ReferenceFor(m, all);
  std::string line = fmt::format("  {}  {}", ref.empty() ? m.path : ref, ref.empty() ? "" : m.path);
  if (!m.usable()) line += fmt::format(" ({})", EntryProblemName(m.problem));
  return line;
}

std::string Listed(const std::vector<const StoredModel*>& models,
                   const std::vector<const StoredModel*>& all) {
  std::string out;
  for (size_t i = 0; i < models.size() && i < kMaxShown; ++i) out += "\n" + Line(*models[i], all);
  if (models.size() > kMaxShown)
    out += fmt::format("\n  ... and {} more", models.size() - kMaxShown);
  return out;
}

std::string Searched(const std::vector<RootScan>& scans) {
  std::string out = "\nsearched:";
  for (const auto& s : scans) {
    std::string state = !s.exists       ? "not there"
                        : s.access.ok() ? fmt::format("{} model(s)", s.models.size())
                                        : "cannot be searched: " + DescribeAccess(s.access);
    out += fmt::format("\n  {} ({}): {}", s.root.path, s.root.source, state);
    if (s.exists && !s.access.ok()) out += ". " + AccessFix(s.access, s.root.kind);
  }
  return out;
}

Error NotFound(const ModelReference& ref, const std::vector<const StoredModel*>& named,
               const std::vector<const StoredModel*>& all, const std::vector<RootScan>& scans) {
  std::string msg = fmt::format(
      "{}: no such model in {} on this machine (moetune reads local "
      "files only; to get it: {})",
      ref.text, StoreWords(ref.store), HowToGet(ref));
  if (!named.empty()) {
    msg += "\nwith that name there is:" + Listed(named, all);
  } else if (!all.empty()) {
    msg += "\nthere is:" + Listed(all, all);
  }
  msg += Searched(scans);
  msg += "\n`moetune models` lists every model on this machine with its reference";
  return Error(ErrorKind::kNotFound, msg);
}

Error Problem(const ModelReference& ref, const StoredModel& m) {
  ErrorKind kind = ErrorKind::kFormat;
  if (m.problem == EntryProblem::kAccess) kind = ErrorKind::kIo;
  if (m.problem == EntryProblem::kMissingBlob || m.problem == EntryProblem::kMissingPart) {
    kind = ErrorKind::kNotFound;
  }
  if (m.problem == EntryProblem::kNoModelLayer) kind = ErrorKind::kUnsupported;
  return Error(kind, fmt::format("{} is {}: {}", ref.text, m.path, m.problem_message));
}

const char* Prefix(StoreKind kind) {
  switch (kind) {
    case StoreKind::kOllama:
      return "ollama:";
    case StoreKind::kHuggingFace:
    case StoreKind::kLlamaCache:
      return "hf:";
    case StoreKind::kLmStudio:
      return "lmstudio:";
    default:
      return "";
  }
}

bool SelectsOnly(const std::string& text, const StoredModel& m,
                 const std::vector<const StoredModel*>& all) {
  auto ref = ParseModelReference(text);
  if (!ref || !ref->ok()) return false;
  const auto sel = SelectByReference(**ref, all);
  return sel.size() == 1 && (sel[0] == &m || (!m.digest.empty() && sel[0]->digest == m.digest));
}

// Could `arg` be a model's name rather than a file's? A name with a tag
// ("qwen3.5:35b-a3b") or a repository ("unsloth/Qwen3.5-35B-A3B-GGUF"), not a
// path (no leading '/', '.' or '~', no .gguf).
bool NameShaped(std::string_view arg) {
  if (arg.empty() || arg[0] == '/' || arg[0] == '.' || arg[0] == '~' || HasGgufExtension(arg)) {
    return false;
  }
  const bool tagged = arg.find(':') != std::string_view::npos && ParseOllamaName(arg);
  const size_t colon = arg.find(':');
  return tagged || ValidRepo(arg.substr(0, colon));
}

Result<ResolvedModel> NotAFile(const std::string& arg, const StoreEnvironment& env);

}  // namespace

std::optional<Result<ModelReference>> ParseModelReference(std::string_view text) {
  if (IStartsWith(text, "hf:")) {
    return ParseRepoReference(StoreKind::kHuggingFace, text, text.substr(3),
                              "hf:ORG/REPO[:QUANT] (e.g. hf:unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M)");
  }
  if (IStartsWith(text, "lmstudio:")) {
    return ParseRepoReference(
        StoreKind::kLmStudio, text, text.substr(9),
        "lmstudio:PUBLISHER/MODEL[:QUANT] (e.g. lmstudio:lmstudio-community/Qwen3-30B-A3B-GGUF)");
  }
  if (!IStartsWith(text, "ollama:")) return std::nullopt;
  auto name = ParseOllamaName(text.substr(7));
  if (!name) {
    return Result<ModelReference>(
        Error(ErrorKind::kInvalidArgument,
              fmt::format("'{}' is not a model reference of the form ollama:NAME[:TAG] (e.g. "
                          "ollama:qwen3:30b-a3b, ollama:hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M)",
                          text)));
  }
  ModelReference r;
  r.store = StoreKind::kOllama;
  r.text = std::string(text);
  r.ollama = *name;
  return Result<ModelReference>(std::move(r));
}

std::vector<const StoredModel*> SelectByReference(const ModelReference& ref,
                                                  const std::vector<const StoredModel*>& models) {
  std::vector<const StoredModel*> named;
  for (const StoredModel* m : models) {
    if (NameMatches(ref, *m)) named.push_back(m);
  }
  std::vector<const StoredModel*> picked;
  if (ref.store == StoreKind::kOllama) {
    for (const StoredModel* m : named) {
      if (IEqual(m->tag, ref.ollama.tag)) picked.push_back(m);
    }
  } else if (ref.quant.empty()) {
    picked = named;
  } else {
    for (const StoredModel* m : named) {
      if (FileMatchesQuant(m->file, ref.quant)) picked.push_back(m);
    }
    // No file name says it: the file type in the header may (Q4_K_M inside "model.gguf").
    if (picked.empty()) {
      for (const StoredModel* m : named) {
        if (m->details && IEqual(m->details->quant, ref.quant)) picked.push_back(m);
      }
    }
  }
  return Dedupe(picked);
}

std::string ReferenceFor(const StoredModel& m, const std::vector<const StoredModel*>& models) {
  const std::string prefix = Prefix(m.store);
  if (prefix.empty() || m.name.empty()) return "";
  std::vector<std::string> tries = {prefix + m.name};
  if (m.store != StoreKind::kOllama) {
    if (!m.tag.empty()) tries.push_back(prefix + m.name + ":" + m.tag);
    if (m.details && !m.details->quant.empty()) {
      tries.push_back(prefix + m.name + ":" + m.details->quant);
    }
  }
  for (const auto& t : tries) {
    if (SelectsOnly(t, m, models)) return t;
  }
  return "";
}

Result<ResolvedModel> ResolveModelReference(const ModelReference& ref,
                                            const StoreEnvironment& env) {
  std::vector<RootScan> scans;
  for (const auto& root : StoreRoots(env)) {
    const bool wanted = root.kind == ref.store || (ref.store == StoreKind::kHuggingFace &&
                                                   root.kind == StoreKind::kLlamaCache);
    if (wanted) scans.push_back(ScanRoot(root, env));
  }
  std::vector<const StoredModel*> all;
  std::vector<StoredModel*> named;
  bool by_name = false;
  for (auto& s : scans) {
    for (auto& m : s.models) {
      all.push_back(&m);
      if (!NameMatches(ref, m)) continue;
      named.push_back(&m);
      by_name = by_name || FileMatchesQuant(m.file, ref.quant);
    }
  }
  if (ref.store != StoreKind::kOllama && !ref.quant.empty() && !by_name) {
    // Only the headers can say which file is QUANT: read those of the name's files.
    for (StoredModel* m : named) DescribeModel(m);
  }
  const auto picked = SelectByReference(ref, all);
  if (picked.empty()) return NotFound(ref, {named.begin(), named.end()}, all, scans);
  if (picked.size() > 1) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} names {} models; name one (or give its path):{}", ref.text,
                             picked.size(), Listed(picked, all)));
  }
  const StoredModel& m = *picked.front();
  if (!m.usable()) return Problem(ref, m);
  return ResolvedModel{m.path, m};
}

namespace {

Result<ResolvedModel> NotAFile(const std::string& arg, const StoreEnvironment& env) {
  // Which reference would name it here? Tried, not taken: the user writes it.
  std::vector<std::string> found;
  for (const char* prefix : {"ollama:", "hf:", "lmstudio:"}) {
    const std::string text = prefix + arg;
    auto ref = ParseModelReference(text);
    if (!ref || !ref->ok()) continue;
    auto r = ResolveModelReference(**ref, env);
    if (r.ok()) {
      found.push_back(fmt::format("{} ({})", text, r->path));
    } else if (r.error().kind() != ErrorKind::kNotFound) {
      found.push_back(text);  // there, but ambiguous or unreadable: its own error says
    }
  }
  if (found.empty() && !NameShaped(arg)) return ResolvedModel{arg, std::nullopt};
  std::string msg = fmt::format("{}: no such file", arg);
  if (!found.empty()) {
    msg += "; a model of that name is here, as ";
    for (size_t i = 0; i < found.size(); ++i) msg += (i > 0 ? " or " : "") + found[i];
  }
  msg +=
      ". A model in a store is named by a reference: ollama:NAME[:TAG] (Ollama), "
      "hf:ORG/REPO[:QUANT] (the Hugging Face cache and llama.cpp's -hf downloads), "
      "lmstudio:PUBLISHER/MODEL[:QUANT] (LM Studio); `moetune models` lists the models on this "
      "machine with their references";
  return Error(ErrorKind::kNotFound, msg);
}

}  // namespace

Result<ResolvedModel> ResolveModelArgument(const std::string& arg, const StoreEnvironment& env) {
  struct stat st {};
  // Whatever is at the path, or a path that cannot be checked, is the user's
  // file: the reader says what is wrong with it, as it always has.
  if (arg.empty() || ::lstat(arg.c_str(), &st) == 0 || errno != ENOENT) {
    return ResolvedModel{arg, std::nullopt};
  }
  if (auto ref = ParseModelReference(arg)) {
    if (!ref->ok()) return ref->error();
    return ResolveModelReference(**ref, env);
  }
  return NotAFile(arg, env);
}

}  // namespace moetune
