// Learning-rate schedules, stepped once per epoch as in PyTorch: StepLR (multiply by gamma
// every step_size epochs) and CosineAnnealingLR (from the base rate down to eta_min over
// T_max epochs). They set the optimizer's lr from the epoch count, so a resumed run that
// restores last_epoch continues the same schedule.
#pragma once

#include "nn/optim/optimizer.h"

namespace frugal::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer), base_lr_(optimizer.lr()) {}
  virtual ~LRScheduler() = default;
  // Advances one epoch and sets the new rate.
  void step();
  std::int64_t last_epoch() const { return last_epoch_; }
  // Jumps to an epoch (for resuming) and sets its rate.
  void set_epoch(std::int64_t epoch);
  virtual double lr_at(std::int64_t epoch) const = 0;

 protected:
  Optimizer& optimizer_;
  double base_lr_;
  std::int64_t last_epoch_ = 0;
};

class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);
  double lr_at(std::int64_t epoch) const override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min = 0);
  double lr_at(std::int64_t epoch) const override;

 private:
  std::int64_t t_max_;
  double eta_min_;
};

}  // namespace frugal::optim
