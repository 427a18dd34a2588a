"""tools/check_layers.py finds each kind of wrong include, names the file, the line and the rule,
and passes a tree that follows the rules (ctest layers/check_layers)."""

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check_layers.py")


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def run_check(files, *args):
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, files)
        p = subprocess.run([sys.executable, CHECK, "--root", root, *args],
                           capture_output=True, text=True)
        return p.returncode, p.stdout


GOOD = {
    "core/framework/tensor.h": '#include <vector>\n#include "absl/status/status.h"\n',
    "ops/ops.h": '#include "core/framework/tensor.h"\n',
    "runtime/session.h": '#include "core/framework/tensor.h"\n#include "partitioner/placer.h"\n',
    "partitioner/placer.h": '#include "ops/ops.h"\n',
    "distributed/master.cc": '#include "runtime/session.h"\n#include "ops/ops.h"\n',
    "distributed/grpc/server.cc": '#include "grpcpp/server.h"\n#include "core/protos/worker.grpc.pb.h"\n',
    "tests/distributed/server_test.cc": '#include "distributed/grpc/server.h"\n',
    "benchmarks/transfer_benchmark.cc": '#include "distributed/grpc/grpc_worker_client.h"\n',
    "tools/shardflow/main.cc": '#include "distributed/server.h"\n#include "datasets/dataset.h"\n',
    "datasets/dataset.h": '#include "core/framework/tensor.h"\n',
    "examples/cpp/hello.cc": '#include "ops/ops.h"\n#include <cstdio>\n',
    "core/protos/graph.proto": 'syntax = "proto3";\nimport "core/protos/tensor.proto";\n',
    "core/protos/tensor.proto": 'syntax = "proto3";\n',
}
PUBLIC = ["--public-headers", "core/framework/tensor.h", "ops/ops.h", "runtime/session.h",
          "--public-protos", "graph", "tensor"]


