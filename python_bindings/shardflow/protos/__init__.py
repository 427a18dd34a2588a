"""The project's .proto messages for Python (graph_pb2, tensor_pb2, ...), generated at build
time by protoc from core/protos/ (python_bindings/CMakeLists.txt); they need python3-protobuf."""
