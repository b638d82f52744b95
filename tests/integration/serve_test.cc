// Integration: `moetune serve` runs the real llama-server on a synthesized
// model, watches it while a client holds a conversation of growing length
// over the real HTTP API, and stops without leaving a process behind.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "watch/trace_test_util.h"
#include "watch_support.h"

namespace moetune::itest {
namespace {

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->File("tiny.gguf");
    // A long training context, so that the conversation can grow past 4K.
    const auto r = RunCommand({MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny",
                               "--ctx-train", "16384", "-o", model_},
                              300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_TRUE(EngineDir().has_value()) << "no engine (setup-engine.sh)"; }
  void TearDown() override {
    WaitFor([] { return LiveDescendantsOf(::getpid()).empty(); }, 10);
    EXPECT_TRUE(LiveDescendantsOf(::getpid()).empty()) << "a process was left behind";
  }

  // serve with the options every test uses; one slot, micro-batch 256, one thread.
  std::vector<std::string> Serve(int port, const std::string& log,
                                 std::vector<std::string> more = {}) const {
    std::vector<std::string> a = {
        "serve",      model_,      "--ctx",  "8192",         "--ubatch",
        "256",        "--threads", "1",      "--port",       std::to_string(port),
        "--interval", "0.5",       "--json", "--server-log", log};
    if (std::find(more.begin(), more.end(), "--from") == more.end())
      a.insert(a.end(), {"--vram", "8GiB"});
    // Hermetic: no predicted baseline from a profile the machine may have.
    if (std::find(more.begin(), more.end(), "--profile") == more.end()) a.push_back("--no-predict");
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }

  // Interrupts serve like Ctrl-C and checks that nothing it started is left.
  void InterruptAndCheck(Moetune& serve, const std::vector<pid_t>& servers) {
    ASSERT_EQ(::kill(serve.pid(), SIGINT), 0);
    const auto st = serve.Wait(30);
    ASSERT_TRUE(st.has_value()) << "serve did not stop on SIGINT";
    EXPECT_TRUE(st->signal == SIGINT || st->exited) << st->Describe();
    for (pid_t p : servers) {
      EXPECT_TRUE(ProcessGone(p, 10)) << "llama-server " << p << " outlived serve";
      EXPECT_TRUE(LiveProcessesInGroup(p).empty());
    }
  }

