#include "runtime/collectives/ring.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/framework/tensor_util.h"
#include "core/framework/types.h"
#include "core/platform/timer.h"
#include "glog/logging.h"

namespace shardflow {
namespace {

// ---- element-wise reduction on raw memory ---------------------------------------------------

// Blocks of a fixed length with restrict-qualified pointers: GCC vectorizes these at -O2 (its
// cheap cost model will not version an open loop of possibly aliasing pointers), which made the
// reduction of a 64 MiB all-reduce about twice as fast as the scalar loop it compiled before.
constexpr int64_t kReduceBlock = 16;

template <typename T, typename F>
inline void ReduceBlock(T* __restrict dst, const T* __restrict a, const T* __restrict b, F f) {
  for (int64_t j = 0; j < kReduceBlock; ++j) dst[j] = f(a[j], b[j]);
}
template <typename T, typename F>
inline void ReduceBlockInPlace(T* __restrict dst, const T* __restrict b, F f) {
  for (int64_t j = 0; j < kReduceBlock; ++j) dst[j] = f(dst[j], b[j]);
}

// dst[i] = f(a[i], b[i]) for n elements; dst may be a (in place), else none overlap.
template <typename T, typename F>
void Elementwise(T* dst, const T* a, const T* b, int64_t n, F f) {
  int64_t i = 0;
  if (dst == a) {
    for (; i + kReduceBlock <= n; i += kReduceBlock) ReduceBlockInPlace(dst + i, b + i, f);
  } else {
    for (; i + kReduceBlock <= n; i += kReduceBlock) ReduceBlock(dst + i, a + i, b + i, f);
  }
  for (; i < n; ++i) dst[i] = f(a[i], b[i]);
}

// dst[i] = a[i] (op) b[i], computed in Acc; dst may be a (in place).
template <typename T, typename Acc>
void ReduceTyped(ReductionOp op, T* dst, const T* a, const T* b, int64_t n) {
  switch (op) {
    case ReductionOp::kSum:
    case ReductionOp::kMean:
      return Elementwise(dst, a, b, n,
                         [](T x, T y) { return T(static_cast<Acc>(x) + static_cast<Acc>(y)); });
    case ReductionOp::kProd:
      return Elementwise(dst, a, b, n,
                         [](T x, T y) { return T(static_cast<Acc>(x) * static_cast<Acc>(y)); });
    case ReductionOp::kMin:
      return Elementwise(
          dst, a, b, n, [](T x, T y) { return static_cast<Acc>(y) < static_cast<Acc>(x) ? y : x; });
    case ReductionOp::kMax:
      return Elementwise(
          dst, a, b, n, [](T x, T y) { return static_cast<Acc>(y) > static_cast<Acc>(x) ? y : x; });
  }
}

template <typename T, typename Acc>
void DivideTyped(T* data, int64_t n, int divisor) {
  const Acc d = static_cast<Acc>(divisor);
  int64_t i = 0;
  for (; i + kReduceBlock <= n; i += kReduceBlock) {  // in blocks, vectorized as above
    T* __restrict block = data + i;
    for (int64_t j = 0; j < kReduceBlock; ++j) block[j] = T(static_cast<Acc>(block[j]) / d);
  }
  for (; i < n; ++i) data[i] = T(static_cast<Acc>(data[i]) / d);
}

// half and bfloat16 reduce in float, a chunk at a time: converted to float (tensor_util.h's
// array conversions, vectorized), reduced and divided as float, rounded back once. Element by
// element, the conversions made a half-precision all-reduce slower than a float one of twice the
// bytes.
constexpr int64_t kNarrowChunk = 1024;
inline void ToFloat(const half* in, float* out, int64_t n) { HalfToFloat(in, out, n); }
inline void ToFloat(const bfloat16* in, float* out, int64_t n) { Bfloat16ToFloat(in, out, n); }
inline void FromFloat(const float* in, half* out, int64_t n) { FloatToHalf(in, out, n); }
inline void FromFloat(const float* in, bfloat16* out, int64_t n) { FloatToBfloat16(in, out, n); }

template <typename T>
void ReduceNarrow(ReductionOp op, T* dst, const T* a, const T* b, int64_t n) {
  float fa[kNarrowChunk], fb[kNarrowChunk];
  for (int64_t i = 0; i < n; i += kNarrowChunk) {
    const int64_t m = std::min(kNarrowChunk, n - i);
    ToFloat(a + i, fa, m);
    ToFloat(b + i, fb, m);
    ReduceTyped<float, float>(op, fa, fa, fb, m);
    FromFloat(fa, dst + i, m);
  }
}

template <typename T>
void DivideNarrow(T* data, int64_t n, int divisor) {
  float f[kNarrowChunk];
  for (int64_t i = 0; i < n; i += kNarrowChunk) {
    const int64_t m = std::min(kNarrowChunk, n - i);
    ToFloat(data + i, f, m);
    DivideTyped<float, float>(f, m, divisor);
    FromFloat(f, data + i, m);
  }
}

// dst[i] = a[i] (op) b[i] for n elements of `dtype` (dst may be a).
absl::Status Reduce(DataType dtype, ReductionOp op, void* dst, const void* a, const void* b,
                    int64_t n) {
  switch (dtype) {
#define SHARDFLOW_REDUCE_CASE(DTYPE, T, ACC)                                \
  case DTYPE:                                                               \
    ReduceTyped<T, ACC>(op, static_cast<T*>(dst), static_cast<const T*>(a), \
                        static_cast<const T*>(b), n);                       \
    return absl::OkStatus();
    SHARDFLOW_REDUCE_CASE(DT_FLOAT, float, float)
    SHARDFLOW_REDUCE_CASE(DT_DOUBLE, double, double)
    SHARDFLOW_REDUCE_CASE(DT_INT32, int32_t, int32_t)
    SHARDFLOW_REDUCE_CASE(DT_INT64, int64_t, int64_t)
#undef SHARDFLOW_REDUCE_CASE
    case DT_HALF:
      ReduceNarrow(op, static_cast<half*>(dst), static_cast<const half*>(a),
                   static_cast<const half*>(b), n);
      return absl::OkStatus();
    case DT_BFLOAT16:
      ReduceNarrow(op, static_cast<bfloat16*>(dst), static_cast<const bfloat16*>(a),
                   static_cast<const bfloat16*>(b), n);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("all-reduce of ", DataTypeString(dtype),
                       " is not supported (float, double, half, bfloat16, int32, int64)"));
  }
}

// OK for the dtypes Reduce takes (n = 0 touches no memory).
absl::Status CheckReducible(DataType dtype) {
  return Reduce(dtype, ReductionOp::kSum, nullptr, nullptr, nullptr, 0);
}

void Divide(DataType dtype, void* data, int64_t n, int divisor) {
  switch (dtype) {
    case DT_FLOAT:
      return DivideTyped<float, float>(static_cast<float*>(data), n, divisor);
    case DT_DOUBLE:
      return DivideTyped<double, double>(static_cast<double*>(data), n, divisor);
    case DT_HALF:
      return DivideNarrow(static_cast<half*>(data), n, divisor);
    case DT_BFLOAT16:
      return DivideNarrow(static_cast<bfloat16*>(data), n, divisor);
    case DT_INT32:
      return DivideTyped<int32_t, int32_t>(static_cast<int32_t*>(data), n, divisor);
    case DT_INT64:
      return DivideTyped<int64_t, int64_t>(static_cast<int64_t*>(data), n, divisor);
    default:
      return;
  }
}

std::string Key(const CollectiveParams& p, int from, int to, const std::string& what) {
  return RendezvousKey(p.devices[from], p.incarnations[from], p.devices[to],
                       absl::StrCat("collective:", p.group_key, ":", p.instance_key, ":", what));
}

// A tensor of `count` elements at `offset` in `whole`'s buffer, sharing it (kept alive).
Tensor View(const Tensor& whole, int64_t offset, int64_t count) {
  char* base = static_cast<char*>(whole.raw_data()) + offset * DataTypeSize(whole.dtype());
  return Tensor::WrapExternal(whole.dtype(), TensorShape({count}), base, [keep = whole] {});
}

// An error unless `output` can hold the result for `input` (its dtype and element count).
absl::Status CheckOutput(const Tensor& input, const Tensor& output) {
  if (!output.IsInitialized() || output.dtype() != input.dtype() ||
      output.NumElements() != input.NumElements()) {
    return absl::InternalError(absl::StrCat("the output (", output.DebugString(0),
                                            ") does not match the input (", input.DebugString(0),
                                            ")"));
  }
  return absl::OkStatus();
}

// What the lanes of one collective call share until the last one is done.
struct CallState {
  CallState(const CollectiveParams& params, Rendezvous* rendezvous, int pending,
            CollectiveExecutor::DoneCallback done, std::string what,
            absl::Duration straggler_warning)
      : params(params),
        rendezvous(rendezvous),
        pending(pending),
        done(std::move(done)),
        what(std::move(what)),
        straggler_warning(straggler_warning) {}

