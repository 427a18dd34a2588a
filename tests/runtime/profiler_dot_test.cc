#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "runtime/profiler.h"
#include "tests/runtime/profiler_fixtures.h"

namespace shardflow {
namespace {

using namespace profiler_test;  // NOLINT: test fixtures

// The parts of a DOT text the tests look at: node ids by name, edges with their attrs.
struct ParsedDot {
  std::map<std::string, std::string> id_of;                         // node name -> "nK"
  std::map<std::string, std::string> fill_of;                       // node name -> fillcolor
  std::map<std::pair<std::string, std::string>, std::string> edge;  // (src, dst) ids -> attrs
  int clusters = 0;
};

ParsedDot ParseDot(const std::string& dot) {
  ParsedDot p;
  // Braces balance outside quoted strings.
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < dot.size(); ++i) {
    if (dot[i] == '\\' && quoted) {
      ++i;
    } else if (dot[i] == '"') {
      quoted = !quoted;
    } else if (!quoted && dot[i] == '{') {
      ++depth;
    } else if (!quoted && dot[i] == '}') {
      EXPECT_GT(depth, 0) << dot;
      --depth;
    }
  }
  EXPECT_EQ(depth, 0) << dot;
  EXPECT_FALSE(quoted) << dot;
  EXPECT_EQ(dot.rfind("digraph ", 0), 0u) << dot;
  for (absl::string_view line : absl::StrSplit(dot, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::StartsWith(line, "subgraph \"cluster_")) ++p.clusters;
    size_t arrow = line.find(" -> ");
    if (arrow != absl::string_view::npos) {
      size_t end = line.find_first_of(" ;", arrow + 4);
      std::string src(line.substr(0, arrow));
      std::string dst(line.substr(arrow + 4, end - arrow - 4));
      size_t bracket = line.find('[');
      p.edge[{src, dst}] =
          bracket == absl::string_view::npos ? "" : std::string(line.substr(bracket));
      continue;
    }
    size_t label = line.find(" [label=\"");
    if (line.empty() || line[0] != 'n' || label == absl::string_view::npos) continue;
    size_t name_end = line.find("\\n", label);
    std::string name(line.substr(label + 9, name_end - label - 9));
    p.id_of[name] = std::string(line.substr(0, label));
    size_t fill = line.find("fillcolor=\"");
    p.fill_of[name] = std::string(line.substr(fill + 11, 7));
  }
  for (const auto& [ends, attrs] : p.edge) {
    bool declared_src = false, declared_dst = false;
    for (const auto& [name, id] : p.id_of) {
      declared_src |= id == ends.first;
      declared_dst |= id == ends.second;
    }
    EXPECT_TRUE(declared_src && declared_dst) << ends.first << " -> " << ends.second;
  }
  return p;
}

std::string EdgeAttrs(const ParsedDot& p, const std::string& src, const std::string& dst) {
  auto it = p.edge.find({p.id_of.at(src), p.id_of.at(dst)});
  return it == p.edge.end() ? "<no edge>" : it->second;
}

TEST(PlacedGraphDotTest, PartitionGraphsColouredByDeviceWithTransfers) {
  RunMetadata md = TwoDeviceMetadata();
  const std::string dot = PlacedGraphDot(OriginalGraph(), &md);
  ParsedDot p = ParseDot(dot);
  EXPECT_EQ(p.clusters, 2);
  EXPECT_EQ(p.id_of.size(), 10u);  // the partition graphs, with their _Send/_Recv
  EXPECT_NE(dot.find(absl::StrCat("label=\"", kA, "\"")), std::string::npos) << dot;
  // One colour per device: every node of a device has its colour; the two differ.
  EXPECT_EQ(p.fill_of["a/MatMul"], DevicePalette()[0]);
  EXPECT_EQ(p.fill_of["recv2"], DevicePalette()[0]);
  EXPECT_EQ(p.fill_of["b/Relu"], DevicePalette()[1]);
  EXPECT_EQ(p.fill_of["send2"], DevicePalette()[1]);
  EXPECT_NE(DevicePalette()[0], DevicePalette()[1]);
  // Send->Recv pairs are bold and labelled with the bytes moved.
  std::string t1 = EdgeAttrs(p, "send1", "recv1");
  EXPECT_NE(t1.find("style=\"bold\""), std::string::npos) << t1;
  EXPECT_NE(t1.find("label=\"24 B\""), std::string::npos) << t1;
  std::string t2 = EdgeAttrs(p, "send2", "recv2");
  EXPECT_NE(t2.find("label=\"64 B\""), std::string::npos) << t2;
  // Control edges dashed; local data edges plain.
  EXPECT_NE(EdgeAttrs(p, "a/Add", "final").find("style=\"dashed\""), std::string::npos);
  EXPECT_NE(EdgeAttrs(p, "b/Relu2", "b/late").find("style=\"dashed\""), std::string::npos);
  EXPECT_EQ(EdgeAttrs(p, "a/MatMul", "a/Add"), "");
  EXPECT_EQ(EdgeAttrs(p, "recv1", "b/Relu2"), "");  // "recv1:0" resolved
}

TEST(PlacedGraphDotTest, UnpartitionedGraphMarksCrossingEdges) {
  RunMetadata md = TwoDeviceMetadata(/*with_partitions=*/false);
  ParsedDot p = ParseDot(PlacedGraphDot(OriginalGraph(), &md));
  EXPECT_EQ(p.clusters, 2);
  EXPECT_EQ(p.id_of.size(), 6u);
  std::string crossing = EdgeAttrs(p, "a/MatMul", "b/Relu");
  EXPECT_NE(crossing.find("style=\"bold\""), std::string::npos) << crossing;
  EXPECT_NE(crossing.find("label=\"24 B\""), std::string::npos) << crossing;  // from step stats
  std::string back = EdgeAttrs(p, "b/Relu", "final");
  EXPECT_NE(back.find("label=\"64 B\""), std::string::npos) << back;
  EXPECT_NE(EdgeAttrs(p, "a/Add", "final").find("dashed"), std::string::npos);
  // Without metadata: still bold, no byte labels.
  ParsedDot bare = ParseDot(PlacedGraphDot(OriginalGraph(), nullptr));
  std::string unlabelled = EdgeAttrs(bare, "a/MatMul", "b/Relu");
  EXPECT_NE(unlabelled.find("bold"), std::string::npos);
  EXPECT_EQ(unlabelled.find("label="), std::string::npos) << unlabelled;
  // Unplaced nodes are drawn outside any cluster.
  GraphDef g;
  AddNode(&g, "lonely", "NoOp", "");
  ParsedDot unplaced = ParseDot(PlacedGraphDot(g, nullptr));
  EXPECT_EQ(unplaced.clusters, 0);
  EXPECT_EQ(unplaced.fill_of["lonely"], "#ffffff");
}

class DotToSvgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("PATH");
    saved_path_ = path == nullptr ? "" : path;
  }
  void TearDown() override {
    setenv("PATH", saved_path_.c_str(), 1);
    std::system(("rm -rf " + ::testing::TempDir() + "/fake_dot_bin").c_str());
  }
  // A directory holding a fake `dot` that runs `body` (a sh script).
  std::string FakeDot(const std::string& body) {
    std::string dir = ::testing::TempDir() + "/fake_dot_bin";
    std::system(("mkdir -p " + dir).c_str());
    std::ofstream(dir + "/dot") << "#!/bin/sh\n" << body;
    std::system(("chmod +x " + dir + "/dot").c_str());
    return dir;
  }
  std::string saved_path_;
};

