#!/usr/bin/env python3
"""Checks that the tree's #includes follow DESIGN.md's layering (ctest: layers/includes).

    tools/check_layers.py [--root DIR] [--public-headers H ...] [--public-protos STEM ...]

Reads every #include of the sources under the engine folders, datasets/, python_bindings/,
tools/, examples/, benchmarks/ and tests/, and prints one line per broken rule,
"file:line: rule: what and why", then exits 1; exits 0 when every rule holds.

Rules:
  layering  A folder of the engine includes only from itself and from the folders DESIGN.md's
            "Top-level layout" says it depends on (LAYERS below): dependencies point up the
            table, core -> ops -> kernels -> partitioner -> runtime -> distributed.
  grpc      gRPC headers (grpc/, grpcpp/), the gRPC transport (distributed/grpc/) and the
            generated service stubs (*.grpc.pb.h) are included only inside distributed/grpc/,
            by tests/, and by the few tools and benchmarks listed in GRPC_USERS.
  public    (with --public-headers, the list cmake/install.cmake installs) A public header
            includes only public headers, public generated messages (--public-protos) and the
            third-party headers the installed package provides (PUBLIC_THIRD_PARTY); a public
            message's .proto imports only public messages; examples/ include only public headers
            (an example must build against an installed shardflow).
  devices   A device (a class deriving from Device) is constructed only in a file that defines
            a DeviceFactory (runtime/device_factory.h): sessions, servers, eager RunOp and tests
            ask the registered factories, so a new device type plugs in at one place. A test
            may construct a test double it defines itself.
"""

import argparse
import functools
import os
import re
import sys

# folder -> (the folders it may include besides itself, DESIGN.md's "depends on" column)
LAYERS = {
    "core": ([], "abseil, protobuf, Eigen (types only)"),
    "ops": (["core"], "core"),
    "kernels": (["core"], "core"),
    "partitioner": (["core", "ops"], "core, ops"),
    "runtime": (["core", "kernels", "partitioner"], "core, kernels, partitioner"),
    # "runtime" in the table, read as runtime and what runtime uses; the note under the table
    # adds ops (strategies rewrite graphs).
    "distributed": (["core", "ops", "kernels", "partitioner", "runtime"],
                    "runtime (and what it uses), and ops"),
    # Not the engine: the input pipeline on top of the public API (docs/cpp_api.md).
    "datasets": (["core"], "core (the input pipeline sits on the public API)"),
}
# Top-level folders an include can name; an include of another first component ("absl/...",
# "gtest/...") is a third-party header and only the grpc and public rules look at it.
TREE_FOLDERS = set(LAYERS) | {"python_bindings", "tools", "examples", "benchmarks", "tests"}
SCANNED = sorted(TREE_FOLDERS)
SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".inc")

GRPC_HOME = "distributed/grpc/"
# Files outside distributed/grpc/ and tests/ that may include gRPC, and why.
GRPC_USERS = {
    "benchmarks/transfer_benchmark.cc": "measures the gRPC transport itself",
    "tools/shardflow/server.cc": "starts a server and sets gRPC's poll strategy for it",
    "tools/shardflow/cluster_flags.cc": "starts --cluster's in-process master, sets the strategy",
}
PUBLIC_THIRD_PARTY = ("absl/", "google/protobuf/", "Eigen/", "unsupported/Eigen/")

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
IMPORT_RE = re.compile(r'^\s*import\s+(?:public\s+)?"([^"]+)"\s*;')


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def includes(path, text=None):
    """Yields (line number, delimiter, included path) for each #include of the file (`text`:
    its contents, when already read)."""
    for number, line in enumerate((read(path) if text is None else text).splitlines(), 1):
        m = INCLUDE_RE.match(line)
        if m:
            yield number, m.group(1), m.group(2)


def sources(root):
    for top in SCANNED:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")


def is_grpc(included):
    return (included.startswith(("grpc/", "grpcpp/", "grpc++/", GRPC_HOME))
            or included.endswith(".grpc.pb.h"))


def check_layering(rel, number, included, errors):
    folder = rel.split("/", 1)[0]
    if folder not in LAYERS:
        return
    target = included.split("/", 1)[0]
    if "/" not in included or target not in TREE_FOLDERS or target == folder:
        return
    allowed, design = LAYERS[folder]
    if target not in allowed:
        may = ", ".join(f + "/" for f in allowed) if allowed else "nothing else of shardflow"
        errors.append(
            f'{rel}:{number}: layering: {folder}/ includes "{included}", but {folder}/ may use '
            f'only {may} (DESIGN.md "Top-level layout": {folder}/ depends on {design}; '
            f'dependencies point up the table)')


def check_grpc(rel, number, included, errors):
    if not is_grpc(included):
        return
    if rel.startswith((GRPC_HOME, "tests/")) or rel in GRPC_USERS:
        return
    errors.append(
        f'{rel}:{number}: grpc: includes "{included}"; gRPC is included only inside '
        f"{GRPC_HOME} (the \"grpc\" protocol), by tests/, and by the tools and benchmarks "
        f"listed in tools/check_layers.py GRPC_USERS: reach it through "
        f"distributed/protocol.h and distributed/worker_interface.h")


