// SPDX-License-Identifier: Apache-2.0
// Uprobe recipes of the attribution family: calls of library symbols named by a recipe file
// become stages of the calling thread (tests/testprogs/lib/recipe_target.cpp, called by
// tests/testprogs/recipe_user.cpp), GPU-sync calls become the gpu component, symbols not in a
// recipe record nothing, and bad recipes are reported while the rest keeps working.
#include <fstream>

#include "attrib_fixture.h"
#include "core/record/recipe_requests.h"

namespace tailcause::testing {
namespace {

const std::string kUser = std::string(TAILCAUSE_BUILD_DIR) + "/testprogs/recipe_user";
const std::string kLib = std::string(TAILCAUSE_BUILD_DIR) + "/testprogs/librecipe_target.so";

class RecipeTest : public AttribTest {
 protected:
  void SetUp() override {
    AttribTest::SetUp();
    if (::testing::Test::IsSkipped()) return;
    config.attrib.binary = kUser;  // the SDK probes of the caller (sdk mode)
    recipe_file = disk_scratch_dir() + "/recipes.yaml";
    std::ofstream(recipe_file)
        << "# the test library's symbols\n"
           "recipes:\n"
           "  - {library: librecipe_target.so*, symbol: llama_tokenize, stage: prompt}\n"
           "  - {library: librecipe_target.so*, symbol: llama_decode, stage: generation}\n"
           "  - {library: librecipe_target.so*, symbol: faiss_search, stage: vector-search}\n"
           "  - {library: librecipe_target.so*, symbol: cuStreamSynchronize, kind: gpu_sync}\n"
           "  - {library: librecipe_target.so*, symbol: no_such_symbol, stage: tool}\n"
           "  - {library: /nonexistent/libmissing.so, symbol: f, stage: tool}\n"
           "  - {library: 'librecipe_targe?.so.2', symbol: unlisted_work, stage: tool}\n"
           "  - {library: 'librecipe_targe?.so.2', symbol: defined_nowhere, stage: tool}\n";
    config.attrib.recipe_files = {recipe_file};
    core::load_recipe_files(config.attrib, "test");
  }
  void TearDown() override {
    AttribTest::TearDown();
    if (!recipe_file.empty()) unlink(recipe_file.c_str());
  }

  // Runs recipe_user in `cgroup`, releasing it once the recipes are attached to its library.
  void run_user(const char* mode, int rounds, TestCgroup& cgroup) {
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      dup2(go[0], 0);
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      execl(kUser.c_str(), kUser.c_str(), mode, std::to_string(rounds).c_str(), nullptr);
      _exit(127);
    }
    close(go[0]);
    targets.insert(pid);
    cgroup.add(pid);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!probe->recipes().attached(kLib, "llama_decode") &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
      probe->rescan_recipes();
      if (std::string(mode) == "sdk") probe->rescan();
    }
    EXPECT_TRUE(probe->recipes().attached(kLib, "llama_decode")) << "recipes not attached";
    std::this_thread::sleep_for(200ms);
    ASSERT_EQ(write(go[1], "g", 1), 1);
    close(go[1]);
    int status = 0;
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > end) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ADD_FAILURE() << "recipe_user timed out";
        break;
      }
      probe->tick(ctx);
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    probe->consume();
  }

  std::vector<StageRecord> named(const std::string& stage) const {
    std::vector<StageRecord> out;
    for (const auto& s : stages) {
      if (s.stage == stage) out.push_back(s);
    }
    return out;
  }

  std::string recipe_file;
};