  // Warns (once) if the data of member `from` has not come after straggler_warning; the
  // returned id is cancelled by Received when it comes.
  Timer::Id Watch(int from) {
    if (straggler_warning <= absl::ZeroDuration()) return 0;
    return StragglerTimer().Schedule(
        absl::Now() + straggler_warning,
        [what = what, wait = straggler_warning, device = params.devices[from], from] {
          LOG(WARNING) << what << ": waited " << absl::FormatDuration(wait) << " for member "
                       << from << " (" << device
                       << "); its task is missing, stuck or slow (the step goes on waiting "
                          "until its deadline or an error)";
        });
  }
  static void Received(Timer::Id id) {
    if (id != 0) StragglerTimer().Cancel(id);
  }
  static Timer& StragglerTimer() {
    static Timer* timer = new Timer("collective stragglers");
    return *timer;
  }

  // A lane (or peer) is done; the last one calls `done`. The first error aborts the step's
  // rendezvous, so the other lanes (and every member waiting on this one) stop at once.
  void Finish(const absl::Status& s) {
    if (!s.ok()) {
      bool first = false;
      {
        absl::MutexLock lock(&mu);
        if (status.ok()) {
          status = absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
          first = true;
        }
      }
      if (first) rendezvous->StartAbort(FirstError());
    }
    if (pending.fetch_sub(1) != 1) return;
    done(FirstError());
  }
  absl::Status FirstError() {
    absl::MutexLock lock(&mu);
    return status;
  }
  bool failed() {
    absl::MutexLock lock(&mu);
    return !status.ok();
  }

