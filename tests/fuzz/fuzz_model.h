// The model, optimizer and scaler whose checkpoints fuzz_checkpoint loads, and make_seeds
// writes: small enough that a checkpoint is a few KiB (batch norm, flatten, linear), with each kind
// of state (weights, batch norm buffers, momentum, the loss scale).
#pragma once

#include <memory>

#include "examples/train/checkpoint.h"
#include "nn/nn.h"

namespace frugal::fuzz {

struct CheckpointSubject {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<optim::SGD> optimizer;
  std::unique_ptr<amp::GradScaler> scaler;
  train::TrainState expect;

  CheckpointSubject() { reset(); }

  // Fresh weights and state, so that one input's load cannot change how the next one fares.
  void reset() {
    manual_seed(0);
    model = std::make_shared<nn::Sequential>();
    model->push_back(std::make_shared<nn::BatchNorm2d>(2));
    model->push_back(std::make_shared<nn::Flatten>());
    model->push_back(std::make_shared<nn::Linear>(8, 3));
    optimizer =
        std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    scaler = std::make_unique<amp::GradScaler>(amp::GradScalerOptions{.enabled = true});
    expect = train::TrainState{};
    expect.model = "fuzz";
    expect.optimizer = "sgd";
    expect.lr_schedule = "constant";
    expect.amp = "off";
  }

  // One training step on a fixed batch.
  void step() {
    optimizer->zero_grad();
    const Tensor x = randn({5, 2, 2, 2});
    const Tensor loss = cross_entropy(model->forward(x), randint(0, 3, {5}));
    scaler->scale(loss).backward();
    scaler->step(*optimizer);
    scaler->update();
  }
};

}  // namespace frugal::fuzz