class CheckLayersTest(unittest.TestCase):
    def test_a_tree_that_follows_the_rules_passes(self):
        rc, out = run_check(GOOD)
        self.assertEqual(rc, 0, out)
        # runtime/session.h includes partitioner/placer.h, which is not public...
        rc, out = run_check(GOOD, *PUBLIC)
        self.assertEqual(rc, 1, out)
        self.assertIn('runtime/session.h:2: public: the public header includes '
                      '"partitioner/placer.h", which is not installed', out)
        # ...until it is (and it includes only public headers itself).
        rc, out = run_check(GOOD, *PUBLIC[:4], "partitioner/placer.h", *PUBLIC[4:])
        self.assertEqual(rc, 0, out)

    def test_an_include_against_the_layering_names_file_line_and_rule(self):
        files = dict(GOOD, **{
            "core/graph/graph.h": '// the graph\n#include "core/framework/tensor.h"\n'
                                  '#include "runtime/session.h"\n',
            "runtime/saver.h": '#include "ops/training.h"\n',
            "kernels/cpu/matmul.cc": '#include "runtime/executor.h"\n',
            "partitioner/placer.cc": '#include "kernels/cpu/matmul.h"\n',
            "ops/scope.cc": '#include "datasets/dataset.h"\n',
            "datasets/loader.cc": '#include "runtime/session.h"\n',
            "runtime/x.cc": '#include "tests/util/test_util.h"\n',
        })
        rc, out = run_check(files)
        self.assertEqual(rc, 1)
        lines = out.splitlines()
        self.assertIn('core/graph/graph.h:3: layering: core/ includes "runtime/session.h", but '
                      "core/ may use only nothing else of shardflow", out)
        self.assertIn('runtime/saver.h:1: layering: runtime/ includes "ops/training.h", but '
                      "runtime/ may use only core/, kernels/, partitioner/", out)
        for bad in ["kernels/cpu/matmul.cc:1: layering", "partitioner/placer.cc:1: layering",
                    "ops/scope.cc:1: layering", "datasets/loader.cc:1: layering",
                    "runtime/x.cc:1: layering"]:
            self.assertTrue(any(l.startswith(bad) for l in lines), bad + "\n" + out)
        self.assertEqual(len(lines), 7, out)

    def test_grpc_outside_its_folder_is_refused(self):
        files = dict(GOOD, **{
            "distributed/master.cc": '#include "distributed/grpc/grpc_server.h"\n',
            "runtime/local_session.cc": '#include <grpcpp/channel.h>\n',
            "distributed/worker.cc": '#include "core/protos/worker.grpc.pb.h"\n',
            "tools/shardflow/train.cc": '#include "grpc/grpc.h"\n',
            "benchmarks/executor_benchmark.cc": '#include "grpcpp/server.h"\n',
        })
        rc, out = run_check(files)
        self.assertEqual(rc, 1)
        for bad in ["distributed/master.cc:1: grpc:", "runtime/local_session.cc:1: grpc:",
                    "distributed/worker.cc:1: grpc:", "tools/shardflow/train.cc:1: grpc:",
                    "benchmarks/executor_benchmark.cc:1: grpc:"]:
            self.assertIn(bad, out)
        self.assertEqual(len(out.splitlines()), 5, out)

    def test_public_headers_examples_and_messages_stay_inside_the_install(self):
        files = dict(GOOD, **{
            "ops/ops.h": '#include "core/framework/tensor.h"\n#include "ops/internal/x.h"\n'
                         '#include "glog/logging.h"\n#include "core/protos/graph.pb.h"\n'
                         '#include "core/protos/cost.pb.h"\n',
            "examples/cpp/hello.cc": '#include "runtime/executor.h"\n',
            "core/protos/graph.proto": 'import "core/protos/tensor.proto";\n'
                                       'import "core/protos/cost.proto";\n',
        })
        rc, out = run_check(files, *PUBLIC[:4], "missing/header.h", *PUBLIC[4:])
        self.assertEqual(rc, 1)
        for bad in ['ops/ops.h:2: public: the public header includes "ops/internal/x.h"',
                    'ops/ops.h:3: public: the public header includes "glog/logging.h"',
                    'ops/ops.h:5: public: the public header includes "core/protos/cost.pb.h"',
                    'examples/cpp/hello.cc:1: public: the example includes "runtime/executor.h"',
                    'core/protos/graph.proto:2: public: the public message imports',
                    "missing/header.h:0: public: listed as a public header but does not exist"]:
            self.assertIn(bad, out)
        self.assertEqual(len(out.splitlines()), 7, out)  # and runtime/session.h, as above

    def test_a_device_is_made_only_by_a_factory(self):
        device_h = ("class CpuDevice final : public Device {\n public:\n"
                    "  CpuDevice(const std::string& name);\n};\n")
        files = dict(GOOD, **{
            "runtime/device.h": device_h,
            # The factory's own file constructs its devices.
            "runtime/device.cc": "class CpuDeviceFactory : public DeviceFactory {};\n"
                                 "  devices->push_back(std::make_unique<CpuDevice>(name));\n",
            # A test double defined in the test itself may be constructed there.
            "tests/runtime/fake_test.cc": "class FakeDevice final : public Device {};\n"
                                          "  FakeDevice device;\n",
            "runtime/op_runner.cc": "  static Device* d = new CpuDevice(name);\n",
            "distributed/worker.cc": "  auto d = std::make_unique<shardflow::CpuDevice>(name);\n",
            "tests/kernels/matmul_test.cc": "  // CpuDevice device_; in a comment is fine\n"
                                            "  CpuDevice device_;\n",
        })
        rc, out = run_check(files)
        self.assertEqual(rc, 1, out)
        for bad in ["runtime/op_runner.cc:1: devices: constructs a device directly",
                    "distributed/worker.cc:1: devices:", "tests/kernels/matmul_test.cc:2: devices:"]:
            self.assertIn(bad, out)
        self.assertIn("DeviceFactory::CreateDevices", out)
        self.assertEqual(len(out.splitlines()), 3, out)

    def test_the_tree_itself_passes(self):
        p = subprocess.run([sys.executable, CHECK, "--root", ROOT], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stdout)


if __name__ == "__main__":
    unittest.main()