  const CollectiveParams params;
  Rendezvous* const rendezvous;
  std::atomic<int> pending;
  CollectiveExecutor::DoneCallback done;
  const std::string what;
  const absl::Duration straggler_warning;
  absl::Mutex mu;
  absl::Status status ABSL_GUARDED_BY(mu);
};

// ---- ring all-reduce (Note [Ring all-reduce] in ring.h) --------------------------------------

struct AllReduceState : CallState {
  using CallState::CallState;
  Tensor in;   // the caller's input: read, never written (it may be a variable's buffer)
  Tensor out;  // shares the caller's output buffer (the input's, when the kernel forwarded it)
  int64_t elements = 0;
  int64_t chunk_elements = 1;  // per lane and segment
  // Segment i is [SegmentStart(i), SegmentStart(i + 1)).
  int64_t SegmentStart(int i) const {
    const int n = params.group_size;
    return static_cast<int64_t>((static_cast<__int128>(elements) * i) / n);
  }
  // Lane `lane`'s piece of segment `seg`: [offset, offset + count).
  void Piece(int seg, int lane, int64_t* offset, int64_t* count) const {
    const int64_t begin = SegmentStart(seg), end = SegmentStart(seg + 1);
    const int64_t lo = std::min(end, begin + lane * chunk_elements);
    const int64_t hi = std::min(end, lo + chunk_elements);
    *offset = lo;
    *count = hi - lo;
  }
};

int Mod(int a, int n) { return ((a % n) + n) % n; }

void RunLaneStep(const std::shared_ptr<AllReduceState>& state, int lane, int step) {
  const CollectiveParams& p = state->params;
  const int n = p.group_size, r = p.rank;
  if (step == 2 * (n - 1) || state->failed()) {
    state->Finish(absl::OkStatus());
    return;
  }
  const bool reduce_scatter = step < n - 1;
  const int s = reduce_scatter ? step : step - (n - 1);
  const int send_seg = reduce_scatter ? Mod(r - s, n) : Mod(r + 1 - s, n);
  const int recv_seg = reduce_scatter ? Mod(r - s - 1, n) : Mod(r - s, n);
  int64_t send_offset, send_count, recv_offset, recv_count;
  state->Piece(send_seg, lane, &send_offset, &send_count);
  state->Piece(recv_seg, lane, &recv_offset, &recv_count);
  const std::string what = absl::StrCat("r", lane, ":", step);
  // Step 0 sends this member's own values, straight from the input; later steps send what it
  // reduced or received into the output (Note [Ring all-reduce]: no copy of the input).
  absl::Status sent =
      state->rendezvous->Send(Key(p, r, Mod(r + 1, n), what),
                              View(step == 0 ? state->in : state->out, send_offset, send_count));
  if (!sent.ok()) {
    state->Finish(sent);
    return;
  }
  const int from = Mod(r - 1, n);
  const Timer::Id watch = state->Watch(from);
  // The all-gather's chunks belong in the output as they are: a transport that copies them off
  // the network anyway writes them there (no second copy, no temporary).
  RecvArgs args;
  if (!reduce_scatter && recv_count > 0)
    args.destination = View(state->out, recv_offset, recv_count);
  state->rendezvous->RecvAsync(
      Key(p, from, r, what), args,
      [state, lane, step, reduce_scatter, recv_offset, recv_count, from, watch](
          const absl::Status& s, const Tensor& value) {
        CallState::Received(watch);
        if (!s.ok()) {
          state->Finish(s);
          return;
        }
        const CollectiveParams& p = state->params;
        if (value.dtype() != state->out.dtype() || value.NumElements() != recv_count) {
          state->Finish(absl::InvalidArgumentError(
              absl::StrCat("member ", from, " (", p.devices[from], ") sent ", value.NumElements(),
                           " ", DataTypeString(value.dtype()), " elements where this member (rank ",
                           p.rank, ") has ", recv_count, " ", DataTypeString(state->out.dtype()),
                           ": every member's input must have the same dtype and shape")));
          return;
        }
        const int64_t at = recv_offset * DataTypeSize(value.dtype());
        char* dst = static_cast<char*>(state->out.raw_data()) + at;
        if (reduce_scatter) {
          // Each reduce-scatter step receives a segment this member has not touched yet: the
          // peer's partial sum plus this member's input is the new partial sum.
          const char* mine = static_cast<const char*>(state->in.raw_data()) + at;
          absl::Status reduced =
              Reduce(value.dtype(), p.reduction, dst, mine, value.raw_data(), recv_count);
          if (!reduced.ok()) {
            state->Finish(reduced);
            return;
          }
          // The last reduce-scatter step completes this member's segment: a mean divides it
          // once here, before the all-gather hands it on.
          if (step == p.group_size - 2 && p.reduction == ReductionOp::kMean) {
            Divide(value.dtype(), dst, recv_count, p.group_size);
          }
        } else if (recv_count > 0 && value.raw_data() != dst) {
          std::memcpy(dst, value.raw_data(), value.TotalBytes());
        }
        RunLaneStep(state, lane, step + 1);
      });
}

}  // namespace