def check_public(root, public, protos, errors):
    public_protos = {f"core/protos/{stem}.pb.h" for stem in protos}
    for header in sorted(public):
        path = os.path.join(root, header)
        if not os.path.exists(path):
            errors.append(f"{header}:0: public: listed as a public header but does not exist")
            continue
        for number, delim, included in includes(path):
            if delim == "<":
                continue
            first = included.split("/", 1)[0]
            if first in TREE_FOLDERS:
                if included not in public and included not in public_protos:
                    errors.append(
                        f'{header}:{number}: public: the public header includes "{included}", '
                        f"which is not installed: add it to SHARDFLOW_PUBLIC_HEADERS (or its "
                        f"message to SHARDFLOW_PUBLIC_PROTOS) in cmake/install.cmake, or keep "
                        f"it out of the public header")
            elif not included.startswith(PUBLIC_THIRD_PARTY):
                errors.append(
                    f'{header}:{number}: public: the public header includes "{included}", a '
                    f"library the installed package does not provide (only "
                    f"{', '.join(PUBLIC_THIRD_PARTY)}): keep it in a .cc file")
    for stem in sorted(protos):
        proto = f"core/protos/{stem}.proto"
        path = os.path.join(root, proto)
        if not os.path.exists(path):
            errors.append(f"{proto}:0: public: listed as a public message but does not exist")
            continue
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                m = IMPORT_RE.match(line)
                if m and m.group(1).endswith(".proto"):
                    imported = m.group(1)[: -len(".proto")] + ".pb.h"
                    if imported.startswith("core/protos/") and imported not in public_protos:
                        errors.append(
                            f'{proto}:{number}: public: the public message imports '
                            f'"{m.group(1)}", which is not installed: add it to '
                            f"SHARDFLOW_PUBLIC_PROTOS in cmake/install.cmake")


DEVICE_CLASS_RE = re.compile(r"\bclass\s+(\w+)\s+(?:final\s+)?:\s*public\s+(?:\w+::)*Device\b")
FACTORY_RE = re.compile(r"\bpublic\s+(?:\w+::)*DeviceFactory\b")


def device_classes(texts):
    """Names of the classes deriving directly from Device anywhere in the tree (rel -> text)."""
    names = set()
    for text in texts.values():
        names.update(DEVICE_CLASS_RE.findall(text))
    return names


@functools.lru_cache(maxsize=None)
def construction_re(classes):
    """Constructions of the classes in `classes` (a frozenset): new X(...), make_unique<X>(...),
    a member or local `X x(...)`."""
    names = "|".join(sorted(map(re.escape, classes)))
    return re.compile(
        rf"(?:\bnew\s+(?:\w+::)*(?:{names})\s*[({{]"
        rf"|make_(?:unique|shared)<\s*(?:\w+::)*(?:{names})\s*>"
        rf"|^\s*(?:\w+::)*(?:{names})\s+\w+\s*[;({{])")


def check_devices(rel, text, classes, errors):
    """A device class constructed (new X(...), make_unique<X>(...), a member or local X x(...))
    outside a file that defines a DeviceFactory."""
    if not classes or not rel.endswith((".cc", ".cpp", ".h", ".cu")):
        return
    if FACTORY_RE.search(text):
        return
    if rel.startswith("tests/"):
        classes = classes - set(DEVICE_CLASS_RE.findall(text))
        if not classes:
            return
    construct = construction_re(frozenset(classes))
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("//"):
            continue
        m = construct.search(line)
        if m:
            errors.append(
                f"{rel}:{number}: devices: constructs a device directly "
                f"(\"{m.group(0).strip()}\"); devices are made by their DeviceFactory: use "
                f"DeviceFactory::CreateDevices or DeviceFactory::Get(type)->AddDevices "
                f"(runtime/device_factory.h; tests: tests/util/test_device.h)")


def check_example(rel, number, delim, included, public, protos, errors):
    if not rel.startswith("examples/") or delim == "<":
        return
    if included.split("/", 1)[0] not in TREE_FOLDERS:
        return
    if included in public or included in {f"core/protos/{s}.pb.h" for s in protos}:
        return
    errors.append(
        f'{rel}:{number}: public: the example includes "{included}", which is not a public '
        f"header (cmake/install.cmake): examples build against an installed shardflow")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the source tree (default: this script's repository)")
    parser.add_argument("--public-headers", nargs="*", default=None,
                        help="the installed headers, relative to the root")
    parser.add_argument("--public-protos", nargs="*", default=[],
                        help="the installed core/protos messages, by stem")
    args = parser.parse_args(argv)
    public = set(args.public_headers or [])

    errors = []
    files = 0
    count = 0
    texts = {rel: read(os.path.join(args.root, rel)) for rel in sources(args.root)}
    classes = device_classes(texts)
    for rel, text in texts.items():
        files += 1
        check_devices(rel, text, classes, errors)
        for number, delim, included in includes(rel, text):
            count += 1
            check_layering(rel, number, included, errors)
            check_grpc(rel, number, included, errors)
            if args.public_headers is not None:
                check_example(rel, number, delim, included, public, args.public_protos, errors)
    if args.public_headers is not None:
        check_public(args.root, public, args.public_protos, errors)

    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} line(s) against the rules above "
              f"(DESIGN.md, tools/check_layers.py)", file=sys.stderr)
        return 1
    print(f"check_layers: {files} files, {count} includes: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
