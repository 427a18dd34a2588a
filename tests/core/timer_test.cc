#include "core/platform/timer.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

TEST(TimerTest, RunsCallbacksInTimeOrder) {
  Timer timer("test");
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification last;
  const absl::Time now = absl::Now();
  timer.Schedule(now + absl::Milliseconds(60), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(3);
    last.Notify();
  });
  timer.Schedule(now + absl::Milliseconds(20), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(2);
  });
  timer.Schedule(now - absl::Seconds(1), [&] {  // already due: runs at once
    absl::MutexLock lock(&mu);
    order.push_back(1);
  });
  ASSERT_TRUE(last.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_GE(absl::Now() - now, absl::Milliseconds(60));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(TimerTest, CancelledCallbacksNeverRun) {
  Timer timer("test");
  std::atomic<int> ran{0};
  Timer::Id id = timer.Schedule(absl::Now() + absl::Milliseconds(50), [&] { ran++; });
  EXPECT_EQ(timer.pending(), 1);
  EXPECT_TRUE(timer.Cancel(id));
  EXPECT_FALSE(timer.Cancel(id));
  EXPECT_EQ(timer.pending(), 0);
  absl::Notification done;
  Timer::Id later = timer.Schedule(absl::Now() + absl::Milliseconds(100), [&] { done.Notify(); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_FALSE(timer.Cancel(later));  // it ran
  EXPECT_EQ(ran.load(), 0);
}

TEST(TimerTest, DestroyingDropsPendingCallbacks) {
  std::atomic<int> ran{0};
  {
    Timer timer("test");
    timer.Schedule(absl::Now() + absl::Hours(1), [&] { ran++; });
  }
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace
}  // namespace shardflow
