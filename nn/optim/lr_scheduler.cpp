// The closed forms of the schedules.
#include "nn/optim/lr_scheduler.h"

#include <cmath>

#include "common/error.h"

namespace frugal::optim {

void LRScheduler::step() { set_epoch(last_epoch_ + 1); }

void LRScheduler::set_epoch(std::int64_t epoch) {
  FRUGAL_CHECK(epoch >= 0, "LRScheduler: negative epoch " + std::to_string(epoch));
  last_epoch_ = epoch;
  optimizer_.set_lr(lr_at(epoch));
}

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  FRUGAL_CHECK(step_size > 0,
               "StepLR: step_size must be positive, got " + std::to_string(step_size));
}

double StepLR::lr_at(std::int64_t epoch) const {
  return base_lr_ * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  FRUGAL_CHECK(T_max > 0,
               "CosineAnnealingLR: T_max must be positive, got " + std::to_string(T_max));
}

double CosineAnnealingLR::lr_at(std::int64_t epoch) const {
  const double pi = std::acos(-1.0);
  return eta_min_ +
         (base_lr_ - eta_min_) *
             (1 + std::cos(pi * static_cast<double>(epoch) / static_cast<double>(t_max_))) / 2;
}

}  // namespace frugal::optim
