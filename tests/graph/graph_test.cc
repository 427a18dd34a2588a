#include "core/graph/graph.h"

#include "absl/strings/str_cat.h"
#include "core/framework/attr_value.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace shardflow {
namespace {

GraphDef Parse(const std::string& text) {
  GraphDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def)) << text;
  return def;
}

// Two float constants of shape [2] named a and b.
const char kConsts[] = R"(
  node { name: "a" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 2 } content: "\000\000\200?\000\000\000@" } } } }
  node { name: "b" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
         attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 2 } content: "\000\000\200?\000\000\000@" } } } }
)";

std::string ErrorOf(const std::string& text) {
  auto g = Graph::FromGraphDef(Parse(text));
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? "" : std::string(g.status().message());
}

TEST(GraphTest, ValidGraphGetsTypesShapesAndEdges) {
  auto g = Graph::FromGraphDef(Parse(std::string(kConsts) + R"(
    node { name: "sum" op: "Add" input: "a" input: "b:0" input: "^a" attr { key: "T" value { type: DT_FLOAT } } })"));
  ASSERT_TRUE(g.ok()) << g.status();
  Node* sum = (*g)->FindNode("sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->output_type(0), DT_FLOAT);
  EXPECT_EQ(sum->output_shape(0).DebugString(), "[2]");
  EXPECT_EQ(sum->in_edges().size(), 3u);  // two data, one control
  GraphDef out;
  (*g)->ToGraphDef(&out);
  EXPECT_EQ(out.node_size(), 3);
  EXPECT_EQ(out.node(2).input(2), "^a");
  EXPECT_TRUE(Graph::FromGraphDef(out).ok());
}

TEST(GraphTest, UnknownOpNamesNodeAndSuggests) {
  std::string e = ErrorOf(R"(node { name: "m" op: "Matmul" })");
  EXPECT_NE(e.find("node 'm' (Matmul)"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean MatMul"), std::string::npos) << e;
}

// A Python function node reaching a process without Python (a `shardflow server` master):
// the error says what the node is and where it can run.
TEST(GraphTest, APyFuncWithoutPythonSaysWhereItRuns) {
  std::string e = ErrorOf(R"(node { name: "StringJoin" op: "PyFunc" })");
  EXPECT_NE(e.find("node 'StringJoin' (PyFunc)"), std::string::npos) << e;
  EXPECT_NE(e.find("calls a Python function"), std::string::npos) << e;
  EXPECT_NE(e.find("tf.train.Server"), std::string::npos) << e;
}

TEST(GraphTest, MissingDanglingAndExtraInputs) {
  std::string missing = ErrorOf(
      std::string(kConsts) +
      R"(node { name: "s" op: "Add" input: "a" attr { key: "T" value { type: DT_FLOAT } } })");
  EXPECT_NE(missing.find("node 's' (Add): has 1 data input(s) but takes 2"), std::string::npos)
      << missing;
  std::string dangling = ErrorOf(
      std::string(kConsts) +
      R"(node { name: "s" op: "Add" input: "a" input: "nope" attr { key: "T" value { type: DT_FLOAT } } })");
  EXPECT_NE(dangling.find("'nope', which is not in the graph"), std::string::npos) << dangling;
  std::string slot = ErrorOf(
      std::string(kConsts) +
      R"(node { name: "s" op: "Add" input: "a:3" input: "b" attr { key: "T" value { type: DT_FLOAT } } })");
  EXPECT_NE(slot.find("has 1 output(s)"), std::string::npos) << slot;
}

TEST(GraphTest, CycleIsDetectedAndNamed) {
  std::string e = ErrorOf(std::string(kConsts) + R"(
    node { name: "p" op: "Add" input: "a" input: "q" attr { key: "T" value { type: DT_FLOAT } } }
    node { name: "q" op: "Add" input: "p" input: "b" attr { key: "T" value { type: DT_FLOAT } } })");
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("p"), std::string::npos);
}

TEST(GraphTest, DtypeMismatchSuggestsCast) {
  std::string e = ErrorOf(std::string(kConsts) + R"(
    node { name: "i" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 shape { } content: "\001\000\000\000" } } } }
    node { name: "s" op: "Add" input: "a" input: "i" attr { key: "T" value { type: DT_FLOAT } } })");
  EXPECT_NE(e.find("node 's' (Add): input 1 expects float but 'i:0' is int32; insert a Cast"),
            std::string::npos)
      << e;
}