  static TempDir* dir_;
  static std::string model_;
};

TempDir* ServeTest::dir_ = nullptr;
std::string ServeTest::model_;

// A baseline that no real machine meets for prefill (a million tokens/s) while
// decode is expected at 1 token/s: every request shows the overflow signature.
std::string WriteImpossibleBaseline(const TempDir& tmp) {
  std::string path = tmp.File("baseline.json");
  const nlohmann::json point = {
      {"n_cpu_moe", 0}, {"prefill_tps", {{"mean", 1e6}}}, {"decode_tps", {{"mean", 1.0}}}};
  const nlohmann::json a = {{"curves", {{{"depth", 0}, {"points", {point}}}}}};
  std::ofstream(path) << a.dump();
  return path;
}

// Watch's derived rates (the serve output's samples) against the timings the
// server returned; the prefill samples in `*prefills`.
void ExpectRatesOfTheTimings(const std::string& serve_out, const std::vector<ChatTimings>& timings,
                             std::vector<nlohmann::json>* prefills) {
  std::vector<nlohmann::json> decodes;
  for (const auto& s : Events(serve_out, "sample")) {
    if (!s["prefill"].is_null()) prefills->push_back(s["prefill"]);
    if (!s["decode"].is_null()) decodes.push_back(s["decode"]);
  }
  ASSERT_EQ(prefills->size(), timings.size());
  ASSERT_EQ(decodes.size(), timings.size());
  double worst_prefill = 0, worst_decode = 0;
  for (std::size_t i = 0; i < timings.size(); ++i) {
    worst_prefill =
        std::max(worst_prefill,
                 std::abs((*prefills)[i]["tps"].get<double>() / timings[i].prompt_per_second - 1));
    worst_decode =
        std::max(worst_decode,
                 std::abs(decodes[i]["tps"].get<double>() / timings[i].predicted_per_second - 1));
  }
  std::printf(
      "watch vs the server's timings over %zu turns (depth to %d): prefill within %.2f%%, "
      "decode within %.2f%%\n",
      timings.size(), timings.back().cache_n + timings.back().prompt_n, worst_prefill * 100,
      worst_decode * 100);
  for (std::size_t i = 0; i < timings.size(); ++i) {
    SCOPED_TRACE("turn " + std::to_string(i));
    EXPECT_EQ((*prefills)[i]["tokens"].get<int>(), timings[i].prompt_n);
    EXPECT_NEAR((*prefills)[i]["tps"].get<double>(), timings[i].prompt_per_second,
                0.10 * timings[i].prompt_per_second);
    EXPECT_EQ(decodes[i]["tokens"].get<int>(), timings[i].predicted_n);
    EXPECT_NEAR(decodes[i]["tps"].get<double>(), timings[i].predicted_per_second,
                0.10 * timings[i].predicted_per_second);
    // The depth watch saw: the reused history plus half the new prompt.
    EXPECT_NEAR((*prefills)[i]["depth"].get<double>(),
                timings[i].cache_n + timings[i].prompt_n / 2.0, 2.0);
  }
}

// The session read back from the server's log `log` is judged as the live
// watch judged it.
void ExpectTheLogJudgedAlike(const std::string& serve_out, const std::string& log,
                             const std::vector<ChatTimings>& timings,
                             const std::vector<nlohmann::json>& prefills) {
  // The same session from the server's own log: the same verdict (the
  // alarms the live watch raised: none; exit code 0), the same requests at
  // the speeds the client saw, judged alike. (Ctrl-C ends serve by the
  // signal, after its cleanup, so the live verdict is its alarm events.)
  nlohmann::json live_alarms = nlohmann::json::array();
  for (const auto& a : Events(serve_out, "alarm")) live_alarms.push_back(a["alarm"]["id"]);
  const auto r = RunCommand({MoetuneBinary(), "watch", "--log", log, "--json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TempDir out;
  { std::ofstream(out.File("log.jsonl")) << r.out; }
  const auto verdict = Events(out.File("log.jsonl"), "verdict");
  ASSERT_EQ(verdict.size(), 1u);
  EXPECT_EQ(verdict[0]["alarms"], live_alarms);
  EXPECT_EQ(verdict[0]["exit_code"], 0);
  EXPECT_TRUE(verdict[0]["alarms"].empty());
  const auto requests = Events(out.File("log.jsonl"), "request");
  ASSERT_EQ(requests.size(), timings.size());
  for (std::size_t i = 0; i < timings.size(); ++i) {
    EXPECT_NEAR(requests[i]["prefill"]["tps"].get<double>(), timings[i].prompt_per_second,
                0.01 * timings[i].prompt_per_second);
    EXPECT_NEAR(requests[i]["prefill"]["depth"].get<double>(), prefills[i]["depth"].get<double>(),
                2.0);
  }
  // Request by request, the log is judged as the live watch judged it.
  std::vector<nlohmann::json> live_checks, log_checks;
  for (const auto& s : Events(serve_out, "sample")) {
    if (!s["judgement"]["prefill_ratio"].is_null()) live_checks.push_back(s["judgement"]);
  }
  for (const auto& q : requests) {
    if (!q["judgement"]["prefill_ratio"].is_null()) log_checks.push_back(q["judgement"]);
  }
  ASSERT_EQ(live_checks.size(), log_checks.size());
  EXPECT_GE(live_checks.size(), 2u);
  for (std::size_t i = 0; i < live_checks.size(); ++i) {
    SCOPED_TRACE("judged request " + std::to_string(i));
    EXPECT_EQ(live_checks[i]["verdict"], log_checks[i]["verdict"]);
    EXPECT_NEAR(live_checks[i]["prefill_ratio"].get<double>(),
                log_checks[i]["prefill_ratio"].get<double>(),
                0.05 * live_checks[i]["prefill_ratio"].get<double>());
  }
}

TEST_F(ServeTest, HealthyConversationRatesMatchTheServersTimings) {
  TempDir tmp;
  const int port = FreePort();
  const std::string log = tmp.File("server.log");
  Moetune serve(Serve(port, log), tmp, "serve");
  ASSERT_TRUE(serve.started());
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const auto started = Events(serve.out(), "server_started");
  ASSERT_EQ(started.size(), 1u);
  const pid_t server = started[0]["pid"].get<pid_t>();
  const auto argv = started[0]["command"];
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--metrics"), argv.end());

  // A conversation of growing length: each turn about 350 new tokens, 32 answered.
  Conversation chat(port);
  std::vector<ChatTimings> timings;
  constexpr int kTurns = 8;
  for (int turn = 0; turn < kTurns; ++turn) {
    auto t = chat.Turn(70, 32);
    ASSERT_TRUE(t.has_value()) << "turn " << turn << ": " << serve.err();
    timings.push_back(*t);
    // One whole sampling interval after the answer before the next request,
    // so that every interval holds at most one request.
    const auto n = Events(serve.out(), "sample").size();
    ASSERT_TRUE(WaitFor([&] { return Events(serve.out(), "sample").size() >= n + 2; }, 30));
  }
  EXPECT_GT(timings.back().cache_n, 2000);  // the history was reused: depth grew

  InterruptAndCheck(serve, {server});

  // Watch's derived rates against the timings the server returned.
  std::vector<nlohmann::json> prefills;
  ASSERT_NO_FATAL_FAILURE(ExpectRatesOfTheTimings(serve.out(), timings, &prefills));

  // Healthy: judged, and no alarm.
  int judged = 0;
  for (const auto& s : Events(serve.out(), "sample")) {
    const std::string v = s["judgement"]["verdict"];
    EXPECT_NE(v, "bad") << s.dump();
    judged += v == "good" || v == "neutral";
  }
  EXPECT_GE(judged, 2);
  EXPECT_TRUE(Events(serve.out(), "alarm").empty());

  ASSERT_NO_FATAL_FAILURE(ExpectTheLogJudgedAlike(serve.out(), log, timings, prefills));
}

TEST_F(ServeTest, ACrashedServerIsRestarted) {
  TempDir tmp;
  const int port = FreePort();
  Moetune serve(Serve(port, tmp.File("server.log"), {"--max-restarts", "2"}), tmp, "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const pid_t first = Events(serve.out(), "server_started")[0]["pid"].get<pid_t>();
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "server_restarted").empty(); }, 120))
      << serve.err();
  const auto exited = Events(serve.out(), "server_exited");
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_NE(exited[0]["status"].get<std::string>().find("SIGKILL"), std::string::npos);
  const pid_t second = Events(serve.out(), "server_restarted")[0]["pid"].get<pid_t>();
  EXPECT_NE(second, first);
  // It answers again.
  Conversation chat(port);
  EXPECT_TRUE(chat.Turn(10, 4).has_value());
  InterruptAndCheck(serve, {first, second});
}