std::string DescribeCollective(const char* what, const CollectiveParams& params) {
  return absl::StrCat(what, " group ", params.group_key, " instance ", params.instance_key, " on ",
                      params.device);
}

RingCollectiveExecutor::RingCollectiveExecutor(Rendezvous* rendezvous, RingOptions options)
    : rendezvous_(rendezvous), options_(options) {}

void RingCollectiveExecutor::StartAbort(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (abort_status_.ok()) abort_status_ = status.ok() ? absl::CancelledError("aborted") : status;
}

absl::Status RingCollectiveExecutor::CheckCall(const CollectiveParams& p) const {
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) return abort_status_;
  }
  const int n = p.group_size;
  if (n < 1 || p.rank < 0 || p.rank >= n || static_cast<int>(p.devices.size()) != n ||
      static_cast<int>(p.incarnations.size()) != n || p.devices[p.rank] != p.device) {
    return absl::InternalError(
        absl::StrCat("the group is not resolved for this member: group_size ", n, ", rank ", p.rank,
                     ", ", p.devices.size(), " devices, ", p.incarnations.size(), " incarnations"));
  }
  return absl::OkStatus();
}

void RingCollectiveExecutor::AllReduceAsync(const CollectiveParams& params, const Tensor& input,
                                            Tensor* output, DoneCallback done) {
  const std::string what = DescribeCollective("CollectiveReduce", params);
  absl::Status s = CheckCall(params);
  if (s.ok()) s = CheckOutput(input, *output);
  if (s.ok() && params.group_size == 1) {
    // Nothing to exchange; a mean of one is the value.
    if (!output->SharesBufferWith(input) && input.TotalBytes() > 0)
      std::memcpy(output->raw_data(), input.raw_data(), input.TotalBytes());
    done(absl::OkStatus());
    return;
  }
  if (s.ok() && input.NumElements() > 0) {
    // Refuse unsupported dtypes before anything is sent (the peers would wait on this member).
    s = CheckReducible(input.dtype());
  }
  if (!s.ok()) {
    done(absl::Status(s.code(), absl::StrCat(what, ": ", s.message())));
    return;
  }
  const int n = params.group_size;
  const int64_t elem = std::max<int64_t>(1, DataTypeSize(input.dtype()));
  const int64_t chunk_elements = std::max<int64_t>(1, options_.chunk_bytes / elem);
  const int64_t largest_segment = (input.NumElements() + n - 1) / n;
  const int lanes = static_cast<int>(
      std::max<int64_t>(1, (largest_segment + chunk_elements - 1) / chunk_elements));
  auto state = std::make_shared<AllReduceState>(params, rendezvous_, lanes, std::move(done), what,
                                                options_.straggler_warning);
  state->in = input;
  state->out = *output;
  state->elements = input.NumElements();
  state->chunk_elements = chunk_elements;
  for (int lane = 0; lane < lanes; ++lane) RunLaneStep(state, lane, 0);
}

