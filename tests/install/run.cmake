# ctest install/find_package: installs shardflow's C++ component from BUILD_DIR into a temporary
# prefix, checks what is there (the public headers, libshardflow.so, the package config; no
# internals), then configures tests/install/ as an outside project with
# -DCMAKE_PREFIX_PATH=<prefix>, builds it and runs it.
#
#   cmake -DBUILD_DIR=build -DWORK_DIR=build/tests/install_test [-DGENERATOR=Ninja]
#         [-DCXX=...] [-DCXX_FLAGS=...] [-DLINKER_FLAGS=...] [-DLAUNCHER=ccache]
#         -P tests/install/run.cmake
#
# The compiler and flags are the build's own (a sanitizer build links a sanitizer libshardflow).
foreach(var BUILD_DIR WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --component cpp)

# What is installed: the API headers and the messages they expose; no internals, no gRPC.
set(inc ${prefix}/include/shardflow)
foreach(f ops/ops.h ops/training.h runtime/session.h runtime/saver.h core/framework/tensor.h
          core/protos/graph.pb.h lib/cmake/shardflow/shardflowConfig.cmake
          lib/cmake/shardflow/shardflowConfigVersion.cmake lib/libshardflow.so)
  if(f MATCHES "^lib/")
    set(path ${prefix}/${f})
  else()
    set(path ${inc}/${f})
  endif()
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "install test: ${path} is not installed")
  endif()
endforeach()
foreach(f runtime/executor.h runtime/device.h distributed kernels partitioner/placer.h
          core/protos/worker.pb.h core/protos/worker.grpc.pb.h datasets)
  if(EXISTS ${inc}/${f})
    message(FATAL_ERROR "install test: ${inc}/${f} is installed, but it is not public API")
  endif()
endforeach()
file(GLOB_RECURSE grpc_files ${prefix}/*grpc*)
if(grpc_files)
  message(FATAL_ERROR "install test: gRPC files installed: ${grpc_files}")
endif()
file(READ ${prefix}/lib/cmake/shardflow/shardflowTargets.cmake targets)
if(targets MATCHES "gRPC|grpc|glog|dnnl|DNNL")
  message(FATAL_ERROR "install test: shardflow::shardflow exposes a private dependency:\n${targets}")
endif()

# The outside project: find_package(shardflow) + shardflow::shardflow, nothing else.
get_filename_component(project_dir ${CMAKE_CURRENT_LIST_DIR} ABSOLUTE)
set(configure ${CMAKE_COMMAND} -S ${project_dir} -B ${WORK_DIR}/build
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
if(GENERATOR)
  list(APPEND configure -G ${GENERATOR})
endif()
if(CXX)
  list(APPEND configure -DCMAKE_CXX_COMPILER=${CXX})
endif()
if(CXX_FLAGS)
  list(APPEND configure "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
endif()
if(LINKER_FLAGS)
  list(APPEND configure "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
endif()
if(LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run("configuring tests/install" ${configure})
run("building tests/install" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("running install_app" ${WORK_DIR}/build/install_app ${WORK_DIR})
message(STATUS "${last_output}")