TEST_F(ServeTest, ApplyRestartsWithTheFixWhenNoSlotIsBusy) {
  // A baseline that no real machine meets for prefill (a million tokens/s)
  // while decode is expected at 1 token/s: every request shows the overflow
  // signature, so the alarm fires and --apply must act on it.
  TempDir tmp;
  const std::string fake = WriteImpossibleBaseline(tmp);
  const int port = FreePort();
  Moetune serve(Serve(port, tmp.File("server.log"), {"--from", fake, "--vram", "8GiB", "--apply"}),
                tmp, "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const pid_t first = Events(serve.out(), "server_started")[0]["pid"].get<pid_t>();
  Conversation chat(port);
  for (int turn = 0; turn < 3; ++turn) {
    ASSERT_TRUE(chat.Turn(70, 16).has_value());
    const auto n = Events(serve.out(), "sample").size();
    ASSERT_TRUE(WaitFor([&] { return Events(serve.out(), "sample").size() >= n + 2; }, 30));
  }
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "applied").empty(); }, 30)) << serve.err();
  const auto alarm = Events(serve.out(), "alarm");
  ASSERT_EQ(alarm.size(), 1u);
  EXPECT_EQ(alarm[0]["alarm"]["id"], "overflow");
  const auto applied = Events(serve.out(), "applied")[0];
  EXPECT_EQ(applied["n_cpu_moe_from"], 0);
  EXPECT_EQ(applied["n_cpu_moe_to"], 2);  // prefill far below x0.25: two layers
  EXPECT_NE(serve.err().find("moetune serve: applied"), std::string::npos) << serve.err();
  ASSERT_TRUE(WaitFor([&] { return Events(serve.out(), "server_started").size() == 2; }, 120));
  const auto second = Events(serve.out(), "server_started")[1];
  const pid_t pid2 = second["pid"].get<pid_t>();
  EXPECT_NE(pid2, first);
  EXPECT_TRUE(ProcessGone(first, 10));
  // The running process has the fix on its command line.
  const auto cmdline = ReadCmdlineOf(pid2);
  const auto it = std::find(cmdline.begin(), cmdline.end(), "--n-cpu-moe");
  ASSERT_NE(it, cmdline.end());
  EXPECT_EQ(*(it + 1), "2");
  InterruptAndCheck(serve, {first, pid2});
}

