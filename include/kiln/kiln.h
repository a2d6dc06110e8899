#pragma once
// kiln: lazy tensors compiled at run time for the CPU and GPUs.
//
//   #include <kiln/kiln.h>
//   auto a = kiln::Tensor::rand({1024, 1024}, /*seed=*/0);
//   auto b = (a * 2 + 1).relu().sum({1});
//   std::vector<float> values = b.to_vector<float>();
//
// The device is chosen by KILN_DEVICE (CPU, CL, CL:1, ...) or per tensor with `to(name)`.

#include <kiln/activations.h>
#include <kiln/autograd.h>
#include <kiln/capture.h>
#include <kiln/conv.h>
#include <kiln/device.h>
#include <kiln/dtype.h>
#include <kiln/error.h>
#include <kiln/memory.h>
#include <kiln/modules.h>
#include <kiln/nn.h>
#include <kiln/optim.h>
#include <kiln/random.h>
#include <kiln/safetensors.h>
#include <kiln/shape_ops.h>
#include <kiln/sort.h>
#include <kiln/tensor.h>
#include <kiln/variable.h>
