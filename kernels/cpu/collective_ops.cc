// CPU registrations of the collective ops' kernels (kernels/cpu/collective_kernels.h); the GPU
// ones are in kernels/gpu/collective_ops.cc.
#include "core/framework/kernel_registry.h"
#include "kernels/cpu/collective_kernels.h"

namespace shardflow {
namespace {

#define SF_REGISTER_COLLECTIVE(type)                                                             \
  REGISTER_KERNEL(KernelDef("CollectiveReduce").Device(kDeviceCpu).TypeConstraint<type>("T"),    \
                  CollectiveReduceOp);                                                           \
  REGISTER_KERNEL(KernelDef("CollectiveBcastSend").Device(kDeviceCpu).TypeConstraint<type>("T"), \
                  CollectiveBcastOp);                                                            \
  REGISTER_KERNEL(KernelDef("CollectiveBcastRecv").Device(kDeviceCpu).TypeConstraint<type>("T"), \
                  CollectiveBcastOp);                                                            \
  REGISTER_KERNEL(KernelDef("CollectiveGather").Device(kDeviceCpu).TypeConstraint<type>("T"),    \
                  CollectiveGatherOp)

SF_REGISTER_COLLECTIVE(float);
SF_REGISTER_COLLECTIVE(double);
SF_REGISTER_COLLECTIVE(half);
SF_REGISTER_COLLECTIVE(bfloat16);
SF_REGISTER_COLLECTIVE(int32_t);
SF_REGISTER_COLLECTIVE(int64_t);
REGISTER_KERNEL(KernelDef("CollectiveBcastSend").Device(kDeviceCpu).TypeConstraint<bool>("T"),
                CollectiveBcastOp);
REGISTER_KERNEL(KernelDef("CollectiveBcastRecv").Device(kDeviceCpu).TypeConstraint<bool>("T"),
                CollectiveBcastOp);

}  // namespace
}  // namespace shardflow