TEST_F(DotToSvgTest, RendersOrSaysHowToInstall) {
  absl::StatusOr<std::string> svg = DotToSvg("digraph g { a -> b; }");
  if (svg.ok()) {
    EXPECT_NE(svg->find("<svg"), std::string::npos) << *svg;
  } else {
    EXPECT_EQ(svg.status().code(), absl::StatusCode::kFailedPrecondition) << svg.status();
    EXPECT_NE(
        svg.status().message().find("Graphviz 'dot' is not installed: apt-get install graphviz"),
        std::string::npos)
        << svg.status();
  }
  setenv("PATH", "/nonexistent", 1);
  EXPECT_EQ(DotToSvg("digraph g {}").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(DotToSvgTest, RunsDotWithTheTextAndReportsItsErrors) {
  std::string dir = FakeDot(
      "for a; do case \"$a\" in -o*) out=\"${a#-o}\";; -T*) fmt=\"$a\";; *) in=\"$a\";; esac; "
      "done\n"
      "grep -q broken \"$in\" && { echo 'syntax error in line 1' >&2; exit 1; }\n"
      "{ echo \"<svg fmt=$fmt>\"; cat \"$in\"; echo '</svg>'; } > \"$out\"\n");
  setenv("PATH", (dir + ":/usr/bin:/bin").c_str(), 1);
  absl::StatusOr<std::string> svg = DotToSvg("digraph g { \"a b\" -> c; }");
  ASSERT_TRUE(svg.ok()) << svg.status();
  EXPECT_EQ(*svg, "<svg fmt=-Tsvg>\ndigraph g { \"a b\" -> c; }</svg>\n");
  absl::StatusOr<std::string> bad = DotToSvg("broken");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("syntax error in line 1"), std::string::npos)
      << bad.status();
}

}  // namespace
}  // namespace shardflow
