// cuDNN's view of a frugal convolution (internal to conv.cpp): its data, compute and math types
// for each element type, and RAII owners of the tensor, filter and convolution descriptors.
#pragma once

#include <cudnn.h>

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "common/error.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/handles.h"

namespace frugal::kernels::cuda::cudnn_detail {

// cuDNN's storage and compute types for T, and the type alpha and beta are passed in.
template <class T>
struct Types;
template <>
struct Types<float> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  using Scalar = float;
};
template <>
struct Types<double> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_DOUBLE, compute = CUDNN_DATA_DOUBLE;
  using Scalar = double;
};
template <>
struct Types<Half> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_HALF, compute = CUDNN_DATA_FLOAT;
  using Scalar = float;
};
template <>
struct Types<BFloat16> {
  static constexpr cudnnDataType_t data = CUDNN_DATA_BFLOAT16, compute = CUDNN_DATA_FLOAT;
  using Scalar = float;
};

// float and double stay at full precision (FMA only: CUDNN_DEFAULT_MATH would let Ampere and
// later GPUs run float in TF32, 10-bit mantissas, far from the CPU reference); 16-bit types may
// use tensor cores, which accumulate in float.
template <class T>
constexpr cudnnMathType_t kMathType =
    std::is_same_v<T, float> || std::is_same_v<T, double> ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;

// The math type to run a heuristic's candidate with: float and double keep CUDNN_FMA_MATH
// whatever the perf result reports (were it CUDNN_DEFAULT_MATH, setting it on the descriptor
// would let cuDNN run float in TF32 on Ampere and later); 16-bit types take the reported one.
template <class T>
cudnnMathType_t chosen_math(cudnnMathType_t reported) {
  return kMathType<T> == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : reported;
}

inline int to_int(std::int64_t v, const char* what) {
  FRUGAL_CHECK(v <= INT_MAX, std::string("conv2d: ") + what + " = " + std::to_string(v) +
                                 " is beyond cuDNN's int range");
  return static_cast<int>(v);
}

// RAII owners of cuDNN's descriptors.
class TensorDesc {
 public:
  TensorDesc(cudnnDataType_t type, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    FRUGAL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
    try {
      FRUGAL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, type, to_int(n, "N"),
                                                    to_int(c, "channels"), to_int(h, "height"),
                                                    to_int(w, "width")));
    } catch (...) {
      cudnnDestroyTensorDescriptor(desc_);
      throw;
    }
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc(cudnnDataType_t type, const Conv2dParams& p) {
    FRUGAL_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc_));
    try {
      FRUGAL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
          desc_, type, CUDNN_TENSOR_NCHW, to_int(p.O, "O"), to_int(p.C / p.groups, "C / groups"),
          to_int(p.kH, "kH"), to_int(p.kW, "kW")));
    } catch (...) {
      cudnnDestroyFilterDescriptor(desc_);
      throw;
    }
  }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(desc_); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

class ConvDesc {
 public:
  ConvDesc(cudnnDataType_t compute, const Conv2dParams& p, cudnnMathType_t math) {
    FRUGAL_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc_));
    try {
      FRUGAL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
          desc_, to_int(p.pad_h, "pad_h"), to_int(p.pad_w, "pad_w"), to_int(p.stride_h, "stride_h"),
          to_int(p.stride_w, "stride_w"), to_int(p.dilation_h, "dilation_h"),
          to_int(p.dilation_w, "dilation_w"), CUDNN_CROSS_CORRELATION, compute));
      FRUGAL_CUDNN_CHECK(cudnnSetConvolutionGroupCount(desc_, to_int(p.groups, "groups")));
      FRUGAL_CUDNN_CHECK(cudnnSetConvolutionMathType(desc_, math));
    } catch (...) {
      cudnnDestroyConvolutionDescriptor(desc_);
      throw;
    }
  }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(desc_); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

// Everything cuDNN needs to describe one convolution of T.
template <class T>
struct Descriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  Descriptors(const Conv2dParams& p, cudnnMathType_t math)
      : x(Types<T>::data, p.N, p.C, p.H, p.W),
        y(Types<T>::data, p.N, p.O, p.out_h(), p.out_w()),
        w(Types<T>::data, p),
        conv(Types<T>::compute, p, math) {}
};

}  // namespace frugal::kernels::cuda::cudnn_detail
