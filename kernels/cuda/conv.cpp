// cuDNN behind the convolution contract of kernels/cpu/conv.h (NCHW, groups, dilation), with
// cuDNN's ranked algorithms found once per shape and cached, each call running the best whose
// workspace fits; depthwise shapes go to direct kernels, the bias to frugal's own (conv_bias.h).
#include "kernels/cuda/conv.h"

#include <cudnn.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/error.h"
#include "kernels/cuda/conv_bias.h"
#include "kernels/cuda/conv_depthwise.h"
#include "kernels/cuda/cudnn_descriptors.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/stream.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cuda {

namespace {

using namespace cudnn_detail;

enum class Kind : int { kForward, kBackwardInput, kBackwardWeight };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kForward:
      return "conv2d_forward";
    case Kind::kBackwardInput:
      return "conv2d_backward_input";
    case Kind::kBackwardWeight:
      break;
  }
  return "conv2d_backward_weight";
}

// One way cuDNN can run a convolution: the algorithm, the math type to run it with, and the
// workspace it needs with that math type.
struct Candidate {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t workspace = 0;
};

// Every algorithm cuDNN's heuristic offers for one (kind, shape, params, type, device), best
// first. The kernels run the first whose workspace fits in what they are given, so a caller
// that cannot allocate the preferred workspace still gets a (slower) convolution, as PyTorch
// does when it walks cuDNN's perf results.
using Candidates = std::vector<Candidate>;

using Key = std::tuple<int, int, int, std::array<std::int64_t, 15>>;

Key make_key(Kind kind, cudnnDataType_t type, const Conv2dParams& p) {
  return {static_cast<int>(kind),
          static_cast<int>(type),
          current_device(),
          {p.N, p.C, p.H, p.W, p.O, p.kH, p.kW, p.stride_h, p.stride_w, p.pad_h, p.pad_w,
           p.dilation_h, p.dilation_w, p.groups, 0}};
}

struct Cache {
  std::mutex mutex;
  std::map<Key, Candidates> candidates;  // never erased: references to entries stay valid
};

Cache& cache() {
  static Cache* const instance = new Cache;  // leaked: used until process exit by any thread
  return *instance;
}

// cuDNN v7 heuristics: perf results come sorted best first. Every one that succeeded becomes
// a candidate, in that order, with its exact workspace for the math type it will run with
// (`workspace_size(algo, &bytes)` asks cuDNN). Asked for every result, the heuristic reports
// every algorithm, so the workspace-free ones (normally implicit GEMM forward and algorithm 0
// of both backwards) are in the list wherever cuDNN supports them for this convolution; where
// none is, the smallest candidate's workspace is the least a caller can run with.
template <class T, class Perf, class WorkspaceSize>
Candidates candidates_from(const Perf* perf, int returned, Kind kind,
                           cudnnConvolutionDescriptor_t conv, WorkspaceSize workspace_size) {
  Candidates candidates;
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    Candidate c;
    c.algo = static_cast<int>(perf[i].algo);
    c.math = chosen_math<T>(perf[i].mathType);
    // float and double map every reported math type to FMA: an algorithm listed twice (with
    // and without tensor cores) is then one candidate.
    const bool seen = std::any_of(candidates.begin(), candidates.end(), [&](const Candidate& o) {
      return o.algo == c.algo && o.math == c.math;
    });
    if (seen) continue;
    FRUGAL_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, c.math));
    // An algorithm whose workspace cuDNN cannot tell for this math type (one offered for
    // tensor cores may have no FMA form) is no candidate.
    if (workspace_size(perf[i].algo, &c.workspace) != CUDNN_STATUS_SUCCESS) continue;
    candidates.push_back(c);
  }
  if (candidates.empty())
    throw Error(std::string(kind_name(kind)) + ": cuDNN found no algorithm for this convolution");
  return candidates;
}

