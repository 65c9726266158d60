// The three models, layer for layer as BENCHMARKS.md defines them. Convolutions followed by
// batch norm have no bias; each BN-ReLU pair is one fused BatchNorm2d (the same function, one
// pass fewer over the activation forward and backward, and no second activation), and the
// other ReLUs work in place.
#include "nn/models.h"

#include "common/error.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/stateless.h"

namespace frugal::nn {

namespace {

void conv_bn_relu(Sequential& s, std::int64_t in, std::int64_t out, std::int64_t kernel,
                  std::int64_t stride, std::int64_t padding, std::int64_t groups) {
  s.push_back(std::make_shared<Conv2d>(
      Conv2dOptions(in, out, kernel).stride(stride).padding(padding).groups(groups).bias(false)));
  s.push_back(std::make_shared<BatchNorm2d>(BatchNormOptions(out).fused_relu(true)));
}

}  // namespace

std::shared_ptr<Sequential> cnn() {
  auto s = std::make_shared<Sequential>();
  conv_bn_relu(*s, 1, 32, 3, 1, 1, 1);
  conv_bn_relu(*s, 32, 32, 3, 1, 1, 1);
  s->push_back(std::make_shared<MaxPool2d>(2));
  conv_bn_relu(*s, 32, 64, 3, 1, 1, 1);
  conv_bn_relu(*s, 64, 64, 3, 1, 1, 1);
  s->push_back(std::make_shared<MaxPool2d>(2));
  s->push_back(std::make_shared<Flatten>());
  s->push_back(std::make_shared<Linear>(64 * 7 * 7, 128));
  s->push_back(std::make_shared<ReLU>(true));
  s->push_back(std::make_shared<Linear>(128, 10));
  return s;
}

std::shared_ptr<Sequential> mobilenet() {
  auto s = std::make_shared<Sequential>();
  conv_bn_relu(*s, 1, 32, 3, 1, 1, 1);
  struct Block {
    std::int64_t in, out, stride;
  };
  for (const Block b :
       {Block{32, 64, 1}, Block{64, 128, 2}, Block{128, 128, 1}, Block{128, 256, 2}}) {
    conv_bn_relu(*s, b.in, b.in, 3, b.stride, 1, /*groups=*/b.in);  // depthwise
    conv_bn_relu(*s, b.in, b.out, 1, 1, 0, 1);                      // pointwise
  }
  s->push_back(std::make_shared<AdaptiveAvgPool2d>(1));
  s->push_back(std::make_shared<Flatten>());
  s->push_back(std::make_shared<Linear>(256, 10));
  return s;
}

std::shared_ptr<Sequential> mlp() {
  auto s = std::make_shared<Sequential>();
  s->push_back(std::make_shared<Flatten>());
  s->push_back(std::make_shared<Linear>(784, 512));
  s->push_back(std::make_shared<ReLU>(true));
  s->push_back(std::make_shared<Linear>(512, 512));
  s->push_back(std::make_shared<ReLU>(true));
  s->push_back(std::make_shared<Linear>(512, 10));
  return s;
}

std::vector<std::string> model_names() { return {"cnn", "mobilenet", "mlp"}; }

std::shared_ptr<Sequential> deep_convnet(int blocks, std::int64_t channels) {
  auto s = std::make_shared<Sequential>();
  for (int i = 0; i < blocks; ++i) conv_bn_relu(*s, i == 0 ? 3 : channels, channels, 3, 1, 1, 1);
  s->push_back(std::make_shared<AdaptiveAvgPool2d>(1));
  s->push_back(std::make_shared<Flatten>());
  s->push_back(std::make_shared<Linear>(channels, 10));
  return s;
}

std::shared_ptr<Sequential> make_model(const std::string& name) {
  if (name == "cnn") return cnn();
  if (name == "mobilenet") return mobilenet();
  if (name == "mlp") return mlp();
  throw Error("unknown model '" + name + "' (expected cnn, mobilenet or mlp)");
}

}  // namespace frugal::nn