TEST_F(ServeTest, AnOverflowSeenLiveIsTheLogsVerdictToo) {
  // The impossible baseline of the test above: every request shows the
  // overflow signature. Live, serve stops at the alarm with its exit code;
  // its server's log, judged afterwards against the same baseline, gives the
  // same verdict.
  TempDir tmp;
  const std::string fake = WriteImpossibleBaseline(tmp);
  const int port = FreePort();
  const std::string log = tmp.File("server.log");
  Moetune serve(Serve(port, log, {"--from", fake, "--vram", "8GiB", "--exit-on-alarm"}), tmp,
                "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const pid_t server = Events(serve.out(), "server_started")[0]["pid"].get<pid_t>();
  Conversation chat(port);
  for (int turn = 0; turn < 3; ++turn) {
    ASSERT_TRUE(chat.Turn(70, 16).has_value()) << serve.err();
    const auto n = Events(serve.out(), "sample").size();
    WaitFor([&] { return Events(serve.out(), "sample").size() >= n + 2; }, 30);
  }
  const auto st = serve.Wait(60);
  ASSERT_TRUE(st.has_value()) << "serve did not stop at the alarm";
  EXPECT_TRUE(st->exited && st->exit_code == 3) << st->Describe();
  EXPECT_TRUE(ProcessGone(server, 10));
  const auto end = Events(serve.out(), "end");
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0]["alarms"], nlohmann::json::array({"overflow"}));

  const auto r = RunCommand({MoetuneBinary(), "watch", "--log", log, "--from", fake, "--json"}, 60);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  TempDir out;
  { std::ofstream(out.File("log.jsonl")) << r.out; }
  const auto verdict = Events(out.File("log.jsonl"), "verdict");
  ASSERT_EQ(verdict.size(), 1u);
  EXPECT_EQ(verdict[0]["alarms"], end[0]["alarms"]);
  EXPECT_EQ(verdict[0]["exit_code"], end[0]["exit_code"]);
}