template <class T>
Candidates find_candidates(Kind kind, const Conv2dParams& p) {
  cudnnHandle_t handle = cudnn_handle();
  Descriptors<T> d(p, kMathType<T>);
  // Room for every result, as PyTorch asks: an algorithm may come once per math type, so the
  // *_ALGO_COUNT constants could cut the (workspace-free) tail off the list.
  int count = 0, returned = 0;
  switch (kind) {
    case Kind::kForward: {
      FRUGAL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(count));
      FRUGAL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), count, &returned, perf.data()));
      return candidates_from<T>(perf.data(), returned, kind, d.conv.get(),
                                [&](cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) {
                                  return cudnnGetConvolutionForwardWorkspaceSize(
                                      handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), algo,
                                      bytes);
                                });
    }
    case Kind::kBackwardInput: {
      FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(count));
      FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), count, &returned, perf.data()));
      return candidates_from<T>(perf.data(), returned, kind, d.conv.get(),
                                [&](cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
                                  return cudnnGetConvolutionBackwardDataWorkspaceSize(
                                      handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), algo,
                                      bytes);
                                });
    }
    case Kind::kBackwardWeight:
      break;
  }
  FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &count));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(count));
  FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), count, &returned, perf.data()));
  return candidates_from<T>(perf.data(), returned, kind, d.conv.get(),
                            [&](cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
                              return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                                  handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), algo,
                                  bytes);
                            });
}

// The cached candidates, found on first use. The heuristic runs outside the lock (it is a
// query, and two threads racing on one key find the same answer); the entry is never changed
// or erased after insertion, so the reference stays valid without the lock.
template <class T>
const Candidates& candidates_for(Kind kind, const Conv2dParams& p) {
  const Key key = make_key(kind, Types<T>::data, p);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    const auto it = c.candidates.find(key);
    if (it != c.candidates.end()) return it->second;
  }
  Candidates found = find_candidates<T>(kind, p);
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.candidates.emplace(key, std::move(found)).first->second;
}

template <class T>
std::size_t workspace_bytes(Kind kind, const Conv2dParams& p) {
  validate_conv2d(p);
  if (p.N == 0 || is_depthwise(p)) return 0;
  return candidates_for<T>(kind, p).front().workspace;
}

// From the preferred candidate's workspace down to the smallest: each candidate that needs
// less than every one before it.
template <class T>
std::vector<std::size_t> workspace_fallbacks(Kind kind, const Conv2dParams& p) {
  validate_conv2d(p);
  if (p.N == 0 || is_depthwise(p)) return {0};
  std::vector<std::size_t> sizes;
  for (const Candidate& c : candidates_for<T>(kind, p))
    if (sizes.empty() || c.workspace < sizes.back()) sizes.push_back(c.workspace);
  return sizes;
}

// The best candidate whose workspace fits in what the caller gave (a null workspace gives
// nothing, whatever its size says). The kernels hand cuDNN that candidate's own workspace size.
template <class T>
const Candidate& best_fitting(Kind kind, const Conv2dParams& p, const void* workspace,
                              std::size_t workspace_bytes) {
  const Candidates& candidates = candidates_for<T>(kind, p);
  const std::size_t available = workspace != nullptr ? workspace_bytes : 0;
  std::size_t least = candidates.front().workspace;
  for (const Candidate& c : candidates) {
    if (c.workspace <= available) return c;
    least = std::min(least, c.workspace);
  }
  throw Error(std::string(kind_name(kind)) + ": a workspace of " + std::to_string(available) +
              " bytes is too small for every cuDNN algorithm for this convolution; the "
              "smallest needs " +
              std::to_string(least) + " (ask " + kind_name(kind) + "_workspace_bytes)");
}

}  // namespace

template <class T>
std::size_t conv2d_forward_workspace_bytes(const Conv2dParams& p, int /*threads*/) {
  return workspace_bytes<T>(Kind::kForward, p);
}

template <class T>
std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams& p, int /*threads*/) {
  return workspace_bytes<T>(Kind::kBackwardInput, p);
}

template <class T>
std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams& p, int /*threads*/) {
  return workspace_bytes<T>(Kind::kBackwardWeight, p);
}

template <class T>
std::vector<std::size_t> conv2d_forward_workspace_fallbacks(const Conv2dParams& p) {
  return workspace_fallbacks<T>(Kind::kForward, p);
}