TEST(GraphTest, IncompatibleShapesNameTheNodeAndShapes) {
  std::string e = ErrorOf(std::string(kConsts) + R"(
    node { name: "m" op: "MatMul" input: "a" input: "b" attr { key: "T" value { type: DT_FLOAT } } })");
  EXPECT_NE(e.find("node 'm' (MatMul)"), std::string::npos) << e;
  EXPECT_NE(e.find("rank 2"), std::string::npos) << e;
}

TEST(GraphTest, AttrErrors) {
  std::string missing_attr =
      ErrorOf(std::string(kConsts) + R"(node { name: "s" op: "Add" input: "a" input: "b" })");
  EXPECT_NE(missing_attr.find("attr 'T' is missing"), std::string::npos) << missing_attr;
  std::string bad_type = ErrorOf(
      std::string(kConsts) +
      R"(node { name: "s" op: "Add" input: "a" input: "b" attr { key: "T" value { type: DT_STRING } } })");
  EXPECT_NE(bad_type.find("allowed:"), std::string::npos) << bad_type;
  std::string unknown = ErrorOf(
      std::string(kConsts) +
      R"(node { name: "s" op: "Add" input: "a" input: "b" attr { key: "T" value { type: DT_FLOAT } }
                attr { key: "color" value { s: "red" } } })");
  EXPECT_NE(unknown.find("unknown attr 'color'"), std::string::npos) << unknown;
  std::string dup = ErrorOf(std::string(kConsts) + std::string(kConsts));
  EXPECT_NE(dup.find("used twice"), std::string::npos) << dup;
  std::string empty = ErrorOf(R"(node { op: "NoOp" })");
  EXPECT_NE(empty.find("empty name"), std::string::npos) << empty;
  // Regression: names with ':' or '^' were accepted and could never be fetched or referenced.
  for (const char* name : {"a:1", "^b", "c:d"}) {
    std::string bad_name = ErrorOf(absl::StrCat(R"(node { name: ")", name, R"(" op: "NoOp" })"));
    EXPECT_NE(bad_name.find("contains ':' or '^'"), std::string::npos) << bad_name;
  }
  // Regression: a dtype number naming no type was accepted (a Placeholder of DataType 8 failed
  // only later, in a kernel or in Python, naming no node).
  std::string no_type = ErrorOf(R"(node { name: "x" op: "Placeholder"
                                          attr { key: "dtype" value { type: 8 } } })");
  EXPECT_NE(no_type.find("node 'x' (Placeholder): attr 'dtype' is DataType 8, which is not a type"),
            std::string::npos)
      << no_type;
  std::string no_list_type = ErrorOf(std::string(kConsts) + R"(
    node { name: "n" op: "IdentityN" input: "a" input: "b"
           attr { key: "T" value { list { type: DT_FLOAT type: 999 } } } })");
  EXPECT_NE(no_list_type.find("attr 'T'[1] is DataType 999"), std::string::npos) << no_list_type;
}

TEST(GraphTest, TensorRefParsing) {
  EXPECT_EQ(ParseTensorRef("a/b:3")->index, 3);
  EXPECT_EQ(ParseTensorRef("a")->index, 0);
  EXPECT_EQ(ParseTensorRef("^a")->index, Edge::kControlSlot);
  EXPECT_FALSE(ParseTensorRef("a:x").ok());
  EXPECT_FALSE(ParseTensorRef(":1").ok());
}

TEST(OpRegistryTest, SignatureParsingAndErrors) {
  auto def = OpDefBuilder("Thing")
                 .Input("xs: N * T")
                 .Output("y: float")
                 .Attr("N: int >= 2")
                 .Attr("T: {float, int32} = float")
                 .Attr("dims: list(int) = [1, 2]")
                 .Finalize();
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->inputs[0].number_attr, "N");
  EXPECT_EQ(def->outputs[0].type, DT_FLOAT);
  EXPECT_EQ(def->FindAttr("N")->minimum, 2);
  EXPECT_EQ(def->FindAttr("T")->allowed_types.size(), 2u);
  EXPECT_EQ(def->FindAttr("dims")->default_value.list().i_size(), 2);
  EXPECT_FALSE(OpDefBuilder("Bad").Input("x: Q").Finalize().ok());
  EXPECT_FALSE(OpDefBuilder("Bad").Attr("x: colour").Finalize().ok());
  EXPECT_FALSE(OpDefBuilder("Bad").Attr("x: int = nine").Finalize().ok());
}

}  // namespace
}  // namespace shardflow