void RingCollectiveExecutor::BroadcastAsync(const CollectiveParams& params, const Tensor& input,
                                            Tensor* output, DoneCallback done) {
  const std::string what = DescribeCollective(
      params.rank == params.source_rank ? "CollectiveBcastSend" : "CollectiveBcastRecv", params);
  absl::Status s = CheckCall(params);
  if (s.ok() && (params.source_rank < 0 || params.source_rank >= params.group_size)) {
    s = absl::InternalError(absl::StrCat("source rank ", params.source_rank, " is not a member"));
  }
  if (!s.ok()) {
    done(absl::Status(s.code(), absl::StrCat(what, ": ", s.message())));
    return;
  }
  const int n = params.group_size, src = params.source_rank;
  if (params.rank == src) {
    *output = input;
    for (int peer = 0; peer < n && s.ok(); ++peer) {
      if (peer != src) s = rendezvous_->Send(Key(params, src, peer, "b"), input);
    }
    if (!s.ok()) {
      s = absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
      rendezvous_->StartAbort(s);
    }
    done(s);
    return;
  }
  auto state = std::make_shared<CallState>(params, rendezvous_, 1, std::move(done), what,
                                           options_.straggler_warning);
  const DataType want = output->IsInitialized() ? output->dtype() : DT_INVALID;
  const TensorShape want_shape = output->shape();
  const Timer::Id watch = state->Watch(src);
  rendezvous_->RecvAsync(
      Key(params, src, params.rank, "b"),
      [state, output, want, want_shape, src, watch](const absl::Status& s, const Tensor& value) {
        CallState::Received(watch);
        if (!s.ok()) {
          state->Finish(s);
          return;
        }
        if (want != DT_INVALID && (value.dtype() != want || value.shape() != want_shape)) {
          state->Finish(absl::InvalidArgumentError(
              absl::StrCat("the source (rank ", src, ", ", state->params.devices[src], ") sent ",
                           value.DebugString(0), " where this member expects ",
                           DataTypeString(want), " ", want_shape.DebugString())));
          return;
        }
        *output = value;
        state->Finish(absl::OkStatus());
      });
}

