// The one header for models and training: every layer, the models, losses and optimizers.
#pragma once

#include "engine/frugal.h"
#include "nn/amp/grad_scaler.h"
#include "nn/batchnorm.h"
#include "nn/clip_grad.h"
#include "nn/conv.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/module.h"
#include "nn/optim/adamw.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/sgd.h"
#include "nn/sequential.h"
#include "nn/stateless.h"
