// _Send and _Recv: the pair the partitioner puts on every edge that crosses devices.
#include "core/framework/op_def.h"
#include "core/framework/shape_inference.h"

namespace shardflow {

REGISTER_OP("_Send")
    .Input("tensor: T")
    .Attr("T: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .SetIsStateful()
    .Doc("Internal: hands `tensor` to the step's rendezvous under its key.");

REGISTER_OP("_Recv")
    .Output("tensor: T")
    .Attr("T: type")
    .Attr("tensor_name: string")
    .Attr("send_device: string")
    .Attr("send_device_incarnation: int")
    .Attr("recv_device: string")
    .SetIsStateful()
    .SetShapeFn(UnknownShape)
    .Doc("Internal: waits for the tensor sent under its key (asynchronously).");

}  // namespace shardflow
