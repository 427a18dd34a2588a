#include "tools/shardflow/train_report.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace shardflow {

std::string Duration(double seconds) {
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  return s >= 3600 ? absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
                   : absl::StrFormat("%d:%02d", s / 60, s % 60);
}

ProgressBar::ProgressBar(int64_t epochs, int64_t steps_per_epoch, bool enabled)
    : epochs_(epochs), steps_(steps_per_epoch), enabled_(enabled), tty_(isatty(STDOUT_FILENO)) {}

void ProgressBar::Update(int64_t epoch, int64_t step, double loss, double examples_per_sec,
                         double seconds_left) {
  if (!enabled_) return;
  bool last = step + 1 == steps_;
  int64_t tenth = std::max<int64_t>(1, steps_ / 10);
  if (!tty_ && !last && (step + 1) % tenth != 0) return;
  constexpr int kWidth = 24;
  int filled = static_cast<int>(kWidth * (step + 1) / steps_);
  std::string bar(filled, '=');
  if (filled < kWidth) bar += '>' + std::string(kWidth - filled - 1, '.');
  std::printf("%sepoch %lld/%lld [%s] step %lld/%lld  loss %.4f  %.0f ex/s  ETA %s%s",
              tty_ ? "\r" : "", static_cast<long long>(epoch + 1), static_cast<long long>(epochs_),
              bar.c_str(), static_cast<long long>(step + 1), static_cast<long long>(steps_), loss,
              examples_per_sec, Duration(seconds_left).c_str(), tty_ && !last ? "  " : "\n");
  std::fflush(stdout);
}

void PrintOpProfile(const RunMetadata& md, int64_t step) {
  std::map<std::string, std::pair<int64_t, int>> by_op;  // op -> (total µs, count)
  int64_t first = INT64_MAX, last = 0, busy = 0;
  for (const auto& dev : md.step_stats().dev_stats()) {
    for (const auto& n : dev.node_stats()) {
      auto& e = by_op[n.op()];
      // GPU kernels: their time on the device's stream (the host only enqueued them).
      const int64_t took = n.device_end_micros() > 0
                               ? n.device_end_micros() - n.device_start_micros()
                               : n.end_micros() - n.start_micros();
      e.first += took;
      e.second += 1;
      busy += took;
      first = std::min(first, n.start_micros());
      last = std::max(last, n.end_micros());
    }
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int>>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::printf(
      "\nprofile of step %lld: %.2f ms wall, %.2f ms in kernels (GPU kernels: time on "
      "the GPU)\n%-36s %10s %6s %7s\n",
      static_cast<long long>(step), (last - first) / 1000.0, busy / 1000.0, "op", "total ms",
      "count", "share");
  for (const auto& [op, e] : rows) {
    std::printf("%-36s %10.2f %6d %6.1f%%\n", op.c_str(), e.first / 1000.0, e.second,
                100.0 * e.first / std::max<int64_t>(busy, 1));
  }
}

namespace {

using Interval = std::pair<int64_t, int64_t>;

// Sorted, disjoint.
std::vector<Interval> Union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second) {
      out.back().second = std::max(out.back().second, i.second);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

int64_t Length(const std::vector<Interval>& v) {
  int64_t n = 0;
  for (const Interval& i : v) n += i.second - i.first;
  return n;
}

// Length of `a` (disjoint) not covered by `b` (disjoint, sorted).
int64_t LengthOutside(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  int64_t n = 0;
  size_t j = 0;
  for (const Interval& i : a) {
    int64_t at = i.first;
    while (j < b.size() && b[j].second <= at) ++j;
    for (size_t k = j; k < b.size() && b[k].first < i.second; ++k) {
      if (b[k].first > at) n += b[k].first - at;
      at = std::max(at, b[k].second);
    }
    if (at < i.second) n += i.second - at;
  }
  return n;
}

bool IsCommunication(const std::string& op) {
  return op == "_Send" || op == "_Recv" || op == "_HostSend" || op == "_HostRecv" ||
         op.rfind("Collective", 0) == 0;
}

bool IsWaiting(const std::string& op) {
  return op == "QueueDequeueV2" || op == "ResourceAccumulatorTakeGradient";
}

}  // namespace

StepSplit SplitStep(const RunMetadata& md, double wall_ms, const std::string& task) {
  std::vector<Interval> compute, communication;
  for (const auto& dev : md.step_stats().dev_stats()) {
    if (!task.empty() && dev.device().rfind(task + "/", 0) != 0) continue;
    for (const auto& n : dev.node_stats()) {
      Interval i{n.start_micros(), n.end_micros()};
      if (IsWaiting(n.op())) continue;
      if (!IsCommunication(n.op())) {
        compute.push_back(i);
        continue;
      }
      // A _Send/_Recv between devices of one task moves nothing over the network; one
      // between tasks has a timeline label naming the peer.
      const bool local_pair = n.op().rfind("Collective", 0) != 0 && n.timeline_label().empty();
      if (!local_pair) communication.push_back(i);
    }
  }
  std::vector<Interval> c = Union(std::move(compute));
  std::vector<Interval> m = Union(std::move(communication));
  StepSplit s;
  s.wall_ms = wall_ms;
  s.compute_ms = std::min(wall_ms, Length(c) / 1000.0);
  s.communication_ms = std::min(wall_ms - s.compute_ms, LengthOutside(m, c) / 1000.0);
  s.waiting_ms = std::max(0.0, wall_ms - s.compute_ms - s.communication_ms);
  return s;
}

void PrintStepSplits(std::vector<StepSplit> splits) {
  splits.erase(splits.begin(), splits.begin() + static_cast<std::ptrdiff_t>(splits.size() / 10));
  auto median = [&](double StepSplit::*field) {
    std::vector<double> v;
    for (const StepSplit& s : splits) v.push_back(s.*field);
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  absl::PrintF(
      "step time (median of %d traced steps): %.2f ms = compute %.2f + communication %.2f + "
      "waiting %.2f ms\n",
      splits.size(), median(&StepSplit::wall_ms), median(&StepSplit::compute_ms),
      median(&StepSplit::communication_ms), median(&StepSplit::waiting_ms));
}

}  // namespace shardflow
