#include "config/server_config_json.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

using nlohmann::json;

ServerConfig Full() {
  ServerConfig c;
  c.model = "/models/m.gguf";
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 7;
  c.placement.fine_fill = {{6, {"ffn_down_exps"}}};
  c.placement.overrides = {{"token_embd", "CPU"}};
  c.placement.devices = {{"CUDA0", 30}, {"RPC[10.0.0.2:50052]", 18}};
  c.ctx_size = 32768;
  c.n_parallel = 4;
  c.kv_unified = Switch::kOn;
  c.n_ubatch = 1024;
  c.n_batch = 4096;
  c.flash_attn = FlashAttn::kOn;
  c.type_k = ggml_type::kQ8_0;
  c.type_v = ggml_type::kQ8_0;
  c.threads = 6;
  c.load_mode = LoadMode::kNone;
  c.fit = Switch::kOff;
  c.rpc = {"10.0.0.2:50052"};
  c.host = "0.0.0.0";
  c.port = 9000;
  c.metrics = true;
  return c;
}

TEST(ServerConfigJson, RoundTripsEveryField) {
  const ServerConfig c = Full();
  const json j = ServerConfigJson(c);
  // The names these files always had.
  EXPECT_EQ(j["n_cpu_moe"], 7);
  EXPECT_EQ(j["override_tensor"], "blk\\.6\\.(ffn_down_exps)=CPU,token_embd=CPU");
  EXPECT_EQ(j["flash_attn"], "on");
  EXPECT_EQ(j["type_k"], "q8_0");
  EXPECT_EQ(j["load_mode"], "none");
  auto back = ServerConfigFromJson(json::parse(j.dump()), "pick");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, c);
  ServerConfig last;
  last.placement.cpu_experts = CpuExpertsFrom::kLast;
  last.placement.n_cpu_moe = 4;
  last.placement.n_layer = 48;
  auto l = ServerConfigFromJson(ServerConfigJson(last), "");
  ASSERT_TRUE(l.ok()) << l.error().message();
  EXPECT_EQ(*l, last);
}

TEST(ServerConfigJson, MissingFieldsKeepTheBase) {
  ServerConfig base;
  base.threads = 3;
  auto c = ServerConfigFromJson(json{{"n_cpu_moe", 5}}, "pick", base);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->threads, 3);
  EXPECT_EQ(c->placement.n_cpu_moe, 5);
  EXPECT_EQ(c->n_ubatch, 512);
}

TEST(ServerConfigJson, BadFieldsAreNamed) {
  struct Case {
    json j;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{{"n_cpu_moe", "12"}}, "pick.n_cpu_moe"},
      {{{"n_ubatch", 0}}, "pick.n_ubatch"},
      {{{"n_gpu_layers", 1e300}}, "pick.n_gpu_layers"},
      {{{"flash_attn", "maybe"}}, "pick.flash_attn"},
      {{{"type_k", "q9_z"}}, "pick.type_k"},
      {{{"load_mode", "turbo"}}, "pick.load_mode"},
      {{{"kv_unified", true}}, "pick.kv_unified"},
      {{{"override_tensor", "no-equals-sign"}}, "pick.override_tensor"},
      {{{"rpc", "host:1"}}, "pick.rpc"},
      {{{"port", 70000}}, "pick.port"},
      {{{"n_parallel", 0}}, "pick.n_parallel"},
      {{{"cpu_experts", "middle"}}, "pick.cpu_experts"},
      {{{"devices", json::array({{{"device", 3}}})}}, "pick.devices[0].device"},
      {json::array(), "pick"},
  };
  for (const auto& c : cases) {
    auto r = ServerConfigFromJson(c.j, "pick");
    ASSERT_FALSE(r.ok()) << c.j.dump();
    EXPECT_NE(r.error().message().find(c.needle), std::string::npos) << r.error().message();
  }
}

}  // namespace
}  // namespace moetune