TEST_F(ServeTest, APredictedBaselineJudgesFromTheFirstRequestThenTheSessionTakesOver) {
  TempDir tmp;
  const std::string profile = tmp.File("machine.json");
  const auto doctor =
      RunCommand({MoetuneBinary(), "doctor", "--profile", profile, "--no-engine"}, 120);
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  // A command for the speed model to judge (a past session's log here).
  const std::string plan = tmp.File("plan.json");
  std::ofstream(plan) << nlohmann::json{
      {"command_argv",
       {"llama-server", "-m", model_, "-ngl", "99", "-ncmoe", "0", "-c", "8192", "-ub", "256", "-t",
        "1", "-fit", "off"}}}.dump();
  const std::vector<std::string> replay = {
      MoetuneBinary(), "watch", "--log",     moetune::testing::WatchFixture("healthy-chat-t1.log"),
      "--from",        plan,    "--profile", profile,
      "--json"};
  // Default constants are not trusted. (The recording ran another model
  // file and context: exit code 6, settings changed, whatever the baseline.)
  const auto uncalibrated = RunCommand(replay, 60);
  ASSERT_EQ(uncalibrated.exit_code, 6) << uncalibrated.err;
  EXPECT_NE(uncalibrated.out.find("has no calibration"), std::string::npos) << uncalibrated.out;
  const auto env = std::vector<std::pair<std::string, std::string>>{
      {"MOETUNE_LLAMA_DIR", EngineDir()->string()}};
  const auto cal = RunCommand(
      {MoetuneBinary(), "calibrate", model_, "--quick", "--deep-depth", "-1", "--profile", profile},
      600, env);
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  const auto calibrated = RunCommand(replay, 60);
  ASSERT_EQ(calibrated.exit_code, 6) << calibrated.err;
  EXPECT_NE(calibrated.out.find("predicted by the speed model"), std::string::npos)
      << calibrated.out;

  // Live: the prediction judges the first requests, then the server's own.
  const int port = FreePort();
  Moetune serve(Serve(port, tmp.File("server.log"), {"--profile", profile}), tmp, "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const auto start = Events(serve.out(), "start")[0];
  EXPECT_EQ(start["baseline"]["kind"], "predicted") << start.dump();
  EXPECT_NE(start["baseline"]["source"].get<std::string>().find("calibrated"), std::string::npos);
  const pid_t server = Events(serve.out(), "server_started")[0]["pid"].get<pid_t>();
  Conversation chat(port);
  for (int turn = 0; turn < 8; ++turn) {
    ASSERT_TRUE(chat.Turn(70, 32).has_value()) << serve.err();
    const auto n = Events(serve.out(), "sample").size();
    ASSERT_TRUE(WaitFor([&] { return Events(serve.out(), "sample").size() >= n + 2; }, 30));
  }
  InterruptAndCheck(serve, {server});
  std::vector<std::string> kinds;
  for (const auto& s : Events(serve.out(), "sample")) {
    if (!s["judgement"]["prefill_ratio"].is_null()) {
      kinds.push_back(s["judgement"]["baseline"]);
      std::printf("predicted baseline: depth %.0f, %s, %s\n", s["judgement"]["depth"].get<double>(),
                  kinds.back().c_str(), s["judgement"]["reason"].get<std::string>().c_str());
    }
  }
  ASSERT_GE(kinds.size(), 6u);
  EXPECT_EQ(kinds.front(), "predicted");  // judged from the first request
  EXPECT_EQ(kinds.back(), "session");     // measured wins once enough requests are in
  EXPECT_TRUE(Events(serve.out(), "alarm").empty());
}

// A plan file's command is untrusted: serve starts only the settings moetune
// plans and tunes, says what it left out, and takes no path but the model from
// it (--path would publish a folder, --log-file write where the file chose,
// --api-key lock out serve's own watcher).
TEST_F(ServeTest, AFilesCommandStartsOnlyTheSettingsMoetunePlans) {
  TempDir tmp;
  const std::string plan = tmp.File("plan.json");
  const std::string published = tmp.File("published");
  const std::string chosen_log = tmp.File("chosen.log");
  std::ofstream(plan) << nlohmann::json{
      {"command_argv",
       {"LD_PRELOAD=/nonexistent/evil.so",
        "-m",
        model_,
        "-ngl",
        "99",
        "-ncmoe",
        "0",
        "-c",
        "8192",
        "-ub",
        "256",
        "-t",
        "1",
        "-fit",
        "off",
        "--path",
        published,
        "--log-file",
        chosen_log,
        "--api-key",
        "locked-out"}}}.dump();
  const int port = FreePort();
  Moetune serve({"serve", model_, "--from", plan, "--port", std::to_string(port), "--interval",
                 "0.5", "--json", "--server-log", tmp.File("server.log"), "--no-predict"},
                tmp, "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const pid_t server = Events(serve.out(), "server_started")[0]["pid"].get<pid_t>();
  const std::vector<std::string> cmdline = ReadCmdlineOf(server);
  ASSERT_FALSE(cmdline.empty());
  EXPECT_EQ(cmdline[0].find("LD_PRELOAD"), std::string::npos) << cmdline[0];
  for (const char* flag : {"--path", "--log-file", "--api-key"}) {
    EXPECT_EQ(std::find(cmdline.begin(), cmdline.end(), flag), cmdline.end()) << flag;
    EXPECT_NE(serve.err().find(flag), std::string::npos) << "not said dropped: " << flag;
  }
  EXPECT_NE(serve.err().find("not started with"), std::string::npos) << serve.err();
  // The settings moetune plans are the file's.
  const auto ncmoe = std::find(cmdline.begin(), cmdline.end(), "--n-cpu-moe");
  ASSERT_NE(ncmoe, cmdline.end());
  EXPECT_EQ(*(ncmoe + 1), "0");
  // No key locks out the watcher: a conversation turn is answered and sampled.
  Conversation chat(port);
  ASSERT_TRUE(chat.Turn(20, 8).has_value()) << serve.err();
  EXPECT_TRUE(WaitFor([&] { return !Events(serve.out(), "sample").empty(); }, 30)) << serve.err();
  EXPECT_FALSE(std::filesystem::exists(chosen_log));
  InterruptAndCheck(serve, {server});
}

TEST_F(ServeTest, BadValuesAreUsageErrors) {
  TempDir tmp;
  const std::string plan = tmp.File("plan.json");
  std::ofstream(plan) << R"({"command_argv":["llama-server","-m","x.gguf","--n-cpu-moe","1"]})";
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{"--port", "0"}, "--port: 0 is outside the accepted range 1 to 65535"},
      {{"--port", "70000"}, "--port: 70000 is outside the accepted range 1 to 65535"},
      {{"--interval", "0.1"}, "--interval: 0.1 s is outside the accepted range 0.2 to 3600"},
      {{"--timeout", "0"}, "--timeout: 0 s is outside the accepted range 0.1 to 600"},
      {{"--duration", "x"}, "--duration: 'x' is not a number of seconds"},
      {{"--max-restarts", "-1"}, "--max-restarts: -1 is outside the accepted range 0 to 1000"},
      {{"--health-timeout", "0"}, "--health-timeout: 0 s is outside the accepted range 1 to"},
      {{"--threads", "0"}, "--threads: 0 is outside the accepted range 1 to 4096"},
      {{"--parallel", "0"}, "--parallel: 0 is outside the accepted range 1 to 256"},
      {{"--ubatch", "abc"}, "--ubatch: 'abc' is not a whole number (accepted range 1 to 65536)"},
      {{"--batch", "0"}, "--batch: 0 is outside the accepted range 1 to 1048576"},
      {{"--fa", "maybe"}, "--fa: maybe not in {on,off}"},
      {{"--ctk", "q3_k"}, "--ctk: 'q3_k' is not a KV cache type llama.cpp accepts"},
      {{"--ctx", "100"}, "--ctx: 100 tokens is outside the accepted range 256 to"},
      {{"--vram", "lots"}, "--vram"},
      {{"--reserve", "-1GiB"}, "--reserve"},
      {{"--host", "a b"}, "--host: 'a b' is not a host name or address"},
      {{"--rpc", "nohost"}, "--rpc"},
      {{"--vram", "1GiB,lots"}, "--vram"},
      {{"--from", plan, "--ctx", "4096"}, "--ctx cannot be used with --from"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {MoetuneBinary(), "serve", model_};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos)
        << "expected '" << c.needle << "' in " << r.err;
  }
  const auto missing = RunCommand({MoetuneBinary(), "serve", tmp.File("absent.gguf")}, 60);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("absent.gguf"), std::string::npos) << missing.err;
}

