#include "tools/shardflow/profile.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/platform/status.h"
#include "datasets/batch_iterator.h"
#include "datasets/fashion_mnist.h"
#include "google/protobuf/text_format.h"
#include "runtime/profiler.h"
#include "runtime/session.h"
#include "tools/shardflow/cluster_flags.h"
#include "tools/shardflow/flags.h"
#include "tools/shardflow/models.h"

namespace shardflow {
namespace {

struct ProfileConfig {
  std::string model = "cnn";
  int64_t devices = 2;
  int64_t batch_size = 64;
  int64_t steps = 5;
  std::string out = "profile";
  std::string data_dir = kDefaultFashionMnistDir;
  ClusterFlags cluster;
};

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "'"));
  f << text;
  return f.good() ? absl::OkStatus() : absl::DataLossError(absl::StrCat("short write to ", path));
}

// What the graph optimizer did to the traced step's graph: one block per pass run.
std::string OptimizerReportText(const RunMetadata& md, int* nodes_before, int* nodes_after) {
  std::string out;
  const auto& passes = md.optimizer_report().passes();
  *nodes_before = passes.empty() ? md.optimized_graph().node_size() : passes[0].nodes_before();
  *nodes_after = md.optimized_graph().node_size();
  for (const auto& p : passes) {
    absl::StrAppendFormat(&out, "%s: %d -> %d nodes, %d change(s), %.2f ms\n", p.name(),
                          p.nodes_before(), p.nodes_after(), p.changes_size(), p.seconds() * 1e3);
    for (const std::string& c : p.changes()) absl::StrAppend(&out, "  ", c, "\n");
  }
  if (passes.empty()) out = "the graph optimizer is off (RewriterConfig.disable_meta_optimizer)\n";
  return out;
}

absl::Status Profile(const ProfileConfig& c) {
  if (c.devices < 1 || c.steps < 1 || c.batch_size < 1) {
    return absl::InvalidArgumentError("--devices, --steps and --batch-size must be positive");
  }
  SF_ASSIGN_OR_RETURN(std::vector<std::string> layer_devices, c.cluster.Tasks());
  if (layer_devices.empty()) {
    for (int64_t i = 0; i < c.devices; ++i) {
      layer_devices.push_back(absl::StrCat("/device:CPU:", i));
    }
  }
  Scope s = Scope::NewRootScope();
  SF_ASSIGN_OR_RETURN(Model m, BuildModel(s, c.model, 1, layer_devices));
  AdamOptimizer adam(1e-3);
  SF_ASSIGN_OR_RETURN(Operation train, adam.Minimize(s, m.loss));
  Operation init = InitializeAllVariables(s);
  GraphDef def;
  SF_RETURN_IF_ERROR(s.ToGraphDef(&def));
  SessionOptions options;
  options.config.set_cpu_device_count(static_cast<int>(c.devices));
  SF_ASSIGN_OR_RETURN(auto session, c.cluster.OpenSession(options));
  SF_RETURN_IF_ERROR(session->Create(def));
  std::vector<Tensor> out;
  SF_RETURN_IF_ERROR(session->Run({}, {}, {init.name()}, &out));
  SF_ASSIGN_OR_RETURN(Dataset train_set, LoadFashionMnist(c.data_dir, Split::kTrain));
  BatchIteratorOptions bo;
  bo.batch_size = c.batch_size;
  bo.layout = m.image_layout ? ImageLayout::kImage : ImageLayout::kFlat;
  SF_ASSIGN_OR_RETURN(auto batches, BatchIterator::Create(std::move(train_set), bo));
  RunMetadata md;
  for (int64_t step = 1; step <= c.steps; ++step) {
    SF_ASSIGN_OR_RETURN(Batch batch, batches->Next());
    RunOptions ro;
    if (step == c.steps) ro.set_trace_level(RunOptions::FULL_TRACE);
    SF_RETURN_IF_ERROR(
        session->Run(ro, {{m.images.name(), batch.images}, {m.labels.name(), batch.labels}},
                     {m.loss.name()}, {train.name()}, &out, &md));
  }
  std::error_code ec;
  std::filesystem::create_directories(c.out, ec);
  if (ec) return absl::PermissionDeniedError(absl::StrCat("cannot create --out '", c.out, "'"));
  std::string report = PlacementReport(md);
  std::string dot = PlacedGraphDot(def, &md);
  SF_RETURN_IF_ERROR(WriteFile(c.out + "/trace.json", ChromeTraceJson(md)));
  SF_RETURN_IF_ERROR(WriteFile(c.out + "/placement.txt", report));
  SF_RETURN_IF_ERROR(WriteFile(c.out + "/graph.dot", dot));
  int nodes_before = 0, nodes_after = 0;
  SF_RETURN_IF_ERROR(
      WriteFile(c.out + "/optimizer.txt", OptimizerReportText(md, &nodes_before, &nodes_after)));
  std::string optimized;
  google::protobuf::TextFormat::PrintToString(md.optimized_graph(), &optimized);
  SF_RETURN_IF_ERROR(WriteFile(c.out + "/optimized_graph.pbtxt", optimized));
  auto svg = DotToSvg(dot);
  std::string svg_note = svg.ok() ? c.out + "/graph.svg" : std::string(svg.status().message());
  if (svg.ok()) SF_RETURN_IF_ERROR(WriteFile(c.out + "/graph.svg", *svg));
  absl::PrintF("%s on %s, profile of step %d (batch %d):\n\n%s\n", c.model,
               c.cluster.cluster.empty()
                   ? absl::StrCat(c.devices, " CPU device(s)")
                   : absl::StrCat(layer_devices.size(), " task(s) of ", c.cluster.cluster),
               c.steps, c.batch_size, report);
  int fused = 0, folded = 0;
  for (const auto& p : md.optimizer_report().passes()) {
    if (p.name() == "remapping") fused += p.changes_size();
    if (p.name() == "constant_folding") folded += p.changes_size();
  }
  absl::PrintF(
      "graph optimizer: %d -> %d nodes (%d fused, %d folded; every change in "
      "%s/optimizer.txt)\n",
      nodes_before, nodes_after, fused, folded, c.out);
  absl::PrintF(
      "wrote %s/trace.json (open in https://ui.perfetto.dev or chrome://tracing),\n"
      "      %s/placement.txt, %s/graph.dot, %s/optimized_graph.pbtxt; svg: %s\n",
      c.out, c.out, c.out, c.out, svg_note);
  return absl::OkStatus();
}

}  // namespace

void AddProfileCommand(CommandLine* cli) {
  auto config = std::make_shared<ProfileConfig>();
  ProfileConfig& c = *config;
  Flags& flags = *cli->AddCommand(
      "profile", "profile a training step split across CPU devices",
      "Trains a few steps of a model whose layers are spread over N CPU devices (layer i on\n"
      "device i mod N) and writes the profile of the last step: a Chrome trace with one row\n"
      "per device and arrows for every tensor that crossed devices, a placement report and\n"
      "a Graphviz graph coloured by device.",
      [config] { return Profile(*config); }, "shardflow profile: ");
  flags.String("model", &c.model, "cnn or mlp");
  flags.Int("devices", &c.devices, "CPU devices to spread the layers over");
  flags.Int("batch-size", &c.batch_size, "examples per step");
  flags.Int("steps", &c.steps, "steps to run; the last one is traced");
  flags.String("out", &c.out, "folder for trace.json, placement.txt, graph.dot (and graph.svg)");
  flags.String("data-dir", &c.data_dir, "folder with the Fashion-MNIST idx(.gz) files");
  c.cluster.Register(&flags);
}

}  // namespace shardflow