template <class T>
std::vector<std::size_t> conv2d_backward_input_workspace_fallbacks(const Conv2dParams& p) {
  return workspace_fallbacks<T>(Kind::kBackwardInput, p);
}

template <class T>
std::vector<std::size_t> conv2d_backward_weight_workspace_fallbacks(const Conv2dParams& p) {
  return workspace_fallbacks<T>(Kind::kBackwardWeight, p);
}

template <class T>
void conv2d_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* workspace, std::size_t workspace_bytes) {
  validate_conv2d(p);
  if (p.N == 0) return;
  if (is_depthwise(p)) return depthwise_conv2d_forward(p, input, weight, bias, output);
  const Candidate& choice = best_fitting<T>(Kind::kForward, p, workspace, workspace_bytes);
  Descriptors<T> d(p, choice.math);
  cudnnHandle_t handle = cudnn_handle();
  const typename Types<T>::Scalar one = 1, zero = 0;
  FRUGAL_CUDNN_CHECK(
      cudnnConvolutionForward(handle, &one, d.x.get(), input, d.w.get(), weight, d.conv.get(),
                              static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), workspace,
                              choice.workspace, &zero, d.y.get(), output));
  if (bias != nullptr) add_channel_bias(output, bias, p.N, p.O, p.out_h() * p.out_w());
}

template <class T>
void conv2d_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* workspace, std::size_t workspace_bytes) {
  validate_conv2d(p);
  if (p.N == 0) return;
  if (is_depthwise(p)) return depthwise_conv2d_backward_input(p, grad_output, weight, grad_input);
  const Candidate& choice = best_fitting<T>(Kind::kBackwardInput, p, workspace, workspace_bytes);
  Descriptors<T> d(p, choice.math);
  const typename Types<T>::Scalar one = 1, zero = 0;
  FRUGAL_CUDNN_CHECK(cudnnConvolutionBackwardData(
      cudnn_handle(), &one, d.w.get(), weight, d.y.get(), grad_output, d.conv.get(),
      static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), workspace, choice.workspace, &zero,
      d.x.get(), grad_input));
}

template <class T>
void conv2d_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* workspace,
                            std::size_t workspace_bytes) {
  validate_conv2d(p);
  if (p.N == 0) {
    // A sum over no samples: zeros (all-zero bits are 0.0 in every T), as the CPU reference.
    const std::int64_t weights = p.O * (p.C / p.groups) * p.kH * p.kW;
    memset_bytes(grad_weight, 0, static_cast<std::size_t>(weights) * sizeof(T));
    if (grad_bias != nullptr) memset_bytes(grad_bias, 0, static_cast<std::size_t>(p.O) * sizeof(T));
    return;
  }
  if (is_depthwise(p))
    return depthwise_conv2d_backward_weight(p, grad_output, input, grad_weight, grad_bias);
  const Candidate& choice = best_fitting<T>(Kind::kBackwardWeight, p, workspace, workspace_bytes);
  Descriptors<T> d(p, choice.math);
  cudnnHandle_t handle = cudnn_handle();
  const typename Types<T>::Scalar one = 1, zero = 0;
  FRUGAL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      handle, &one, d.x.get(), input, d.y.get(), grad_output, d.conv.get(),
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(choice.algo), workspace, choice.workspace, &zero,
      d.w.get(), grad_weight));
  if (grad_bias != nullptr) channel_sum(grad_output, grad_bias, p.N, p.O, p.out_h() * p.out_w());
}

// CUDA's own beside the shared list: the smaller workspaces cuDNN's algorithms fall back to.
#define FRUGAL_INSTANTIATE_CUDA_CONV(T)                                                         \
  template std::vector<std::size_t> conv2d_forward_workspace_fallbacks<T>(const Conv2dParams&); \
  template std::vector<std::size_t> conv2d_backward_input_workspace_fallbacks<T>(               \
      const Conv2dParams&);                                                                     \
  template std::vector<std::size_t> conv2d_backward_weight_workspace_fallbacks<T>(              \
      const Conv2dParams&);                                                                     \
  FRUGAL_INSTANTIATE_CONV(T)
FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_CUDA_CONV)
#undef FRUGAL_INSTANTIATE_CUDA_CONV

}  // namespace frugal::kernels::cuda