TEST_F(RecipeTest, CallsBecomeStagesWithoutTheSdk) {
  TestCgroup cgroup("recipe-plain");
  names.all();  // knows the new cgroup
  probe->start(ctx);
  // Bad recipes are reported, naming the file and line, and the rest attach.
  run_user("plain", 3, cgroup);
  const auto problems = probe->recipe_problems();
  auto mentions = [&](const std::string& what) {
    for (const auto& p : problems) {
      if (p.find(what) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(mentions("no_such_symbol")) << ::testing::PrintToString(problems);
  EXPECT_TRUE(mentions(recipe_file + ":7")) << ::testing::PrintToString(problems);
  EXPECT_TRUE(mentions("/nonexistent/libmissing.so")) << ::testing::PrintToString(problems);

  // Each round (tokenize, decode, search, unlisted) is a request: the next round's prompt
  // goes back in the pipeline; the last one ends with the process. One stage per kind each.
  const auto prompt = named("prompt"), generation = named("generation"),
             search = named("vector-search");
  ASSERT_EQ(requests.size(), 3u);
  ASSERT_EQ(prompt.size(), 3u);
  ASSERT_EQ(generation.size(), 3u);
  ASSERT_EQ(search.size(), 3u) << "recursion must yield one span per outermost call";
  // unlisted_work's recipe names another file (librecipe_targe?.so.2): the library defines the
  // symbol, so it is found there all the same.
  EXPECT_EQ(named("tool").size(), 3u);
  EXPECT_EQ(stages.size(), 12u);
  for (const auto& s : stages) {
    EXPECT_TRUE(s.flags & ATTRIB_SPAN_RECIPE);
    EXPECT_FALSE(s.id.synthetic) << "grouped into a request";
    EXPECT_EQ(s.id.tenant, cgroup.name()) << "tenant: the process's cgroup";
    EXPECT_NE(s.id.request_id & core::RecipeRequests::kRequestIdBit, 0u);
    EXPECT_EQ(s.id.trace_id.size(), 32u) << "a derived trace id";
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_TRUE(requests[i].recipe);
    EXPECT_EQ(requests[i].id.request_id, prompt[i].id.request_id);
    EXPECT_EQ(requests[i].id.request_id, generation[i].id.request_id);
    EXPECT_EQ(requests[i].start_ns, prompt[i].start_ns);
    EXPECT_GE(requests[i].end_ns, generation[i].end_ns);
  }
  for (const auto& s : prompt) {
    // Arithmetic only: running or waiting for a CPU (the machine is shared).
    EXPECT_GT(part(s, Component::on_cpu) + part(s, Component::runqueue) +
                  part(s, Component::cpu_throttled),
              0.9 * s.wall_ns())
        << describe(s);
    EXPECT_EQ(part(s, Component::gpu), 0u) << describe(s);
  }
  for (const auto& s : generation) {
    // 30 ms sleep, 50 ms "GPU" sync, and arithmetic.
    EXPECT_GE(seconds(s.wall_ns()), 0.08) << describe(s);
    EXPECT_NEAR(seconds(part(s, Component::gpu)), 0.05, 0.03) << describe(s);
    EXPECT_NEAR(seconds(part(s, Component::sleep)), 0.03, 0.02) << describe(s);
    EXPECT_GT(part(s, Component::on_cpu), 0u) << describe(s);
  }
  // Calls are counted: recursion counts every call.
  EXPECT_EQ(probe->recipe_calls(0), 3u);
  EXPECT_EQ(probe->recipe_calls(1), 3u);
  EXPECT_EQ(probe->recipe_calls(2), 18u);
  EXPECT_EQ(probe->recipe_calls(3), 3u);
  const auto m = scrape();
  EXPECT_EQ(value(m, "tailcause_recipe_calls",
                  {{"library", "librecipe_target.so*"}, {"symbol", "llama_decode"}}),
            3);
  EXPECT_GT(value(m, "tailcause_stage_time_seconds",
                  {{"tenant", cgroup.name()}, {"stage", "generation"}, {"component", "gpu"}}),
            0.1);
  // Process churn: nobody maps the library any more, so its uprobes are released.
  EXPECT_EQ(probe->recipes().attached_libraries(), 1u);
  bool released = false;
  for (int i = 0; i < 100 && !released; ++i) {
    probe->rescan_recipes();
    released = probe->recipes().attached_libraries() == 0;
    if (!released) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(released);
}

TEST_F(RecipeTest, SpansJoinTheThreadsSdkRequest) {
  TestCgroup cgroup("recipe-sdk");
  probe->start(ctx);
  run_user("sdk", 2, cgroup);
  ASSERT_EQ(named("generation").size(), 2u);
  for (const auto& s : stages) {
    EXPECT_FALSE(s.id.synthetic) << describe(s);
    EXPECT_EQ(s.id.tenant, "sdk-tenant");
    EXPECT_EQ(s.id.agent, "recipe-test");
    EXPECT_TRUE(s.id.request_id == 1000 || s.id.request_id == 1001) << s.id.request_id;
  }
}

// A call left without returning (siglongjmp out of a signal handler: the uretprobe never
// fires) must not leave the thread "nested" for good: every later call is a span again.
TEST_F(RecipeTest, AMissedReturnDoesNotStopLaterSpans) {
  TestCgroup cgroup("recipe-escape");
  names.all();
  probe->start(ctx);
  run_user("escape", 4, cgroup);
  EXPECT_EQ(probe->recipe_spans(1), 4u) << "one span per decode that returned";
  // The decodes are one request (nothing goes back in the pipeline): its generation stage
  // holds the four returned calls, none of the escaped 500 ms ones.
  const auto generation = named("generation");
  ASSERT_EQ(generation.size(), 1u);
  EXPECT_LT(seconds(generation[0].wall_ns()), 0.4) << describe(generation[0]);
  EXPECT_EQ(probe->recipe_calls(1), 8u);
  EXPECT_GE(value(scrape(), "tailcause_sdk_errors", {{"kind", "recipe_return_missed"}}), 4);
}

// Attaching while the target calls the probed symbol back to back (as when `run` or `diagnose`
// is pointed at a live server): every call entered after the attach is a span, 10 of 10
// trials, each attaching afresh (the library is released between trials).
TEST_F(RecipeTest, AttachingMidCallKeepsEveryLaterCall) {
  TestCgroup cgroup("recipe-midcall");
  names.all();
  probe->start(ctx);
  for (int trial = 0; trial < 10; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    stages.clear();
    const uint64_t calls_before = probe->recipe_calls(0);
    const uint64_t spans_before = probe->recipe_spans(0);
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      close(out[0]);
      dup2(out[1], 1);
      execl(kUser.c_str(), kUser.c_str(), "loop", "600", nullptr);
      _exit(127);
    }
    close(out[1]);
    targets.insert(pid);
    cgroup.add(pid);
    char r = 0;
    ASSERT_EQ(read(out[0], &r, 1), 1);  // it is calling llama_tokenize now
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!probe->recipes().attached(kLib, "llama_tokenize") &&
           std::chrono::steady_clock::now() < deadline) {
      probe->rescan_recipes();
      if (!probe->recipes().attached(kLib, "llama_tokenize")) std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(probe->recipes().attached(kLib, "llama_tokenize"));
    if (trial == 0) {
      // While the target runs: each recipe's state, in the attacher and on /metrics.
      using core::RecipeState;
      EXPECT_EQ(probe->recipes().status(0).state, RecipeState::attached);
      EXPECT_EQ(probe->recipes().status(0).attached_files, 1u);
      EXPECT_EQ(probe->recipes().status(4).state, RecipeState::symbol_missing);
      EXPECT_NE(probe->recipes().status(4).detail.find("no such symbol"), std::string::npos);
      EXPECT_EQ(probe->recipes().status(5).state, RecipeState::library_unmapped);
      // No file matches librecipe_targe?.so.2, but the library defines unlisted_work: attached
      // there, and said where.
      EXPECT_EQ(probe->recipes().status(6).state, RecipeState::attached);
      EXPECT_EQ(probe->recipes().status(6).files, std::vector<std::string>{kLib});
      // A file that looks like the runtime mapped while no file matches the glob or defines
      // the symbol: said, not silently missed.
      EXPECT_EQ(probe->recipes().status(7).state, RecipeState::library_mismatch);
      EXPECT_NE(probe->recipes().status(7).detail.find(kLib), std::string::npos)
          << probe->recipes().status(7).detail;
      const auto m = scrape();
      const std::string lib = "librecipe_target.so*";
      EXPECT_EQ(
          value(m, "tailcause_recipe_status",
                {{"library", lib}, {"symbol", "no_such_symbol"}, {"state", "symbol_missing"}}),
          1);
      EXPECT_EQ(value(m, "tailcause_recipe_status",
                      {{"library", lib}, {"symbol", "llama_tokenize"}, {"state", "attached"}}),
                1);
      EXPECT_EQ(value(m, "tailcause_recipe_status",
                      {{"library", "librecipe_targe?.so.2"},
                       {"symbol", "unlisted_work"},
                       {"state", "attached"}}),
                1);
      EXPECT_EQ(value(m, "tailcause_recipe_status",
                      {{"library", "librecipe_targe?.so.2"},
                       {"symbol", "defined_nowhere"},
                       {"state", "library_mismatch"}}),
                1);
      EXPECT_EQ(value(m, "tailcause_recipe_attached_files",
                      {{"library", lib}, {"symbol", "llama_decode"}}),
                1);
    }
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      probe->tick(ctx);
      std::this_thread::sleep_for(10ms);
    }
    std::string printed;
    char buf[64];
    for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) printed.append(buf, n);
    close(out[0]);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << printed;
    probe->consume();
    const uint64_t entered = probe->recipe_calls(0) - calls_before;
    EXPECT_GT(entered, 0u) << printed;
    EXPECT_EQ(probe->recipe_spans(0) - spans_before, entered)
        << "tailcause_recipe_spans; calls entered after the attach: " << entered
        << ", the target's own count:" << printed;
    // Back-to-back calls of one kind: one request, ended with the process.
    EXPECT_EQ(named("prompt").size(), 1u);
    // Released before the next trial attaches afresh.
    for (int i = 0; i < 100 && probe->recipes().attached_libraries() > 0; ++i) {
      probe->rescan_recipes();
      std::this_thread::sleep_for(20ms);
    }
  }
  EXPECT_EQ(value(scrape(), "tailcause_sdk_errors", {{"kind", "recipe_return_missed"}}), 0);
}

}  // namespace
}  // namespace tailcause::testing
