// The public conv entry points: parameter checks, the choice of path (depthwise, pointwise or
// im2col), the workspace queries that mirror that choice, and the binding of a workspace.
#include "kernels/cpu/isa_variant.h"

#include "kernels/cpu/conv.h"

#include <cstdint>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/parallel.h"
#include "kernels/instantiations.h"

namespace frugal::kernels::cpu::FRUGAL_CPU_ISA {

namespace {

template <class T>
constexpr bool kNative = std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace

template <class T>
ConvPath conv2d_path(const Conv2dParams& p) {
  if (p.groups == p.C && p.O == p.C && p.C > 1) return ConvPath::kDepthwise;
  if (kNative<T> && p.kH == 1 && p.kW == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 &&
      p.pad_w == 0)
    return ConvPath::kPointwise;
  // A tap's GEMM has depth C / groups: below 8 the column buffer's single deep GEMM wins.
  if (p.stride_h == 1 && p.stride_w == 1 && p.C / p.groups >= 8) return ConvPath::kShifted;
  return ConvPath::kIm2col;
}

namespace conv_detail {

Workspace::Workspace(const Layout& layout, void* base, std::size_t bytes, std::int64_t units,
                     const char* op)
    : shared_(layout.shared), per_slot_(layout.per_slot) {
  const std::int64_t threads = get_num_threads();
  if (layout.bytes(1) == 0) {
    slots_ = slot_count(units, threads);
    return;
  }
  FRUGAL_CHECK_FORMAT(base != nullptr && bytes >= layout.bytes(1),
                      "{}: workspace of {} bytes is too small; one thread needs {}", op, bytes,
                      layout.bytes(1));
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  base_ = static_cast<char*>(base) + (kAlign - address % kAlign) % kAlign;
  std::int64_t fit = threads;
  if (per_slot_ > 0) fit = static_cast<std::int64_t>((bytes - kAlign - shared_) / per_slot_);
  slots_ = slot_count(units, std::min(threads, fit));
}

}  // namespace conv_detail

using namespace conv_detail;

// The calls below name this level's conv2d_path: argument-dependent lookup on Conv2dParams
// would also find the public one (isa_dispatch.cpp), and the two have the same signature.

template <class T>
std::size_t conv2d_forward_workspace_bytes(const Conv2dParams& p, int threads) {
  validate_conv2d(p);
  switch (FRUGAL_CPU_ISA::conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_forward_layout<T>(p).bytes(slot_count(depthwise_plane_units(p), threads));
    case ConvPath::kPointwise:
      if constexpr (kNative<T>) return pointwise_forward_layout<T>(p).bytes(1);
      return 0;
    case ConvPath::kShifted:
      return shifted_forward_layout<T>(p).bytes(slot_count(shifted_units(p), threads));
    case ConvPath::kIm2col:
      break;
  }
  return im2col_forward_layout<T>(p).bytes(slot_count(im2col_units(p), threads));
}

template <class T>
std::size_t conv2d_backward_input_workspace_bytes(const Conv2dParams& p, int threads) {
  validate_conv2d(p);
  switch (FRUGAL_CPU_ISA::conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_input_layout<T>(p).bytes(
          slot_count(depthwise_plane_units(p), threads));
    case ConvPath::kPointwise:
      return 0;
    case ConvPath::kShifted:
      return shifted_backward_input_layout<T>(p).bytes(slot_count(shifted_units(p), threads));
    case ConvPath::kIm2col:
      break;
  }
  return im2col_backward_input_layout<T>(p).bytes(slot_count(im2col_units(p), threads));
}

template <class T>
std::size_t conv2d_backward_weight_workspace_bytes(const Conv2dParams& p, int threads) {
  validate_conv2d(p);
  switch (FRUGAL_CPU_ISA::conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_weight_layout<T>(p).bytes(
          slot_count(depthwise_weight_units(p), threads));
    case ConvPath::kPointwise:
      if constexpr (kNative<T>)
        return pointwise_backward_weight_layout<T>(p).bytes(
            slot_count(pointwise_weight_units(p), threads));
      break;
    case ConvPath::kShifted:
      return shifted_backward_weight_layout<T>(p).bytes(slot_count(shifted_units(p), threads));
    case ConvPath::kIm2col:
      break;
  }
  return im2col_backward_weight_layout<T>(p).bytes(slot_count(im2col_units(p), threads));
}

template <class T>
void conv2d_forward(const Conv2dParams& p, const T* input, const T* weight, const T* bias,
                    T* output, void* workspace, std::size_t workspace_bytes) {
  validate_conv2d(p);
  if (p.N == 0) return;
  switch (FRUGAL_CPU_ISA::conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_forward(p, input, weight, bias, output, workspace, workspace_bytes);
    case ConvPath::kPointwise:
      if constexpr (kNative<T>)
        return pointwise_forward(p, input, weight, bias, output, workspace, workspace_bytes);
      break;
    case ConvPath::kShifted:
      return shifted_forward(p, input, weight, bias, output, workspace, workspace_bytes);
    case ConvPath::kIm2col:
      return im2col_forward(p, input, weight, bias, output, workspace, workspace_bytes);
  }
}

template <class T>
void conv2d_backward_input(const Conv2dParams& p, const T* grad_output, const T* weight,
                           T* grad_input, void* workspace, std::size_t workspace_bytes) {
  validate_conv2d(p);
  if (p.N == 0) return;
  switch (FRUGAL_CPU_ISA::conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_input(p, grad_output, weight, grad_input, workspace,
                                      workspace_bytes);
    case ConvPath::kPointwise:
      if constexpr (kNative<T>) return pointwise_backward_input(p, grad_output, weight, grad_input);
      break;
    case ConvPath::kShifted:
      return shifted_backward_input(p, grad_output, weight, grad_input, workspace, workspace_bytes);
    case ConvPath::kIm2col:
      return im2col_backward_input(p, grad_output, weight, grad_input, workspace, workspace_bytes);
  }
}

template <class T>
void conv2d_backward_weight(const Conv2dParams& p, const T* grad_output, const T* input,
                            T* grad_weight, T* grad_bias, void* workspace,
                            std::size_t workspace_bytes) {
  validate_conv2d(p);
  switch (FRUGAL_CPU_ISA::conv2d_path<T>(p)) {
    case ConvPath::kDepthwise:
      return depthwise_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                       workspace_bytes);
    case ConvPath::kPointwise:
      if constexpr (kNative<T>)
        return pointwise_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                         workspace_bytes);
      break;
    case ConvPath::kShifted:
      return shifted_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                     workspace_bytes);
    case ConvPath::kIm2col:
      return im2col_backward_weight(p, grad_output, input, grad_weight, grad_bias, workspace,
                                    workspace_bytes);
  }
}

FRUGAL_FLOAT_TYPES(FRUGAL_INSTANTIATE_CPU_CONV)

}  // namespace frugal::kernels::cpu::FRUGAL_CPU_ISA
