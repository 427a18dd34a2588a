"""Debian's system libraries as Bazel targets, found by pkg-config when the repository is made.

    system_libs(name = "system", modules = {"grpc": ["grpc++", "protobuf"], ...})

makes @system//:grpc and so on: cc_library targets with no sources whose linkopts are
`pkg-config --libs` of their modules (and whose copts are the modules' non-system -I flags,
applied through the toolchain's -isystem by the top-level .bazelrc where needed). Nothing is
downloaded: the same libraries CMake finds, at the versions Debian installed.
"""

def _system_libs_impl(ctx):
    lines = ['package(default_visibility = ["//visibility:public"])', ""]
    for name, modules in ctx.attr.modules.items():
        linkopts = []
        if modules:
            result = ctx.execute(["pkg-config", "--libs"] + modules)
            if result.return_code != 0:
                fail("pkg-config --libs %s failed: %s (install the -dev packages that " %
                     (" ".join(modules), result.stderr) +
                     ".ci/setup.sh lists)")
            linkopts = result.stdout.strip().split(" ")
        linkopts = linkopts + ctx.attr.extra_linkopts.get(name, [])
        lines.append("cc_library(")
        lines.append('    name = "%s",' % name)
        lines.append("    linkopts = %s," % repr([o for o in linkopts if o]))
        lines.append(")")
        lines.append("")
    ctx.file("BUILD", "\n".join(lines))
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)

system_libs = repository_rule(
    implementation = _system_libs_impl,
    attrs = {
        "modules": attr.string_list_dict(doc = "target name -> pkg-config modules"),
        "extra_linkopts": attr.string_list_dict(doc = "target name -> further linkopts"),
    },
    local = True,
    environ = ["PKG_CONFIG_PATH"],
)
