#pragma once
/// The JSON form of a ServerConfig, one writer and one reader for every file
/// that holds one: a tune's pick and llama.cpp's defaults (`tune --json`), the
/// configuration of every measurement (`bench --json`, the tune journal).
/// The fields go flat into the enclosing object, with the names these files
/// have always used (docs/cli.md):
///
///   model, n_gpu_layers, n_cpu_moe, override_tensor (the -ot value), threads,
///   n_ubatch, n_batch, flash_attn ("" / on / off / auto), type_k, type_v
///   (ggml type names), load_mode ("" / none / ...), ctx_size, n_parallel,
///   kv_unified ("" / on / off), fit ("" / on / off), rpc (array of HOST:PORT);
///   only when set: cpu_moe (true), cpu_experts ("last") with n_layer,
///   devices ([{device, layers}]), host, port, metrics.
///
/// The reader checks every field's type and range (util/json_fields.h): the
/// files are untrusted. A field that is absent keeps the value of `base`.

#include <nlohmann/json.hpp>
#include <string>

#include "config/server_config.h"
#include "util/json_fields.h"
#include "util/result.h"

namespace moetune {

/// Adds the fields of `config` to `object` (which must be an object or null).
void AddServerConfigJson(const ServerConfig& config, nlohmann::json* object);
/// The fields of `config` as one object.
nlohmann::json ServerConfigJson(const ServerConfig& config);

/// Reads the fields of a ServerConfig from the object `f` reads; absent fields
/// keep `base`'s values. A field of the wrong type or out of range is `f`'s error.
ServerConfig ServerConfigFromJson(JsonFields& f, const ServerConfig& base = {});
/// The same for a whole object; errors name the field under `where`.
Result<ServerConfig> ServerConfigFromJson(const nlohmann::json& object, const std::string& where,
                                          const ServerConfig& base = {});

}  // namespace moetune
