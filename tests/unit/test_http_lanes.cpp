// SPDX-License-Identifier: Apache-2.0
// The endpoint's lanes: scrapes that arrive together share one collection; the API lane takes
// so many jobs and refuses the next; both drop what waits when stopped.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "export/http/scrape_lane.h"
#include "export/http/work_lane.h"

namespace tailcause::exporter::http {
namespace {

using namespace std::chrono_literals;

TEST(ScrapeLane, ScrapesThatArriveDuringACollectionShareTheNext) {
  std::atomic<int> collections{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_started;
  ScrapeLane lane([&](core::MetricSet& set) {
    if (collections.fetch_add(1) == 0) {
      first_started.set_value();
      released.wait();  // the first collection is slow
    }
    set.add("tailcause_test", core::MetricType::Gauge, "A value.", {}, collections.load());
  });
  std::mutex mu;
  std::vector<std::string> bodies;
  std::atomic<int> done{0};
  auto record = [&](std::string body) {
    std::lock_guard lock(mu);
    bodies.push_back(std::move(body));
    ++done;
  };
  lane.submit(Format::PrometheusText, record);
  first_started.get_future().wait();
  for (int i = 0; i < 20; ++i) {
    lane.submit(i % 2 ? Format::OpenMetrics : Format::PrometheusText, record);
  }
  release.set_value();
  while (done.load() < 21) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(collections.load(), 2);  // one for the first, one shared by the other twenty
  std::lock_guard lock(mu);
  EXPECT_NE(bodies.back().find("tailcause_test"), std::string::npos);
}

TEST(WorkLane, TakesMaxJobsAndRefusesTheNext) {
  WorkLane lane(3, 10);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(lane.submit([&] {
      released.wait();
      ++ran;
    }));
  }
  EXPECT_FALSE(lane.submit([&] { ++ran; }));  // one running, two waiting: full
  release.set_value();
  while (ran.load() < 3) std::this_thread::sleep_for(1ms);
  // Room again once the jobs are done.
  std::promise<void> ok;
  ASSERT_TRUE(lane.submit([&] { ok.set_value(); }));
  EXPECT_EQ(ok.get_future().wait_for(10s), std::future_status::ready);
}

TEST(WorkLane, RunsAtTheNiceValueItWasGiven) {
  WorkLane lane(1, 10);
  std::promise<int> nice;
  ASSERT_TRUE(lane.submit([&] {
    errno = 0;
    nice.set_value(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())));
  }));
  EXPECT_EQ(nice.get_future().get(), 10);
}

TEST(WorkLane, StopDropsWhatHasNotStarted) {
  auto lane = std::make_unique<WorkLane>(100000, 0);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  std::atomic<int> ran{0};
  ASSERT_TRUE(lane->submit([&] {
    started.set_value();
    released.wait();
    ++ran;
  }));
  started.get_future().wait();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(lane->submit([&] { ++ran; }));
  std::thread stopper([&] { lane->stop(); });
  // Once stopping, the lane takes nothing: then the running job may end.
  while (lane->submit([] {})) std::this_thread::sleep_for(1ms);
  release.set_value();
  stopper.join();
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace tailcause::exporter::http
