# What `cmake --install build --prefix P` puts into P for C++ users (component `cpp`; the Python
# package is component `python`, python_bindings/CMakeLists.txt):
#
#   P/include/shardflow/<header>       the public headers below, at their path in the tree, so
#                                      `#include "ops/ops.h"` reads the same inside and outside
#   P/lib/libshardflow.so              the engine, every op, kernel, device and protocol in it
#   P/lib/cmake/shardflow/             shardflowConfig.cmake, its version file, the exported
#                                      target shardflow::shardflow
#
# An outside project then does (docs/cpp_api.md; tests/install/ builds one that way):
#   find_package(shardflow REQUIRED)
#   target_link_libraries(app PRIVATE shardflow::shardflow)
#
# The headers are listed one by one: what is here is the stable C++ API (building graphs, running
# them in a session, checkpoints, profiler output) and the core types those headers need;
# everything else (executor, devices, placer internals, distributed, gRPC) stays uninstalled.
# tools/check_layers.py checks that a header listed here includes only headers listed here.

set(SHARDFLOW_PUBLIC_HEADERS
  # core types the API headers need
  core/platform/status.h
  core/framework/allocator.h
  core/framework/attr_value.h
  core/framework/device_base.h
  core/framework/device_name.h
  core/framework/node_def_util.h
  core/framework/op_cost.h
  core/framework/op_def.h
  core/framework/op_names.h
  core/framework/tensor.h
  core/framework/tensor_shape.h
  core/framework/types.h
  core/graph/graph.h
  core/graph/graph_io.h
  # the graph-building API
  ops/gradients.h
  ops/nn_ops.h
  ops/ops.h
  ops/scope.h
  ops/training.h
  # running graphs, checkpoints, profiler output
  runtime/checkpoint.h
  runtime/profiler.h
  runtime/profiler/chrome_trace.h
  runtime/profiler/graph_dot.h
  runtime/profiler/placement_report.h
  runtime/profiler/transfers.h
  runtime/saver.h
  runtime/session.h)
# Generated messages the public headers expose (core/protos/<stem>.pb.h); the service messages
# (worker, master) and the cost model's stay inside.
set(SHARDFLOW_PUBLIC_PROTOS types tensor graph step_stats config)

foreach(header ${SHARDFLOW_PUBLIC_HEADERS})
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardflow/${dir} COMPONENT cpp)
endforeach()
foreach(stem ${SHARDFLOW_PUBLIC_PROTOS})
  install(FILES ${PROJECT_BINARY_DIR}/core/protos/${stem}.pb.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardflow/core/protos COMPONENT cpp)
endforeach()

install(TARGETS shardflow EXPORT shardflowTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT cpp)
set(SHARDFLOW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/shardflow)
install(EXPORT shardflowTargets NAMESPACE shardflow:: DESTINATION ${SHARDFLOW_CMAKE_DIR}
        COMPONENT cpp)
include(CMakePackageConfigHelpers)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/shardflowConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/shardflowConfig.cmake
                              INSTALL_DESTINATION ${SHARDFLOW_CMAKE_DIR})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/shardflowConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/shardflowConfig.cmake
              ${PROJECT_BINARY_DIR}/shardflowConfigVersion.cmake
        DESTINATION ${SHARDFLOW_CMAKE_DIR} COMPONENT cpp)