void RingCollectiveExecutor::AllGatherAsync(const CollectiveParams& params, const Tensor& input,
                                            Tensor* output, DoneCallback done) {
  const std::string what = DescribeCollective("CollectiveGather", params);
  absl::Status s = CheckCall(params);
  const int n = params.group_size;
  if (s.ok() && (!output->IsInitialized() || output->dtype() != input.dtype() ||
                 output->NumElements() != input.NumElements() * n)) {
    s = absl::InternalError(absl::StrCat("the output (", output->DebugString(0), ") is not ", n,
                                         " times the input (", input.DebugString(0), ")"));
  }
  if (!s.ok()) {
    done(absl::Status(s.code(), absl::StrCat(what, ": ", s.message())));
    return;
  }
  const int r = params.rank;
  const size_t bytes = input.TotalBytes();
  char* base = static_cast<char*>(output->raw_data());
  if (bytes > 0) std::memcpy(base + r * bytes, input.raw_data(), bytes);
  for (int peer = 0; peer < n && s.ok(); ++peer) {
    if (peer != r) s = rendezvous_->Send(Key(params, r, peer, "g"), input);
  }
  auto state = std::make_shared<CallState>(params, rendezvous_, n, std::move(done), what,
                                           options_.straggler_warning);
  state->Finish(s);  // this member's own part
  for (int peer = 0; peer < n; ++peer) {
    if (peer == r) continue;
    const Timer::Id watch = state->Watch(peer);
    rendezvous_->RecvAsync(
        Key(params, peer, r, "g"),
        [state, base, bytes, peer, watch, shape = input.shape(), dtype = input.dtype()](
            const absl::Status& s, const Tensor& value) {
          CallState::Received(watch);
          if (!s.ok()) {
            state->Finish(s);
            return;
          }
          if (value.dtype() != dtype || value.shape() != shape) {
            state->Finish(absl::InvalidArgumentError(absl::StrCat(
                "member ", peer, " (", state->params.devices[peer], ") sent ", value.DebugString(0),
                " where this member's input is ", DataTypeString(dtype), " ", shape.DebugString(),
                ": every member's input must have one shape")));
            return;
          }
          if (bytes > 0 && !state->failed())
            std::memcpy(base + peer * bytes, value.raw_data(), bytes);
          state->Finish(absl::OkStatus());
        });
  }
}

}  // namespace shardflow
