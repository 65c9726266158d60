// The one header a program includes for tensors, ops and autograd:
//   #include "engine/frugal.h"   then   frugal::randn({2, 3}).relu().sum().backward();
#pragma once

#include "allocator/default_allocators.h"
#include "engine/autocast.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/generator.h"
#include "engine/ops/amp.h"
#include "engine/ops/batch_norm.h"
#include "engine/ops/conv.h"
#include "engine/ops/copy.h"
#include "engine/ops/dropout.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/factory.h"
#include "engine/ops/loss.h"
#include "engine/ops/matmul.h"
#include "engine/ops/pool.h"
#include "engine/ops/reduce.h"
#include "engine/ops/shape.h"
#include "engine/tensor.h"
