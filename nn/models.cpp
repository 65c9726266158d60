// The three models, layer for layer as BENCHMARKS.md defines them. Convolutions followed by
// batch norm have no bias; each BN-ReLU pair is one fused BatchNorm2d (the same function, one
// pass fewer over the activation forward and backward, and no second activation), and the
// other ReLUs work in place.
#include "nn/models.h"

#include <algorithm>

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

void check_input(const ModelInput& in, const std::string& model, std::int64_t min_size) {
  FRUGAL_CHECK(in.channels >= 1 && in.classes >= 2,
               model + ": needs at least 1 channel and 2 classes, got " +
                   std::to_string(in.channels) + " channels and " + std::to_string(in.classes) +
                   " classes");
  FRUGAL_CHECK(in.height >= min_size && in.width >= min_size,
               model + ": images of " + std::to_string(in.height) + "x" +
                   std::to_string(in.width) + " are too small (at least " +
                   std::to_string(min_size) + "x" + std::to_string(min_size) + ")");
}

}  // namespace

std::shared_ptr<Sequential> cnn(const ModelInput& in) {
  check_input(in, "cnn", 4);
  auto s = std::make_shared<Sequential>();
  conv_bn_relu(*s, in.channels, 32, 3, 1, 1, 1);
  conv_bn_relu(*s, 32, 32, 3, 1, 1, 1);
  s->push_back(std::make_shared<MaxPool2d>(2));
  conv_bn_relu(*s, 32, 64, 3, 1, 1, 1);
  conv_bn_relu(*s, 64, 64, 3, 1, 1, 1);
  s->push_back(std::make_shared<MaxPool2d>(2));
  // The map is (H / 4) x (W / 4) here: 7x7 for 28x28 inputs. Larger maps are averaged down
  // to 7 a side so that the classifier keeps its size.
  const std::int64_t h = in.height / 4, w = in.width / 4;
  const std::int64_t ph = std::min<std::int64_t>(h, 7), pw = std::min<std::int64_t>(w, 7);
  if (ph != h || pw != w) s->push_back(std::make_shared<AdaptiveAvgPool2d>(Int2{ph, pw}));
  s->push_back(std::make_shared<Flatten>());
  s->push_back(std::make_shared<Linear>(64 * ph * pw, 128));
  s->push_back(std::make_shared<ReLU>(true));
  s->push_back(std::make_shared<Linear>(128, in.classes));
  return s;
}

std::shared_ptr<Sequential> mobilenet(const ModelInput& in) {
  check_input(in, "mobilenet", 1);
  auto s = std::make_shared<Sequential>();
  conv_bn_relu(*s, in.channels, 32, 3, 1, 1, 1);
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
  s->push_back(std::make_shared<Linear>(256, in.classes));
  return s;
}

std::shared_ptr<Sequential> mlp(const ModelInput& in) {
  check_input(in, "mlp", 1);
  auto s = std::make_shared<Sequential>();
  s->push_back(std::make_shared<Flatten>());
  s->push_back(std::make_shared<Linear>(in.channels * in.height * in.width, 512));
  s->push_back(std::make_shared<ReLU>(true));
  s->push_back(std::make_shared<Linear>(512, 512));
  s->push_back(std::make_shared<ReLU>(true));
  s->push_back(std::make_shared<Linear>(512, in.classes));
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

std::shared_ptr<Sequential> make_model(const std::string& name, const ModelInput& input) {
  if (name == "cnn") return cnn(input);
  if (name == "mobilenet") return mobilenet(input);
  if (name == "mlp") return mlp(input);
  throw Error("unknown model '" + name + "' (expected cnn, mobilenet or mlp)");
}

}  // namespace frugal::nn