// Several device budgets: serve plans for the device of a ggml-rpc-server
// (--rpc, with --vram one size per server) and starts llama-server joined to
// it, with every layer offloaded there; a list that does not match the
// servers is refused before anything starts.
TEST_F(ServeTest, ServesAcrossTheDeviceOfAnRpcServer) {
  RpcServer rpc(*EngineDir());
  ASSERT_FALSE(rpc.endpoint().empty()) << rpc.Log();
  TempDir tmp;
  const auto mismatched = RunCommand(
      {MoetuneBinary(), "serve", model_, "--rpc", rpc.endpoint(), "--vram", "1GiB,1GiB"}, 60);
  EXPECT_EQ(mismatched.exit_code, 1) << mismatched.err;
  EXPECT_NE(mismatched.err.find("serve --rpc: --vram gives 1 more size(s) than --rpc names"),
            std::string::npos)
      << mismatched.err;
  const int port = FreePort();
  Moetune serve(Serve(port, tmp.File("server.log"), {"--rpc", rpc.endpoint()}), tmp, "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const pid_t server = Events(serve.out(), "server_started")[0]["pid"].get<pid_t>();
  const std::vector<std::string> cmdline = ReadCmdlineOf(server);
  const auto flag = [&](const std::string& f) {
    const auto it = std::find(cmdline.begin(), cmdline.end(), f);
    return it != cmdline.end() && it + 1 != cmdline.end() ? *(it + 1) : std::string("(none)");
  };
  EXPECT_EQ(flag("--rpc"), rpc.endpoint()) << ::testing::PrintToString(cmdline);
  EXPECT_EQ(flag("-ngl"), "99") << ::testing::PrintToString(cmdline);
  EXPECT_NE(serve.err().find("RPC0"), std::string::npos) << serve.err();
  EXPECT_NE(rpc.Log().find("Accepted client connection"), std::string::npos) << rpc.Log();
  Conversation chat(port);
  EXPECT_TRUE(chat.Turn(10, 4).has_value());
  InterruptAndCheck(serve, {server});
}

// Whether the engine lists a GPU device (`moetune engine --json`).
bool EngineHasGpu() {
  const auto e = RunCommand({MoetuneBinary(), "engine", "--json"}, 120);
  EXPECT_EQ(e.exit_code, 0) << e.err;
  const nlohmann::json j = nlohmann::json::parse(e.out, nullptr, false);
  return j.is_object() && j.contains("devices") && !j["devices"].empty();
}

// No VRAM figure and no profile: an engine with a GPU gets a failed command
// with the flag to add; a machine without a GPU (this one: the engine lists
// only the CPU) is a normal case and serves every layer from the host, with
// -ngl 0 and no --n-cpu-moe, and says so.
TEST_F(ServeTest, WithoutAVramFigureAMachineWithoutAGpuServesFromTheHost) {
  TempDir tmp;
  if (EngineHasGpu()) {
    const auto novram =
        RunCommand({MoetuneBinary(), "serve", model_, "--profile", tmp.File("none.json")}, 60);
    EXPECT_EQ(novram.exit_code, 1);
    EXPECT_NE(novram.err.find("--vram"), std::string::npos) << novram.err;
    return;
  }
  const int port = FreePort();
  Moetune serve({"serve", model_, "--profile", tmp.File("none.json"), "--ctx", "8192", "--ubatch",
                 "256", "--threads", "1", "--port", std::to_string(port), "--interval", "0.5",
                 "--json", "--server-log", tmp.File("server.log"), "--no-predict"},
                tmp, "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(serve.out(), "start").empty(); }, 180)) << serve.err();
  const pid_t server = Events(serve.out(), "server_started")[0]["pid"].get<pid_t>();
  const std::vector<std::string> cmdline = ReadCmdlineOf(server);
  auto ngl = std::find(cmdline.begin(), cmdline.end(), "-ngl");
  ASSERT_NE(ngl, cmdline.end());
  ASSERT_NE(ngl + 1, cmdline.end());
  EXPECT_EQ(*(ngl + 1), "0");
  EXPECT_EQ(std::find(cmdline.begin(), cmdline.end(), "--n-cpu-moe"), cmdline.end());
  EXPECT_NE(serve.err().find("no GPU"), std::string::npos) << serve.err();
  Conversation chat(port);
  EXPECT_TRUE(chat.Turn(10, 4).has_value());
  InterruptAndCheck(serve, {server});
}

// A tune made elsewhere is refused without --force and named; with --force
// it is served, and the warning stays.
TEST_F(ServeTest, ATuneMadeElsewhereIsRefusedWithoutForce) {
  TempDir tmp;
  const std::string sim = tmp.File("sim.json");
  const auto tune = RunCommand(
      {MoetuneBinary(), "tune", model_, "--ctx", "1024", "--workload", "256:64", "--engine", "sim",
       "--machine", "rtx4070-12g,ddr4-3200-2ch,8c16t", "--no-journal", "--json", "-o", sim},
      300);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const int port = FreePort();
  const std::vector<std::string> serve = {
      MoetuneBinary(),      "serve",       model_, "--from", sim, "--port",
      std::to_string(port), "--no-predict"};
  const auto refused = RunCommand(serve, 120);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("was not tuned here"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("simulated engine"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out.find("llama-server started"), std::string::npos) << refused.out;

  // The same pick as if measured on another machine: refused, the machine named.
  nlohmann::json j = nlohmann::json::parse(std::ifstream(sim));
  j["simulated"] = false;
  j["machine"] = "Another CPU (64 logical CPUs, 32 physical cores)";
  const std::string other = tmp.File("other.json");
  std::ofstream(other) << j.dump();
  std::vector<std::string> from_other = serve;
  from_other[4] = other;
  const auto elsewhere = RunCommand(from_other, 120);
  EXPECT_EQ(elsewhere.exit_code, 1) << elsewhere.err;
  EXPECT_NE(elsewhere.err.find("another machine (Another CPU"), std::string::npos) << elsewhere.err;

  // --force serves it, and says what was forced.
  std::vector<std::string> forced(serve.begin() + 1, serve.end());
  forced.insert(forced.end(),
                {"--force", "--json", "--interval", "0.5", "--server-log", tmp.File("server.log")});
  Moetune run(forced, tmp, "serve");
  ASSERT_TRUE(WaitFor([&] { return !Events(run.out(), "start").empty(); }, 180)) << run.err();
  EXPECT_NE(run.err().find("served anyway (--force)"), std::string::npos) << run.err();
  const pid_t server = Events(run.out(), "server_started")[0]["pid"].get<pid_t>();
  InterruptAndCheck(run, {server});
}

// A llama-server that cannot start ends serve with exit code 1 and its reason
// said once.
TEST_F(ServeTest, AServerThatCannotStartIsOneErrorSaidOnce) {
  TempDir tmp;
  const std::string engine = tmp.File("engine");
  std::filesystem::create_directories(engine);
  for (const auto& tool : std::filesystem::directory_iterator(*EngineDir())) {
    if (tool.path().filename() == "llama-server") continue;
    std::filesystem::create_symlink(tool.path(), engine + "/" + tool.path().filename().string());
  }
  std::ofstream(engine + "/llama-server")
      << "#!/bin/sh\necho 'cannot load the model' >&2\nexit 1\n";
  std::filesystem::permissions(engine + "/llama-server", std::filesystem::perms::owner_all);
  const auto r = RunCommand({MoetuneBinary(), "serve", model_, "--llama-dir", engine, "--vram",
                             "8GiB", "--max-restarts", "0", "--port", std::to_string(FreePort()),
                             "--no-predict", "--server-log", tmp.File("server.log")},
                            120);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("moetune serve: error: serve stops: llama-server exited before it was "
                       "ready"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("cannot load the model"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("moetune serve: moetune serve"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("exited before it was ready"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moetune::itest
